//! Model-facing text of MCP results kept within 20 KB by cutting its middle, in codex's
//! truncation format, as pi does (tern keeps no copy of the full text).

use tern_ai::ContentBlock;

/// Text of an MCP result beyond this many bytes is cut in the middle.
pub const MCP_OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// `content` unchanged when its text fits; else one text block with the start and the end
/// of the joined text around a `…N chars truncated…` marker, followed by the images.
///
/// ```
/// use tern_ai::ContentBlock;
/// use tern_mcp::output_limit::limit_content;
/// let small = vec![ContentBlock::text("ok")];
/// assert_eq!(limit_content(small.clone()), small);
/// let big = limit_content(vec![ContentBlock::text("a".repeat(30_000))]);
/// let text = big[0].as_text().unwrap();
/// assert!(text.starts_with("Warning: truncated output (original token count: 7500)\nTotal output lines: 1\n\n"));
/// assert!(text.contains("…9520 chars truncated…"));
/// ```
pub fn limit_content(content: Vec<ContentBlock>) -> Vec<ContentBlock> {
    let combined = content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    let total = combined.len();
    if total <= MCP_OUTPUT_MAX_BYTES {
        return content;
    }
    let mut head_end = MCP_OUTPUT_MAX_BYTES / 2;
    while !combined.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = total - (MCP_OUTPUT_MAX_BYTES - MCP_OUTPUT_MAX_BYTES / 2);
    while !combined.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = combined[head_end..tail_start].chars().count();
    // A final newline ends the last line instead of starting another.
    let lines = combined.split('\n').count() - usize::from(combined.ends_with('\n'));
    let text = format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {lines}\n\n{}…{removed} chars truncated…{}",
        total.div_ceil(4),
        &combined[..head_end],
        &combined[tail_start..],
    );
    std::iter::once(ContentBlock::text(text))
        .chain(
            content
                .into_iter()
                .filter(|b| matches!(b, ContentBlock::Image(_))),
        )
        .collect()
}
