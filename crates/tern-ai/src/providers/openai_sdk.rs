//! What both OpenAI APIs share because they go through the same SDK: how an HTTP failure
//! is worded, and the prefix the Responses API puts before it.

use serde_json::Value;

use super::http::HttpFailure;
use super::js_json::{compact, json_truthy};
use super::model_options::{api_key, merge_headers};
use crate::model::Model;
use crate::stream_fn::StreamOptions;

/// The SDK's error message for an HTTP failure (`"429 Rate limit..."`).
pub(crate) fn sdk_message(f: &HttpFailure) -> String {
    let parsed: Option<Value> = serde_json::from_str(&f.body).ok();
    match parsed {
        Some(v) => {
            let err = v.get("error");
            match err {
                Some(e) if !e.is_null() => match e.get("message") {
                    Some(Value::String(m)) if !m.is_empty() => format!("{} {m}", f.status),
                    Some(m) if !m.is_null() => format!("{} {}", f.status, compact(m)),
                    _ => format!("{} {}", f.status, compact(e)),
                },
                _ => format!("{} status code (no body)", f.status),
            }
        }
        None if f.body.is_empty() => format!("{} status code (no body)", f.status),
        None => format!("{} {}", f.status, f.body),
    }
}

/// The reference's displayed error text for an HTTP failure: `"<status>: <body.error>"` when
/// the SDK message does not already carry the body, with `prefix (<status>): ...` when a
/// prefix is given.
pub(crate) fn http_error_message(f: &HttpFailure, prefix: Option<&str>) -> String {
    let message = sdk_message(f);
    let parsed: Option<Value> = serde_json::from_str(&f.body).ok();
    let body = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
        .map(compact)
        .map(|b| truncate(b.trim()));
    match body {
        Some(b) if !message.contains(&b) => match prefix {
            Some(p) => format!("{p} ({}): {b}", f.status),
            None => format!("{}: {b}", f.status),
        },
        _ => match prefix {
            Some(p) => format!("{p} ({}): {message}", f.status),
            None => message,
        },
    }
}

fn truncate(s: &str) -> String {
    let n = s.encode_utf16().count();
    if n <= 4000 {
        return s.to_string();
    }
    let cut: String = s.chars().take(4000).collect();
    format!("{cut}... [truncated {} chars]", n - 4000)
}

/// The prefix of the Responses API's displayed HTTP errors (`OpenAI API error (429): ...`).
pub(crate) fn responses_error_prefix(model: &Model) -> String {
    if model.provider == "openai" {
        "OpenAI API error".into()
    } else {
        format!("{} API error", model.provider)
    }
}

/// The JSON of a streamed record, or the SDK's error for text that is not JSON.
pub(crate) fn parse_record(data: &str) -> Result<Value, String> {
    serde_json::from_str(data)
        .map_err(|_| "Error reading response: malformed server-sent event JSON.".to_string())
}

/// The text of an error carried by a streamed record (the SDK's `APIError` without a
/// status): its `message`, else the JSON of the error, else the SDK's placeholder.
pub(crate) fn stream_error_message(e: &Value) -> String {
    match e.get("message") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(m) if json_truthy(m) => compact(m),
        _ if json_truthy(e) => compact(e),
        _ => "(no status code or body)".to_string(),
    }
}

/// Whether the SDK hands a record over wrapped as `{event, data}` (Assistants-style
/// `thread.*` events): such a record is neither checked for errors nor a chunk.
pub(crate) fn is_wrapped_event(event: Option<&str>) -> bool {
    event.is_some_and(|e| e.starts_with("thread."))
}

/// The error object the SDK fails a streamed record with, if it does: for a record named
/// `error`, its `error` member (or the whole data when that is absent or null); otherwise
/// a truthy `error` member.
pub(crate) fn record_error(event: Option<&str>, value: &Value) -> Option<Value> {
    if is_wrapped_event(event) {
        return None;
    }
    if event == Some("error") {
        return Some(match value.get("error") {
            Some(e) if !e.is_null() => e.clone(),
            _ => value.clone(),
        });
    }
    value.get("error").filter(|e| json_truthy(e)).cloned()
}

/// The message of the SDK's failure for a streamed record, if it fails.
pub(crate) fn sdk_record_error(event: Option<&str>, value: &Value) -> Option<String> {
    record_error(event, value).map(|e| stream_error_message(&e))
}

/// The headers the OpenAI SDK starts from: the bearer key, JSON, then the model's headers.
pub(crate) fn base_headers(model: &Model, options: &StreamOptions) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(key) = api_key(model, options) {
        headers.push(("Authorization".into(), format!("Bearer {key}")));
    }
    headers.push(("Content-Type".into(), "application/json".into()));
    merge_headers(&mut headers, model.headers.as_ref());
    headers
}

/// Chat Completions' addition to a failure: OpenRouter puts the upstream provider's own
/// text in `error.metadata.raw`, appended on a new line unless the message already has it.
pub(crate) fn with_raw_metadata(message: String, error: Option<&Value>) -> String {
    let Some(raw) = error
        .and_then(|e| e.pointer("/metadata/raw"))
        .filter(|r| json_truthy(r))
    else {
        return message;
    };
    // `String(raw)`: strings bare, numbers and booleans as written, objects opaque.
    let text = match raw {
        Value::String(s) => s.clone(),
        Value::Object(_) => "[object Object]".to_string(),
        Value::Array(a) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => compact(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        other => compact(other),
    };
    if message.contains(&text) {
        return message;
    }
    format!("{message}\n{text}")
}

/// The `error` member of an HTTP failure's JSON body.
pub(crate) fn body_error(f: &HttpFailure) -> Option<Value> {
    serde_json::from_str::<Value>(&f.body)
        .ok()
        .and_then(|v| v.get("error").cloned())
}
