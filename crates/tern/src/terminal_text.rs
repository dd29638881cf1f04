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

/// A tool call as a person reads it, as pi's tool rows name them (with `bash` where pi shows
/// `$`): `read src/main.rs:10-40`,
/// `write notes.txt (3 lines)`, `edit src/lib.rs`, `bash cargo test`, `ls src`,
/// `grep /TODO/ in src (*.rs)`, `find *.toml in .`; any other tool, its name and its
/// arguments as JSON. One line, cleaned of control characters, at most 100 characters.
///
/// ```text
/// read {"path": "src/main.rs", "offset": 10, "limit": 31}  →  read src/main.rs:10-40
/// ```
pub fn tool_label(name: &str, args: &serde_json::Value) -> String {
    let s = |key: &str| args.get(key).and_then(serde_json::Value::as_str);
    // pi's tools take `path`; some models send `file_path`.
    let path = || s("path").or_else(|| s("file_path")).map(shorten_home);
    let limit = |label: String, wrap: bool| match args.get("limit").filter(|l| !l.is_null()) {
        Some(l) if wrap => format!("{label} (limit {l})"),
        Some(l) => format!("{label} limit {l}"),
        None => label,
    };
    let label = match (name, path()) {
        ("read", Some(p)) => format!("read {p}{}", line_range(args)),
        ("write", Some(p)) => match s("content") {
            Some(c) => format!("write {p} ({} lines)", line_count(c)),
            None => format!("write {p}"),
        },
        ("edit", Some(p)) => format!("edit {p}"),
        ("ls", p) => limit(format!("ls {}", p.unwrap_or_else(|| ".".into())), true),
        ("bash", _) if s("command").is_some() => {
            let command = s("command").unwrap_or_default().replace('\n', " ");
            match args.get("timeout").filter(|t| !t.is_null()) {
                Some(t) => format!("bash {command} (timeout {t}s)"),
                None => format!("bash {command}"),
            }
        }
        ("grep", p) if s("pattern").is_some() => {
            let mut l = format!(
                "grep /{}/ in {}",
                s("pattern").unwrap_or_default(),
                p.unwrap_or_else(|| ".".into())
            );
            if let Some(g) = s("glob") {
                l.push_str(&format!(" ({g})"));
            }
            limit(l, false)
        }
        ("find", p) if s("pattern").is_some() => limit(
            format!(
                "find {} in {}",
                s("pattern").unwrap_or_default(),
                p.unwrap_or_else(|| ".".into())
            ),
            true,
        ),
        _ => format!("{name} {args}"),
    };
    truncate(&clean(&label).replace('\n', " "), 100)
}

/// `:START` or `:START-END` of a `read` call's `offset` and `limit` (pi's
/// `formatReadLineRange`), or nothing.
fn line_range(args: &serde_json::Value) -> String {
    let number = |key: &str| match args.get(key) {
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(t)) if !t.trim().is_empty() => t.trim().parse().ok(),
        _ => None,
    };
    let present = |key: &str| args.get(key).is_some_and(|v| !v.is_null());
    if !present("offset") && !present("limit") {
        return String::new();
    }
    let Some(start) = (if present("offset") {
        number("offset")
    } else {
        Some(1.0)
    }) else {
        return String::new();
    };
    if !present("limit") {
        return format!(":{start}");
    }
    match number("limit") {
        Some(count) => format!(":{start}-{}", start + count - 1.0),
        None => String::new(),
    }
}

/// How many lines a file's content has (a last line without a newline counts).
fn line_count(content: &str) -> usize {
    content.lines().count()
}

/// `path` with the home folder as `~`.
pub fn shorten_home(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&home) => {
            let rest = &path[home.len()..];
            if rest.is_empty() || rest.starts_with('/') {
                format!("~{rest}")
            } else {
                path.to_string()
            }
        }
        _ => path.to_string(),
    }
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

/// The columns a terminal gives `s`: its SGR escape sequences take none, wide characters
/// two.
pub fn shown_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthChar;
    // Counted in one pass, no copy: the live rows are measured on every redraw.
    let mut in_escape = false;
    s.chars()
        .map(|c| match (in_escape, c) {
            (_, '\x1b') => {
                in_escape = true;
                0
            }
            (true, 'm') => {
                in_escape = false;
                0
            }
            (true, _) => 0,
            (false, c) => c.width().unwrap_or(0),
        })
        .sum()
}

/// `s` without its SGR escape sequences: what a terminal shows of it (tests compare it).
#[cfg(test)]
pub fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (_, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
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
    fn shown_width_skips_escapes_and_counts_wide_characters_twice() {
        let row = format!("{}表x", Style::Bold.paint("ab"));
        assert_eq!(shown_width(&row), 5);
        assert_eq!(
            shown_width(&row),
            unicode_width::UnicodeWidthStr::width(strip_sgr(&row).as_str())
        );
    }

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
    fn tool_calls_read_as_pi_names_them() {
        use serde_json::json;
        let l = |name: &str, args| tool_label(name, &args);
        assert_eq!(
            l("read", json!({"path": "src/main.rs"})),
            "read src/main.rs"
        );
        assert_eq!(
            l(
                "read",
                json!({"path": "src/main.rs", "offset": 10, "limit": 31})
            ),
            "read src/main.rs:10-40"
        );
        assert_eq!(l("read", json!({"path": "a", "offset": 5})), "read a:5");
        assert_eq!(l("read", json!({"path": "a", "limit": 3})), "read a:1-3");
        assert_eq!(
            l("read", json!({"path": "a", "offset": null, "limit": null})),
            "read a"
        );
        assert_eq!(
            l(
                "write",
                json!({"path": "new.txt", "content": "hello\nworld\n"})
            ),
            "write new.txt (2 lines)"
        );
        assert_eq!(
            l("edit", json!({"path": "lib.rs", "edits": []})),
            "edit lib.rs"
        );
        assert_eq!(
            l("bash", json!({"command": "cargo test"})),
            "bash cargo test"
        );
        assert_eq!(
            l("bash", json!({"command": "a\nb", "timeout": 5})),
            "bash a b (timeout 5s)"
        );
        assert_eq!(l("ls", json!({})), "ls .");
        assert_eq!(
            l(
                "grep",
                json!({"pattern": "TODO", "path": "src", "glob": "*.rs"})
            ),
            "grep /TODO/ in src (*.rs)"
        );
        assert_eq!(
            l("find", json!({"pattern": "*.toml", "limit": 9})),
            "find *.toml in . (limit 9)"
        );
        // Unknown tools, and known ones with arguments of the wrong shape, show the JSON.
        assert_eq!(l("mcp__x", json!({"q": 1})), "mcp__x {\"q\":1}");
        assert_eq!(l("read", json!({"path": 3})), "read {\"path\":3}");
        // A model's escape sequences do not reach the screen.
        assert_eq!(
            l("bash", json!({"command": "echo \u{1b}]0;x\u{7}"})),
            "bash echo ]0;x"
        );
    }

    #[test]
    fn paint_wraps_in_sgr() {
        assert_eq!(Style::BoldYellow.paint("x"), "\x1b[1;33mx\x1b[0m");
    }
}
