//! Code blocks coloured by their language, a line at a time as they stream: syntect's
//! bundled Sublime Text grammars and a dark theme, painted with 24-bit colours.
//!
//! The grammars load once, on the first code block whose language is known (tens of
//! milliseconds), so a session without code pays nothing.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use unicode_width::UnicodeWidthChar;

/// The longest line coloured, in bytes.
const LONGEST_LINE: usize = 1_000;

/// The theme code is painted in.
const THEME: &str = "base16-ocean.dark";

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> Option<&'static Assets> {
    static ASSETS: OnceLock<Option<Assets>> = OnceLock::new();
    ASSETS
        .get_or_init(|| {
            let theme = ThemeSet::load_defaults().themes.remove(THEME)?;
            Some(Assets {
                syntaxes: SyntaxSet::load_defaults_newlines(),
                theme,
            })
        })
        .as_ref()
}

/// The state of one code block's highlighting (a grammar's state runs across lines).
pub struct Highlighter {
    lines: HighlightLines<'static>,
    syntaxes: &'static SyntaxSet,
}

impl std::fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Highlighter")
    }
}

impl Highlighter {
    /// A highlighter for a fence's language (`rust`, `py`, `sh`, ...); `None` for a
    /// language no bundled grammar knows.
    pub fn for_language(language: &str) -> Option<Self> {
        let token = language.split_whitespace().next()?;
        let token = token.trim_start_matches('{').trim_start_matches('.');
        if token.is_empty() {
            return None;
        }
        let a = assets()?;
        let syntax = a
            .syntaxes
            .find_syntax_by_token(token)
            .or_else(|| a.syntaxes.find_syntax_by_token(&token.to_ascii_lowercase()))?;
        Some(Highlighter {
            lines: HighlightLines::new(syntax, &a.theme),
            syntaxes: &a.syntaxes,
        })
    }

    /// `line` painted, cut to `width` columns (never wrapped: code keeps its lines). `None`
    /// when the grammar fails on it or the line is too long to colour (the caller shows it
    /// plain).
    pub fn line(&mut self, line: &str, width: usize) -> Option<String> {
        // A grammar's regexes backtrack: a huge line from a model could hold the screen for
        // seconds. Such a line is shown plain; the state goes on from the lines around it.
        if line.len() > LONGEST_LINE {
            return None;
        }
        let with_newline = format!("{line}\n");
        let pieces = self
            .lines
            .highlight_line(&with_newline, self.syntaxes)
            .ok()?;
        let mut out = String::new();
        let mut used = 0;
        for (style, text) in pieces {
            let text = text.trim_end_matches('\n');
            let mut kept = String::new();
            for c in text.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width {
                    break;
                }
                used += w;
                kept.push(c);
            }
            if !kept.is_empty() {
                out.push_str(&paint(style, &kept));
            }
            if used >= width {
                break;
            }
        }
        Some(out)
    }
}

/// `text` in `style`'s foreground colour (and bold or italic), reset after.
fn paint(style: Style, text: &str) -> String {
    let c = style.foreground;
    let mut codes = format!("38;2;{};{};{}", c.r, c.g, c.b);
    if style.font_style.contains(FontStyle::BOLD) {
        codes.push_str(";1");
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        codes.push_str(";3");
    }
    format!("\x1b[{codes}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal_text::{shown_width, strip_sgr};

    #[test]
    fn a_known_language_is_coloured_by_its_grammar() {
        let mut h = Highlighter::for_language("rust").expect("rust is bundled");
        let row = h
            .line("let total = \"sum\"; // add", 80)
            .expect("highlighted");
        assert_eq!(strip_sgr(&row), "let total = \"sum\"; // add");
        // The keyword, the string and the comment each get a colour of their own.
        let colour_of = |piece: &str| {
            let at = row.find(piece).expect(piece);
            let start = row[..at].rfind("\x1b[").expect("a colour before it");
            row[start..at].to_string()
        };
        let (keyword, string, comment) = (colour_of("let"), colour_of("sum"), colour_of("add"));
        assert!(
            keyword != string && string != comment && keyword != comment,
            "{row:?}"
        );
        // The state runs across lines: a block comment opened above colours the next line.
        let mut h = Highlighter::for_language("py").expect("python by its extension");
        let first = h.line("s = \"\"\"start", 80).expect("line");
        let second = h.line("still in the string", 80).expect("line");
        assert_eq!(strip_sgr(&second), "still in the string");
        assert!(first.ends_with("\x1b[0m") && second.starts_with("\x1b[38;2;"));
    }

    #[test]
    fn rows_are_cut_to_the_width_and_unknown_languages_are_plain() {
        let mut h = Highlighter::for_language("js").expect("javascript");
        let row = h.line("const wide = '表表表表表表';", 20).expect("line");
        assert!(shown_width(&row) <= 20, "{row:?}");
        assert!(strip_sgr(&row).starts_with("const wide"));
        assert!(Highlighter::for_language("no-such-language").is_none());
        assert!(
            h.line(&"x".repeat(LONGEST_LINE + 1), 20).is_none(),
            "too long: plain"
        );
        assert!(Highlighter::for_language("").is_none());
    }
}
