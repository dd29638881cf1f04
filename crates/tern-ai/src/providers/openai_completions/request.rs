//! The Chat Completions request: `messages` (tool-call ids shortened, thinking replayed as
//! its field, text or `reasoning_details`), tools, prompt-cache key, reasoning parameters
//! in the host's format, session headers.

use serde_json::{json, Map, Value};

use super::compat::{get_compat, Compat};
use super::reasoning::{parse_legacy_encrypted, parse_reasoning_details, REASONING_FIELDS};
use crate::message::{Content, ContentBlock, Message, ThinkingContent, ToolCall};
use crate::model::Model;
use crate::providers::constrained::{self, grammar_call_input, GrammarInputs};
use crate::providers::driver::{Built, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::js_json::compact;
use crate::providers::model_options::{
    cache_retention, compat, merge_headers, resolve_max_tokens, stream_body,
};
use crate::providers::openai_sdk::{
    base_headers, body_error, http_error_message, with_raw_metadata,
};
use crate::providers::thinking::{reasoning_effort, thinking_level_map};
use crate::providers::transform::{accepts_images, sanitize_id, short_hash, transform_messages};
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{collapse_system_messages, get_current_tools, system_message_text};

fn normalize_tool_call_id(model: &Model, id: &str) -> String {
    if let Some(sep) = id.find('|') {
        let call = sanitize_id(&id[..sep]);
        let item = sanitize_id(&id[sep + 1..]);
        let combined = if item.is_empty() {
            call.clone()
        } else {
            format!("{call}_{item}")
        };
        if combined.chars().count() <= 40 {
            return combined;
        }
        let hash: String = short_hash(id).chars().take(8).collect();
        let keep = 1usize.max(40 - hash.len() - 1);
        let prefix: String = call.chars().take(keep).collect();
        return format!("{prefix}_{hash}");
    }
    if model.provider == "openai" && id.chars().count() > 40 {
        return id.chars().take(40).collect();
    }
    id.to_string()
}

fn image_url(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

/// The body's `tools`: functions, strict where constrained sampling makes them so, and
/// grammar tools as custom tools where the compat takes them; `Err` for a tool that cannot
/// go as it asks.
fn convert_tools(
    tools: &[std::sync::Arc<crate::message::ToolDeclaration>],
    c: &Compat,
) -> Result<Value, String> {
    let list = tools
        .iter()
        .map(|t| {
            if let Some(g) = constrained::grammar(t, c.supports_openai_grammar_tools)? {
                return Ok(json!({"type": "custom", "custom": {
                    "name": t.name, "description": t.description,
                    "format": {"type": "grammar",
                               "grammar": {"syntax": g.syntax, "definition": g.definition}}}}));
            }
            let (strict, parameters) = constrained::sent(t, c.supports_strict_mode, None)?;
            let mut f = Map::new();
            f.insert("name".into(), json!(t.name));
            f.insert("description".into(), json!(t.description));
            f.insert("parameters".into(), parameters);
            if c.supports_strict_mode {
                f.insert("strict".into(), json!(strict));
            }
            Ok(json!({"type": "function", "function": Value::Object(f)}))
        })
        .collect::<Result<Vec<Value>, String>>()?;
    Ok(Value::Array(list))
}

/// Converts a transcript into Chat Completions `messages`; the calls of the declared grammar
/// tools (`grammar_inputs`) go back as custom calls, `Err` for one without its input.
pub(super) fn convert_messages(
    model: &Model,
    messages: &[Message],
    c: &Compat,
    grammar_inputs: &GrammarInputs,
) -> Result<Vec<Value>, String> {
    let messages = transform_messages(messages, model, &|id| normalize_tool_call_id(model, id));
    let instruction_role = if model.reasoning && c.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    let mut params: Vec<Value> = Vec::new();
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < messages.len() {
        let msg = &messages[i];
        if c.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(msg, Message::User(_))
        {
            params.push(
                json!({"role": "assistant", "content": "I have processed the tool results."}),
            );
        }
        match msg {
            Message::System(s) => {
                let text = system_message_text(s, i == 0);
                if !text.is_empty() {
                    params.push(json!({"role": instruction_role, "content": text}));
                }
                last_role = Some("system");
            }
            Message::User(u) => {
                match &u.content {
                    Content::Text(t) => params.push(json!({"role": "user", "content": t})),
                    Content::Blocks(blocks) => {
                        let parts: Vec<Value> = blocks
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::Text(t) if !t.text.is_empty() => {
                                    Some(json!({"type": "text", "text": t.text}))
                                }
                                ContentBlock::Image(img) => {
                                    Some(image_url(&img.mime_type, &img.data))
                                }
                                _ => None,
                            })
                            .collect();
                        if parts.is_empty() {
                            i += 1;
                            continue;
                        }
                        params.push(json!({"role": "user", "content": parts}));
                    }
                }
                last_role = Some("user");
            }
            Message::Assistant(a) => {
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert(
                    "content".into(),
                    if c.requires_assistant_after_tool_result
                        || c.requires_non_null_assistant_content
                    {
                        json!("")
                    } else {
                        Value::Null
                    },
                );
                let text_parts: Vec<&str> = a
                    .content
                    .iter()
                    .filter_map(|b| b.as_text())
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                let text: String = text_parts.concat();
                let thinking: Vec<&ThinkingContent> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Thinking(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<&ToolCall> =
                    a.content.iter().filter_map(|b| b.as_tool_call()).collect();
                let signed = thinking
                    .iter()
                    .find_map(|t| parse_reasoning_details(t.thinking_signature.as_deref()));
                let legacy: Vec<Value> = calls
                    .iter()
                    .filter_map(|t| parse_legacy_encrypted(t.extra().thought_signature.as_deref()))
                    .collect();
                let preserved = signed.or((!legacy.is_empty()).then_some(legacy));
                let non_empty: Vec<&&ThinkingContent> = thinking
                    .iter()
                    .filter(|t| !t.thinking.trim().is_empty())
                    .collect();
                if !non_empty.is_empty() {
                    if c.requires_thinking_as_text {
                        let tt: Vec<&str> = non_empty.iter().map(|t| t.thinking.as_str()).collect();
                        let mut parts = vec![json!({"type": "text", "text": tt.join("\n\n")})];
                        parts.extend(
                            text_parts
                                .iter()
                                .map(|t| json!({"type": "text", "text": t})),
                        );
                        m.insert("content".into(), Value::Array(parts));
                    } else {
                        if !text.is_empty() {
                            m.insert("content".into(), json!(text));
                        }
                        if preserved.is_none() {
                            let mut sig =
                                non_empty[0].thinking_signature.clone().unwrap_or_default();
                            if model.provider == "opencode-go" && sig == "reasoning" {
                                sig = "reasoning_content".into();
                            }
                            if REASONING_FIELDS.contains(&sig.as_str()) {
                                let joined: Vec<&str> =
                                    non_empty.iter().map(|t| t.thinking.as_str()).collect();
                                m.insert(sig, json!(joined.join("\n")));
                            }
                        }
                    }
                } else if !text.is_empty() {
                    m.insert("content".into(), json!(text));
                }
                if !calls.is_empty() {
                    let tc = calls
                        .iter()
                        .map(|t| match grammar_inputs.get(t.name.as_str()) {
                            Some(property) => {
                                let input = grammar_call_input(&t.name, &t.arguments, property)?;
                                Ok(json!({"id": t.id, "type": "custom", "custom": {"name": t.name, "input": input}}))
                            }
                            None => Ok(json!({"id": t.id, "type": "function", "function": {"name": t.name, "arguments": compact(&t.arguments)}})),
                        })
                        .collect::<Result<Vec<Value>, String>>()?;
                    m.insert("tool_calls".into(), Value::Array(tc));
                }
                if let Some(p) = preserved {
                    m.insert("reasoning_details".into(), Value::Array(p));
                }
                if c.requires_reasoning_content_on_assistant_messages
                    && model.reasoning
                    && !m.contains_key("reasoning_content")
                {
                    m.insert("reasoning_content".into(), json!(""));
                }
                let has_content = match m.get("content") {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                };
                if !has_content && !m.contains_key("tool_calls") {
                    i += 1;
                    continue;
                }
                params.push(Value::Object(m));
                last_role = Some("assistant");
            }
            Message::ToolResult(_) => {
                let mut images: Vec<Value> = Vec::new();
                let mut j = i;
                while let Some(Message::ToolResult(t)) = messages.get(j) {
                    let texts: Vec<&str> = t.content.iter().filter_map(|b| b.as_text()).collect();
                    let text = texts.join("\n");
                    let has_images = t
                        .content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::Image(_)));
                    let out = if !text.trim().is_empty() {
                        text
                    } else if has_images {
                        "(see attached image)".to_string()
                    } else {
                        "(no tool output)".to_string()
                    };
                    let mut r = Map::new();
                    r.insert("role".into(), json!("tool"));
                    r.insert("content".into(), json!(out));
                    r.insert("tool_call_id".into(), json!(t.tool_call_id));
                    if c.requires_tool_result_name && !t.tool_name.is_empty() {
                        r.insert("name".into(), json!(t.tool_name));
                    }
                    params.push(Value::Object(r));
                    if has_images && accepts_images(model) {
                        for b in &t.content {
                            if let ContentBlock::Image(img) = b {
                                images.push(image_url(&img.mime_type, &img.data));
                            }
                        }
                    }
                    j += 1;
                }
                i = j;
                if !images.is_empty() {
                    if c.requires_assistant_after_tool_result {
                        params.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    params.push(json!({"role": "user", "content": content}));
                    last_role = Some("user");
                } else {
                    last_role = Some("toolResult");
                }
                continue;
            }
            Message::Custom(_) => {}
        }
        i += 1;
    }
    Ok(params)
}

fn mapped_effort(model: &Model, level: &str) -> Value {
    match thinking_level_map(model, level) {
        Some(v) if !v.is_null() => v.clone(),
        _ => json!(level),
    }
}

impl WireApi for super::Completions {
    // The OpenAI SDK's stream swallows the abort and just ends.
    const ABORT_ENDS_BODY: bool = true;
    type Stream = super::stream::State;

    /// Builds the request (URL, headers and body) the reference would send.
    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let c = get_compat(model);
        let messages = collapse_system_messages(&context.messages);
        let retention = cache_retention(options);
        let grammar_inputs =
            constrained::grammar_inputs(&messages, c.supports_openai_grammar_tools)?;
        let mut body = stream_body(
            &model.id,
            "messages",
            convert_messages(model, &messages, &c, &grammar_inputs)?,
        );
        let key_ok = c.prompt_cache_key_mode == "enabled"
            || (c.prompt_cache_key_mode == "auto"
                && (model.base_url.contains("api.openai.com")
                    || (retention == "long" && c.supports_long_cache_retention)));
        if retention != "none" && key_ok {
            if let Some(sid) = &options.session_id {
                let k: String = sid.chars().take(64).collect();
                body.insert("prompt_cache_key".into(), json!(k));
            }
        }
        if retention == "long" && c.supports_long_cache_retention {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if c.supports_usage_in_streaming {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if c.supports_store {
            body.insert("store".into(), json!(false));
        }
        let max_tokens = resolve_max_tokens(model, context, options);
        if max_tokens > 0 {
            body.insert(c.max_tokens_field.clone(), json!(max_tokens));
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        let tools = get_current_tools(&messages);
        if !tools.is_empty() {
            body.insert("tools".into(), convert_tools(&tools, &c)?);
        }
        if let Some(tc) = &options.tool_choice {
            body.insert("tool_choice".into(), tc.clone());
        }
        let effort = reasoning_effort(model, options).map(|l| l.as_str().to_string());
        let off = thinking_level_map(model, "off");
        if model.reasoning {
            match c.thinking_format.as_str() {
                "deepseek" => {
                    if effort.is_some() {
                        body.insert("thinking".into(), json!({"type": "enabled"}));
                    } else if !off.is_some_and(Value::is_null) {
                        body.insert("thinking".into(), json!({"type": "disabled"}));
                    }
                    if let (Some(e), true) = (&effort, c.supports_reasoning_effort) {
                        body.insert("reasoning_effort".into(), mapped_effort(model, e));
                    }
                }
                "openrouter" => {
                    if let Some(e) = &effort {
                        body.insert(
                            "reasoning".into(),
                            json!({"effort": mapped_effort(model, e)}),
                        );
                    } else if !off.is_some_and(Value::is_null) {
                        let o = off.cloned().unwrap_or(json!("none"));
                        body.insert("reasoning".into(), json!({"effort": o}));
                    }
                }
                "zai" => {
                    body.insert(
                        "thinking".into(),
                        if effort.is_some() {
                            json!({"type": "enabled", "clear_thinking": false})
                        } else {
                            json!({"type": "disabled"})
                        },
                    );
                    if let (Some(e), true) = (&effort, c.supports_reasoning_effort) {
                        let v = mapped_effort(model, e);
                        if v.is_string() {
                            body.insert("reasoning_effort".into(), v);
                        }
                    }
                }
                "together" => {
                    body.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
                    if let (Some(e), true) = (&effort, c.supports_reasoning_effort) {
                        body.insert("reasoning_effort".into(), mapped_effort(model, e));
                    }
                }
                "qwen" => {
                    body.insert("enable_thinking".into(), json!(effort.is_some()));
                    if let (Some(e), true) = (&effort, c.supports_reasoning_effort) {
                        body.insert("reasoning_effort".into(), mapped_effort(model, e));
                    }
                }
                "qwen-chat-template" => {
                    body.insert(
                        "chat_template_kwargs".into(),
                        json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
                    );
                }
                _ => {
                    if c.supports_reasoning_effort {
                        if let Some(e) = &effort {
                            body.insert("reasoning_effort".into(), mapped_effort(model, e));
                        } else if let Some(Value::String(o)) = off {
                            body.insert("reasoning_effort".into(), json!(o));
                        }
                    }
                }
            }
        }
        if let Some(r) = compat(model, "openRouterRouting") {
            if r.as_object().is_some_and(|o| !o.is_empty()) {
                body.insert("provider".into(), r.clone());
            }
        }

        let mut headers = base_headers(model, options);
        if let Some(sid) = options.session_id.as_ref().filter(|_| retention != "none") {
            if c.send_session_affinity_headers {
                if c.session_affinity_format == "openrouter" {
                    headers.push(("x-session-id".into(), sid.clone()));
                } else {
                    headers.push(("session_id".into(), sid.clone()));
                    headers.push(("x-client-request-id".into(), sid.clone()));
                    headers.push(("x-session-affinity".into(), sid.clone()));
                }
            }
        }
        merge_headers(&mut headers, Some(&options.headers));
        Ok(HttpRequest::to_base_url(
            model,
            "/chat/completions",
            headers,
            body,
        ))
    }

    fn new_stream(model: &Model, context: &Context) -> super::stream::State {
        let c = get_compat(model);
        let tools = get_current_tools(context.messages.iter());
        let grammar_inputs = constrained::grammar_inputs_of(
            tools.iter().map(|t| &**t),
            c.supports_openai_grammar_tools,
        );
        let mut state = super::stream::State::default();
        state.grammar_inputs = grammar_inputs.unwrap_or_default();
        state
    }

    fn status_message(_model: &Model, f: &HttpFailure) -> String {
        with_raw_metadata(http_error_message(f, None), body_error(f).as_ref())
    }
}
