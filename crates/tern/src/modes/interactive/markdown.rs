//! Assistant text as a person reads it: Markdown rendered for the terminal one source line at
//! a time, as lines complete while the answer streams, and word-wrapped by display width.
//!
//! - headings bold (the first level underlined too), without their `#`s;
//! - `**strong**`, `*emphasis*`, `~~struck~~`, `` `code` `` and links styled, their markers
//!   gone (inline Markdown is read by pulldown-cmark);
//! - list items with `•` (numbers kept), quotes with a bar, rules as a line;
//! - fenced code without its fences: a dim label with the language, then the lines as they
//!   are, coloured by the language's grammar (`highlight.rs`; one colour when no grammar
//!   knows it), cut (never wrapped at words) to the width;
//! - tables aligned by column, shown when the table ends (its column widths need all its
//!   rows).
//!
//! Other block structure that needs lines ahead (a setext heading) is not waited for: each
//! line shows as soon as it is whole.

use pulldown_cmark::{Event, Options, Parser, Tag};
use unicode_width::UnicodeWidthChar;

/// How a run of text is styled (SGR attributes that nest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Look {
    bold: bool,
    underline: bool,
    italic: bool,
    strike: bool,
    code: bool,
    link: bool,
    dim: bool,
}

impl Look {
    /// `text` in this look.
    fn paint(self, text: &str) -> String {
        let mut codes = Vec::new();
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline || self.link, "4"),
            (self.strike, "9"),
            (self.code, "36"),
            (self.link && !self.code, "34"),
        ] {
            if on {
                codes.push(code);
            }
        }
        if codes.is_empty() {
            text.to_string()
        } else {
            format!("\x1b[{}m{text}\x1b[0m", codes.join(";"))
        }
    }
}

/// Renders an answer's lines, keeping what spans lines (an open code fence).
#[derive(Debug, Default)]
pub struct Markdown {
    /// The fence of the open code block (its characters), if one is open.
    fence: Option<String>,
    /// The open code block's highlighting, when its language is known.
    code: Option<super::highlight::Highlighter>,
    /// The rows of the table being read: it shows, aligned, once it ends.
    table: Vec<String>,
}

impl Markdown {
    /// The end of a message: the rows of a table it ended with, and an open code block
    /// forgotten.
    pub fn finish(&mut self, width: usize) -> Vec<String> {
        self.fence = None;
        self.code = None;
        table(&std::mem::take(&mut self.table), width.max(10))
    }

    /// The screen rows of one whole source line, each at most `width` columns wide (a
    /// table's rows come when the table ends).
    pub fn line(&mut self, line: &str, width: usize) -> Vec<String> {
        let width = width.max(10);
        let trimmed = line.trim_start();
        if self.fence.is_none() && trimmed.starts_with('|') {
            self.table.push(trimmed.to_string());
            return Vec::new();
        }
        let mut rows = table(&std::mem::take(&mut self.table), width);
        rows.extend(self.rows(line, width));
        rows
    }

    fn rows(&mut self, line: &str, width: usize) -> Vec<String> {
        let trimmed = line.trim_start();
        if let Some(fence) = &self.fence {
            if closes(fence, trimmed) {
                self.fence = None;
                self.code = None;
                return vec![Look {
                    dim: true,
                    ..Look::default()
                }
                .paint(&"─".repeat(width.min(40)))];
            }
            if let Some(row) = self.code.as_mut().and_then(|h| h.line(line, width)) {
                return vec![row];
            }
            let code = Look {
                code: true,
                ..Look::default()
            };
            return vec![code.paint(&cut(line, width))];
        }
        if let Some(fence) = fence_of(trimmed) {
            let lang = trimmed[fence.len()..].trim();
            self.fence = Some(fence);
            self.code = super::highlight::Highlighter::for_language(lang);
            let label = if lang.is_empty() {
                "code".to_string()
            } else {
                lang.to_string()
            };
            return vec![Look {
                dim: true,
                ..Look::default()
            }
            .paint(&cut(&format!("── {label} ──"), width))];
        }
        if is_rule(trimmed) {
            return vec![Look {
                dim: true,
                ..Look::default()
            }
            .paint(&"─".repeat(width.min(40)))];
        }
        if let Some((level, text)) = heading(trimmed) {
            let look = Look {
                bold: true,
                underline: level == 1,
                ..Look::default()
            };
            return wrap(&inline(text, look), width, "", 0);
        }
        if let Some(text) = trimmed.strip_prefix('>') {
            let bar = Look {
                dim: true,
                ..Look::default()
            }
            .paint("│ ");
            return wrap(&inline(text.trim_start(), Look::default()), width, &bar, 2);
        }
        let indent = line.len() - trimmed.len();
        if let Some((marker, text)) = list_item(trimmed) {
            let pad = " ".repeat(indent.min(width / 2));
            let prefix = format!("{pad}{marker} ");
            let w = display_width(&prefix);
            return wrap(&inline(text, Look::default()), width, &prefix, w);
        }
        wrap(&inline(trimmed, Look::default()), width, "", 0)
    }
}

/// The fence a line opens (three or more backticks or tildes).
fn fence_of(trimmed: &str) -> Option<String> {
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let fence: String = trimmed.chars().take_while(|x| *x == c).collect();
    // A backtick fence's info string has no backtick (else it is inline code).
    let info_ok = c == '~' || !trimmed[fence.len()..].contains('`');
    (fence.len() >= 3 && info_ok).then_some(fence)
}

/// Whether `trimmed` closes the code block `fence` opened: at least as many of its
/// characters, and nothing after them.
fn closes(fence: &str, trimmed: &str) -> bool {
    let c = fence.chars().next();
    let n = trimmed.chars().take_while(|x| Some(*x) == c).count();
    n >= fence.len() && trimmed[n..].trim().is_empty()
}

/// `---`, `***` or `___` (three or more, spaces between allowed).
fn is_rule(trimmed: &str) -> bool {
    let marks: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| marks.chars().all(|c| c.to_string() == *m))
}

/// An ATX heading's level and text.
fn heading(trimmed: &str) -> Option<(usize, &str)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    let rest = &trimmed[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(' ')))
        .then(|| (level, rest.trim().trim_end_matches('#').trim_end()))
}

/// A list item's marker as shown (`•`, or its number) and its text.
fn list_item(trimmed: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(text) = trimmed.strip_prefix(bullet) {
            return Some(("•".to_string(), text));
        }
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    let rest = &trimmed[digits..];
    if (1..=9).contains(&digits) && (rest.starts_with(". ") || rest.starts_with(") ")) {
        return Some((trimmed[..digits + 1].to_string(), &rest[2..]));
    }
    None
}

/// A table's rows aligned by column: cells padded to their column's width with `│`
/// between them, the separator row as `─` and `┼`. A table wider than the screen has its
/// rows wrapped between words instead.
fn table(rows: &[String], width: usize) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let dim = Look {
        dim: true,
        ..Look::default()
    };
    let cells: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            r.trim()
                .trim_start_matches('|')
                .trim_end_matches('|')
                .split('|')
                .map(str::trim)
                .collect()
        })
        .collect();
    let is_rule = |row: &[&str]| {
        row.iter()
            .all(|c| !c.is_empty() && c.chars().all(|x| matches!(x, '-' | ':' | ' ')))
    };
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    let width_of = |c: &str| -> usize {
        inline(c, Look::default())
            .iter()
            .map(|(t, _)| display_width(t))
            .sum()
    };
    let mut widths = vec![0; columns];
    for row in cells.iter().filter(|r| !is_rule(r)) {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(width_of(c));
        }
    }
    let total = widths.iter().sum::<usize>() + 3 * columns.saturating_sub(1);
    if total > width {
        // Too wide to align: each row wrapped between words, its cells still apart.
        let bar = (" │ ".to_string(), dim);
        return cells
            .iter()
            .flat_map(|row| {
                if is_rule(row) {
                    return vec![dim.paint(&"─".repeat(width.min(40)))];
                }
                let mut runs = Vec::new();
                for (i, c) in row.iter().enumerate() {
                    if i > 0 {
                        runs.push(bar.clone());
                    }
                    runs.extend(inline(c, Look::default()));
                }
                wrap(&runs, width, "", 0)
            })
            .collect();
    }
    // Each cell rendered, with its width on the screen; `None` for the separator row.
    let rendered: Vec<Option<Vec<(String, usize)>>> = cells
        .iter()
        .map(|row| {
            (!is_rule(row)).then(|| {
                row.iter()
                    .map(|c| {
                        let runs = inline(c, Look::default());
                        let w = runs.iter().map(|(t, _)| display_width(t)).sum();
                        (runs.into_iter().map(|(t, l)| l.paint(&t)).collect(), w)
                    })
                    .collect()
            })
        })
        .collect();
    rendered
        .iter()
        .map(|row| match row {
            None => dim.paint(
                &widths
                    .iter()
                    .map(|w| "─".repeat(*w))
                    .collect::<Vec<_>>()
                    .join("─┼─"),
            ),
            Some(cells) => cells
                .iter()
                .enumerate()
                .map(|(i, (text, w))| format!("{text}{}", " ".repeat(widths[i].saturating_sub(*w))))
                .collect::<Vec<_>>()
                .join(&dim.paint(" │ "))
                .trim_end()
                .to_string(),
        })
        .collect()
}

/// A line's inline Markdown as styled runs of text.
fn inline(text: &str, base: Look) -> Vec<(String, Look)> {
    let mut out: Vec<(String, Look)> = Vec::new();
    let mut look = base;
    let mut stack: Vec<Look> = Vec::new();
    let mut push = |s: &str, l: Look| out.push((s.to_string(), l));
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) => push(&t, look),
            Event::Code(t) => push(&t, Look { code: true, ..look }),
            Event::SoftBreak | Event::HardBreak => push(" ", look),
            Event::Html(t) | Event::InlineHtml(t) => push(&t, look),
            Event::Start(tag) => {
                stack.push(look);
                match tag {
                    Tag::Strong => look.bold = true,
                    Tag::Emphasis => look.italic = true,
                    Tag::Strikethrough => look.strike = true,
                    Tag::Link { .. } => look.link = true,
                    _ => {}
                }
            }
            Event::End(_) => look = stack.pop().unwrap_or(base),
            _ => {}
        }
    }
    out
}

/// `text` in rows of at most `width` columns, broken between words, dim when `dim`.
pub fn wrap_plain(text: &str, width: usize, dim: bool) -> Vec<String> {
    let look = Look {
        dim,
        ..Look::default()
    };
    wrap(&[(text.to_string(), look)], width.max(10), "", 0)
}

/// The end of `s` that fits in `width` columns.
pub fn tail_fit(s: &str, width: usize) -> String {
    let mut w = 0;
    let mut kept: Vec<char> = s
        .chars()
        .rev()
        .take_while(|c| {
            w += c.width().unwrap_or(0);
            w <= width
        })
        .collect();
    kept.reverse();
    kept.into_iter().collect()
}

/// Display columns of `s` (no escape sequences in it).
fn display_width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `s` cut to `width` columns.
fn cut(s: &str, width: usize) -> String {
    let mut w = 0;
    s.chars()
        .take_while(|c| {
            w += c.width().unwrap_or(0);
            w <= width
        })
        .collect()
}

/// Styled runs laid out in rows of at most `width` columns, breaking between words (a word
/// wider than a row is cut); the first row starts with `prefix`, the others with `indent`
/// spaces.
fn wrap(runs: &[(String, Look)], width: usize, prefix: &str, indent: usize) -> Vec<String> {
    let mut rows = Rows {
        avail: width.saturating_sub(indent).max(1),
        ..Rows::default()
    };
    for (text, look) in runs {
        let mut word = String::new();
        for c in text.chars() {
            if c.is_whitespace() {
                rows.word(&word, *look);
                word.clear();
                rows.space = true;
            } else {
                word.push(c);
            }
        }
        rows.word(&word, *look);
    }
    rows.done.push(rows.row);
    let pad = " ".repeat(indent);
    rows.done
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            if i == 0 {
                format!("{prefix}{r}")
            } else {
                format!("{pad}{r}")
            }
        })
        .collect()
}

/// Rows being filled word by word.
#[derive(Default)]
struct Rows {
    /// Columns a row holds.
    avail: usize,
    done: Vec<String>,
    row: String,
    /// Columns used in `row`.
    used: usize,
    /// White space came since the last word.
    space: bool,
}

impl Rows {
    fn word(&mut self, word: &str, look: Look) {
        if word.is_empty() {
            return;
        }
        let gap = usize::from(self.space && self.used > 0);
        self.space = false;
        let mut rest = word.to_string();
        let mut w = display_width(&rest);
        if self.used > 0 && self.used + gap + w > self.avail {
            self.break_row();
        } else if gap == 1 {
            self.row.push(' ');
            self.used += 1;
        }
        // A word wider than a row: cut it over rows.
        while self.used + w > self.avail {
            let mut head = cut(&rest, self.avail - self.used);
            if head.is_empty() {
                head = rest.chars().take(1).collect();
            }
            self.row.push_str(&look.paint(&head));
            self.break_row();
            rest = rest[head.len()..].to_string();
            w = display_width(&rest);
        }
        self.row.push_str(&look.paint(&rest));
        self.used += w;
    }

    fn break_row(&mut self) {
        self.done.push(std::mem::take(&mut self.row));
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows as the terminal shows them.
    fn plain(rows: &[String]) -> Vec<String> {
        rows.iter()
            .map(|r| crate::terminal_text::strip_sgr(r))
            .collect()
    }

    fn render(text: &str, width: usize) -> Vec<String> {
        let mut md = Markdown::default();
        let mut rows: Vec<String> = text.lines().flat_map(|l| md.line(l, width)).collect();
        rows.extend(md.finish(width));
        rows
    }

    #[test]
    fn markers_are_gone_and_styles_applied() {
        let rows = render(
            "# Title\nSome **bold** and *it* and `code` and ~~old~~.",
            80,
        );
        assert_eq!(
            plain(&rows),
            ["Title", "Some bold and it and code and old."]
        );
        assert!(rows[0].contains("\x1b[1;4m"), "{rows:?}");
        assert!(rows[1].contains("\x1b[1mbold\x1b[0m"), "{rows:?}");
        assert!(rows[1].contains("\x1b[36mcode\x1b[0m"), "{rows:?}");
    }

    #[test]
    fn lists_quotes_rules_and_tables() {
        let rows = render(
            "- one\n  * two\n3. three\n> quoted\n---\n| a | **b** |\n|---|:-:|\n| 1 | 2 |",
            80,
        );
        assert_eq!(
            plain(&rows),
            [
                "• one",
                "  • two",
                "3. three",
                "│ quoted",
                &"─".repeat(40),
                "a │ b",
                "──┼──",
                "1 │ 2"
            ]
        );
        // Columns line up; a table wider than the screen keeps its rows unaligned.
        let table = "| name | size |\n|---|---|\n| alpha | 1 |\nafter";
        assert_eq!(
            plain(&render(table, 80)),
            ["name  │ size", "──────┼─────", "alpha │ 1", "after"]
        );
        assert_eq!(
            plain(&render(table, 10)),
            ["name │", "size", &"─".repeat(10), "alpha │ 1", "after"]
        );
    }

    #[test]
    fn code_blocks_lose_their_fences_and_keep_their_text() {
        let rows = render("```rust\nlet x = **not bold**;\n```\nafter", 80);
        assert_eq!(
            plain(&rows),
            [
                "── rust ──",
                "let x = **not bold**;",
                &"─".repeat(40),
                "after"
            ]
        );
    }

    #[test]
    fn any_text_renders_within_the_width_without_panicking() {
        // Model text is hostile input: pieces of Markdown, wide and combining characters,
        // long words, at every width from the narrowest.
        let pieces = [
            "#",
            "## ",
            "|",
            "| a |",
            "|---|",
            "```",
            "~~~",
            "- ",
            "1. ",
            "> ",
            "**",
            "*",
            "_",
            "`",
            "~~",
            "[x](y)",
            "<b>",
            "日本",
            "e\u{301}",
            "😀",
            " ",
            "  ",
            "word",
            "\t",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "12345678901.",
            "---",
            ":-:",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let n = (next() % 12) as usize;
            let line: String = (0..n)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            let width = 10 + (next() % 40) as usize;
            let mut md = Markdown::default();
            let mut rows = md.line(&line, width);
            rows.extend(md.line(&line, width));
            rows.extend(md.finish(width));
            for row in plain(&rows) {
                assert!(display_width(&row) <= width, "{line:?} at {width}: {row:?}");
            }
        }
    }

    #[test]
    fn words_wrap_by_display_width_never_inside_a_word() {
        let rows = plain(&render("alpha beta gamma delta epsilon", 12));
        assert_eq!(rows, ["alpha beta", "gamma delta", "epsilon"]);
        assert!(rows.iter().all(|r| display_width(r) <= 12));
        // Wide characters count two columns.
        let rows = plain(&render("日本語 日本語 日本語", 14));
        assert_eq!(rows, ["日本語 日本語", "日本語"]);
        // A list item's continuation lines are indented under its text.
        let rows = plain(&render("- aaaa bbbb cccc dddd", 12));
        assert_eq!(rows, ["• aaaa bbbb", "  cccc dddd"]);
        // A word longer than the row is cut over rows.
        let rows = plain(&render("abcdefghijklmnopqrstuvwxyz", 10));
        assert_eq!(rows, ["abcdefghij", "klmnopqrst", "uvwxyz"]);
    }
}
