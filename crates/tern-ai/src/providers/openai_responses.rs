//! OpenAI Responses (`POST {baseUrl}/responses`, `stream: true`): output items tracked by
//! `output_index`, reasoning items replayed verbatim from their signature, message ids kept
//! in text signatures, service-tier pricing.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::http::{self, HttpFailure, HttpRequest, SendError};
use super::openai_completions::{http_error_message, json_truthy};
use super::transform::{accepts_images, short_hash, transform_messages};
use super::{compact, compat, cost, has_tool_call, thinking_level_map, EventSink, Output};
use crate::json_parse::ToolCallArgumentsStream;
use crate::message::{
    AssistantMessage, Content, ContentBlock, Message, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolCallExtra, Usage,
};
use crate::model::Model;
use crate::sse::SseDecoder;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{
    collapse_system_messages, get_current_tools, get_system_message_text,
    render_system_message_update,
};

const TOOL_CALL_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];

fn normalize_id_part(part: &str) -> String {
    let s: String = super::transform::sanitize_id(part)
        .chars()
        .take(64)
        .collect();
    s.trim_end_matches('_').to_string()
}

fn parse_text_signature(sig: Option<&str>) -> Option<(String, Option<String>)> {
    let sig = sig.filter(|s| !s.is_empty())?;
    if sig.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(sig) {
            if v.get("v").and_then(Value::as_f64) == Some(1.0) {
                if let Some(id) = v.get("id").and_then(Value::as_str) {
                    let phase = v
                        .get("phase")
                        .and_then(Value::as_str)
                        .filter(|p| *p == "commentary" || *p == "final_answer")
                        .map(str::to_string);
                    return Some((id.to_string(), phase));
                }
            }
        }
    }
    Some((sig.to_string(), None))
}

fn tool_result_output(model: &Model, content: &[ContentBlock]) -> Value {
    let texts: Vec<&str> = content.iter().filter_map(|b| b.as_text()).collect();
    let text = texts.join("\n");
    let images: Vec<&crate::message::ImageContent> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let has_text = !text.trim().is_empty();
    if images.is_empty() || !accepts_images(model) {
        return json!(if has_text {
            text
        } else if !images.is_empty() {
            "(see attached image)".to_string()
        } else {
            "(no tool output)".to_string()
        });
    }
    let mut out = Vec::new();
    if has_text {
        out.push(json!({"type": "input_text", "text": text}));
    }
    for i in images {
        out.push(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)}));
    }
    Value::Array(out)
}

/// Converts a transcript into Responses `input` items.
pub fn convert_messages(model: &Model, messages: &[Message]) -> Vec<Value> {
    let allowed = TOOL_CALL_PROVIDERS.contains(&model.provider.as_str());
    // The source message decides whether a call is foreign; transform passes only the id, so
    // foreignness is decided per assistant message below.
    let mut foreign_ids: HashMap<String, bool> = HashMap::new();
    for m in messages {
        if let Message::Assistant(a) = m {
            let foreign = a.provider != model.provider || a.api != model.api;
            for c in a.tool_calls() {
                foreign_ids.insert(c.id.clone(), foreign);
            }
        }
    }
    let normalize = |id: &str| -> String {
        if !allowed || !id.contains('|') {
            return normalize_id_part(id);
        }
        let mut parts = id.split('|');
        let call = normalize_id_part(parts.next().unwrap_or(""));
        let item_raw = parts.next().unwrap_or("");
        let foreign = foreign_ids.get(id).copied().unwrap_or(false);
        let mut item = if foreign {
            let n = format!("fc_{}", short_hash(item_raw));
            n.chars().take(64).collect()
        } else {
            normalize_id_part(item_raw)
        };
        if !item.starts_with("fc_") {
            item = normalize_id_part(&format!("fc_{item}"));
        }
        format!("{call}|{item}")
    };
    let transformed = transform_messages(messages, model, &normalize);
    let developer = compat(model, "supportsDeveloperRole").and_then(Value::as_bool) != Some(false);
    let instruction_role = if model.reasoning && developer {
        "developer"
    } else {
        "system"
    };
    let mut out: Vec<Value> = Vec::new();
    let mut msg_index = 0usize;
    for (source_index, msg) in transformed.iter().enumerate() {
        let leading_system = source_index == 0 && matches!(msg, Message::System(_));
        match msg {
            Message::System(s) => {
                let text = if leading_system {
                    get_system_message_text(s)
                } else {
                    render_system_message_update(s)
                };
                if !text.is_empty() {
                    out.push(json!({"role": instruction_role, "content": text}));
                }
            }
            Message::User(u) => match &u.content {
                Content::Text(t) => out
                    .push(json!({"role": "user", "content": [{"type": "input_text", "text": t}]})),
                Content::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"type": "input_text", "text": t.text})),
                            ContentBlock::Image(i) => Some(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)})),
                            _ => None,
                        })
                        .collect();
                    if content.is_empty() {
                        msg_index += 1;
                        continue;
                    }
                    out.push(json!({"role": "user", "content": content}));
                }
            },
            Message::Assistant(a) => {
                let same_api = a.provider == model.provider && a.api == model.api;
                let same_model = same_api && a.model == model.id;
                let different_model = same_api && a.model != model.id;
                let mut items: Vec<Value> = Vec::new();
                let mut text_index = 0usize;
                for b in &a.content {
                    match b {
                        ContentBlock::Thinking(t) => {
                            if let Some(sig) =
                                t.thinking_signature.as_deref().filter(|s| !s.is_empty())
                            {
                                if let Ok(v) = serde_json::from_str::<Value>(sig) {
                                    items.push(v);
                                }
                            }
                        }
                        ContentBlock::Text(t) => {
                            let parsed = parse_text_signature(t.text_signature.as_deref());
                            let fallback = if text_index == 0 {
                                format!("msg_pi_{msg_index}")
                            } else {
                                format!("msg_pi_{msg_index}_{text_index}")
                            };
                            text_index += 1;
                            let (mut id, phase) = match parsed {
                                Some((id, phase)) => (id, phase),
                                None => (String::new(), None),
                            };
                            if id.is_empty() {
                                id = fallback;
                            } else if id.encode_utf16().count() > 64 {
                                id = format!("msg_{}", short_hash(&id));
                            }
                            let mut item = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t.text, "annotations": []}], "status": "completed", "id": id});
                            if let Some(p) = phase {
                                item["phase"] = json!(p);
                            }
                            items.push(item);
                        }
                        ContentBlock::ToolCall(c) => {
                            let mut parts = c.id.splitn(2, '|');
                            let call_id = parts.next().unwrap_or("").to_string();
                            let item_id = parts
                                .next()
                                .map(str::to_string)
                                .filter(|i| !different_model && i.starts_with("fc_"));
                            let mut item = Map::new();
                            item.insert("type".into(), json!("function_call"));
                            if let Some(i) = item_id {
                                item.insert("id".into(), json!(i));
                            }
                            item.insert("call_id".into(), json!(call_id));
                            item.insert("name".into(), json!(c.name));
                            item.insert("arguments".into(), json!(compact(&c.arguments)));
                            if same_model {
                                if let Some(ns) = &c.extra().namespace {
                                    item.insert("namespace".into(), json!(ns));
                                }
                            }
                            items.push(Value::Object(item));
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if items.is_empty() {
                    msg_index += 1;
                    continue;
                }
                out.extend(items);
            }
            Message::ToolResult(t) => {
                let call_id = t.tool_call_id.split('|').next().unwrap_or("").to_string();
                out.push(json!({"type": "function_call_output", "call_id": call_id, "output": tool_result_output(model, &t.content)}));
            }
            Message::Custom(_) => {}
        }
        if !leading_system {
            msg_index += 1;
        }
    }
    out
}

/// Builds the request (URL, headers and body) the reference would send.
pub fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> HttpRequest {
    let messages = collapse_system_messages(&context.messages);
    let retention = options
        .cache_retention
        .clone()
        .unwrap_or_else(|| "short".into());
    let cs = |k: &str| compat(model, k).and_then(Value::as_str).map(str::to_string);
    let cb = |k: &str, d: bool| compat(model, k).and_then(Value::as_bool).unwrap_or(d);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "input".into(),
        Value::Array(convert_messages(model, &messages)),
    );
    body.insert("stream".into(), json!(true));
    let key_mode = cs("promptCacheKeyMode").unwrap_or_else(|| "auto".into());
    if retention != "none" && key_mode != "disabled" {
        if let Some(sid) = &options.session_id {
            body.insert(
                "prompt_cache_key".into(),
                json!(sid.chars().take(64).collect::<String>()),
            );
        }
    }
    let explicit = cb("supportsExplicitPromptCacheMode", false);
    let long_ok = cb("supportsLongCacheRetention", true);
    if retention == "long" && long_ok && !explicit {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if explicit {
        if retention == "none" {
            body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
        } else if retention == "long" && long_ok {
            body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
        }
    }
    body.insert("store".into(), json!(false));
    let max_tokens = super::resolve_max_tokens(model, context, options);
    if max_tokens > 0 && cb("supportsMaxOutputTokens", true) {
        body.insert("max_output_tokens".into(), json!(max_tokens.max(16)));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    let tools = get_current_tools(&messages);
    if !tools.is_empty() {
        let strict = cb("supportsStrictMode", false);
        let list: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut f = json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters});
                if strict {
                    f["strict"] = json!(false);
                }
                f
            })
            .collect();
        body.insert("tools".into(), Value::Array(list));
    }
    if let Some(tc) = &options.tool_choice {
        body.insert("tool_choice".into(), tc.clone());
    }
    if model.reasoning {
        if let Some(level) = super::reasoning_effort(model, options) {
            let effort = match thinking_level_map(model, level.as_str()) {
                Some(v) if !v.is_null() => v.clone(),
                _ => json!(level.as_str()),
            };
            body.insert(
                "reasoning".into(),
                json!({"effort": effort, "summary": "auto"}),
            );
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else if model.provider != "github-copilot" {
            match thinking_level_map(model, "off") {
                Some(Value::Null) => {}
                Some(v) => {
                    body.insert("reasoning".into(), json!({"effort": v}));
                }
                None => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
        if model.provider == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }

    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(key) = super::api_key(model, options) {
        headers.push(("Authorization".into(), format!("Bearer {key}")));
    }
    headers.push(("Content-Type".into(), "application/json".into()));
    super::merge_headers(&mut headers, model.headers.as_ref());
    if let Some(sid) = options.session_id.as_ref().filter(|_| retention != "none") {
        let openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        let fmt = cs("sessionAffinityFormat").unwrap_or_else(|| {
            if openrouter {
                "openrouter".into()
            } else {
                "openai".into()
            }
        });
        if fmt == "openrouter" {
            headers.push(("x-session-id".into(), sid.clone()));
        } else {
            if fmt == "openai" {
                headers.push(("session-id".into(), sid.clone()));
            }
            headers.push(("x-client-request-id".into(), sid.clone()));
        }
    }
    super::merge_headers(&mut headers, Some(&options.headers));
    HttpRequest {
        url: format!("{}/responses", model.base_url.trim_end_matches('/')),
        headers,
        body: Value::Object(body),
        ignore_retry_headers: false,
    }
}

fn prefix(model: &Model) -> String {
    if model.provider == "openai" {
        "OpenAI API error".into()
    } else {
        format!("{} API error", model.provider)
    }
}

fn tier_factor(model: &Model, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") | Some("fast") => {
            if model.id == "gpt-5.5" {
                2.5
            } else {
                2.0
            }
        }
        _ => 1.0,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum SlotKind {
    Thinking,
    Text,
    Tool,
}

struct Slot {
    kind: SlotKind,
    index: usize,
    args: Option<ToolCallArgumentsStream>,
}

#[derive(Default)]
struct State {
    slots: HashMap<i64, Slot>,
    unfinished: Vec<usize>,
    reasoning_by_id: HashMap<String, usize>,
    terminal: bool,
}

fn create_slot(out: &mut Output<'_>, st: &mut State, output_index: i64, item: &Value) {
    let s = |k: &str| {
        item.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match item.get("type").and_then(Value::as_str).unwrap_or("") {
        "reasoning" => {
            let i = out.push_block(ContentBlock::Thinking(ThinkingContent::default()));
            st.slots.insert(
                output_index,
                Slot {
                    kind: SlotKind::Thinking,
                    index: i,
                    args: None,
                },
            );
        }
        "message" => {
            if item.get("phase").and_then(Value::as_str) == Some("final_answer") {
                out.update(|m| m.stop_reason = StopReason::Stop);
            }
            let i = out.push_block(ContentBlock::Text(TextContent::default()));
            st.slots.insert(
                output_index,
                Slot {
                    kind: SlotKind::Text,
                    index: i,
                    args: None,
                },
            );
        }
        "function_call" => {
            let mut args = ToolCallArgumentsStream::new();
            let initial = item
                .get("arguments")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty());
            let arguments = match initial {
                Some(a) => args.append(a).clone(),
                None => json!({}),
            };
            let id_part = |k: &str| match item.get(k) {
                Some(Value::String(x)) => x.clone(),
                Some(Value::Null) | None => "undefined".to_string(),
                Some(other) => other.to_string(),
            };
            let i = out.push_block(ContentBlock::tool_call(ToolCall {
                id: format!("{}|{}", id_part("call_id"), id_part("id")),
                name: s("name"),
                arguments,
                extra: ToolCallExtra {
                    namespace: item
                        .get("namespace")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    ..ToolCallExtra::default()
                }
                .into_option(),
            }));
            st.unfinished.push(i);
            st.slots.insert(
                output_index,
                Slot {
                    kind: SlotKind::Tool,
                    index: i,
                    args: Some(args),
                },
            );
        }
        _ => {}
    }
}

fn parse_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| {
        v.and_then(Value::as_f64)
            .map(|f| f.max(0.0) as u64)
            .unwrap_or(0)
    };
    let cached = n(u.pointer("/input_tokens_details/cached_tokens"));
    let write = n(u.pointer("/input_tokens_details/cache_write_tokens"));
    Usage {
        input: n(u.get("input_tokens")).saturating_sub(cached + write),
        output: n(u.get("output_tokens")),
        cache_read: cached,
        cache_write: write,
        reasoning: Some(n(u.pointer("/output_tokens_details/reasoning_tokens"))),
        total_tokens: n(u.get("total_tokens")),
        ..Usage::default()
    }
}

fn finalize(
    resp: &Value,
    model: &Model,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<(), String> {
    st.terminal = true;
    // Backfill encrypted reasoning content announced only in the final output.
    if let Some(items) = resp.get("output").and_then(Value::as_array) {
        for item in items {
            if item.get("type").and_then(Value::as_str) != Some("reasoning") {
                continue;
            }
            let Some(enc) = item.get("encrypted_content").filter(|e| json_truthy(e)) else {
                continue;
            };
            let Some(id) = item.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(&index) = st.reasoning_by_id.get(id) else {
                continue;
            };
            out.update(|m| {
                if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                    if let Some(Ok(Value::Object(mut stored))) = t
                        .thinking_signature
                        .as_deref()
                        .map(serde_json::from_str::<Value>)
                    {
                        if !stored.get("encrypted_content").is_some_and(json_truthy) {
                            stored.insert("encrypted_content".into(), enc.clone());
                            t.thinking_signature = Some(compact(&Value::Object(stored)));
                        }
                    }
                }
            });
        }
    }
    let status = resp
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string);
    let reason = resp
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mapped: (StopReason, Option<String>) = match status.as_deref() {
        None | Some("") | Some("completed") | Some("in_progress") | Some("queued") => {
            (StopReason::Stop, None)
        }
        Some("incomplete") => match reason.as_deref() {
            Some("max_output_tokens") => (StopReason::Length, None),
            Some(r) => (StopReason::Error, Some(format!("Response incomplete: {r}"))),
            None => (
                StopReason::Error,
                Some("Response incomplete without a provider reason".into()),
            ),
        },
        Some("failed") | Some("cancelled") => (StopReason::Error, None),
        Some(other) => return Err(format!("Unhandled stop reason: {other}")),
    };
    let tier = resp
        .get("service_tier")
        .and_then(Value::as_str)
        .map(str::to_string);
    out.update(|m: &mut AssistantMessage| {
        if let Some(id) = resp
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            m.response_id = Some(id.to_string());
        }
        if let Some(u) = resp.get("usage").filter(|u| u.is_object()) {
            m.usage = parse_usage(u);
        }
        cost::calculate_cost(model, &mut m.usage);
        cost::scale_cost(&mut m.usage, tier_factor(model, tier.as_deref()));
        m.raw_stop_reason = match (&status, &reason) {
            (Some(s), Some(r)) => Some(format!("{s}.{r}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(r)) => Some(format!("undefined.{r}")),
            (None, None) => None,
        };
        m.stop_reason = mapped.0;
        m.error_message = mapped.1.clone();
        if has_tool_call(m) && m.stop_reason == StopReason::Stop {
            m.stop_reason = StopReason::ToolUse;
        }
    });
    Ok(())
}

fn handle(ev: &Value, model: &Model, out: &mut Output<'_>, st: &mut State) -> Result<(), String> {
    let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
    let oi = ev.get("output_index").and_then(Value::as_i64).unwrap_or(-1);
    let delta = || {
        ev.get("delta")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let slot_of = |st: &State, kind: SlotKind| {
        st.slots
            .get(&oi)
            .filter(|s| s.kind == kind)
            .map(|s| s.index)
    };
    match ty {
        "response.created" => {
            if let Some(id) = ev.pointer("/response/id").and_then(Value::as_str) {
                out.update(|m| m.response_id = Some(id.to_string()));
            }
        }
        "response.output_item.added" => {
            if let Some(item) = ev.get("item") {
                create_slot(out, st, oi, item);
            }
        }
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
            if let Some(i) = slot_of(st, SlotKind::Thinking) {
                out.append_text(i, &delta());
            }
        }
        "response.reasoning_summary_part.done" => {
            if let Some(i) = slot_of(st, SlotKind::Thinking) {
                out.append_text(i, "\n\n");
            }
        }
        "response.output_text.delta" | "response.refusal.delta" => {
            if let Some(i) = slot_of(st, SlotKind::Text) {
                out.append_text(i, &delta());
            }
        }
        "response.function_call_arguments.delta" => {
            if let Some(slot) = st.slots.get_mut(&oi).filter(|s| s.kind == SlotKind::Tool) {
                if let Some(args) = slot.args.as_mut() {
                    let d = delta();
                    let a = args.append(&d).clone();
                    out.set_tool_arguments(slot.index, a);
                    out.tool_delta(slot.index, &d);
                }
            }
        }
        "response.function_call_arguments.done" => {
            if let Some(slot) = st.slots.get_mut(&oi).filter(|s| s.kind == SlotKind::Tool) {
                if let Some(args) = slot.args.as_mut() {
                    let full = ev.get("arguments").and_then(Value::as_str).unwrap_or("");
                    let d = args.replace(full);
                    out.set_tool_arguments(slot.index, args.partial().clone());
                    if let Some(d) = d.filter(|d| !d.is_empty()) {
                        out.tool_delta(slot.index, &d);
                    }
                }
            }
        }
        "response.output_item.done" => {
            let item = ev.get("item").cloned().unwrap_or(Value::Null);
            let item_type = item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if item_type == "message"
                && item.get("phase").and_then(Value::as_str) == Some("final_answer")
            {
                out.update(|m| m.stop_reason = StopReason::Stop);
            }
            if !st.slots.contains_key(&oi) {
                create_slot(out, st, oi, &item);
            }
            let Some(slot) = st.slots.get(&oi) else {
                return Ok(());
            };
            let index = slot.index;
            match (item_type.as_str(), slot.kind) {
                ("reasoning", SlotKind::Thinking) => {
                    let join = |k: &str| -> String {
                        item.get(k)
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .map(|s| {
                                        s.get("text").and_then(Value::as_str).unwrap_or("undefined")
                                    })
                                    .collect::<Vec<_>>()
                                    .join("\n\n")
                            })
                            .unwrap_or_default()
                    };
                    let summary = join("summary");
                    let content = join("content");
                    let sig = compact(&item);
                    out.update(|m| {
                        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                            if !summary.is_empty() {
                                t.thinking = summary;
                            } else if !content.is_empty() {
                                t.thinking = content;
                            }
                            t.thinking_signature = Some(sig);
                        }
                    });
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        st.reasoning_by_id.insert(id.to_string(), index);
                    }
                    out.end_block(index);
                    st.slots.remove(&oi);
                }
                ("message", SlotKind::Text) => {
                    let text: String = item
                        .get("content")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .map(|c| {
                                    let k = if c.get("type").and_then(Value::as_str)
                                        == Some("output_text")
                                    {
                                        "text"
                                    } else {
                                        "refusal"
                                    };
                                    c.get(k)
                                        .and_then(Value::as_str)
                                        .unwrap_or("undefined")
                                        .to_string()
                                })
                                .collect::<String>()
                        })
                        .unwrap_or_default();
                    let mut sig = Map::new();
                    sig.insert("v".into(), json!(1));
                    if let Some(id) = item.get("id") {
                        sig.insert("id".into(), id.clone());
                    }
                    if let Some(p) = item.get("phase").filter(|p| json_truthy(p)) {
                        sig.insert("phase".into(), p.clone());
                    }
                    out.update(|m| {
                        if let Some(ContentBlock::Text(t)) = m.content.get_mut(index) {
                            t.text = text;
                            t.text_signature = Some(compact(&Value::Object(sig)));
                        }
                    });
                    out.end_block(index);
                    st.slots.remove(&oi);
                }
                ("function_call", SlotKind::Tool) => {
                    if let Some(mut slot) = st.slots.remove(&oi) {
                        if let Some(args) = slot.args.as_mut() {
                            if let Some(a) = item
                                .get("arguments")
                                .and_then(Value::as_str)
                                .filter(|a| !a.is_empty())
                            {
                                args.replace(a);
                            }
                            if let Some(ns) = item.get("namespace").and_then(Value::as_str) {
                                out.update(|m| {
                                    if let Some(ContentBlock::ToolCall(c)) =
                                        m.content.get_mut(index)
                                    {
                                        std::sync::Arc::make_mut(c).extra_mut().namespace =
                                            Some(ns.to_string());
                                    }
                                });
                            }
                            st.unfinished.retain(|i| *i != index);
                            out.finish_tool_call(index, args);
                        }
                    }
                }
                _ => {}
            }
        }
        "response.completed" | "response.incomplete" => {
            let resp = ev.get("response").cloned().unwrap_or(Value::Null);
            finalize(&resp, model, out, st)?;
        }
        "error" => {
            let code = ev
                .get("code")
                .map(|c| {
                    c.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| c.to_string())
                })
                .unwrap_or_else(|| "undefined".into());
            let msg = ev
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("undefined");
            return Err(format!("Error Code {code}: {msg}"));
        }
        "response.failed" => {
            st.terminal = true;
            let resp = ev.get("response").cloned().unwrap_or(Value::Null);
            if let Some(s) = resp.get("status").and_then(Value::as_str) {
                out.update(|m| m.raw_stop_reason = Some(s.to_string()));
            }
            let err = resp.get("error").filter(|e| json_truthy(e));
            let text = |v: Option<&Value>, d: &str| {
                v.and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or(d)
                    .to_string()
            };
            let msg = if let Some(e) = err {
                format!(
                    "{}: {}",
                    text(e.get("code"), "unknown"),
                    text(e.get("message"), "no message")
                )
            } else if let Some(r) = resp
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                format!("incomplete: {r}")
            } else {
                "Unknown error (no error details in response)".to_string()
            };
            return Err(msg);
        }
        _ => {}
    }
    Ok(())
}

fn process(
    data: &str,
    event: Option<&str>,
    model: &Model,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<bool, String> {
    if data.starts_with("[DONE]") {
        return Ok(false);
    }
    let value: Value = serde_json::from_str(data)
        .map_err(|_| "Error reading response: malformed server-sent event JSON.".to_string())?;
    let err = value.get("error").filter(|e| json_truthy(e));
    if event == Some("error") || err.is_some() {
        let e = if event == Some("error") {
            &value
        } else {
            err.unwrap_or(&value)
        };
        let msg = match e.get("message") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            Some(m) if json_truthy(m) => compact(m),
            _ => compact(e),
        };
        return Err(msg);
    }
    handle(&value, model, out, st)?;
    Ok(true)
}

/// The SDK message of an HTTP failure (same SDK as Chat Completions).
pub fn sdk_message(f: &HttpFailure) -> String {
    super::openai_completions::sdk_message(f)
}

/// Streams one response into `sink`.
pub async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn EventSink,
) {
    let mut out = Output::new(model, sink);
    let pfx = prefix(model);
    let req = build_request(model, context, options);
    let Some(response) = super::send_or_fail(&req, options, &mut out, &sdk_message, |f| {
        http_error_message(f, Some(&pfx))
    })
    .await
    else {
        return;
    };
    read_body(model, options, &mut out, http::Body::Http(response)).await;
}

/// Maps a streaming response body to events (everything after the response head).
pub(crate) async fn read_body(
    model: &Model,
    options: &StreamOptions,
    out: &mut Output<'_>,
    mut body: http::Body,
) {
    let pfx = prefix(model);
    out.start();
    let mut st = State::default();
    let mut decoder = SseDecoder::new();
    let mut events: Vec<(Option<String>, String)> = Vec::new();
    let result: Result<(), (String, bool)> = 'read: loop {
        let chunk = match body.next_chunk(options).await {
            Ok(c) => c,
            Err(SendError::Aborted) => break Err(("Request was aborted".into(), true)),
            Err(SendError::Network(m) | SendError::Message(m)) => break Err((m, false)),
            Err(SendError::Status(f)) => break Err((http_error_message(&f, Some(&pfx)), false)),
        };
        match &chunk {
            Some(c) => {
                if let Err(e) = decoder.feed(c, &mut |e| events.push((e.event, e.data))) {
                    break Err((e.to_string(), false));
                }
            }
            None => decoder.finish(&mut |e| events.push((e.event, e.data))),
        }
        for (ev, data) in events.drain(..) {
            match process(&data, ev.as_deref(), model, out, &mut st) {
                Ok(true) => {}
                Ok(false) => break 'read Ok(()),
                Err(m) => break 'read Err((m, false)),
            }
        }
        if chunk.is_none() {
            break Ok(());
        }
    };
    let result = result.and_then(|()| {
        if !st.terminal {
            return Err(("OpenAI Responses stream ended before a terminal response event".to_string(), false));
        }
        let reason = out.with(|m| m.stop_reason);
        if reason == StopReason::ToolUse {
            if let Some(&i) = st.unfinished.first() {
                let (name, id) = out.with(|m| match m.content.get(i) {
                    Some(ContentBlock::ToolCall(c)) => (c.name.clone(), c.id.clone()),
                    _ => (String::new(), String::new()),
                });
                return Err((format!("OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"), false));
            }
        }
        Ok(())
    });
    if let Err((m, aborted)) = result {
        out.fail(m, aborted || options.signal.is_cancelled());
        return;
    }
    if options.signal.is_cancelled() {
        out.fail("Request was aborted".into(), true);
        return;
    }
    let (reason, err) = out.with(|m| (m.stop_reason, m.error_message.clone()));
    match reason {
        StopReason::Pending => out.fail(
            "OpenAI Responses stream ended without a stop reason".into(),
            false,
        ),
        StopReason::Error | StopReason::Aborted => out.fail(
            err.unwrap_or_else(|| "An unknown error occurred".into()),
            false,
        ),
        _ => out.done(),
    }
}
