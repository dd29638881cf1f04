//! Text for the terminal: SGR styles, and model or tool text cut and cleaned to fit a line.

use std::io::IsTerminal;

/// The styles tern uses on the screen (SGR codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Bold: the user's messages.
    Bold,
    /// Dim: thinking, notes, the status line.
    Dim,
    /// Red: errors.
    Red,
    /// Green: a tool that succeeded.
    Green,
    /// Yellow: warnings, queued messages, the demo's notes.
    Yellow,
    /// Cyan: tool names.
    Cyan,
    /// Bold green: the input prompt.
    BoldGreen,
    /// Bold yellow: a permission question.
    BoldYellow,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Red => "31",
            Style::Green => "32",
            Style::Yellow => "33",
            Style::Cyan => "36",
            Style::BoldGreen => "1;32",
            Style::BoldYellow => "1;33",
        }
    }

    /// `s` in this style.
    pub fn paint(self, s: &str) -> String {
        format!("\x1b[{}m{s}\x1b[0m", self.code())
    }

    /// `s` in this style when stderr is a terminal, else plain (for diagnostics that may be
    /// redirected to a file).
    pub fn paint_stderr(self, s: &str) -> String {
        if std::io::stderr().is_terminal() {
            self.paint(s)
        } else {
            s.to_string()
        }
    }
}

/// A one-line summary of a tool call's arguments.
pub fn short_args(args: &serde_json::Value) -> String {
    truncate(&args.to_string(), 100)
}

/// Cuts `s` to `n` characters, marking the cut.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// The last `n` characters of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    s.chars().skip(count - n).collect()
}

/// Model and tool text made safe for the interactive screen: [`sanitize`], then tabs become
/// spaces (the live rows count characters to fit the width).
pub fn clean(s: &str) -> String {
    sanitize(s).replace('\t', "    ")
}

/// Text from outside (the model, tools, a provider's error body) as it may reach a terminal:
/// control characters (escape sequences included) are dropped, newlines and tabs stay, so
/// the text is what was written minus what would drive the terminal.
///
/// ```ignore
/// assert_eq!(sanitize("a\tb\x1b]0;owned\x07c\n"), "a\tb]0;ownedc\n");
/// ```
pub fn sanitize(s: &str) -> String {
    s.chars()
        .filter(|c| matches!(c, '\n' | '\t') || !c.is_control())
        .collect()
}

/// The mark of a finished tool call: a red `✗` for an error, a green `✓` otherwise.
pub fn result_mark(is_error: bool) -> (Style, &'static str) {
    if is_error {
        (Style::Red, "✗")
    } else {
        (Style::Green, "✓")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_and_tail_count_characters() {
        assert_eq!(truncate("héllo", 5), "héllo");
        assert_eq!(truncate("héllo world", 5), "héll…");
        assert_eq!(tail("héllo", 3), "llo");
        assert_eq!(tail("hé", 3), "hé");
    }

    #[test]
    fn clean_drops_escapes_and_expands_tabs() {
        assert_eq!(clean("a\tb\x1b[31mc\nd\r"), "a    b[31mc\nd");
    }

    #[test]
    fn sanitize_keeps_tabs_and_newlines_only() {
        assert_eq!(sanitize("a\tb\x1b]0;t\x07c\n\u{9b}2J"), "a\tb]0;tc\n2J");
    }

    #[test]
    fn paint_wraps_in_sgr() {
        assert_eq!(Style::BoldYellow.paint("x"), "\x1b[1;33mx\x1b[0m");
    }
}
