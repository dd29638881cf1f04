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

/// The text of an error carried by a streamed record: its `message`, else the JSON.
pub(crate) fn stream_error_message(e: &Value) -> String {
    match e.get("message") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(m) if json_truthy(m) => compact(m),
        _ => compact(e),
    }
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
