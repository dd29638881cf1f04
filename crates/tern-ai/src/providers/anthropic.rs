//! Anthropic Messages (`POST {baseUrl}/v1/messages?beta=true`, `stream: true`): prompt
//! caching markers, budget or adaptive thinking, signed and redacted thinking replay, tool
//! results grouped into one user turn, and pi-ai's own SSE reader (dispatch by event name).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::http::{self, HttpFailure, HttpRequest, SendError};
use super::transform::{transform_messages, ERROR_TOOL_IMAGE_PLACEHOLDER};
use super::{compact, compat, cost, thinking_level_map, EventSink, Output};
use crate::json_parse::{parse_json_with_repair, ToolCallArgumentsStream};
use crate::message::{
    Content, ContentBlock, ImageContent, Message, StopReason, TextContent, ThinkingContent,
    ThinkingLevel, ToolCall, ToolResultMessage,
};
use crate::model::Model;
use crate::sse::SseDecoder;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{
    collapse_system_messages, get_current_tools, get_initial_system_message,
    get_system_message_text,
};

const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";

fn compat_bool(model: &Model, key: &str, default: bool) -> bool {
    compat(model, key)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

fn image_block(img: &ImageContent) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": img.mime_type, "data": img.data}})
}

fn convert_content_blocks(content: &[ContentBlock]) -> Value {
    let has_images = content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
    if !has_images {
        let texts: Vec<&str> = content.iter().filter_map(|b| b.as_text()).collect();
        return json!(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
            ContentBlock::Image(i) => Some(image_block(i)),
            _ => None,
        })
        .collect();
    if !blocks.iter().any(|b| b["type"] == "text") {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

fn normalize_tool_call_id(id: &str) -> String {
    super::transform::sanitize_id(id).chars().take(64).collect()
}

fn split_error_images(
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
        super::transform::replace_images_with_placeholder(
            &msg.content,
            ERROR_TOOL_IMAGE_PLACEHOLDER,
        ),
        format!(
            "Images from the error result of tool call {} ({}):",
            msg.tool_call_id, msg.tool_name
        ),
        images,
    ))
}

fn convert_messages(
    messages: &[Message],
    cache_control: Option<&Value>,
    allow_empty_signature: bool,
) -> Vec<Value> {
    let mut params: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::System(s) => {
                let text = crate::transcript::render_system_message_update(s);
                if !text.is_empty() {
                    params.push(
                        json!({"role": "system", "content": [{"type": "text", "text": text}]}),
                    );
                }
            }
            Message::User(u) => match &u.content {
                Content::Text(t) => {
                    if !t.trim().is_empty() {
                        params.push(json!({"role": "user", "content": t}));
                    }
                }
                Content::Blocks(blocks) => {
                    let out: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(image_block(img)),
                            _ => None,
                        })
                        .collect();
                    if !out.is_empty() {
                        params.push(json!({"role": "user", "content": out}));
                    }
                }
            },
            Message::Assistant(a) => {
                let mut blocks: Vec<Value> = Vec::new();
                for b in &a.content {
                    match b {
                        ContentBlock::Text(t) => {
                            if !t.text.trim().is_empty() {
                                blocks.push(json!({"type": "text", "text": t.text}));
                            }
                        }
                        ContentBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                blocks.push(json!({"type": "redacted_thinking", "data": t.thinking_signature}));
                                continue;
                            }
                            let sig = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty());
                            if t.thinking.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            match sig {
                                None if allow_empty_signature => {
                                    blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": ""}))
                                }
                                None => blocks.push(json!({"type": "text", "text": t.thinking})),
                                Some(s) => blocks.push(json!({"type": "thinking", "thinking": t.thinking, "signature": s})),
                            }
                        }
                        ContentBlock::ToolCall(c) => {
                            blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}));
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if !blocks.is_empty() {
                    params.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                let mut results: Vec<Value> = Vec::new();
                let mut images: Vec<Value> = Vec::new();
                while let Some(Message::ToolResult(t)) = messages.get(i) {
                    let split = split_error_images(t);
                    let content = match &split {
                        Some((c, _, _)) => convert_content_blocks(c),
                        None => convert_content_blocks(&t.content),
                    };
                    results.push(json!({"type": "tool_result", "tool_use_id": t.tool_call_id, "content": content, "is_error": t.is_error}));
                    if let Some((_, caption, imgs)) = split {
                        images.push(json!({"type": "text", "text": caption}));
                        images.extend(imgs.iter().map(image_block));
                    }
                    i += 1;
                }
                results.extend(images);
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
            Message::Custom(_) => {}
        }
        i += 1;
    }
    if let (Some(cc), Some(last)) = (cache_control, params.last_mut()) {
        let role = last["role"].as_str().unwrap_or("").to_string();
        if role == "user" || role == "system" {
            match &mut last["content"] {
                Value::Array(blocks) => {
                    if let Some(b) = blocks.last_mut() {
                        let ty = b["type"].as_str().unwrap_or("");
                        if matches!(
                            ty,
                            "text" | "image" | "tool_result" | "tool_addition" | "tool_removal"
                        ) {
                            b["cache_control"] = cc.clone();
                        }
                    }
                }
                Value::String(s) => {
                    let text = std::mem::take(s);
                    last["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
                }
                _ => {}
            }
        }
    }
    params
}

fn convert_tools(
    tools: &[std::sync::Arc<crate::message::ToolDeclaration>],
    eager: bool,
    cache_control: Option<&Value>,
) -> Value {
    let n = tools.len();
    Value::Array(
        tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let p = &t.parameters;
                let mut schema = Map::new();
                schema.insert("type".into(), json!("object"));
                schema.insert(
                    "properties".into(),
                    p.get("properties").cloned().unwrap_or(json!({})),
                );
                schema.insert(
                    "required".into(),
                    p.get("required").cloned().unwrap_or(json!([])),
                );
                for k in ["additionalProperties", "$defs", "definitions"] {
                    if let Some(v) = p.get(k) {
                        schema.insert(k.into(), v.clone());
                    }
                }
                let mut def = Map::new();
                def.insert("name".into(), json!(t.name));
                def.insert("description".into(), json!(t.description));
                if eager {
                    def.insert("eager_input_streaming".into(), json!(true));
                }
                def.insert("input_schema".into(), Value::Object(schema));
                if let (Some(cc), true) = (cache_control, i + 1 == n) {
                    def.insert("cache_control".into(), cc.clone());
                }
                Value::Object(def)
            })
            .collect(),
    )
}

fn map_effort(model: &Model, level: ThinkingLevel) -> String {
    if let Some(Value::String(s)) = thinking_level_map(model, level.as_str()) {
        return s.clone();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low".into(),
        ThinkingLevel::Medium => "medium".into(),
        _ => "high".into(),
    }
}

fn thinking_budget(level: ThinkingLevel, options: &StreamOptions) -> u64 {
    let b = options.thinking_budgets.clone().unwrap_or_default();
    match level {
        ThinkingLevel::Minimal => b.minimal.unwrap_or(1024),
        ThinkingLevel::Low => b.low.unwrap_or(2048),
        ThinkingLevel::Medium => b.medium.unwrap_or(8192),
        _ => b.high.unwrap_or(16384),
    }
}

/// Builds the request (URL, headers and body) the reference would send.
pub fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> HttpRequest {
    let messages = collapse_system_messages(&context.messages);
    let retention = options
        .cache_retention
        .clone()
        .unwrap_or_else(|| "short".into());
    let cache_control = if retention == "none" {
        None
    } else if retention == "long" && compat_bool(model, "supportsLongCacheRetention", true) {
        Some(json!({"type": "ephemeral", "ttl": "1h"}))
    } else {
        Some(json!({"type": "ephemeral"}))
    };
    let eager = compat_bool(model, "supportsEagerToolInputStreaming", true);
    let initial = get_initial_system_message(&messages);
    let system_text = initial.map(get_system_message_text).unwrap_or_default();
    let transformed = transform_messages(&messages, model, &normalize_tool_call_id);
    let conversation = if initial.is_some() && !transformed.is_empty() {
        &transformed[1..]
    } else {
        &transformed[..]
    };

    // streamSimple: thinking level, budgets and max tokens.
    let base_max = super::resolve_max_tokens(model, context, options);
    let level = options.reasoning.filter(|l| *l != ThinkingLevel::Off);
    let force_adaptive = compat_bool(model, "forceAdaptiveThinking", false);
    let mut max_tokens = base_max;
    let mut budget = 0u64;
    let mut effort: Option<String> = None;
    if let Some(l) = level {
        if force_adaptive {
            effort = Some(map_effort(model, l));
        } else {
            let mut b = thinking_budget(l, options);
            let mt = (base_max + b).min(model.max_tokens.max(1));
            if mt <= b {
                b = b.min(mt.saturating_sub(1024));
            }
            max_tokens = mt;
            budget = b.min(max_tokens.saturating_sub(1024));
        }
    }
    let thinking_enabled = level.is_some();

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(
            conversation,
            cache_control.as_ref(),
            compat_bool(model, "allowEmptySignature", false),
        )),
    );
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if !system_text.is_empty() {
        let mut block = json!({"type": "text", "text": system_text});
        if let Some(cc) = &cache_control {
            block["cache_control"] = cc.clone();
        }
        body.insert("system".into(), json!([block]));
    }
    if let Some(t) = options.temperature {
        if !thinking_enabled && compat_bool(model, "supportsTemperature", true) {
            body.insert("temperature".into(), json!(t));
        }
    }
    let tools = get_current_tools(&messages);
    if !tools.is_empty() {
        let tcc = if compat_bool(model, "supportsCacheControlOnTools", true) {
            cache_control.as_ref()
        } else {
            None
        };
        body.insert("tools".into(), convert_tools(&tools, eager, tcc));
    }
    let off_null = thinking_level_map(model, "off").is_some_and(Value::is_null);
    if model.reasoning && !thinking_enabled && !off_null {
        body.insert("thinking".into(), json!({"type": "disabled"}));
    } else if model.reasoning && thinking_enabled {
        if force_adaptive {
            body.insert(
                "thinking".into(),
                json!({"type": "adaptive", "display": "summarized"}),
            );
            if let Some(e) = &effort {
                body.insert("output_config".into(), json!({"effort": e}));
            }
        } else {
            let b = if budget == 0 { 1024 } else { budget };
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": b, "display": "summarized"}),
            );
        }
    }
    if let Some(Value::String(uid)) = options.metadata.as_ref().and_then(|m| m.get("user_id")) {
        body.insert("metadata".into(), json!({"user_id": uid}));
    }
    if let Some(tc) = &options.tool_choice {
        body.insert(
            "tool_choice".into(),
            match tc {
                Value::String(s) => json!({"type": s}),
                other => other.clone(),
            },
        );
    }

    // Betas.
    let mut configured: Option<Option<String>> = None;
    for h in [model.headers.as_ref(), Some(&options.headers)]
        .into_iter()
        .flatten()
    {
        for (k, v) in h {
            if k.eq_ignore_ascii_case("anthropic-beta") {
                configured = Some(v.as_str().map(str::to_string));
            }
        }
    }
    let betas: Vec<String> = match configured {
        Some(None) => Vec::new(),
        Some(Some(list)) => {
            let mut out: Vec<String> = Vec::new();
            for f in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                if !out.iter().any(|o| o == f) {
                    out.push(f.to_string());
                }
            }
            out
        }
        None => {
            let mut f = Vec::new();
            if !tools.is_empty() && !eager {
                f.push(FINE_GRAINED_TOOL_STREAMING_BETA.to_string());
            }
            if model.reasoning && thinking_enabled && !force_adaptive {
                f.push(INTERLEAVED_THINKING_BETA.to_string());
            }
            f
        }
    };

    let mut headers: Vec<(String, String)> = vec![
        ("accept".into(), "application/json".into()),
        (
            "anthropic-dangerous-direct-browser-access".into(),
            "true".into(),
        ),
    ];
    let is_openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
    if let Some(sid) = options.session_id.as_ref().filter(|_| retention != "none") {
        if compat_bool(model, "sendSessionAffinityHeaders", is_openrouter) {
            let fmt = compat(model, "sessionAffinityFormat")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or(is_openrouter.then(|| "openrouter".to_string()));
            let name = if fmt.as_deref() == Some("openrouter") {
                "x-session-id"
            } else {
                "x-session-affinity"
            };
            headers.push((name.into(), sid.clone()));
        }
    }
    super::merge_headers(&mut headers, model.headers.as_ref());
    super::merge_headers(&mut headers, Some(&options.headers));
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("anthropic-beta"));
    if !betas.is_empty() {
        headers.push(("anthropic-beta".into(), betas.join(",")));
    }
    if let Some(key) = super::api_key(model, options) {
        if !headers.iter().any(|(k, _)| {
            k.eq_ignore_ascii_case("x-api-key") || k.eq_ignore_ascii_case("authorization")
        }) {
            if key.contains("sk-ant-oat") {
                headers.push(("authorization".into(), format!("Bearer {key}")));
            } else {
                headers.push(("x-api-key".into(), key));
            }
        }
    }
    headers.push(("anthropic-version".into(), "2023-06-01".into()));
    headers.push(("content-type".into(), "application/json".into()));
    HttpRequest {
        url: format!(
            "{}/v1/messages?beta=true",
            model.base_url.trim_end_matches('/')
        ),
        headers,
        body: Value::Object(body),
        ignore_retry_headers: false,
    }
}

/// The SDK's error message: `"<status> <compact JSON body>"` or `"<status> <text>"`.
pub fn sdk_message(f: &HttpFailure) -> String {
    match serde_json::from_str::<Value>(&f.body) {
        Ok(v) => {
            let msg = match v.get("message") {
                Some(Value::String(m)) if !m.is_empty() => m.clone(),
                _ => compact(&v),
            };
            format!("{} {msg}", f.status)
        }
        Err(_) if f.body.is_empty() => format!("{} status code (no body)", f.status),
        Err(_) => format!("{} {}", f.status, f.body),
    }
}

fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_string(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".into()),
        ),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

struct OpenBlock {
    index: usize,
    args: Option<ToolCallArgumentsStream>,
}

#[derive(Default)]
struct State {
    open: HashMap<i64, OpenBlock>,
    saw_start: bool,
    saw_stop: bool,
}

fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64).map(|f| f.max(0.0) as u64)
}

fn handle_event(
    ev: &Value,
    model: &Model,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<(), String> {
    let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "message_start" => {
            st.saw_start = true;
            let msg = ev.get("message").cloned().unwrap_or(Value::Null);
            let u = msg.get("usage").cloned().unwrap_or(Value::Null);
            out.update(|m| {
                if let Some(id) = msg.get("id").and_then(Value::as_str) {
                    m.response_id = Some(id.to_string());
                }
                if let Some(rm) = msg.get("model").and_then(Value::as_str) {
                    if rm != model.id {
                        m.extra_mut().response_model = Some(rm.to_string());
                    }
                }
                m.usage.input = count(u.get("input_tokens")).unwrap_or(0);
                m.usage.output = count(u.get("output_tokens")).unwrap_or(0);
                m.usage.cache_read = count(u.get("cache_read_input_tokens")).unwrap_or(0);
                m.usage.cache_write = count(u.get("cache_creation_input_tokens")).unwrap_or(0);
                m.usage.cache_write_1h = Some(
                    count(u.pointer("/cache_creation/ephemeral_1h_input_tokens")).unwrap_or(0),
                );
                m.usage.total_tokens =
                    m.usage.input + m.usage.output + m.usage.cache_read + m.usage.cache_write;
                cost::calculate_cost(model, &mut m.usage);
            });
        }
        "content_block_start" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            let cb = ev.get("content_block").cloned().unwrap_or(Value::Null);
            let s = |k: &str| cb.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match cb.get("type").and_then(Value::as_str).unwrap_or("") {
                "fallback" if out.len() > 0 => {
                    return Err(
                        "Anthropic performed an unsupported mid-output model fallback".into(),
                    );
                }
                "text" => {
                    let i = out.push_block(ContentBlock::Text(TextContent {
                        text: s("text"),
                        text_signature: None,
                        extra: None,
                    }));
                    st.open.insert(
                        idx,
                        OpenBlock {
                            index: i,
                            args: None,
                        },
                    );
                }
                "thinking" => {
                    let i = out.push_block(ContentBlock::Thinking(ThinkingContent {
                        thinking: s("thinking"),
                        thinking_signature: Some(s("signature")),
                        redacted: None,
                        extra: None,
                    }));
                    st.open.insert(
                        idx,
                        OpenBlock {
                            index: i,
                            args: None,
                        },
                    );
                }
                "redacted_thinking" => {
                    let i = out.push_block(ContentBlock::Thinking(ThinkingContent {
                        thinking: "[Reasoning redacted]".into(),
                        thinking_signature: cb
                            .get("data")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        redacted: Some(true),
                        extra: None,
                    }));
                    st.open.insert(
                        idx,
                        OpenBlock {
                            index: i,
                            args: None,
                        },
                    );
                }
                "tool_use" => {
                    let i = out.push_block(ContentBlock::tool_call(ToolCall {
                        id: s("id"),
                        name: s("name"),
                        arguments: cb
                            .get("input")
                            .filter(|v| !v.is_null())
                            .cloned()
                            .unwrap_or(json!({})),
                        ..ToolCall::default()
                    }));
                    st.open.insert(
                        idx,
                        OpenBlock {
                            index: i,
                            args: Some(ToolCallArgumentsStream::new()),
                        },
                    );
                }
                _ => {}
            }
        }
        "content_block_delta" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            let Some(open) = st.open.get_mut(&idx) else {
                return Ok(());
            };
            let d = ev.get("delta").cloned().unwrap_or(Value::Null);
            let kind = out.with(|m| match m.content.get(open.index) {
                Some(ContentBlock::Text(_)) => 0,
                Some(ContentBlock::Thinking(_)) => 1,
                Some(ContentBlock::ToolCall(_)) => 2,
                _ => 3,
            });
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match d.get("type").and_then(Value::as_str).unwrap_or("") {
                "text_delta" if kind == 0 => out.append_text(open.index, &text("text")),
                "thinking_delta" if kind == 1 => out.append_text(open.index, &text("thinking")),
                "input_json_delta" if kind == 2 => {
                    if let Some(args) = open.args.as_mut() {
                        let piece = text("partial_json");
                        let a = args.append(&piece).clone();
                        out.set_tool_arguments(open.index, a);
                        out.tool_delta(open.index, &piece);
                    }
                }
                "signature_delta" if kind == 1 => {
                    let piece = text("signature");
                    let index = open.index;
                    out.update(|m| {
                        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                            t.thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&piece);
                        }
                    });
                }
                _ => {}
            }
        }
        "content_block_stop" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            if let Some(open) = st.open.remove(&idx) {
                match &open.args {
                    Some(args) => out.finish_tool_call(open.index, args),
                    None => {
                        let is_tool = out.with(|m| {
                            matches!(m.content.get(open.index), Some(ContentBlock::ToolCall(_)))
                        });
                        if !is_tool {
                            out.end_block(open.index);
                        }
                    }
                }
            }
        }
        "message_delta" => {
            let d = ev.get("delta").cloned().unwrap_or(Value::Null);
            if let Some(r) = d
                .get("stop_reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                let (reason, err) = map_stop_reason(r, d.get("stop_details"))?;
                out.update(|m| {
                    m.raw_stop_reason = Some(r.to_string());
                    m.stop_reason = reason;
                    if err.is_some() {
                        m.error_message = err;
                    }
                });
            }
            let u = ev.get("usage").filter(|u| u.is_object()).cloned();
            out.update(|m| {
                if let Some(u) = &u {
                    if let Some(v) = count(u.get("input_tokens")) {
                        m.usage.input = v;
                    }
                    if let Some(v) = count(u.get("output_tokens")) {
                        m.usage.output = v;
                    }
                    if let Some(v) = count(u.get("cache_read_input_tokens")) {
                        m.usage.cache_read = v;
                    }
                    if let Some(v) = count(u.get("cache_creation_input_tokens")) {
                        m.usage.cache_write = v;
                    }
                    if let Some(v) = count(u.pointer("/cache_creation/ephemeral_1h_input_tokens")) {
                        m.usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = count(u.pointer("/output_tokens_details/thinking_tokens")) {
                        m.usage.reasoning = Some(v);
                    }
                }
                m.usage.total_tokens =
                    m.usage.input + m.usage.output + m.usage.cache_read + m.usage.cache_write;
                cost::calculate_cost(model, &mut m.usage);
                if let Some(u) = &u {
                    if model.provider == "openrouter" || model.base_url.contains("openrouter.ai") {
                        cost::apply_openrouter_cost(&mut m.usage, u);
                    }
                }
            });
        }
        "message_stop" => st.saw_stop = true,
        _ => {}
    }
    Ok(())
}

const EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

fn process(
    ev: Option<&str>,
    data: &str,
    model: &Model,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<(), String> {
    if ev == Some("error") {
        return Err(data.to_string());
    }
    let Some(name) = ev.filter(|e| EVENTS.contains(e)) else {
        return Ok(());
    };
    let value = parse_json_with_repair(data)
        .map_err(|e| format!("Could not parse Anthropic SSE event {name}: {e}; data={data}"))?;
    match value.get("type").and_then(Value::as_str) {
        Some("message_start") => st.saw_start = true,
        Some("message_stop") => st.saw_stop = true,
        _ => {}
    }
    handle_event(&value, model, out, st)
}

/// Streams one response into `sink`.
pub async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn EventSink,
) {
    let mut out = Output::new(model, sink);
    let has_auth = super::api_key(model, options).is_some()
        || options
            .headers
            .keys()
            .chain(model.headers.iter().flat_map(|h| h.keys()))
            .any(|k| {
                let k = k.to_ascii_lowercase();
                k == "authorization" || k == "x-api-key" || k == "cf-aig-authorization"
            });
    if !has_auth {
        out.fail(
            format!("No API key for provider: {}", model.provider),
            false,
        );
        return;
    }
    let req = build_request(model, context, options);
    let Some(response) =
        super::send_or_fail(&req, options, &mut out, &sdk_message, sdk_message).await
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
    out.start();
    let mut st = State::default();
    let mut decoder = SseDecoder::new();
    let mut events: Vec<(Option<String>, String)> = Vec::new();
    let result: Result<(), (String, bool)> = 'read: loop {
        let chunk = match body.next_chunk(options).await {
            Ok(Some(c)) => Some(c),
            Ok(None) => None,
            Err(SendError::Aborted) => break Err(("Request was aborted".into(), true)),
            Err(SendError::Network(m) | SendError::Message(m)) => break Err((m, false)),
            Err(SendError::Status(f)) => break Err((sdk_message(&f), false)),
        };
        match &chunk {
            Some(c) => {
                if let Err(e) = decoder.feed(c, &mut |e| events.push((e.event, e.data))) {
                    break Err((e.to_string(), false));
                }
            }
            None => decoder.finish_and_flush(&mut |e| events.push((e.event, e.data))),
        }
        for (ev, data) in events.drain(..) {
            if let Err(m) = process(ev.as_deref(), &data, model, out, &mut st) {
                break 'read Err((m, false));
            }
        }
        if chunk.is_none() {
            if st.saw_start && !st.saw_stop {
                break Err(("Anthropic stream ended before message_stop".into(), false));
            }
            break Ok(());
        }
    };
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
        StopReason::Pending => {
            out.fail("Anthropic stream ended without a stop reason".into(), false)
        }
        StopReason::Error | StopReason::Aborted => out.fail(
            err.unwrap_or_else(|| "An unknown error occurred".into()),
            false,
        ),
        _ => out.done(),
    }
}
