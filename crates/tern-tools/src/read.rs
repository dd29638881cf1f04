//! `read`: a file's text by line range, or an image as an image block.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tern_agent::{AgentTool, Replay, ToolExecutionMode, ToolResult};
use tern_ai::{ContentBlock, ImageContent};
use tokio_util::sync::CancellationToken;

use crate::cancel::{blocking, ABORTED};
use crate::config::{config_tool, ToolConfig};
use crate::confine::{enforce_path_rules, resolve_path, ResolvedPath};
use crate::truncate::{format_size, truncate_head, TruncatedBy};

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Path to the file to read (relative or absolute)
    pub path: String,
    /// Line number to start reading from (1-indexed)
    #[serde(default)]
    pub offset: Option<u64>,
    /// Maximum number of lines to read
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Bytes looked at to tell text, image and binary apart.
const SNIFF_BYTES: usize = 8192;

/// The `read` tool (parallel).
///
/// ```
/// let tool = tern_tools::read_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.name(), "read");
/// ```
pub fn read_tool(config: &ToolConfig) -> AgentTool {
    let description = format!(
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to {} lines or {} (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
        config.max_output_lines,
        format_size(config.max_output_bytes)
    );
    config_tool(
        config,
        "read",
        &description,
        |config, args: ReadArgs, call| async move {
            let resolved = resolve_path(&config, &args.path)?;
            let signal = call.signal.clone();
            let result = blocking(&signal, move |token| {
                read_blocking(&config, &resolved, &args, &token)
            })
            .await?;
            Ok(result)
        },
    )
    .with_execution_mode(ToolExecutionMode::Parallel)
    // Reading twice changes nothing, so a call cut by a crash is simply run again.
    .with_replay(Replay::Safe)
}

fn read_blocking(
    config: &ToolConfig,
    resolved: &ResolvedPath,
    args: &ReadArgs,
    token: &CancellationToken,
) -> Result<ToolResult, String> {
    let display = resolved.display.as_str();
    enforce_path_rules(config, "read", resolved)?;
    let root = resolved.open_root()?;
    let (mut file, id) = root
        .open_regular(&resolved.relative)
        .map_err(|e| e.describe(display))?;
    let mut head = vec![0u8; SNIFF_BYTES];
    let mut filled = 0usize;
    while filled < head.len() {
        let n = file
            .read(&mut head[filled..])
            .map_err(|e| describe_io(display, &e))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    head.truncate(filled);

    if let Some(mime) = image_mime(&head[..head.len().min(IMAGE_SNIFF_BYTES)]) {
        return read_image(config, file, head, display, mime, id.size());
    }
    if head.contains(&0) {
        return Err(format!(
            "Cannot read {display}: it is a binary file ({}), not text or a supported image. Use bash (for example `file` or `xxd | head`) to inspect it.",
            format_size(id.size() as usize)
        ));
    }

    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    read_text(config, reader, display, args, token)
}

fn describe_io(display: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("File not found: {display}"),
        std::io::ErrorKind::PermissionDenied => format!("Permission denied: {display}"),
        _ => format!("Cannot read {display}: {e}"),
    }
}

fn read_image(
    config: &ToolConfig,
    mut file: File,
    head: Vec<u8>,
    display: &str,
    mime: &str,
    size: u64,
) -> Result<ToolResult, String> {
    if size > config.max_image_bytes {
        return Ok(ToolResult::text(format!(
            "Read image file [{mime}]\nThe image is {}, over the {} limit for attachments; it was not attached.",
            format_size(size as usize),
            format_size(config.max_image_bytes as usize)
        )));
    }
    // The rest of the same open file: the bytes sniffed are the bytes sent.
    let mut bytes = head;
    file.by_ref()
        .take(config.max_image_bytes.saturating_sub(bytes.len() as u64) + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| describe_io(display, &e))?;
    if bytes.len() as u64 > config.max_image_bytes {
        return Err(format!(
            "Cannot read {display}: the image grew past the {} limit while it was read.",
            format_size(config.max_image_bytes as usize)
        ));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(ToolResult {
        content: Some(vec![
            ContentBlock::text(format!("Read image file [{mime}]")),
            ContentBlock::Image(ImageContent {
                data,
                mime_type: mime.to_string(),
                extra: None,
            }),
        ]),
        ..Default::default()
    })
}

/// Bytes pi looks at to recognize an image.
const IMAGE_SNIFF_BYTES: usize = 4100;

/// The image type from its header, for the types pi sends as attachments, checked as pi
/// checks them: a PNG needs its `IHDR` chunk and is not animated, a JPEG is not JPEG-LS
/// (`FF D8 FF F7`), a BMP needs consistent header fields (sizes, one plane, a real depth).
fn image_mime(head: &[u8]) -> Option<&'static str> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    if head.starts_with(&[0xff, 0xd8, 0xff]) {
        (head.get(3) != Some(&0xf7)).then_some("image/jpeg")
    } else if head.starts_with(PNG) {
        (is_png(head) && !is_animated_png(head)).then_some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"BM") && is_bmp(head) {
        Some("image/bmp")
    } else {
        None
    }
}

fn u32_be(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u16_le(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn is_png(b: &[u8]) -> bool {
    b.len() >= 16 && u32_be(b, 8) == 13 && &b[12..16] == b"IHDR"
}

/// An `acTL` chunk before the first `IDAT` makes an animated PNG, which pi does not attach.
fn is_animated_png(b: &[u8]) -> bool {
    let mut offset = 8usize;
    while offset + 8 <= b.len() {
        let len = u32_be(b, offset) as usize;
        match &b[offset + 4..offset + 8] {
            b"acTL" => return true,
            b"IDAT" => return false,
            _ => {}
        }
        let next = offset.saturating_add(12).saturating_add(len);
        if next > b.len() {
            return false;
        }
        offset = next;
    }
    false
}

fn is_bmp(b: &[u8]) -> bool {
    if b.len() < 26 {
        return false;
    }
    let file_size = u32_le(b, 2);
    let pixel_offset = u32_le(b, 10);
    let dib_size = u32_le(b, 14);
    if file_size != 0 && file_size < 26 {
        return false;
    }
    if u64::from(pixel_offset) < 14 + u64::from(dib_size) {
        return false;
    }
    if file_size != 0 && pixel_offset >= file_size {
        return false;
    }
    let (planes, bits) = match dib_size {
        12 => (u16_le(b, 22), u16_le(b, 24)),
        40..=124 if b.len() >= 30 => (u16_le(b, 26), u16_le(b, 28)),
        _ => return false,
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// Selected lines of a text, stored only as far as the caps can show them.
struct Selection {
    stored: Vec<String>,
    stored_bytes: usize,
    /// Lines in the file (a final line without newline counts; an empty file has 0).
    total_file_lines: u64,
    /// Byte length of the first selected line.
    first_line_bytes: usize,
    selected: u64,
}

fn read_text(
    config: &ToolConfig,
    mut reader: impl BufRead,
    display: &str,
    args: &ReadArgs,
    token: &CancellationToken,
) -> Result<ToolResult, String> {
    let start = args.offset.unwrap_or(1).max(1) - 1;
    let end = args.limit.map(|l| start.saturating_add(l));
    let max_bytes = config.max_output_bytes;
    let max_lines = config.max_output_lines;

    let mut sel = Selection {
        stored: Vec::new(),
        stored_bytes: 0,
        total_file_lines: 0,
        first_line_bytes: 0,
        selected: 0,
    };
    let mut line_no: u64 = 0;
    let mut current: Vec<u8> = Vec::new();
    let mut current_len = 0usize;
    let mut open_line = false;
    let store_cap = max_bytes + 1;

    let mut finish_line = |line_no: u64, current: &mut Vec<u8>, current_len: usize| {
        let selected = line_no >= start && end.is_none_or(|e| line_no < e);
        if selected {
            if sel.selected == 0 {
                sel.first_line_bytes = current_len;
            }
            sel.selected += 1;
            // One line past the caps is stored so head truncation sees that there is more.
            if sel.stored.len() <= max_lines && sel.stored_bytes <= max_bytes {
                let text = String::from_utf8_lossy(current).into_owned();
                sel.stored_bytes += text.len() + usize::from(!sel.stored.is_empty());
                sel.stored.push(text);
            }
        }
        current.clear();
    };

    loop {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        let buf = reader
            .fill_buf()
            .map_err(|e| format!("Cannot read {display}: {e}"))?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut pos = 0usize;
        while pos < len {
            let (segment, newline) = match buf[pos..].iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[pos..pos + i], true),
                None => (&buf[pos..], false),
            };
            let selected = line_no >= start && end.is_none_or(|e| line_no < e);
            if selected && current.len() < store_cap {
                let room = store_cap - current.len();
                current.extend_from_slice(&segment[..segment.len().min(room)]);
            }
            current_len += segment.len();
            open_line = true;
            pos += segment.len();
            if newline {
                pos += 1;
                finish_line(line_no, &mut current, current_len);
                current_len = 0;
                open_line = false;
                line_no += 1;
            }
        }
        reader.consume(len);
    }
    if open_line {
        finish_line(line_no, &mut current, current_len);
        line_no += 1;
    }
    sel.total_file_lines = line_no;

    if start > 0 && start >= sel.total_file_lines {
        return Err(format!(
            "Offset {} is beyond end of file ({} lines total)",
            start + 1,
            sel.total_file_lines
        ));
    }

    let joined = sel.stored.join("\n");
    let truncation = truncate_head(&joined, max_lines, max_bytes);
    let first = start + 1;
    let total = sel.total_file_lines;
    let (text, details) = if truncation.first_line_exceeds_limit {
        (
            format!(
                "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {display} | head -c {max_bytes}]",
                format_size(sel.first_line_bytes),
                format_size(max_bytes)
            ),
            Some(json!({ "truncation": truncation })),
        )
    } else if truncation.truncated {
        let last = first + truncation.output_lines as u64 - 1;
        let next = last + 1;
        let notice = match truncation.truncated_by {
            Some(TruncatedBy::Bytes) => format!(
                "[Showing lines {first}-{last} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(max_bytes)
            ),
            _ => format!("[Showing lines {first}-{last} of {total}. Use offset={next} to continue.]"),
        };
        (
            format!("{}\n\n{notice}", truncation.content),
            Some(json!({ "truncation": truncation })),
        )
    } else if end.is_some_and(|e| e < total) {
        let shown_end = end.unwrap_or(total);
        let remaining = total - shown_end;
        (
            format!(
                "{}\n\n[{remaining} more lines in file. Use offset={} to continue.]",
                truncation.content,
                shown_end + 1
            ),
            None,
        )
    } else {
        (truncation.content, None)
    };
    let mut result = ToolResult::text(text);
    result.details = details;
    Ok(result)
}
