//! The HTTP side of a provider: one shared rustls client, sending with retries before the
//! first byte, and reading the body chunk by chunk with cancellation.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::HeaderMap;

use super::retry::{is_retryable, retry_delay};
use crate::stream_fn::StreamOptions;

/// A request ready to send: `POST url` with these headers and this JSON body.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// Full URL.
    pub url: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: serde_json::Value,
    /// Retry without looking at `retry-after`/`x-should-retry` (the Gemini SDK's errors carry
    /// no headers).
    pub ignore_retry_headers: bool,
}

impl HttpRequest {
    /// `POST {model.baseUrl}{path}` with a JSON object body, retry headers honoured.
    pub fn to_base_url(
        model: &crate::model::Model,
        path: &str,
        headers: Vec<(String, String)>,
        body: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        HttpRequest {
            url: format!("{}{path}", model.base_url.trim_end_matches('/')),
            headers,
            body: serde_json::Value::Object(body),
            ignore_retry_headers: false,
        }
    }
}

/// A non-2xx response, body read.
#[derive(Clone, Debug)]
pub struct HttpFailure {
    /// Status code.
    pub status: u16,
    /// Reason phrase (`Too Many Requests`).
    pub status_text: String,
    /// Response headers.
    pub headers: HeaderMap,
    /// Body text.
    pub body: String,
}

/// Why a request produced no streaming response.
#[derive(Clone, Debug)]
pub enum SendError {
    /// The server answered with an error status.
    Status(HttpFailure),
    /// No response: connection refused, reset, timeout...
    Network(String),
    /// The signal fired.
    Aborted,
    /// A failure whose final message is already known (a refused retry delay).
    Message(String),
}

/// Default for [`StreamOptions::idle_timeout_ms`]: two minutes of silence.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 120_000;

/// The idle timeout of these options; `None` when disabled.
pub fn idle_timeout(options: &StreamOptions) -> Option<Duration> {
    match options.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS) {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

fn idle_message(options: &StreamOptions, what: &str) -> String {
    let ms = options.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS);
    format!("Idle timeout: the server sent nothing for {ms} ms while {what} (idle_timeout_ms)")
}

/// Awaits `fut`, giving up after the idle timeout.
async fn idle<F: std::future::Future>(options: &StreamOptions, fut: F) -> Option<F::Output> {
    match idle_timeout(options) {
        Some(d) => tokio::time::timeout(d, fut).await.ok(),
        None => Some(fut.await),
    }
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

async fn send_once(
    req: &HttpRequest,
    body: &Bytes,
    options: &StreamOptions,
) -> Result<reqwest::Response, SendError> {
    let mut builder = client().post(&req.url);
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    if let Some(ms) = options.timeout_ms {
        builder = builder.timeout(Duration::from_millis(ms));
    }
    let fut = idle(options, builder.body(body.clone()).send());
    let res = tokio::select! {
        r = fut => r,
        _ = options.signal.cancelled() => return Err(SendError::Aborted),
    };
    let Some(res) = res else {
        return Err(SendError::Network(idle_message(
            options,
            "waiting for the response head",
        )));
    };
    let response = res.map_err(|e| SendError::Network(network_message(&e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let status_text = status.canonical_reason().unwrap_or("").to_string();
    let body = tokio::select! {
        b = idle(options, response.bytes()) => match b {
            Some(b) => b.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default(),
            None => idle_message(options, "reading an error response"),
        },
        _ = options.signal.cancelled() => return Err(SendError::Aborted),
    };
    Err(SendError::Status(HttpFailure {
        status: status.as_u16(),
        status_text,
        headers,
        body,
    }))
}

fn network_message(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut msg = if e.is_timeout() {
        "Request timed out.".to_string()
    } else {
        "Connection error.".to_string()
    };
    let mut source = e.source();
    let mut deepest = None;
    while let Some(s) = source {
        deepest = Some(s.to_string());
        source = s.source();
    }
    if let Some(d) = deepest {
        msg.push_str(": ");
        msg.push_str(&d);
    }
    msg
}

/// Sends `req`, retrying before the first byte as the reference does (`maxRetries`, default
/// 0). `sdk_message` renders a failure as the SDK's error message (used in the text of a
/// refused retry delay).
pub async fn send(
    req: &HttpRequest,
    options: &StreamOptions,
    sdk_message: &(dyn Fn(&HttpFailure) -> String + Sync),
) -> Result<reqwest::Response, SendError> {
    let body = Bytes::from(serde_json::to_vec(&req.body).unwrap_or_default());
    let max_retries = options.max_retries.unwrap_or(0);
    let mut remaining = max_retries;
    loop {
        if options.signal.is_cancelled() {
            return Err(SendError::Aborted);
        }
        let err = match send_once(req, &body, options).await {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        let (status, headers, message) = match &err {
            SendError::Status(f) => (
                Some(f.status),
                (!req.ignore_retry_headers).then_some(&f.headers),
                sdk_message(f),
            ),
            SendError::Network(m) => (None, None, m.clone()),
            SendError::Aborted | SendError::Message(_) => return Err(err),
        };
        if remaining == 0 || !is_retryable(status, headers) {
            return Err(err);
        }
        let index = max_retries - remaining;
        remaining -= 1;
        let jitter = (crate::clock::now_ms() % 1000) as f64 / 1000.0;
        let delay = match retry_delay(headers, index, options.max_retry_delay_ms, jitter) {
            Ok(d) => d,
            Err(too_long) => return Err(SendError::Message(too_long.message(&message))),
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = options.signal.cancelled() => return Err(SendError::Aborted),
        }
    }
}

/// Where a provider reads a streaming response body from: the network, or bytes already in
/// memory (fuzzing and tests map a body to events this way, see `providers::map_body`).
#[derive(Debug)]
pub enum Body {
    /// A live HTTP response.
    Http(reqwest::Response),
    /// Chunks handed out in order, then the end.
    #[cfg(feature = "testing")]
    Chunks(std::collections::VecDeque<Bytes>),
}

impl Body {
    /// The next body chunk; `Ok(None)` at the end, `Err` on a read failure, an abort or
    /// when the server stays silent longer than the idle timeout.
    pub async fn next_chunk(
        &mut self,
        options: &StreamOptions,
    ) -> Result<Option<Bytes>, SendError> {
        match self {
            Body::Http(response) => tokio::select! {
                c = idle(options, response.chunk()) => match c {
                    Some(c) => c.map_err(|e| SendError::Network(network_message(&e))),
                    None => Err(SendError::Message(idle_message(options, "streaming the response"))),
                },
                _ = options.signal.cancelled() => Err(SendError::Aborted),
            },
            #[cfg(feature = "testing")]
            Body::Chunks(chunks) => {
                if options.signal.is_cancelled() {
                    return Err(SendError::Aborted);
                }
                Ok(chunks.pop_front())
            }
        }
    }
}
