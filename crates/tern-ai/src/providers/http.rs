//! The HTTP side of a provider: one shared rustls client, sending with retries before the
//! first byte, and reading the body chunk by chunk with cancellation.
//!
//! Redirects are followed only within the request's origin: every provider puts its key in a
//! header (`Authorization`, `x-api-key`, `x-goog-api-key`, ...), and a client that strips only
//! some of them would hand the rest to whatever host a redirect names. An error response's
//! body is read up to [`MAX_ERROR_BODY_BYTES`], so a huge one cannot exhaust memory or flood
//! messages and session files.

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

/// The most of an error response's body that is read; the rest is cut with a note.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

fn idle_message(options: &StreamOptions, what: &str) -> String {
    let ms = options.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS);
    // No field name: callers configure it in their own words.
    format!(
        "Idle timeout: the server sent nothing for {ms} ms while {what}; raise the idle \
         timeout, or set it to 0 to wait forever"
    )
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
        client_builder()
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// A client builder set up as the shared client is (no delay, same-origin redirects only);
/// for a client of its own, such as one presenting a TLS client certificate.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
}

/// Follows a redirect only to the origin the request started at (10 hops at most); any
/// other origin is an error, so no key header ever leaves for it.
fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let origin = |u: &reqwest::Url| {
        (
            u.scheme().to_string(),
            u.host_str().map(str::to_string),
            u.port_or_known_default(),
        )
    };
    let Some(first) = attempt.previous().first() else {
        return attempt.follow();
    };
    if attempt.previous().len() > 10 {
        return attempt.error("too many redirects (more than 10)");
    }
    if origin(first) != origin(attempt.url()) {
        let msg = format!(
            "the server at {} redirected to another origin, {}; not followed, so the API key \
             is not sent there (use the new address as the base URL if it is trusted)",
            first.origin().ascii_serialization(),
            attempt.url().origin().ascii_serialization()
        );
        return attempt.error(msg);
    }
    attempt.follow()
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of an error body, noting a cut.
async fn capped_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut cut = false;
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let mut text = String::from_utf8_lossy(&body).into_owned();
    if cut {
        // A cut may split a character; the lossy decoding above already made it U+FFFD.
        text.push_str(&format!(
            "… (error body truncated at {MAX_ERROR_BODY_BYTES} bytes)"
        ));
    }
    text
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
    let response = res.map_err(|e| {
        // A refused redirect fails the same way every time: not retried.
        if e.is_redirect() {
            SendError::Message(network_message(&e))
        } else {
            SendError::Network(network_message(&e))
        }
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let status_text = status.canonical_reason().unwrap_or("").to_string();
    let body = tokio::select! {
        b = idle(options, capped_body(response)) => match b {
            Some(b) => b,
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

/// `POST url` with a form body (an OAuth token request): the status and the body text.
/// No retries; the signal and the timeouts apply.
pub(crate) async fn post_form(
    url: &str,
    fields: &[(&str, &str)],
    options: &StreamOptions,
) -> Result<(u16, String), SendError> {
    let headers = [(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    send_plain(
        reqwest::Method::POST,
        url,
        &headers,
        form_body(fields),
        options,
    )
    .await
}

/// An `application/x-www-form-urlencoded` body of these fields, in order.
pub(crate) fn form_body(fields: &[(&str, &str)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect();
    body.join("&")
}

/// One small request outside a model stream (a token exchange, a metadata read): its status
/// and its body (capped), with the request's timeout, idle limit and abort.
pub(crate) async fn send_plain(
    method: reqwest::Method,
    url: &str,
    headers: &[(String, String)],
    body: String,
    options: &StreamOptions,
) -> Result<(u16, String), SendError> {
    send_plain_headers(None, method, url, headers, body, None, options)
        .await
        .map(|(status, _, text)| (status, text))
}

/// [`send_plain`] with the response's headers. `via`, when set, is the client to send
/// through instead of the shared one (one presenting a client certificate); `limit`, when
/// set, bounds the whole exchange instead of the request's timeout (a probe that must give
/// up quickly).
pub(crate) async fn send_plain_headers(
    via: Option<&reqwest::Client>,
    method: reqwest::Method,
    url: &str,
    headers: &[(String, String)],
    body: String,
    limit: Option<Duration>,
    options: &StreamOptions,
) -> Result<(u16, HeaderMap, String), SendError> {
    let mut builder = via.unwrap_or_else(|| client()).request(method, url);
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    if !body.is_empty() {
        builder = builder.body(body);
    }
    match (limit, options.timeout_ms) {
        (Some(limit), _) => builder = builder.timeout(limit),
        (None, Some(ms)) => builder = builder.timeout(Duration::from_millis(ms)),
        (None, None) => {}
    }
    let response = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err(SendError::Aborted),
        r = idle(options, builder.send()) => match r {
            Some(r) => r.map_err(|e| SendError::Network(network_message(&e)))?,
            None => return Err(SendError::Network(idle_message(options, "waiting for the token"))),
        },
    };
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err(SendError::Aborted),
        t = capped_body(response) => t,
    };
    Ok((status, headers, text))
}

/// `application/x-www-form-urlencoded` encoding of one name or value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
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
    /// Chunks handed out in order, each after a yield to the runtime as a network read
    /// would make (tests of what a stream's consumer sees between reads).
    #[cfg(test)]
    Paced(std::collections::VecDeque<Bytes>),
}

impl Body {
    /// The response's `Content-Type`, when it came over HTTP.
    pub fn content_type(&self) -> Option<String> {
        self.header(reqwest::header::CONTENT_TYPE.as_str())
    }

    /// A response header (its first value, if text), when the body came over HTTP.
    pub fn header(&self, name: &str) -> Option<String> {
        match self {
            Body::Http(response) => response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            #[cfg(feature = "testing")]
            Body::Chunks(_) => None,
            #[cfg(test)]
            Body::Paced(_) => None,
        }
    }

    /// The next body chunk; `Ok(None)` at the end, `Err` on a read failure, an abort or
    /// when the server stays silent longer than the idle timeout.
    pub async fn next_chunk(
        &mut self,
        options: &StreamOptions,
    ) -> Result<Option<Bytes>, SendError> {
        match self {
            // An abort wins over a chunk that is ready at the same moment.
            Body::Http(response) => tokio::select! {
                biased;
                _ = options.signal.cancelled() => Err(SendError::Aborted),
                c = idle(options, response.chunk()) => match c {
                    Some(c) => c.map_err(|e| SendError::Network(network_message(&e))),
                    None => Err(SendError::Message(idle_message(options, "streaming the response"))),
                },
            },
            #[cfg(feature = "testing")]
            Body::Chunks(chunks) => {
                if options.signal.is_cancelled() {
                    return Err(SendError::Aborted);
                }
                Ok(chunks.pop_front())
            }
            #[cfg(test)]
            Body::Paced(chunks) => {
                tokio::task::yield_now().await;
                if options.signal.is_cancelled() {
                    return Err(SendError::Aborted);
                }
                Ok(chunks.pop_front())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Answers every connection with `reply`, counting requests and keeping their heads.
    async fn serve(reply: Vec<u8>) -> (String, Arc<AtomicUsize>, Arc<parking_lot::Mutex<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let count = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(parking_lot::Mutex::new(String::new()));
        let (c, h) = (count.clone(), heads.clone());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let mut buf = vec![0u8; 65536];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                h.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
                let _ = sock.write_all(&reply).await;
                let _ = sock.shutdown().await;
            }
        });
        (url, count, heads)
    }

    fn request(url: &str) -> HttpRequest {
        HttpRequest {
            url: url.to_string(),
            headers: vec![
                ("x-api-key".into(), "sk-secret-anthropic".into()),
                ("x-goog-api-key".into(), "sk-secret-google".into()),
                ("authorization".into(), "Bearer sk-secret-openai".into()),
            ],
            body: serde_json::json!({}),
            ignore_retry_headers: false,
        }
    }

    #[tokio::test]
    async fn a_redirect_to_another_origin_is_not_followed_with_the_keys() {
        let (other, other_count, other_heads) =
            serve(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec()).await;
        let redirect = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {other}/steal\r\ncontent-length: 0\r\n\r\n"
        );
        let (first, first_count, _) = serve(redirect.into_bytes()).await;
        let options = StreamOptions::default();
        let err = send(&request(&first), &options, &|f| f.body.clone())
            .await
            .expect_err("not followed");
        let SendError::Message(msg) = err else {
            panic!("a final error, got {err:?}");
        };
        assert!(msg.contains("another origin"), "{msg}");
        assert_eq!(first_count.load(Ordering::SeqCst), 1);
        assert_eq!(
            other_count.load(Ordering::SeqCst),
            0,
            "{}",
            other_heads.lock()
        );
    }

    #[tokio::test]
    async fn an_error_body_is_read_up_to_the_cap() {
        let body = "e".repeat(MAX_ERROR_BODY_BYTES * 16);
        let reply = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let (url, _, _) = serve(reply.into_bytes()).await;
        let err = send(&request(&url), &StreamOptions::default(), &|f| {
            f.body.clone()
        })
        .await
        .expect_err("a 500");
        let SendError::Status(f) = err else {
            panic!("a status error, got {err:?}");
        };
        assert_eq!(f.status, 500);
        assert!(
            f.body.len() < MAX_ERROR_BODY_BYTES + 100,
            "{}",
            f.body.len()
        );
        assert!(f.body.ends_with("(error body truncated at 65536 bytes)"));
    }
}
