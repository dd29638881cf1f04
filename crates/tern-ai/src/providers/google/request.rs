//! The Gemini request: contents with thought signatures replayed only to the same model,
//! function responses merged into one user turn, schemas with `const` rewritten, thinking
//! budgets (2.x) or levels (3+).

use serde_json::{json, Map, Value};

use crate::message::{Content, ContentBlock, Message, ThinkingLevel};
use crate::model::Model;
use crate::providers::driver::{Built, Credentials, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::js_json::compact;
use crate::providers::model_options::{api_key, merge_headers, resolve_max_tokens};
use crate::providers::thinking::{clamp_thinking_level, thinking_level_map};
use crate::providers::transform::{accepts_images, transform_messages};
use crate::schema::MAP_KEYWORDS;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{
    collapse_system_messages, get_current_tools, get_initial_system_message,
    get_system_message_text, without_initial_system_message,
};

fn gemini_major(id: &str) -> Option<u32> {
    let l = id.to_lowercase();
    let rest = l
        .strip_prefix("gemini-live-")
        .or_else(|| l.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major(id).is_some_and(|m| m >= 3)
}

fn multimodal_function_response(id: &str) -> bool {
    gemini_major(id).is_none_or(|m| m >= 3)
}

/// Whether the model takes `thinkingLevel` rather than a token budget (Gemini 3+).
pub(super) fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    if let Some(rest) = id.find("gemini-3").map(|p| &id[p + "gemini-3".len()..]) {
        let rest = rest
            .strip_prefix('.')
            .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
            .unwrap_or(rest);
        if rest.starts_with("-pro") || rest.starts_with("-flash") {
            return true;
        }
    }
    let mut search = id.as_str();
    while let Some(p) = search.find("gemini-") {
        let after = &search[p + 7..];
        let first = after.chars().next();
        if let Some(c) = first {
            if ('4'..='9').contains(&c) {
                return true;
            }
            if ('1'..='9').contains(&c) && after.chars().nth(1).is_some_and(|d| d.is_ascii_digit())
            {
                return true;
            }
        }
        search = after;
    }
    id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || id.contains("gemma4")
        || id.contains("gemma-4")
}

fn valid_signature(sig: Option<&str>) -> Option<&str> {
    let s = sig.filter(|s| !s.is_empty())?;
    if s.len() % 4 != 0 {
        return None;
    }
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 || body.is_empty() {
        return None;
    }
    body.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        .then_some(s)
}

fn inline(img: &crate::message::ImageContent) -> Value {
    json!({"inlineData": {"mimeType": img.mime_type, "data": img.data}})
}

/// Converts the transcript (without the leading system message) into Gemini `contents`.
pub(super) fn convert_messages(model: &Model, messages: &[Message]) -> Vec<Value> {
    let conversation = without_initial_system_message(messages);
    let needs_id = requires_tool_call_id(&model.id);
    let normalize = |id: &str| -> String {
        if !needs_id {
            return id.to_string();
        }
        crate::providers::transform::sanitize_id(id)
            .chars()
            .take(64)
            .collect()
    };
    let transformed = transform_messages(conversation, model, &normalize);
    let mut contents: Vec<Value> = Vec::new();
    for msg in &transformed {
        match msg {
            Message::User(u) => {
                let parts: Vec<Value> = match &u.content {
                    Content::Text(t) => vec![json!({"text": t})],
                    Content::Blocks(b) => b
                        .iter()
                        .filter_map(|x| match x {
                            ContentBlock::Text(t) => Some(json!({"text": t.text})),
                            ContentBlock::Image(i) => Some(inline(i)),
                            _ => None,
                        })
                        .collect(),
                };
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"role": "user", "parts": parts}));
            }
            Message::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let sig = |s: Option<&str>| {
                    if same {
                        valid_signature(s).map(str::to_string)
                    } else {
                        None
                    }
                };
                let mut parts: Vec<Value> = Vec::new();
                for b in &a.content {
                    match b {
                        ContentBlock::Text(t) => {
                            let ts = sig(t.text_signature.as_deref());
                            if t.text.trim().is_empty() && ts.is_none() {
                                continue;
                            }
                            let mut p = json!({"text": t.text});
                            if let Some(s) = ts {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Thinking(t) => {
                            if same {
                                let ts = sig(t.thinking_signature.as_deref());
                                if t.thinking.trim().is_empty() && ts.is_none() {
                                    continue;
                                }
                                let mut p = json!({"thought": true, "text": t.thinking});
                                if let Some(s) = ts {
                                    p["thoughtSignature"] = json!(s);
                                }
                                parts.push(p);
                            } else if !t.thinking.trim().is_empty() {
                                parts.push(json!({"text": t.thinking}));
                            }
                        }
                        ContentBlock::ToolCall(c) => {
                            let mut fc = json!({"name": c.name, "args": c.arguments});
                            if needs_id {
                                fc["id"] = json!(c.id);
                            }
                            let mut p = json!({"functionCall": fc});
                            if let Some(s) = sig(c.extra().thought_signature.as_deref()) {
                                p["thoughtSignature"] = json!(s);
                            }
                            parts.push(p);
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if parts.is_empty() {
                    continue;
                }
                contents.push(json!({"role": "model", "parts": parts}));
            }
            Message::ToolResult(t) => {
                let texts: Vec<&str> = t.content.iter().filter_map(|b| b.as_text()).collect();
                let text = texts.join("\n");
                let images: Vec<Value> = if accepts_images(model) {
                    t.content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(i) => Some(inline(i)),
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let has_text = !text.trim().is_empty();
                let value = if has_text {
                    text
                } else if !images.is_empty() {
                    "(see attached image)".to_string()
                } else {
                    String::new()
                };
                let multimodal = multimodal_function_response(&model.id);
                let mut fr = Map::new();
                fr.insert("name".into(), json!(t.tool_name));
                fr.insert(
                    "response".into(),
                    if t.is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if !images.is_empty() && multimodal {
                    fr.insert("parts".into(), Value::Array(images.clone()));
                }
                if needs_id {
                    fr.insert("id".into(), json!(t.tool_call_id));
                }
                let part = json!({"functionResponse": Value::Object(fr)});
                let merge = contents.last().is_some_and(|c| {
                    c["role"] == "user"
                        && c["parts"]
                            .as_array()
                            .is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
                });
                match contents.last_mut().filter(|_| merge) {
                    Some(last) => {
                        if let Some(p) = last["parts"].as_array_mut() {
                            p.push(part);
                        }
                    }
                    None => contents.push(json!({"role": "user", "parts": [part]})),
                }
                if !images.is_empty() && !multimodal {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::System(_) | Message::Custom(_) => {}
        }
    }
    contents
}

const SUBSCHEMAS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Rewrites string/number `const` to a one-element `enum`, recursively through subschemas.
pub(super) fn rewrite_const_as_enum(schema: &Value, is_name_map: bool) -> Value {
    match schema {
        Value::Array(a) => {
            Value::Array(a.iter().map(|v| rewrite_const_as_enum(v, false)).collect())
        }
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, v) in o {
                let nv = if is_name_map || SUBSCHEMAS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, false)
                } else if MAP_KEYWORDS.contains(&k.as_str()) {
                    rewrite_const_as_enum(v, true)
                } else {
                    v.clone()
                };
                out.insert(k.clone(), nv);
            }
            if !is_name_map
                && out.contains_key("const")
                && out.get("enum").is_none_or(Value::is_null)
            {
                if let Some(c) = out
                    .get("const")
                    .filter(|c| c.is_string() || c.is_number())
                    .cloned()
                {
                    out.shift_remove("const");
                    out.insert("enum".into(), json!([c]));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn google_level(model: &Model, level: ThinkingLevel) -> Option<&'static str> {
    let mapped = thinking_level_map(model, level.as_str())
        .and_then(Value::as_str)
        .map(str::to_lowercase);
    let l = mapped.unwrap_or_else(|| level.as_str().to_string());
    Some(match l.as_str() {
        "minimal" => "MINIMAL",
        "low" => "LOW",
        "medium" => "MEDIUM",
        "high" => "HIGH",
        _ => return None,
    })
}

fn budget(model: &Model, level: ThinkingLevel, options: &StreamOptions) -> i64 {
    let custom = options.thinking_budgets.as_ref().and_then(|b| match level {
        ThinkingLevel::Minimal => b.minimal,
        ThinkingLevel::Low => b.low,
        ThinkingLevel::Medium => b.medium,
        ThinkingLevel::High => b.high,
        _ => None,
    });
    if let Some(c) = custom {
        return c as i64;
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        ThinkingLevel::Minimal => table[0],
        ThinkingLevel::Low => table[1],
        ThinkingLevel::Medium => table[2],
        ThinkingLevel::High => table[3],
        _ => -1,
    }
}

/// The `generateContent` body the reference sends (shared with Vertex AI).
pub(crate) fn request_body(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Map<String, Value>, String> {
    let messages = collapse_system_messages(&context.messages);
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, &messages)),
    );
    let system = get_initial_system_message(&messages)
        .map(get_system_message_text)
        .unwrap_or_default();
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}], "role": "user"}),
        );
    }
    let tools = get_current_tools(&messages);
    if !tools.is_empty() {
        use crate::providers::constrained;
        // Gemini 3+ enforces required parameters in its validated mode: strict tools go there.
        let supports_strict = gemini_major(&model.id).is_some_and(|v| v >= 3);
        let mut any_strict = false;
        let decls = tools
                .iter()
                .map(|t| {
                    let (strict, parameters) = constrained::sent(t, supports_strict, None)?;
                    any_strict |= strict;
                    Ok(json!({"name": t.name, "description": t.description, "parametersJsonSchema": rewrite_const_as_enum(&parameters, false)}))
                })
                .collect::<Result<Vec<Value>, String>>()?;
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
        let choice = match &options.tool_choice {
            Some(Value::String(c)) => Some(c.as_str()),
            // Any other choice maps to AUTO, as the reference's `mapToolChoice` does.
            Some(v) if !v.is_null() => Some(""),
            _ => None,
        };
        let mode = match choice {
            Some("none") => Some("NONE"),
            Some("any") => Some("ANY"),
            _ if any_strict => Some("VALIDATED"),
            Some(_) => Some("AUTO"),
            None => None,
        };
        if let Some(mode) = mode {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut gen = Map::new();
    if let Some(t) = options.temperature {
        gen.insert("temperature".into(), json!(t));
    }
    gen.insert(
        "maxOutputTokens".into(),
        json!(resolve_max_tokens(model, context, options)),
    );
    if model.reasoning {
        let level = options
            .reasoning
            .filter(|l| *l != ThinkingLevel::Off)
            .map(|l| clamp_thinking_level(model, l))
            .filter(|l| *l != ThinkingLevel::Off);
        let cfg = match level {
            Some(l) => {
                if uses_thinking_level(model) {
                    json!({"includeThoughts": true, "thinkingLevel": google_level(model, l).unwrap_or("HIGH")})
                } else {
                    let resolved = thinking_level_map(model, l.as_str())
                        .and_then(Value::as_str)
                        .and_then(|s| ThinkingLevel::parse(&s.to_lowercase()))
                        .unwrap_or(match l {
                            ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
                            other => other,
                        });
                    json!({"includeThoughts": true, "thinkingBudget": budget(model, resolved, options)})
                }
            }
            None => {
                if !uses_thinking_level(model) {
                    json!({"thinkingBudget": 0})
                } else {
                    let fallback = clamp_thinking_level(model, ThinkingLevel::Off);
                    match (fallback != ThinkingLevel::Off)
                        .then(|| google_level(model, fallback))
                        .flatten()
                    {
                        Some(gl) => json!({"thinkingLevel": gl}),
                        None => json!({"thinkingBudget": 0}),
                    }
                }
            }
        };
        gen.insert("thinkingConfig".into(), cfg);
    }
    body.insert("generationConfig".into(), Value::Object(gen));
    Ok(body)
}

/// The Gemini SDK's error message: the compact JSON of the body (non-JSON bodies wrapped).
pub(crate) fn sdk_error_message(f: &HttpFailure) -> String {
    match serde_json::from_str::<Value>(&f.body) {
        Ok(v) => compact(&v),
        Err(_) => compact(
            &json!({"error": {"message": f.body, "code": f.status, "status": f.status_text}}),
        ),
    }
}

impl WireApi for super::Google {
    const CREDENTIALS: Credentials = Credentials::ApiKey;
    // The Gemini SDK's fetch fails with the signal's own error.
    const ABORT_MESSAGE: &'static str = "This operation was aborted";
    type Stream = super::stream::State;

    /// Builds the request (URL, headers and body) the reference would send.
    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let body = request_body(model, context, options)?;
        let mut headers: Vec<(String, String)> =
            vec![("Content-Type".into(), "application/json".into())];
        if let Some(key) = api_key(model, options) {
            headers.push(("x-goog-api-key".into(), key));
        }
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        Ok(HttpRequest {
            // The Gemini SDK's errors carry no headers.
            ignore_retry_headers: true,
            ..HttpRequest::to_base_url(
                model,
                &format!("/models/{}:streamGenerateContent?alt=sse", model.id),
                headers,
                body,
            )
        })
    }

    /// The compact JSON of the body (non-JSON bodies wrapped).
    fn sdk_message(f: &HttpFailure) -> String {
        sdk_error_message(f)
    }
}
