//! The Codex request: the body, the headers with the token's account id, the URL, and the
//! wording of HTTP failures (ChatGPT usage limits in words).

use serde_json::{json, Map, Value};

use crate::message::ThinkingLevel;
use crate::model::Model;
use crate::providers::constrained::{self, GrammarInputs};
use crate::providers::driver::{Built, Credentials, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::model_options::{api_key, compat, merge_headers, resolve_max_tokens};
use crate::providers::openai_responses::request::{
    convert_input, grammar_tools, responses_tool, stream_grammar_inputs, InputOptions,
    TOOL_CALL_PROVIDERS,
};
use crate::providers::thinking::{clamp_thinking_level, thinking_level_map};
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::{collapse_system_messages, get_current_tools};

const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";
const JWT_CLAIM: &str = "https://api.openai.com/auth";
/// The request effort when the real one travels in `configuration_update` items.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

fn flag(model: &Model, key: &str, default: bool) -> bool {
    compat(model, key)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// `{baseUrl}/codex/responses`, unless the base already ends with it or with `/codex`.
fn codex_url(model: &Model) -> String {
    let raw = match model.base_url.trim() {
        "" => DEFAULT_BASE_URL,
        _ => model.base_url.as_str(),
    };
    let base = raw.trim_end_matches('/');
    if base.ends_with("/codex/responses") {
        base.to_string()
    } else if base.ends_with("/codex") {
        format!("{base}/responses")
    } else {
        format!("{base}/codex/responses")
    }
}

/// The WebSocket URL of the Codex endpoint: [`codex_url`] with `https` as `wss` and `http`
/// as `ws`.
pub(super) fn websocket_url(model: &Model) -> String {
    let url = codex_url(model);
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        format!("wss://{}", &url["https://".len()..])
    } else if lower.starts_with("http://") {
        format!("ws://{}", &url["http://".len()..])
    } else {
        url
    }
}

/// The ChatGPT account id inside the OAuth token (a JWT).
pub(super) fn account_id(token: &str) -> Result<String, String> {
    use base64::Engine as _;
    let fail = || "Failed to extract accountId from token".to_string();
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(fail());
    }
    // `atob`: the standard alphabet, padding optional.
    let payload = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    )
    .decode(parts[1])
    .map_err(|_| fail())?;
    let claims: Value = serde_json::from_slice(&payload).map_err(|_| fail())?;
    match claims.pointer(&format!(
        "/{}/chatgpt_account_id",
        JWT_CLAIM.replace('/', "~1")
    )) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        Some(v) if !v.is_null() && v != &json!(false) && v != &json!(0) => {
            Ok(crate::providers::js_json::compact(v))
        }
        _ => Err(fail()),
    }
}

/// The effort `streamSimple` asks for: the clamped level, else `none` for reasoning models.
fn requested_effort(model: &Model, options: &StreamOptions) -> Option<String> {
    let clamped = options
        .reasoning
        .map(|l| clamp_thinking_level(model, l))
        .unwrap_or(ThinkingLevel::Off);
    match clamped {
        ThinkingLevel::Off => model.reasoning.then(|| "none".to_string()),
        l => Some(l.as_str().to_string()),
    }
}

/// The host's word for an effort; `None` when the model takes no reasoning field for it.
fn native_effort(model: &Model, effort: &str) -> Option<Value> {
    if effort == "none" {
        return match thinking_level_map(model, "off") {
            None => Some(json!("none")),
            Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        };
    }
    match thinking_level_map(model, effort) {
        Some(v) if !v.is_null() => Some(v.clone()),
        _ => Some(json!(effort)),
    }
}

/// The effort carried in `configuration_update` items (models with mid-conversation effort).
pub(super) fn configuration_update_effort(
    model: &Model,
    options: &StreamOptions,
) -> Option<String> {
    if !flag(model, "supportsMidConvoEffort", false) {
        return None;
    }
    let effort = requested_effort(model, options)?;
    match native_effort(model, &effort)? {
        Value::String(s) => Some(s),
        other => Some(crate::providers::js_json::compact(&other)),
    }
}

/// Sets a header, replacing any of the same name (names compare without case).
fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_string(), value));
}

/// The headers both transports start from: `originator`, the model's and the caller's
/// headers, then the token and its account id.
fn base_headers(model: &Model, options: &StreamOptions) -> Vec<(String, String)> {
    let token = api_key(model, options).unwrap_or_default();
    let account = account_id(&token).unwrap_or_default();
    let mut headers = vec![("originator".to_string(), "pi".to_string())];
    merge_headers(&mut headers, model.headers.as_ref());
    merge_headers(&mut headers, Some(&options.headers));
    set_header(&mut headers, "authorization", format!("Bearer {token}"));
    set_header(&mut headers, "chatgpt-account-id", account);
    headers
}

/// The WebSocket handshake headers: the base headers without `accept`, `content-type` and
/// the SSE beta, with the WebSocket beta and `request_id` (the session id, else a fresh
/// UUIDv7) as `x-client-request-id` and `session-id`.
pub(super) fn websocket_headers(
    model: &Model,
    options: &StreamOptions,
    request_id: &str,
) -> Vec<(String, String)> {
    let mut headers = base_headers(model, options);
    headers.retain(|(k, _)| {
        !["accept", "content-type", "openai-beta"]
            .iter()
            .any(|n| k.eq_ignore_ascii_case(n))
    });
    set_header(
        &mut headers,
        "openai-beta",
        "responses_websockets=2026-02-06".into(),
    );
    set_header(&mut headers, "x-client-request-id", request_id.into());
    set_header(&mut headers, "session-id", request_id.into());
    headers
}

/// The input property of each grammar tool the request declares (their calls map to and
/// from custom tool calls).
pub(super) fn grammar_inputs(model: &Model, context: &Context) -> GrammarInputs {
    let keeps_system_messages = flag(model, "supportsMidConvoSystemMessages", false);
    stream_grammar_inputs(model, &context.messages, keeps_system_messages)
}

/// The key of the WebSocket session cache and of the fallback memory: the whole `sessionId`
/// (not cut to 64 characters), unless it is empty or the cache retention is `none`.
pub(super) fn websocket_session(options: &StreamOptions) -> Option<String> {
    let retention = options.cache_retention.as_deref().unwrap_or("short");
    options
        .session_id
        .clone()
        .filter(|s| !s.is_empty() && retention != "none")
}

/// The session id sent as the prompt cache key and the session headers (the first 64
/// characters of `sessionId`), unless the cache retention is `none`; it also keys the
/// WebSocket session cache.
pub(super) fn cache_session(options: &StreamOptions) -> Option<String> {
    let retention = options.cache_retention.as_deref().unwrap_or("short");
    options
        .session_id
        .as_ref()
        .filter(|_| retention != "none")
        .map(|s| s.chars().take(64).collect())
}

impl WireApi for super::Codex {
    const CREDENTIALS: Credentials = Credentials::ApiKey;

    type Stream = super::stream::State;

    fn initial_message(
        model: &Model,
        options: &StreamOptions,
        message: &mut crate::message::AssistantMessage,
    ) {
        if let Some(level) = configuration_update_effort(model, options) {
            message.extra_mut().provider_thinking_level = Some(level);
        }
    }

    fn check(model: &Model, options: &StreamOptions) -> Result<(), String> {
        account_id(&api_key(model, options).unwrap_or_default()).map(|_| ())
    }

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let mid_system = flag(model, "supportsMidConvoSystemMessages", false);
        let messages = if mid_system {
            context.messages.to_vec()
        } else {
            collapse_system_messages(&context.messages)
        };
        let tool_changes = mid_system && flag(model, "supportsAdditionalTools", false);
        // Codex's tools carry `strict: null` unless constrained sampling makes them strict;
        // none at all where the model's compat says the server takes no such field.
        let strict_field = flag(model, "supportsStrictMode", true).then_some(Value::Null);
        let update = configuration_update_effort(model, options);
        let grammar_tools = grammar_tools(model);
        let grammar_inputs = constrained::grammar_inputs(&messages, grammar_tools)?;
        let opts = InputOptions {
            tool_changes,
            tool_strict: strict_field.clone(),
            configuration_update: update.as_deref(),
            grammar_inputs: Some(&grammar_inputs),
            grammar_tools,
        };
        let session = cache_session(options);
        let mut body = Map::new();
        body.insert("model".into(), json!(model.id));
        body.insert("store".into(), json!(false));
        body.insert("stream".into(), json!(true));
        body.insert(
            "input".into(),
            Value::Array(convert_input(
                model,
                &messages,
                &TOOL_CALL_PROVIDERS,
                &opts,
            )?),
        );
        body.insert("text".into(), json!({"verbosity": "low"}));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if let Some(s) = &session {
            body.insert("prompt_cache_key".into(), json!(s));
        }
        body.insert(
            "tool_choice".into(),
            options.tool_choice.clone().unwrap_or_else(|| json!("auto")),
        );
        body.insert("parallel_tool_calls".into(), json!(true));
        let max_tokens = resolve_max_tokens(model, context, options);
        if max_tokens > 0 && flag(model, "supportsMaxOutputTokens", true) {
            body.insert("max_output_tokens".into(), json!(max_tokens.max(16)));
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !tool_changes {
            let tools = get_current_tools(&messages);
            if !tools.is_empty() {
                let list = tools
                    .iter()
                    .map(|t| responses_tool(t, strict_field.as_ref(), grammar_tools))
                    .collect::<Result<Vec<Value>, String>>()?;
                body.insert("tools".into(), Value::Array(list));
            }
        }
        match requested_effort(model, options) {
            Some(effort) => {
                let value = match &update {
                    None => native_effort(model, &effort),
                    Some(_) => Some(json!(CONFIGURATION_UPDATE_REQUEST_EFFORT)),
                };
                if let Some(v) = value {
                    body.insert("reasoning".into(), json!({"effort": v, "summary": "auto"}));
                }
            }
            None if model.reasoning => match thinking_level_map(model, "off") {
                Some(Value::Null) => {}
                Some(v) => {
                    body.insert("reasoning".into(), json!({"effort": v}));
                }
                None => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            },
            None => {}
        }

        let mut headers = base_headers(model, options);
        set_header(&mut headers, "openai-beta", "responses=experimental".into());
        set_header(&mut headers, "accept", "text/event-stream".into());
        set_header(&mut headers, "content-type", "application/json".into());
        if let Some(s) = session {
            set_header(&mut headers, "session-id", s.clone());
            set_header(&mut headers, "x-client-request-id", s);
        }
        Ok(HttpRequest {
            url: codex_url(model),
            headers,
            body: Value::Object(body),
            ignore_retry_headers: false,
        })
    }

    fn new_stream(model: &Model, context: &Context) -> super::stream::State {
        super::stream::State::new(grammar_inputs(model, context))
    }

    /// The body's error message, or ChatGPT's usage limit in words.
    fn sdk_message(f: &HttpFailure) -> String {
        let fallback = if !f.body.is_empty() {
            f.body.clone()
        } else if !f.status_text.is_empty() {
            f.status_text.clone()
        } else {
            "Request failed".to_string()
        };
        let parsed: Option<Value> = serde_json::from_str(&f.body).ok();
        let Some(err) = parsed
            .as_ref()
            .and_then(|p| p.get("error"))
            .filter(|e| !matches!(e, Value::Null | Value::Bool(false)) && e.as_str() != Some(""))
        else {
            return fallback;
        };
        let text = |k: &str| err.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let code = text("code").or_else(|| text("type")).unwrap_or("");
        let limit = [
            "usage_limit_reached",
            "usage_not_included",
            "rate_limit_exceeded",
        ]
        .iter()
        .any(|c| code.to_ascii_lowercase().contains(c));
        let friendly = (limit || f.status == 429).then(|| {
            let plan = text("plan_type")
                .map(|p| format!(" ({} plan)", p.to_lowercase()))
                .unwrap_or_default();
            let when = err
                .get("resets_at")
                .and_then(Value::as_f64)
                .filter(|r| *r != 0.0)
                .map(|r| {
                    let now = crate::clock::now_ms() as f64;
                    let mins = ((r * 1000.0 - now) / 60000.0).round().max(0.0);
                    format!(" Try again in ~{mins} min.")
                })
                .unwrap_or_default();
            format!("You have hit your ChatGPT usage limit{plan}.{when}")
                .trim()
                .to_string()
        });
        friendly
            .or_else(|| text("message").map(str::to_string))
            .unwrap_or(fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_id_comes_from_the_token() {
        // {"https://api.openai.com/auth": {"chatgpt_account_id": "acct_test_123"}}
        let token = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOiB7ImNoYXRncHRfYWNjb3VudF9pZCI6ICJhY2N0X3Rlc3RfMTIzIn19.sig";
        assert_eq!(account_id(token).unwrap(), "acct_test_123");
        assert!(account_id("not-a-jwt").is_err());
        assert!(account_id("a.e30.c").is_err());
    }

    #[test]
    fn urls_end_in_codex_responses() {
        let mut m = Model::new("m", "openai-codex-responses", "openai-codex", "");
        assert_eq!(
            codex_url(&m),
            "https://chatgpt.com/backend-api/codex/responses"
        );
        m.base_url = "http://h/x/codex/".into();
        assert_eq!(codex_url(&m), "http://h/x/codex/responses");
    }
}
