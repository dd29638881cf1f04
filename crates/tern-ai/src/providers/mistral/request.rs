//! The Mistral request: messages with tool-call ids of nine letters and digits, thinking
//! replayed as `thinking` chunks, images as data URLs (or notes for text-only models), the
//! reasoning parameter from the thinking map, the prompt-cache key and `x-affinity` header.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::message::{Content, ContentBlock, Message};
use crate::model::Model;
use crate::providers::driver::{Built, Credentials, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::js_json::compact;
use crate::providers::model_options::{api_key, compat, merge_headers, resolve_max_tokens};
use crate::providers::thinking::{reasoning_effort, thinking_level_map};
use crate::providers::transform::{short_hash, transform_messages};
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{collapse_system_messages, get_current_tools, system_message_text};

/// Mistral accepts tool-call ids of exactly this many letters and digits.
const TOOL_CALL_ID_LENGTH: usize = 9;

/// The most of an error body shown in a message (UTF-16 units, as the reference counts).
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// The id Mistral accepts for `id`: the id itself when it already is nine letters and digits,
/// else a hash of it (`attempt` > 0 after a collision).
pub(super) fn derive_tool_call_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == TOOL_CALL_ID_LENGTH {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        &normalized
    };
    let seed = match attempt {
        0 => base.to_string(),
        n => format!("{base}:{n}"),
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(TOOL_CALL_ID_LENGTH)
        .collect()
}

/// Maps history ids to Mistral ids, one per original id, never two originals to one id.
#[derive(Default)]
struct IdNormalizer {
    ids: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl IdNormalizer {
    fn normalize(&mut self, id: &str) -> String {
        if let Some(known) = self.ids.get(id) {
            return known.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_tool_call_id(id, attempt);
            match self.owners.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.ids.insert(id.to_string(), candidate.clone());
                    self.owners.insert(candidate.clone(), id.to_string());
                    return candidate;
                }
            }
        }
    }
}

fn data_url(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

/// The text of a tool result, with the notes the reference adds for errors and images.
fn tool_result_text(text: &str, has_images: bool, images_ok: bool, is_error: bool) -> String {
    let trimmed = text.trim();
    let error = if is_error { "[tool error] " } else { "" };
    if !trimmed.is_empty() {
        let note = if has_images && !images_ok {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{error}{trimmed}{note}");
    }
    let body = match (has_images, images_ok) {
        (true, true) => "(see attached image)",
        (true, false) => "(image omitted: model does not support images)",
        (false, _) => "(no tool output)",
    };
    format!("{error}{body}")
}

/// Converts a transcript (already transformed for the model) into Mistral `messages`.
fn convert_messages(messages: &[Message], images_ok: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for (index, msg) in messages.iter().enumerate() {
        match msg {
            Message::System(s) => {
                let text = system_message_text(s, index == 0);
                if !text.is_empty() {
                    out.push(json!({"role": "system", "content": text}));
                }
            }
            Message::User(u) => match &u.content {
                Content::Text(t) => out.push(json!({"role": "user", "content": t})),
                Content::Blocks(blocks) => {
                    let had_images = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                    let parts: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                            ContentBlock::Image(i) if images_ok => Some(
                                json!({"type": "image_url", "image_url": data_url(&i.mime_type, &i.data)}),
                            ),
                            _ => None,
                        })
                        .collect();
                    if !parts.is_empty() {
                        out.push(json!({"role": "user", "content": parts}));
                    } else if had_images && !images_ok {
                        out.push(json!({"role": "user", "content": "(image omitted: model does not support images)"}));
                    }
                }
            },
            Message::Assistant(a) => {
                let mut parts = Vec::new();
                let mut calls = Vec::new();
                for b in &a.content {
                    match b {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            parts.push(json!({"type": "text", "text": t.text}));
                        }
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            parts.push(json!({"type": "thinking", "thinking": [{"type": "text", "text": t.thinking}]}));
                        }
                        ContentBlock::ToolCall(c) => calls.push(json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": compact(&c.arguments)},
                            "index": 0,
                        })),
                        _ => {}
                    }
                }
                if parts.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert("prefix".into(), json!(false));
                if !parts.is_empty() {
                    m.insert("content".into(), Value::Array(parts));
                }
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            Message::ToolResult(t) => {
                let text: Vec<&str> = t.content.iter().filter_map(|b| b.as_text()).collect();
                let has_images = t
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Image(_)));
                let mut content = vec![json!({
                    "type": "text",
                    "text": tool_result_text(&text.join("\n"), has_images, images_ok, t.is_error),
                })];
                if images_ok {
                    content.extend(t.content.iter().filter_map(|b| match b {
                        ContentBlock::Image(i) => Some(json!({"type": "image_url", "image_url": data_url(&i.mime_type, &i.data)})),
                        _ => None,
                    }));
                }
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": t.tool_call_id,
                    "name": t.tool_name,
                    "content": content,
                }));
            }
            Message::Custom(_) => {}
        }
    }
    out
}

/// `tool_choice`: the names Mistral knows as they are, a tool choice object as its name.
fn tool_choice(choice: &Value) -> Option<Value> {
    match choice {
        Value::String(s) if s.is_empty() => None,
        Value::String(_) => Some(choice.clone()),
        Value::Null | Value::Bool(false) => None,
        other => {
            let name = other
                .pointer("/function/name")
                .cloned()
                .unwrap_or(Value::Null);
            Some(json!({"type": "function", "function": {"name": name}}))
        }
    }
}

/// Whether the prompt-cache key and affinity header are sent.
fn caches(options: &StreamOptions) -> Option<&str> {
    let retention = options.cache_retention.as_deref().unwrap_or("short");
    options
        .session_id
        .as_deref()
        .filter(|s| retention != "none" && !s.is_empty())
}

/// `reasoning_effort` from the thinking map, or `prompt_mode` for a reasoning model without
/// one: (effort, prompt mode).
fn reasoning_fields(model: &Model, options: &StreamOptions) -> (Option<Value>, bool) {
    let level = reasoning_effort(model, options);
    let has_map = model.reasoning
        && model
            .extra
            .get("thinkingLevelMap")
            .is_some_and(Value::is_object);
    if !has_map {
        return (None, model.reasoning && level.is_some());
    }
    let effort = match level {
        Some(l) => Some(
            thinking_level_map(model, l.as_str())
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| json!("high")),
        ),
        None => thinking_level_map(model, "off").cloned(),
    };
    let truthy = |v: &Value| match v {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    };
    (effort.filter(truthy), false)
}

fn truncate_error_text(text: &str) -> String {
    let units = text.encode_utf16().count();
    if units <= MAX_ERROR_BODY_CHARS {
        return text.to_string();
    }
    let kept: Vec<u16> = text.encode_utf16().take(MAX_ERROR_BODY_CHARS).collect();
    format!(
        "{}... [truncated {} chars]",
        String::from_utf16_lossy(&kept),
        units - MAX_ERROR_BODY_CHARS
    )
}

impl WireApi for super::Mistral {
    const CREDENTIALS: Credentials = Credentials::ApiKey;
    // The reference reads the stream with `fetch`: no SDK, no retries, and an abort is the
    // signal's own error.
    const RETRIES: bool = false;
    const ABORT_MESSAGE: &'static str = "This operation was aborted";

    type Stream = super::stream::State;

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let mid_conversation_system = compat(model, "supportsMidConvoSystemMessages")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let messages = if mid_conversation_system {
            context.messages.to_vec()
        } else {
            collapse_system_messages(&context.messages)
        };
        let ids = RefCell::new(IdNormalizer::default());
        let transformed =
            transform_messages(&messages, model, &|id| ids.borrow_mut().normalize(id));
        let images_ok = model.input.iter().any(|i| i == "image");

        let mut body = Map::new();
        body.insert("model".into(), json!(model.id));
        body.insert("stream".into(), json!(true));
        body.insert(
            "messages".into(),
            Value::Array(convert_messages(&transformed, images_ok)),
        );
        let tools = get_current_tools(&messages);
        if !tools.is_empty() {
            let supports_strict = compat(model, "supportsStrictMode")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let tools = tools
                .iter()
                .map(|t| {
                    use crate::providers::constrained;
                    let (strict, parameters) = constrained::sent(t, supports_strict, None)?;
                    Ok(json!({"type": "function", "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": parameters,
                        "strict": strict,
                    }}))
                })
                .collect::<Result<Vec<Value>, String>>()?;
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        body.insert(
            "max_tokens".into(),
            json!(resolve_max_tokens(model, context, options)),
        );
        if let Some(choice) = options.tool_choice.as_ref().and_then(tool_choice) {
            body.insert("tool_choice".into(), choice);
        }
        let (effort, prompt_mode) = reasoning_fields(model, options);
        if prompt_mode {
            body.insert("prompt_mode".into(), json!("reasoning"));
        }
        if let Some(effort) = effort {
            body.insert("reasoning_effort".into(), effort);
        }
        if let Some(session) = caches(options) {
            body.insert("prompt_cache_key".into(), json!(session));
        }

        let key = api_key(model, options).unwrap_or_default();
        let mut headers = vec![
            ("accept".to_string(), "text/event-stream".to_string()),
            ("authorization".to_string(), format!("Bearer {key}")),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        let explicit_affinity = model
            .headers
            .iter()
            .flat_map(|h| h.keys())
            .chain(options.headers.keys())
            .any(|k| k.eq_ignore_ascii_case("x-affinity"));
        if let (Some(session), false) = (caches(options), explicit_affinity) {
            headers.push(("x-affinity".into(), session.to_string()));
        }
        Ok(HttpRequest::to_base_url(
            model,
            "/v1/chat/completions",
            headers,
            body,
        ))
    }

    fn sdk_message(f: &HttpFailure) -> String {
        let body = f.body.trim();
        if !body.is_empty() {
            return format!(
                "Mistral API error ({}): {}",
                f.status,
                truncate_error_text(body)
            );
        }
        let text = if f.status_text.is_empty() {
            format!("Request failed with status {}", f.status)
        } else {
            f.status_text.clone()
        };
        format!("Mistral API error ({}): {text}", f.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_nine_letters_and_digits_are_kept_and_others_hashed() {
        assert_eq!(derive_tool_call_id("Ab1Cd2Ef3", 0), "Ab1Cd2Ef3");
        assert_eq!(derive_tool_call_id("toolcall:0", 0), "toolcall0");
        let hashed = derive_tool_call_id("call_img_1|fc_0001", 0);
        assert_eq!(hashed.len(), TOOL_CALL_ID_LENGTH);
        assert_ne!(derive_tool_call_id("call_img_1|fc_0001", 1), hashed);
    }

    #[test]
    fn two_ids_never_share_a_mistral_id() {
        let mut n = IdNormalizer::default();
        let a = n.normalize("Ab1Cd2Ef3");
        let b = n.normalize("Ab1-Cd2-Ef3");
        assert_ne!(a, b);
        assert_eq!(n.normalize("Ab1-Cd2-Ef3"), b);
    }
}
