//! Output truncation shared by the tools, with pi's limits and notices.
//!
//! Two independent limits, whichever is hit first wins: lines (default 2000) and bytes
//! (default 50 KiB). Head truncation (read, grep, find, ls) keeps the start and never cuts a
//! line; tail truncation (bash) keeps the end and cuts only a last line longer than the cap.

use std::ops::ControlFlow;

use serde::Serialize;

/// Default line cap.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte cap (50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in characters.
pub const GREP_MAX_LINE_CHARS: usize = 500;

/// Which limit cut the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line cap.
    Lines,
    /// The byte cap.
    Bytes,
}

/// What a truncation kept, in pi's `details.truncation` shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The text kept.
    #[serde(skip)]
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole text.
    pub total_lines: usize,
    /// Bytes in the whole text.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail truncation kept only the end of the last line.
    pub last_line_partial: bool,
    /// Head truncation: the first line alone is over the byte cap, nothing was kept.
    pub first_line_exceeds_limit: bool,
    /// The line cap applied.
    pub max_lines: usize,
    /// The byte cap applied.
    pub max_bytes: usize,
}

fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// The lines of `content` and an empty, truncated record of its totals when it exceeds a
/// cap; `Break` with the whole content's record when it fits.
fn cut(
    content: &str,
    max_lines: usize,
    max_bytes: usize,
) -> ControlFlow<Truncation, (Vec<&str>, Truncation)> {
    let lines = split_lines(content);
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return ControlFlow::Break(untouched(content, total_lines, max_lines, max_bytes));
    }
    let mut t = untouched("", 0, max_lines, max_bytes);
    t.total_lines = total_lines;
    t.total_bytes = content.len();
    t.truncated = true;
    ControlFlow::Continue((lines, t))
}

fn untouched(content: &str, lines: usize, max_lines: usize, max_bytes: usize) -> Truncation {
    Truncation {
        content: content.to_string(),
        truncated: false,
        truncated_by: None,
        total_lines: lines,
        total_bytes: content.len(),
        output_lines: lines,
        output_bytes: content.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// Keeps the first lines that fit both caps; never a partial line.
///
/// ```
/// use tern_tools::truncate::truncate_head;
/// let t = truncate_head("a\nb\nc\n", 2, 1000);
/// assert_eq!(t.content, "a\nb");
/// assert!(t.truncated);
/// assert_eq!(t.total_lines, 3);
/// ```
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let (lines, mut t) = match cut(content, max_lines, max_bytes) {
        ControlFlow::Continue(cut) => cut,
        ControlFlow::Break(whole) => return whole,
    };
    if lines.first().is_some_and(|l| l.len() > max_bytes) {
        t.truncated_by = Some(TruncatedBy::Bytes);
        t.first_line_exceeds_limit = true;
        return t;
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(max_lines) {
        let add = line.len() + usize::from(i > 0);
        if bytes + add > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += add;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    t.content = lines[..kept].join("\n");
    t.truncated_by = Some(by);
    t.output_lines = kept;
    t.output_bytes = t.content.len();
    t
}

/// Keeps the last lines that fit both caps; a last line over the byte cap keeps its end.
///
/// ```
/// use tern_tools::truncate::truncate_tail;
/// let t = truncate_tail("a\nb\nc", 2, 1000);
/// assert_eq!(t.content, "b\nc");
/// ```
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let (lines, mut t) = match cut(content, max_lines, max_bytes) {
        ControlFlow::Continue(cut) => cut,
        ControlFlow::Break(whole) => return whole,
    };
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let add = line.len() + usize::from(!kept.is_empty());
        if bytes + add > max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let tail = str_tail_bytes(line, max_bytes);
                bytes = tail.len();
                kept.push(tail.to_string());
                t.last_line_partial = true;
            }
            break;
        }
        kept.push((*line).to_string());
        bytes += add;
    }
    if kept.len() >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    t.content = kept.join("\n");
    t.truncated_by = Some(by);
    t.output_lines = kept.len();
    t.output_bytes = t.content.len();
    t
}

/// The last at most `max_bytes` bytes of `s`, starting on a character boundary.
pub(crate) fn str_tail_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Cuts a line to `max_chars` characters with a `... [truncated]` suffix; says whether it cut.
///
/// ```
/// let (text, cut) = tern_tools::truncate::truncate_line("abcdef", 3);
/// assert_eq!(text, "abc... [truncated]");
/// assert!(cut);
/// ```
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), false),
        Some((idx, _)) => (format!("{}... [truncated]", &line[..idx]), true),
    }
}

/// A byte count as pi prints it: `512B`, `1.5KB`, `2.0MB`.
///
/// ```
/// assert_eq!(tern_tools::truncate::format_size(50 * 1024), "50.0KB");
/// ```
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}
