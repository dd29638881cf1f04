//! The Converse request body: messages (tool results of a turn in one user message, signed
//! reasoning replayed, cache points on Claude 3.7+/4+), the system prompt, tool config,
//! inference config and the thinking fields of `additionalModelRequestFields`.

use serde_json::{json, Map, Value};

use crate::message::{Content, ContentBlock, ImageContent, Message, ThinkingLevel};
use crate::model::Model;
use crate::providers::model_options::{cache_retention, resolve_max_tokens};
use crate::providers::thinking::{claude_budget, claude_effort, thinking_level_map};
use crate::providers::transform::transform_messages;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{
    collapse_system_messages, get_current_tools, get_initial_system_message,
    get_system_message_text,
};

const EMPTY_TEXT: &str = "<empty>";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const THINKING_BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

/// The model id and name, lower-cased, each also with spaces, `_`, `.` and `:` as `-`.
fn candidates(model: &Model) -> Vec<String> {
    let mut values = vec![model.id.as_str()];
    if !model.name.is_empty() {
        values.push(model.name.as_str());
    }
    values
        .into_iter()
        .flat_map(|v| {
            let lower = v.to_lowercase();
            let mut dashed = String::with_capacity(lower.len());
            let mut last_dash = false;
            for c in lower.chars() {
                let sep = c.is_whitespace() || matches!(c, '_' | '.' | ':');
                // A run of separators becomes one dash.
                if sep {
                    if !last_dash {
                        dashed.push('-');
                    }
                } else {
                    dashed.push(c);
                }
                last_dash = sep;
            }
            [lower, dashed]
        })
        .collect()
}

fn any_of(model: &Model, needles: &[&str]) -> bool {
    candidates(model)
        .iter()
        .any(|c| needles.iter().any(|n| c.contains(n)))
}

/// Anthropic's Claude on Bedrock (by id, or by name for application inference profiles).
pub(super) fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    ["anthropic.claude", "anthropic/claude"]
        .iter()
        .any(|p| id.contains(p) || name.contains(p))
        || name.contains("claude")
}

fn adaptive_thinking(model: &Model) -> bool {
    any_of(
        model,
        &[
            "opus-4-6",
            "opus-4-7",
            "opus-4-8",
            "opus-5",
            "sonnet-4-6",
            "sonnet-5",
            "haiku-5",
            "fable-5",
        ],
    )
}

/// Models with native `xhigh` effort, which also take `thinking.block_binding`.
fn newest_claude(model: &Model) -> bool {
    any_of(
        model,
        &[
            "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5",
        ],
    )
}

fn prompt_caching(model: &Model, options: &StreamOptions) -> bool {
    if !any_of(model, &["claude"]) {
        return options.env_var("AWS_BEDROCK_FORCE_CACHE").as_deref() == Some("1");
    }
    any_of(
        model,
        &[
            "fable-5",
            "opus-5",
            "sonnet-5",
            "haiku-5",
            "-4-",
            "claude-3-7-sonnet",
            "claude-3-5-haiku",
        ],
    )
}

/// The cache point block, when caching applies.
fn cache_point(model: &Model, options: &StreamOptions) -> Option<Value> {
    let retention = cache_retention(options);
    if retention == "none" || !prompt_caching(model, options) {
        return None;
    }
    Some(match retention {
        "long" => json!({"cachePoint": {"type": "default", "ttl": "1h"}}),
        _ => json!({"cachePoint": {"type": "default"}}),
    })
}

fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(64)
        .collect()
}

fn non_blank(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"text": text}))
}

fn image(img: &ImageContent) -> Value {
    let format = match img.mime_type.as_str() {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        // The reference fails the request; the service refuses it with its own words.
        other => other.trim_start_matches("image/"),
    };
    json!({"image": {"source": {"bytes": img.data}, "format": format}})
}

/// Drops empty keys of a tool input, at every depth (Bedrock refuses them).
fn sanitize_document(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(sanitize_document).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.clone(), sanitize_document(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn tool_result_content(content: &[ContentBlock]) -> Vec<Value> {
    let mut out: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(image(i)),
            ContentBlock::Text(t) => non_blank(&t.text),
            _ => None,
        })
        .collect();
    if out.is_empty() {
        out.push(json!({"text": EMPTY_TEXT}));
    }
    out
}

fn assistant_blocks(model: &Model, content: &[ContentBlock]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for c in content {
        match c {
            ContentBlock::Text(t) => blocks.extend(non_blank(&t.text)),
            ContentBlock::ToolCall(call) => blocks.push(json!({"toolUse": {
                "toolUseId": call.id, "name": call.name, "input": sanitize_document(&call.arguments),
            }})),
            ContentBlock::Thinking(t) if t.redacted == Some(true) => {
                use base64::Engine as _;
                let payload = t.thinking_signature.as_deref().and_then(|s| {
                    base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .ok()
                        .filter(|b| !b.is_empty())
                        .map(|_| s)
                });
                if let Some(s) = payload {
                    blocks.push(json!({"reasoningContent": {"redactedContent": s}}));
                }
            }
            ContentBlock::Thinking(t) => {
                if t.thinking.trim().is_empty() {
                    continue;
                }
                let signature = t.thinking_signature.as_deref().unwrap_or("");
                if !is_claude(model) {
                    blocks.push(
                        json!({"reasoningContent": {"reasoningText": {"text": t.thinking}}}),
                    );
                } else if signature.trim().is_empty() {
                    // Bedrock refuses signed reasoning without its signature.
                    blocks.push(json!({"text": t.thinking}));
                } else {
                    blocks.push(json!({"reasoningContent": {"reasoningText": {
                        "text": t.thinking, "signature": signature,
                    }}}));
                }
            }
            _ => {}
        }
    }
    blocks
}

fn convert_messages(model: &Model, messages: &[Message], cache: Option<&Value>) -> Vec<Value> {
    let transformed = transform_messages(messages, model, &normalize_tool_call_id);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < transformed.len() {
        match &transformed[i] {
            Message::User(u) => {
                let content = match &u.content {
                    Content::Text(t) => vec![non_blank(t).unwrap_or(json!({"text": EMPTY_TEXT}))],
                    Content::Blocks(blocks) => {
                        let mut c: Vec<Value> = blocks
                            .iter()
                            .filter_map(|b| match b {
                                ContentBlock::Text(t) => non_blank(&t.text),
                                ContentBlock::Image(img) => Some(image(img)),
                                _ => None,
                            })
                            .collect();
                        if c.is_empty() {
                            c.push(json!({"text": EMPTY_TEXT}));
                        }
                        c
                    }
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(a) => {
                let blocks = assistant_blocks(model, &a.content);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                // A turn's tool results go in one user message; for Claude, an error
                // result's images follow all of them (it rejects them inside one).
                let mut results = Vec::new();
                let mut images = Vec::new();
                while let Some(Message::ToolResult(r)) = transformed.get(i) {
                    let split = is_claude(model)
                        .then(|| crate::providers::transform::split_error_images(r))
                        .flatten();
                    let content = match &split {
                        Some((kept, _, _)) => tool_result_content(kept),
                        None => tool_result_content(&r.content),
                    };
                    results.push(json!({"toolResult": {
                        "toolUseId": r.tool_call_id,
                        "content": content,
                        "status": if r.is_error { "error" } else { "success" },
                    }}));
                    if let Some((_, caption, imgs)) = split {
                        images.push(json!({"text": caption}));
                        images.extend(imgs.iter().map(image));
                    }
                    i += 1;
                }
                i -= 1;
                results.extend(images);
                out.push(json!({"role": "user", "content": results}));
            }
            _ => {}
        }
        i += 1;
    }
    if let (Some(cp), Some(last)) = (cache, out.last_mut()) {
        if last["role"] == "user" {
            if let Some(c) = last["content"].as_array_mut() {
                c.push(cp.clone());
            }
        }
    }
    out
}

/// The body's `toolConfig` (none without tools or with tool choice `none`), and whether a
/// `prefer` tool went strict; with `preferred_off`, `prefer` tools go as declared (the
/// session went over Claude's strict-tool limits). `Err` for a `require` tool that cannot go
/// strict.
fn tool_config(
    model: &Model,
    messages: &[Message],
    tool_choice: Option<&Value>,
    preferred_off: bool,
) -> Result<(Option<Value>, bool), String> {
    use crate::providers::constrained;
    let tools = get_current_tools(messages);
    if tools.is_empty() || tool_choice.and_then(Value::as_str) == Some("none") {
        return Ok((None, false));
    }
    let supports_strict = crate::providers::model_options::compat(model, "supportsStrictMode")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut preferred_strict = false;
    let specs = tools
        .iter()
        .map(|t| {
            let (strict, parameters) =
                constrained::sent_unless_preferred_off(t, supports_strict, None, preferred_off)?;
            preferred_strict |= strict && constrained::prefers_strict(t);
            let mut spec = json!({
                "name": t.name, "description": t.description,
                "inputSchema": {"json": parameters},
            });
            if strict {
                spec["strict"] = json!(true);
            }
            Ok(json!({"toolSpec": spec}))
        })
        .collect::<Result<Vec<Value>, String>>()?;
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(specs));
    let choice = match tool_choice {
        Some(Value::String(s)) if s == "auto" => Some(json!({"auto": {}})),
        Some(Value::String(s)) if s == "any" => Some(json!({"any": {}})),
        Some(Value::Object(o)) if o.get("type").and_then(Value::as_str) == Some("tool") => {
            Some(json!({"tool": {"name": o.get("name").cloned().unwrap_or(Value::Null)}}))
        }
        _ => None,
    };
    if let Some(c) = choice {
        config.insert("toolChoice".into(), c);
    }
    Ok((Some(Value::Object(config)), preferred_strict))
}

fn region_is_gov(model: &Model, options: &StreamOptions) -> bool {
    let region = super::region::configured_region(options);
    let id = model.id.to_lowercase();
    region.is_some_and(|r| r.to_lowercase().starts_with("us-gov-"))
        || id.starts_with("us-gov.")
        || id.starts_with("arn:aws-us-gov:")
}

fn effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && newest_claude(model) {
        return "xhigh".into();
    }
    claude_effort(model, level)
}

/// `maxTokens` and the thinking fields, as `streamSimple` and the request builder settle
/// them between them.
fn inference_and_thinking(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> (u64, Option<Value>) {
    let base = resolve_max_tokens(model, context, options);
    let level = options
        .reasoning
        .filter(|l| *l != ThinkingLevel::Off && model.reasoning);
    let Some(level) = level else {
        return (base, None);
    };
    if !is_claude(model) {
        let c = candidates(model);
        let fields = if c.iter().any(|s| s.contains("gpt-oss")) {
            let e = match level {
                ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
                ThinkingLevel::Medium => "medium",
                _ => "high",
            };
            Some(json!({"reasoning_effort": e}))
        } else if c.iter().any(|s| s.contains("gpt-")) {
            let e = match thinking_level_map(model, level.as_str()) {
                Some(Value::String(s)) => s.clone(),
                _ => match level {
                    ThinkingLevel::Minimal => "low".to_string(),
                    other => other.as_str().to_string(),
                },
            };
            Some(json!({"reasoning": {"effort": e}}))
        } else {
            None
        };
        return (base, fields);
    }
    let gov = region_is_gov(model, options);
    let binding = !gov && newest_claude(model);
    let display = options.bedrock.thinking_display.unwrap_or_default();
    let mut thinking = Map::new();
    let mut fields = Map::new();
    let max_tokens = if adaptive_thinking(model) {
        thinking.insert("type".into(), json!("adaptive"));
        if !gov {
            thinking.insert("display".into(), json!(display.as_str()));
        }
        if binding {
            thinking.insert(
                "block_binding".into(),
                json!({"prefix_mismatch_behavior": "drop_block"}),
            );
        }
        fields.insert("thinking".into(), Value::Object(thinking));
        fields.insert(
            "output_config".into(),
            json!({"effort": effort(model, level)}),
        );
        if binding {
            fields.insert("anthropic_beta".into(), json!([THINKING_BINDING_BETA]));
        }
        base
    } else {
        let mut b = claude_budget(level, options);
        let max_tokens = (base + b).min(model.max_tokens);
        if max_tokens <= b {
            b = b.min(max_tokens.saturating_sub(1024));
        }
        let clamped = resolve_max_tokens(
            model,
            context,
            &StreamOptions {
                max_tokens: Some(max_tokens),
                ..StreamOptions::default()
            },
        );
        let b = b.min(clamped.saturating_sub(1024));
        thinking.insert("type".into(), json!("enabled"));
        thinking.insert("budget_tokens".into(), json!(b));
        if !gov {
            thinking.insert("display".into(), json!(display.as_str()));
        }
        fields.insert("thinking".into(), Value::Object(thinking));
        if options.bedrock.interleaved_thinking.unwrap_or(true) {
            fields.insert("anthropic_beta".into(), json!([INTERLEAVED_THINKING_BETA]));
        }
        clamped
    };
    (max_tokens, Some(Value::Object(fields)))
}

/// The ConverseStream body of this request (`prefer` strict tools as declared when
/// `preferred_off`), and whether a `prefer` tool went strict.
pub(super) fn converse_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    preferred_off: bool,
) -> Result<(Value, bool), String> {
    let messages = collapse_system_messages(&context.messages);
    let initial = get_initial_system_message(&messages);
    let conversation = match initial {
        Some(_) => &messages[1..],
        None => &messages[..],
    };
    let cache = cache_point(model, options);
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, conversation, cache.as_ref())),
    );
    let system = initial
        .map(get_system_message_text)
        .filter(|s| !s.is_empty());
    if let Some(text) = system {
        let mut blocks = vec![json!({"text": text})];
        blocks.extend(cache.clone());
        body.insert("system".into(), Value::Array(blocks));
    }
    let (max_tokens, thinking) = inference_and_thinking(model, context, options);
    let mut inference = Map::new();
    inference.insert("maxTokens".into(), json!(max_tokens));
    if let Some(t) = options.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    let (tools, preferred_strict) = tool_config(
        model,
        &messages,
        options.tool_choice.as_ref(),
        preferred_off,
    )?;
    if let Some(tools) = tools {
        body.insert("toolConfig".into(), tools);
    }
    if let Some(fields) = thinking {
        body.insert("additionalModelRequestFields".into(), fields);
    }
    if let Some(metadata) = &options.bedrock.request_metadata {
        body.insert("requestMetadata".into(), Value::Object(metadata.clone()));
    }
    Ok((Value::Object(body), preferred_strict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BedrockOptions, Message, ThinkingDisplay, ThinkingLevel};

    fn claude(id: &str) -> Model {
        Model {
            id: id.into(),
            api: "bedrock-converse-stream".into(),
            reasoning: true,
            max_tokens: 64_000,
            context_window: 200_000,
            ..Model::default()
        }
    }

    fn fields(model: &Model, bedrock: BedrockOptions) -> Value {
        let context = Context::new(vec![Message::user_text("hi")]);
        let options = StreamOptions {
            reasoning: Some(ThinkingLevel::Medium),
            bedrock,
            ..StreamOptions::default()
        };
        converse_body(model, &context, &options, false).unwrap().0["additionalModelRequestFields"]
            .clone()
    }

    #[test]
    fn thinking_display_and_interleaved_thinking_options() {
        let budget = claude("anthropic.claude-3-7-sonnet-20250219-v1:0");
        let f = fields(&budget, BedrockOptions::default());
        assert_eq!(f["thinking"]["display"], "summarized");
        assert_eq!(f["anthropic_beta"], json!([INTERLEAVED_THINKING_BETA]));
        let f = fields(
            &budget,
            BedrockOptions {
                thinking_display: Some(ThinkingDisplay::Omitted),
                interleaved_thinking: Some(false),
                ..BedrockOptions::default()
            },
        );
        assert_eq!(f["thinking"]["display"], "omitted");
        assert!(f.get("anthropic_beta").is_none(), "{f}");
        let adaptive = claude("anthropic.claude-opus-4-6-v1");
        let f = fields(
            &adaptive,
            BedrockOptions {
                thinking_display: Some(ThinkingDisplay::Omitted),
                ..BedrockOptions::default()
            },
        );
        assert_eq!(f["thinking"]["type"], "adaptive");
        assert_eq!(f["thinking"]["display"], "omitted");
    }
}
