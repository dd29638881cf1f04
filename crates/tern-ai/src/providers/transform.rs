//! History transforms applied before any API's message conversion (the reference's
//! `transformMessages`): errored turns dropped, foreign thinking dropped, foreign tool-call
//! ids rewritten, orphaned tool calls answered, images downgraded for text-only models.

use crate::Name;
use std::collections::{HashMap, HashSet};

use crate::message::{
    Content, ContentBlock, ImageContent, Message, StopReason, TextContent, ToolResultMessage,
};
use crate::model::Model;

const NON_VISION_USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const NON_VISION_TOOL_IMAGE_PLACEHOLDER: &str =
    "(tool image omitted: model does not support images)";
/// Placeholder for an image moved out of an error tool result.
pub const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// Replaces each run of images with one placeholder text block.
pub fn replace_images_with_placeholder(
    content: &[ContentBlock],
    placeholder: &str,
) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(content.len());
    let mut previous_was_placeholder = false;
    for b in content {
        if matches!(b, ContentBlock::Image(_)) {
            if !previous_was_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder = b.as_text() == Some(placeholder);
        out.push(b.clone());
    }
    out
}

/// Whether the model accepts images.
pub fn accepts_images(model: &Model) -> bool {
    model.input.iter().any(|i| i == "image")
}

/// The transformed history; `normalize_id(id, source_message)` rewrites tool-call ids of
/// messages from another model.
pub fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize_id: &dyn Fn(&str) -> String,
) -> Vec<Message> {
    let images_ok = accepts_images(model);
    let mut id_map: HashMap<Name, Name> = HashMap::new();
    let mut transformed: Vec<Message> = Vec::with_capacity(messages.len());
    for msg in messages {
        match msg {
            Message::User(u) => {
                let mut u = (**u).clone();
                if !images_ok {
                    if let Content::Blocks(b) = &u.content {
                        u.content = Content::Blocks(replace_images_with_placeholder(
                            b,
                            NON_VISION_USER_IMAGE_PLACEHOLDER,
                        ));
                    }
                }
                transformed.push(Message::from(u));
            }
            Message::ToolResult(t) => {
                let mut t = (**t).clone();
                if !images_ok {
                    t.content = replace_images_with_placeholder(
                        &t.content,
                        NON_VISION_TOOL_IMAGE_PLACEHOLDER,
                    );
                }
                if let Some(n) = id_map.get(t.tool_call_id.as_str()) {
                    t.tool_call_id = n.clone();
                }
                transformed.push(Message::from(t));
            }
            Message::Assistant(a) => {
                let same =
                    a.provider == model.provider && a.api == model.api && a.model == model.id;
                let mut a = (**a).clone();
                let mut content = Vec::with_capacity(a.content.len());
                for b in a.content.drain(..) {
                    match b {
                        ContentBlock::Thinking(t) => {
                            if !same {
                                continue;
                            }
                            if t.redacted == Some(true)
                                || t.thinking_signature
                                    .as_deref()
                                    .is_some_and(|s| !s.is_empty())
                            {
                                content.push(ContentBlock::Thinking(t));
                                continue;
                            }
                            if t.thinking.trim().is_empty() {
                                continue;
                            }
                            content.push(ContentBlock::Thinking(t));
                        }
                        ContentBlock::Text(t) => {
                            if same {
                                content.push(ContentBlock::Text(t));
                            } else {
                                content.push(ContentBlock::Text(TextContent {
                                    text: t.text,
                                    text_signature: None,
                                    extra: None,
                                }));
                            }
                        }
                        ContentBlock::ToolCall(mut c) => {
                            if !same {
                                let c = std::sync::Arc::make_mut(&mut c);
                                if let Some(extra) = c.extra.as_mut() {
                                    extra.thought_signature = None;
                                }
                                let n = normalize_id(&c.id);
                                if c.id != n {
                                    let n = Name::unique(&n);
                                    id_map.insert(c.id.clone(), n.clone());
                                    c.id = n;
                                }
                            }
                            content.push(ContentBlock::ToolCall(c));
                        }
                        other => content.push(other),
                    }
                }
                a.content = content;
                transformed.push(Message::from(a));
            }
            other => transformed.push(other.clone()),
        }
    }

    let mut result: Vec<Message> = Vec::with_capacity(transformed.len() + 2);
    let mut pending: Vec<(Name, Name)> = Vec::new();
    let mut existing: HashSet<Name> = HashSet::new();
    let mut held: Vec<Message> = Vec::new();
    let close = |result: &mut Vec<Message>,
                 pending: &mut Vec<(Name, Name)>,
                 existing: &mut HashSet<Name>,
                 held: &mut Vec<Message>| {
        for (id, name) in pending.drain(..) {
            if !existing.contains(&id) {
                result.push(Message::from(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text("No result provided")],
                    is_error: true,
                    timestamp: crate::clock::now_ms(),
                    ..ToolResultMessage::default()
                }));
            }
        }
        existing.clear();
        result.append(held);
    };
    for msg in transformed {
        match &msg {
            Message::Assistant(a) => {
                close(&mut result, &mut pending, &mut existing, &mut held);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let calls: Vec<(Name, Name)> = a
                    .content
                    .iter()
                    .filter_map(|b| b.as_tool_call().map(|c| (c.id.clone(), c.name.clone())))
                    .collect();
                if !calls.is_empty() {
                    pending = calls;
                    existing.clear();
                }
                result.push(msg);
            }
            Message::ToolResult(t) => {
                existing.insert(t.tool_call_id.clone());
                result.push(msg);
            }
            Message::System(_) => {
                if pending.is_empty() {
                    result.push(msg);
                } else {
                    held.push(msg);
                }
            }
            Message::User(_) => {
                close(&mut result, &mut pending, &mut existing, &mut held);
                result.push(msg);
            }
            Message::Custom(_) => result.push(msg),
        }
    }
    close(&mut result, &mut pending, &mut existing, &mut held);
    result
}

/// A rough token estimate of a transcript (characters / 3.5, images 4800 characters).
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let mut chars = 0usize;
    let count = |blocks: &[ContentBlock], chars: &mut usize| {
        for b in blocks {
            match b {
                ContentBlock::Text(t) => *chars += t.text.chars().count(),
                ContentBlock::Thinking(t) => *chars += t.thinking.chars().count(),
                ContentBlock::Image(_) => *chars += 4800,
                ContentBlock::ToolCall(c) => *chars += c.name.len() + c.arguments.to_string().len(),
            }
        }
    };
    for m in messages {
        match m {
            Message::System(s) => chars += s.content.text("\n").chars().count(),
            Message::User(u) => match &u.content {
                Content::Text(t) => chars += t.chars().count(),
                Content::Blocks(b) => count(b, &mut chars),
            },
            Message::Assistant(a) => count(&a.content, &mut chars),
            Message::ToolResult(t) => count(&t.content, &mut chars),
            Message::Custom(_) => {}
        }
    }
    (chars as f64 / 3.5).ceil() as u64
}

/// Sanitizes a tool-call id to `[a-zA-Z0-9_-]`.
pub fn sanitize_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The reference's `shortHash` (two 32-bit multiplicative hashes over UTF-16 units, base 36).
pub fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdeadbeef;
    let mut h2: u32 = 0x41c6ce57;
    for ch in s.encode_utf16() {
        let ch = u32::from(ch);
        h1 = (h1 ^ ch).wrapping_mul(2654435761);
        h2 = (h2 ^ ch).wrapping_mul(1597334677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2246822507) ^ (h2 ^ (h2 >> 13)).wrapping_mul(3266489909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2246822507) ^ (h1 ^ (h1 >> 13)).wrapping_mul(3266489909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// An error tool result's images taken out (Claude rejects error results holding anything
/// but text): its content with a placeholder for them, the caption that goes before them,
/// and the images, which follow all of the turn's tool results (pi-ai's
/// `splitErrorToolResultImages`). `None` for a success or an error without images.
pub(crate) fn split_error_images(
    msg: &ToolResultMessage,
) -> Option<(Vec<ContentBlock>, String, Vec<ImageContent>)> {
    if !msg.is_error {
        return None;
    }
    let images: Vec<ImageContent> = msg
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i.clone()),
            _ => None,
        })
        .collect();
    if images.is_empty() {
        return None;
    }
    Some((
        replace_images_with_placeholder(&msg.content, ERROR_TOOL_IMAGE_PLACEHOLDER),
        format!(
            "Images from the error result of tool call {} ({}):",
            msg.tool_call_id, msg.tool_name
        ),
        images,
    ))
}
