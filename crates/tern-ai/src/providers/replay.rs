//! Replay of recorded HTTP exchanges: a tiny local HTTP server that answers with a case's
//! response chunk by chunk and captures the requests, plus the runner that drives a provider
//! against it and renders the oracle's output document (`shared/providers/FORMAT.md`).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{is_context_overflow, EventSink};
use crate::event::AssistantMessageEvent;
use crate::message::{ContentBlock, Message, ThinkingLevel, ToolDeclaration};
use crate::model::Model;
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

/// One request the replay server received.
#[derive(Clone, Debug)]
pub struct CapturedRequest {
    /// `POST`.
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

/// A running replay server.
pub struct ReplayServer {
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    /// Requests received so far.
    pub requests: Arc<Mutex<Vec<CapturedRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn chunk_bytes(chunk: &Value) -> Vec<u8> {
    match chunk {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(o) => {
            if let Some(b) = o.get("b64").and_then(Value::as_str) {
                return base64_decode(b);
            }
            if let Some(h) = o.get("hex").and_then(Value::as_str) {
                return (0..h.len() / 2)
                    .filter_map(|i| u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok())
                    .collect();
            }
            o.get("text")
                .and_then(Value::as_str)
                .map(|t| t.as_bytes().to_vec())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Standard base64 (padding optional) to bytes; invalid characters are skipped.
pub fn base64_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// The responses of a case (`responses`, or the single `response`).
pub fn responses_of(case: &Value) -> Vec<Value> {
    match case.get("responses").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a.clone(),
        _ => vec![case.get("response").cloned().unwrap_or(Value::Null)],
    }
}

/// Starts a server on 127.0.0.1 answering the n-th request with `responses[n]` (or the
/// last one).
pub async fn start_server(responses: Vec<Value>) -> std::io::Result<ReplayServer> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://{}", listener.local_addr()?);
    let requests: Arc<Mutex<Vec<CapturedRequest>>> = Arc::default();
    let reqs = requests.clone();
    let responses = Arc::new(responses);
    let task = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let reqs = reqs.clone();
            let responses = responses.clone();
            tokio::spawn(async move {
                let _ = serve_connection(sock, reqs, responses).await;
            });
        }
    });
    Ok(ReplayServer {
        origin,
        requests,
        task,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn serve_connection(
    mut sock: TcpStream,
    reqs: Arc<Mutex<Vec<CapturedRequest>>>,
    responses: Arc<Vec<Value>>,
) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // Head.
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p;
            }
            let mut tmp = [0u8; 8192];
            let n = sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or("");
        let mut parts = request_line.split(' ');
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers: Vec<(String, String)> = Vec::new();
        for l in lines {
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let body: Vec<u8> = if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(p) = find(&buf, b"\r\n") {
                        break p;
                    }
                    let mut tmp = [0u8; 8192];
                    let n = sock.read(&mut tmp).await?;
                    if n == 0 {
                        return Ok(());
                    }
                    buf.extend_from_slice(&tmp[..n]);
                };
                let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
                let size =
                    usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
                        .unwrap_or(0);
                buf.drain(..line_end + 2);
                while buf.len() < size + 2 {
                    let mut tmp = [0u8; 8192];
                    let n = sock.read(&mut tmp).await?;
                    if n == 0 {
                        return Ok(());
                    }
                    buf.extend_from_slice(&tmp[..n]);
                }
                body.extend_from_slice(&buf[..size]);
                buf.drain(..size + 2);
                if size == 0 {
                    break;
                }
            }
            body
        } else {
            let len: usize = get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < len {
                let mut tmp = [0u8; 8192];
                let n = sock.read(&mut tmp).await?;
                if n == 0 {
                    return Ok(());
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            buf.drain(..len).collect()
        };
        let index = {
            let mut r = reqs.lock();
            r.push(CapturedRequest {
                method,
                path,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            });
            r.len() - 1
        };
        let response = &responses[index.min(responses.len().saturating_sub(1))];
        let status = response
            .get("status")
            .and_then(Value::as_u64)
            .unwrap_or(200);
        let reason = reqwest::StatusCode::from_u16(status as u16)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unknown");
        let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
        if let Some(h) = response.get("headers").and_then(Value::as_object) {
            for (k, v) in h {
                let lk = k.to_ascii_lowercase();
                if lk == "content-length" || lk == "transfer-encoding" || lk == "connection" {
                    continue;
                }
                let v = v
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string());
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        out.push_str("transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n");
        sock.write_all(out.as_bytes()).await?;
        sock.flush().await?;
        let delay = response
            .get("chunkDelayMs")
            .and_then(Value::as_u64)
            .unwrap_or(3);
        for chunk in response
            .get("chunks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let bytes = chunk_bytes(chunk);
            if !bytes.is_empty() {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                sock.write_all(&frame).await?;
                sock.flush().await?;
            }
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
        }
        sock.write_all(b"0\r\n\r\n").await?;
        sock.flush().await?;
    }
}

/// Records events as the oracle does: at emission time, with tool-call arguments as they are
/// in the partial message right then.
#[derive(Default)]
pub struct RecordingSink {
    /// The recorded events.
    pub events: Vec<Value>,
    /// The final message, once `done`/`error` arrived.
    pub message: Option<crate::message::AssistantMessage>,
    api: String,
}

impl RecordingSink {
    /// A sink for a case of `api` (Gemini-generated tool-call ids are normalized).
    pub fn new(api: &str) -> Self {
        RecordingSink {
            api: api.to_string(),
            ..Self::default()
        }
    }
}

fn normalize_tool_call(api: &str, call: &Value) -> Value {
    let mut out = call.clone();
    if api == "google-generative-ai" {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some(id) = call.get("id").and_then(Value::as_str) {
            let prefix = format!("{name}_");
            if let Some(rest) = id.strip_prefix(&prefix) {
                let mut it = rest.split('_');
                let (a, b, c) = (it.next(), it.next(), it.next());
                let digits = |s: Option<&str>| {
                    s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                };
                if digits(a) && digits(b) && c.is_none() {
                    out["id"] = json!(format!("{name}_<generated>"));
                }
            }
        }
    }
    out
}

impl EventSink for RecordingSink {
    fn emit(&mut self, event: AssistantMessageEvent) {
        use AssistantMessageEvent::*;
        let mut rec = Map::new();
        rec.insert("type".into(), json!(event.kind()));
        match &event {
            TextStart { content_index, .. } | ThinkingStart { content_index, .. } => {
                rec.insert("contentIndex".into(), json!(content_index));
            }
            TextDelta {
                content_index,
                delta,
                ..
            }
            | ThinkingDelta {
                content_index,
                delta,
                ..
            } => {
                rec.insert("contentIndex".into(), json!(content_index));
                rec.insert("delta".into(), json!(delta));
            }
            TextEnd {
                content_index,
                content,
                ..
            }
            | ThinkingEnd {
                content_index,
                content,
                ..
            } => {
                rec.insert("contentIndex".into(), json!(content_index));
                rec.insert("content".into(), json!(content));
            }
            ToolcallStart {
                content_index,
                partial,
            } => {
                rec.insert("contentIndex".into(), json!(content_index));
                let args = partial.with(|m| match m.content.get(*content_index) {
                    Some(ContentBlock::ToolCall(c)) => c.arguments.clone(),
                    _ => json!({}),
                });
                rec.insert("arguments".into(), args);
            }
            ToolcallDelta {
                content_index,
                delta,
                partial,
            } => {
                rec.insert("contentIndex".into(), json!(content_index));
                rec.insert("delta".into(), json!(delta));
                let args = partial.with(|m| match m.content.get(*content_index) {
                    Some(ContentBlock::ToolCall(c)) => c.arguments.clone(),
                    _ => json!({}),
                });
                rec.insert("arguments".into(), args);
            }
            ToolcallEnd {
                content_index,
                tool_call,
                ..
            } => {
                rec.insert("contentIndex".into(), json!(content_index));
                let tc = serde_json::to_value(ContentBlock::ToolCall(tool_call.clone()))
                    .unwrap_or(Value::Null);
                rec.insert("toolCall".into(), normalize_tool_call(&self.api, &tc));
            }
            Done { reason, message } => {
                rec.insert("reason".into(), json!(reason));
                self.message = Some((**message).clone());
            }
            Error { reason, error } => {
                rec.insert("reason".into(), json!(reason));
                self.message = Some((**error).clone());
            }
            Start { .. } => {}
        }
        self.events.push(Value::Object(rec));
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
        ..StreamOptions::default()
    };
    Ok((model, context, options))
}

fn describe_request(r: &CapturedRequest, extra: &[String]) -> Value {
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

/// Runs a case end to end and returns the output document of FORMAT.md.
pub async fn run_case(case: &Value) -> Result<Value, String> {
    let server = start_server(responses_of(case))
        .await
        .map_err(|e| e.to_string())?;
    let (model, context, options) = case_inputs(case, &server.origin)?;
    let api = model.api.clone();
    let mut sink = RecordingSink::new(&api);
    super::run(&model, &context, &options, &mut sink).await;
    let requests = server.requests.lock().clone();
    let req = case.get("request").cloned().unwrap_or(Value::Null);
    let mut extra: Vec<String> = Vec::new();
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
    let message = sink.message.as_ref().map(|m| {
        let mut v = serde_json::to_value(Message::from(m.clone())).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("timestamp");
            o.remove("durationMs");
            if let Some(Value::Array(content)) = o.get_mut("content") {
                for b in content.iter_mut() {
                    if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                        *b = normalize_tool_call(&api, b);
                    }
                }
            }
        }
        v
    });
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
    out.insert("message".into(), message.unwrap_or(Value::Null));
    out.insert("overflow".into(), json!(overflow));
    Ok(Value::Object(out))
}
