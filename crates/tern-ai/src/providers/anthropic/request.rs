//! The Anthropic Messages request: prompt caching markers, budget or adaptive thinking,
//! signed and redacted thinking replay, tool results grouped into one user turn, betas and
//! authentication headers.

use serde_json::{json, Map, Value};

use crate::message::{Content, ContentBlock, ImageContent, Message, ThinkingLevel};
use crate::model::Model;
use crate::providers::driver::{Attempt, BuiltWith, Credentials, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::js_json::compact;
use crate::providers::model_options::{
    api_key, cache_retention, compat, merge_headers, resolve_max_tokens,
};
use crate::providers::strict_limits;
use crate::providers::thinking::{claude_budget, claude_effort, thinking_level_map};
use crate::providers::transform::transform_messages;
use crate::stream_fn::Context;
use crate::transcript::{
    collapse_system_messages, get_current_tools, get_initial_system_message,
    get_system_message_text,
};

const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";

pub(super) fn compat_bool(model: &Model, key: &str, default: bool) -> bool {
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
    crate::providers::transform::sanitize_id(id)
        .chars()
        .take(64)
        .collect()
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
                    let split = crate::providers::transform::split_error_images(t);
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

/// Keywords Anthropic's strict tools reject (pi-ai's `isAnthropicStrictUnsupportedKeyword`).
fn anthropic_strict_rejects(key: &str, value: &Value) -> bool {
    const UNSUPPORTED: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    match key {
        k if UNSUPPORTED.contains(&k) => true,
        "minItems" => value != &json!(0) && value != &json!(1),
        "format" => value.as_str().is_none_or(|f| !FORMATS.contains(&f)),
        _ => false,
    }
}

/// The body's `tools`, and whether a `prefer` tool among them went strict; with
/// `preferred_off`, `prefer` tools go as declared (the session went over Claude's strict-tool
/// limits). `Err` for a `require` tool that cannot go strict.
fn convert_tools(
    tools: &[std::sync::Arc<crate::message::ToolDeclaration>],
    eager: bool,
    cache_control: Option<&Value>,
    supports_strict: bool,
    preferred_off: bool,
) -> Result<(Value, bool), String> {
    use crate::providers::constrained;
    let n = tools.len();
    let mut preferred_strict = false;
    let list = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (strict, parameters) = constrained::sent_unless_preferred_off(
                t,
                supports_strict,
                Some(anthropic_strict_rejects),
                preferred_off,
            )?;
            preferred_strict |= strict && constrained::prefers_strict(t);
            let p = &parameters;
            // A strict tool sends its whole strict schema; the legacy keys below are
            // written over it (pi-ai's spread), in its key order.
            let mut schema = match (strict, p) {
                (true, Value::Object(o)) => o.clone(),
                _ => Map::new(),
            };
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
            if strict {
                def.insert("strict".into(), json!(true));
            }
            def.insert("input_schema".into(), Value::Object(schema));
            if let (Some(cc), true) = (cache_control, i + 1 == n) {
                def.insert("cache_control".into(), cc.clone());
            }
            Ok(Value::Object(def))
        })
        .collect::<Result<Vec<Value>, String>>()?;
    Ok((Value::Array(list), preferred_strict))
}

impl WireApi for super::Anthropic {
    const CREDENTIALS: Credentials =
        Credentials::ApiKeyOrHeader(&["authorization", "x-api-key", "cf-aig-authorization"]);
    type Stream = super::stream::State;

    /// Builds the request (URL, headers and body) the reference would send.
    fn build_request_with(model: &Model, context: &Context, attempt: Attempt<'_>) -> BuiltWith {
        let Attempt {
            options,
            preferred_strict_off,
        } = attempt;
        let messages = collapse_system_messages(&context.messages);
        let retention = cache_retention(options);
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
        let base_max = resolve_max_tokens(model, context, options);
        let level = options.reasoning.filter(|l| *l != ThinkingLevel::Off);
        let force_adaptive = compat_bool(model, "forceAdaptiveThinking", false);
        let mut max_tokens = base_max;
        let mut budget = 0u64;
        let mut effort: Option<String> = None;
        if let Some(l) = level {
            if force_adaptive {
                effort = Some(claude_effort(model, l));
            } else {
                let mut b = claude_budget(l, options);
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
        let mut preferred_strict = false;
        if !tools.is_empty() {
            let tcc = if compat_bool(model, "supportsCacheControlOnTools", true) {
                cache_control.as_ref()
            } else {
                None
            };
            let strict = compat_bool(model, "supportsStrictTools", false);
            let (list, preferred) =
                convert_tools(&tools, eager, tcc, strict, preferred_strict_off)?;
            preferred_strict = preferred;
            body.insert("tools".into(), list);
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
        let is_openrouter =
            model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
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
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("anthropic-beta"));
        if !betas.is_empty() {
            headers.push(("anthropic-beta".into(), betas.join(",")));
        }
        if let Some(key) = api_key(model, options) {
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
        let request = HttpRequest::to_base_url(model, "/v1/messages?beta=true", headers, body);
        Ok((request, preferred_strict))
    }

    /// A `400` `invalid_request_error` whose SDK message names one of Claude's strict-tool
    /// limits.
    fn strict_limit_rejection(f: &HttpFailure) -> Option<(&'static str, String)> {
        let body: Value = serde_json::from_str(&f.body).ok()?;
        let invalid =
            body.pointer("/error/type").and_then(Value::as_str) == Some("invalid_request_error");
        let message = Self::sdk_message(f);
        (f.status == 400 && invalid && strict_limits::is_limit_message(&message))
            .then_some(("anthropic_strict_tools_fallback", message))
    }

    /// `"<status> <message or compact JSON body>"` or `"<status> <text>"`.
    fn sdk_message(f: &HttpFailure) -> String {
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
}
