//! A case of `shared/providers/`: its inputs, and the output document of FORMAT.md after
//! running the provider against the replay server.

use serde_json::{json, Map, Value};

use super::recording::{normalize_tool_call, RecordingSink};
use super::server::{responses_of, start_server, CapturedRequest};
use crate::message::{Message, ThinkingLevel, ToolDeclaration};
use crate::model::Model;
use crate::providers::is_context_overflow;
use crate::providers::js_json::string_members;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::normalize_context;

/// Headers reported in the output document (plus those named by the case).
pub const HEADERS_THAT_MATTER: [&str; 11] = [
    "content-type",
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "anthropic-version",
    "anthropic-beta",
    "session-id",
    "session_id",
    "x-client-request-id",
    "x-session-affinity",
    "x-session-id",
];

/// Headers reported for one API only (its own auth and session headers).
pub fn headers_of_api(api: &str) -> &'static [&'static str] {
    match api {
        "mistral-conversations" => &["x-affinity"],
        "azure-openai-responses" => &["api-key"],
        "openai-codex-responses" => &["chatgpt-account-id", "originator", "openai-beta"],
        _ => &[],
    }
}

/// The model, context and options a case describes, with `{{origin}}` replaced.
pub fn case_inputs(case: &Value, origin: &str) -> Result<(Model, Context, StreamOptions), String> {
    let api = case
        .get("api")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let req = case.get("request").cloned().unwrap_or(Value::Null);
    let mut model: Model = serde_json::from_value(req.get("model").cloned().unwrap_or(json!({})))
        .map_err(|e| format!("bad model: {e}"))?;
    model.base_url = if model.base_url.is_empty() {
        "{{origin}}".to_string()
    } else {
        model.base_url.clone()
    }
    .replace("{{origin}}", origin);
    model.api = api;
    let ctx = req.get("context").cloned().unwrap_or(json!({}));
    let messages: Vec<Message> =
        serde_json::from_value(ctx.get("messages").cloned().unwrap_or(json!([])))
            .map_err(|e| format!("bad messages: {e}"))?;
    let tools: Vec<std::sync::Arc<ToolDeclaration>> =
        serde_json::from_value(ctx.get("tools").cloned().unwrap_or(json!([])))
            .map_err(|e| format!("bad tools: {e}"))?;
    let system = ctx.get("systemPrompt").and_then(Value::as_str);
    let context = Context::new(normalize_context(system, &tools, messages));
    let o = req.get("options").cloned().unwrap_or(json!({}));
    let options = StreamOptions {
        api_key: Some(
            o.get("apiKey")
                .and_then(Value::as_str)
                .unwrap_or("test-api-key-0001")
                .to_string(),
        ),
        max_tokens: o.get("maxTokens").and_then(Value::as_u64),
        temperature: o.get("temperature").and_then(Value::as_f64),
        reasoning: o
            .get("reasoning")
            .and_then(Value::as_str)
            .and_then(ThinkingLevel::parse),
        tool_choice: o.get("toolChoice").cloned(),
        session_id: o
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string),
        cache_retention: o
            .get("cacheRetention")
            .and_then(Value::as_str)
            .map(str::to_string),
        metadata: o.get("metadata").and_then(Value::as_object).cloned(),
        max_retries: o
            .get("maxRetries")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        max_retry_delay_ms: o.get("maxRetryDelayMs").and_then(Value::as_u64),
        headers: o
            .get("headers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        env: string_members(o.get("env")),
        transport: o
            .get("transport")
            .and_then(Value::as_str)
            .and_then(crate::stream_fn::Transport::parse),
        websocket_connect_timeout_ms: o.get("websocketConnectTimeoutMs").and_then(Value::as_u64),
        timeout_ms: o.get("timeoutMs").and_then(Value::as_u64),
        ..StreamOptions::default()
    };
    Ok((model, context, options))
}

/// A request as the output document reports it: method, path, the headers that matter
/// (plus `extra`, lower-cased) and the parsed body (`{"$raw": text}` when not JSON).
pub fn describe_request(r: &CapturedRequest, extra: &[String]) -> Value {
    let mut wanted: Vec<String> = HEADERS_THAT_MATTER.iter().map(|s| s.to_string()).collect();
    wanted.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
    wanted.sort();
    wanted.dedup();
    let mut headers = Map::new();
    for name in wanted {
        let values: Vec<&str> = r
            .headers
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        if !values.is_empty() {
            headers.insert(name, json!(values.join(", ")));
        }
    }
    let body = serde_json::from_str::<Value>(&r.body).unwrap_or_else(|_| json!({"$raw": r.body}));
    json!({"method": r.method, "path": r.path, "headers": headers, "body": body})
}

/// The final message of a call as the output document shows it: without clocks, tool-call
/// ids normalized.
fn normalized_message(api: &str, message: Option<&crate::message::AssistantMessage>) -> Value {
    let Some(m) = message else {
        return Value::Null;
    };
    let mut v = serde_json::to_value(Message::from(m.clone())).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("timestamp");
        o.remove("durationMs");
        // Diagnostics carry their own clock readings and error stacks.
        if let Some(Value::Array(diagnostics)) = o.get_mut("diagnostics") {
            for d in diagnostics.iter_mut().filter_map(Value::as_object_mut) {
                d.remove("timestamp");
                if let Some(e) = d.get_mut("error").and_then(Value::as_object_mut) {
                    e.remove("stack");
                }
            }
        }
        if let Some(Value::Array(content)) = o.get_mut("content") {
            for b in content.iter_mut() {
                if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                    *b = normalize_tool_call(api, b);
                }
            }
        }
    }
    v
}

/// Cases with a session run one at a time, each from a clean slate: the reference runs every
/// case in a fresh process, while the providers keep some state per session for the whole
/// process (sessions over Claude's strict-tool limits).
static SESSION_CASES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs a case end to end and returns the output document of FORMAT.md. `calls: N` streams
/// the same request N times in a row; calls after the first are reported in `laterCalls`.
pub async fn run_case(case: &Value) -> Result<Value, String> {
    let server = start_server(responses_of(case))
        .await
        .map_err(|e| e.to_string())?;
    let (model, context, mut options) = case_inputs(case, &server.origin)?;
    let session = options.session_id.clone();
    let _one_at_a_time = match &session {
        Some(_) => Some(SESSION_CASES.lock().await),
        None => None,
    };
    let clean = || {
        if let Some(id) = session.as_deref().filter(|s| !s.is_empty()) {
            crate::providers::cleanup_session_resources(Some(id));
        }
    };
    clean();
    let api = model.api.clone();
    let mut sink = RecordingSink::new(&api);
    // `abortAfterEvents: N`: the caller aborts right after the N-th event.
    if let Some(n) = case.get("abortAfterEvents").and_then(Value::as_u64) {
        options.signal = tokio_util::sync::CancellationToken::new();
        sink.abort_after(n as usize, options.signal.clone());
    }
    crate::providers::run(&model, &context, &options, &mut sink).await;
    let mut later_calls = Vec::new();
    let calls = case.get("calls").and_then(Value::as_u64).unwrap_or(1);
    for _ in 1..calls {
        let mut later = RecordingSink::new(&api);
        crate::providers::run(&model, &context, &options, &mut later).await;
        later_calls.push(json!({
            "events": later.events,
            "message": normalized_message(&api, later.message.as_ref()),
        }));
    }
    clean();
    let requests = server.requests.lock().clone();
    let req = case.get("request").cloned().unwrap_or(Value::Null);
    let mut extra: Vec<String> = headers_of_api(&api).iter().map(|h| h.to_string()).collect();
    for src in [
        req.pointer("/model/headers"),
        req.pointer("/options/headers"),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(o) = src.as_object() {
            extra.extend(o.keys().cloned());
        }
    }
    let overflow = sink
        .message
        .as_ref()
        .is_some_and(|m| is_context_overflow(m, model.context_window));
    let message = normalized_message(&api, sink.message.as_ref());
    let mut out = Map::new();
    out.insert(
        "case".into(),
        case.get("id").cloned().unwrap_or(Value::Null),
    );
    out.insert("api".into(), json!(api));
    out.insert(
        "request".into(),
        requests
            .first()
            .map(|r| describe_request(r, &extra))
            .unwrap_or(Value::Null),
    );
    out.insert("requestCount".into(), json!(requests.len()));
    if requests.len() > 1 {
        out.insert(
            "extraRequests".into(),
            Value::Array(
                requests[1..]
                    .iter()
                    .map(|r| describe_request(r, &extra))
                    .collect(),
            ),
        );
    }
    out.insert("events".into(), Value::Array(sink.events));
    out.insert("message".into(), message);
    out.insert("overflow".into(), json!(overflow));
    if !later_calls.is_empty() {
        out.insert("laterCalls".into(), Value::Array(later_calls));
    }
    Ok(Value::Object(out))
}
