//! The client: [`ProxyStreamFn`], a stream function that reaches models through a proxy
//! server (the reference's `streamProxy`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use tern_ai::{Context, Message, Model, StreamFn, StreamOptions};
//! use tern_proxy::ProxyStreamFn;
//! # async fn demo() {
//! let proxy = ProxyStreamFn::new("https://genai.example.com", "user-token");
//! let model = Model::new("claude-sonnet-4-5", "anthropic-messages", "anthropic", "");
//! let context = Context::new(vec![Message::user_text("Hello")]);
//! let stream = proxy.stream(&model, context, &StreamOptions::default()).unwrap();
//! println!("{}", stream.result().await.text());
//! // Or hand it to an agent: `Arc::new(proxy) as Arc<dyn StreamFn>`.
//! # }
//! ```
//!
//! Failures are values, worded as the reference words them: a non-2xx answer ends the
//! stream with `Proxy error: ...`, an abort with `stopReason: "aborted"`, a body that ends
//! before `done`/`error` with `Connection closed by proxy server before the response
//! completed`.

mod lines;
mod rebuild;
mod status;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tern_ai::{
    assistant_stream, AssistantMessageEventSender, Context, Model, StopReason, StreamFn,
    StreamOptions, StreamStart,
};

use crate::wire::{parse_line, Line, ProxyRequest, ProxyRequestOptions, STREAM_PATH};
use lines::Lines;
use rebuild::Rebuild;

/// The default for [`StreamOptions::idle_timeout_ms`], as tern's providers use it.
const DEFAULT_IDLE_TIMEOUT_MS: u64 = 120_000;

/// The reference's text for an abort before the response head (`fetch` rejects).
const ABORTED_BEFORE_RESPONSE: &str = "This operation was aborted";
/// The reference's text for an abort while the body streams.
const ABORTED_WHILE_STREAMING: &str = "Request aborted by user";
/// The reference's text for a body that ends before its final event.
const CLOSED_EARLY: &str = "Connection closed by proxy server before the response completed";

type TokenSource = dyn Fn() -> String + Send + Sync;

/// Why [`ProxyStreamFn`] could not start a request (the `Err` of
/// [`stream`](StreamFn::stream)); every later failure is a value in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyClientError {
    /// Called outside a tokio runtime, where the request cannot run.
    NoRuntime,
}

impl std::fmt::Display for ProxyClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyClientError::NoRuntime => {
                f.write_str("ProxyStreamFn needs a tokio runtime: call it from async code")
            }
        }
    }
}

impl std::error::Error for ProxyClientError {}

/// A [`StreamFn`] that sends each request to a proxy server: `POST {proxy_url}/api/stream`
/// with `Authorization: Bearer <token>`, and rebuilds the response from the server's
/// events.
///
/// Cheap to clone (the configuration is shared). The stream runs on the current tokio
/// runtime; [`stream`](StreamFn::stream) returns `Err` outside one.
#[derive(Clone)]
pub struct ProxyStreamFn {
    config: Arc<Config>,
}

struct Config {
    proxy_url: String,
    token: Arc<TokenSource>,
    // A client that cannot be built (no TLS backend) fails each request, never the caller.
    http: Result<reqwest::Client, String>,
    sampling_params: Option<Value>,
    disable_continuation: Option<bool>,
    transport: Option<String>,
}

impl std::fmt::Debug for ProxyStreamFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("ProxyStreamFn")
            .field("proxy_url", &self.config.proxy_url)
            .finish_non_exhaustive()
    }
}

impl ProxyStreamFn {
    /// A client for the server at `proxy_url` (e.g. `https://genai.example.com`, without
    /// `/api/stream`), sending `auth_token` as the bearer token.
    pub fn new(proxy_url: impl Into<String>, auth_token: impl Into<String>) -> Self {
        let token: String = auth_token.into();
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("Could not build the HTTP client for the proxy: {e}"));
        ProxyStreamFn {
            config: Arc::new(Config {
                proxy_url: proxy_url.into(),
                token: Arc::new(move || token.clone()),
                http,
                sampling_params: None,
                disable_continuation: None,
                transport: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Config)) -> Self {
        match Arc::get_mut(&mut self.config) {
            Some(c) => f(c),
            None => {
                let c = &*self.config;
                let mut copy = Config {
                    proxy_url: c.proxy_url.clone(),
                    token: c.token.clone(),
                    http: c.http.clone(),
                    sampling_params: c.sampling_params.clone(),
                    disable_continuation: c.disable_continuation,
                    transport: c.transport.clone(),
                };
                f(&mut copy);
                self.config = Arc::new(copy);
            }
        }
        self
    }

    /// Asks `source` for the token at every request (tokens that expire and get renewed).
    pub fn with_token_source(self, source: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.edit(|c| c.token = Arc::new(source))
    }

    /// Uses this HTTP client (proxies, custom roots, timeouts).
    pub fn with_http_client(self, client: reqwest::Client) -> Self {
        self.edit(|c| c.http = Ok(client))
    }

    /// Sends `samplingParams` with every request (tern's [`StreamOptions`] has no such field).
    pub fn with_sampling_params(self, params: Value) -> Self {
        self.edit(|c| c.sampling_params = Some(params))
    }

    /// Sends `disableContinuation` with every request.
    pub fn with_disable_continuation(self, disable: bool) -> Self {
        self.edit(|c| c.disable_continuation = Some(disable))
    }

    /// Sends `transport` (`sse`, `websocket`, `websocket-cached`, `auto`) with every request.
    pub fn with_transport(self, transport: impl Into<String>) -> Self {
        let transport = transport.into();
        self.edit(|c| c.transport = Some(transport))
    }

    /// The server URL requests go to, without `/api/stream`.
    pub fn proxy_url(&self) -> &str {
        &self.config.proxy_url
    }
}

impl StreamFn for ProxyStreamFn {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| ProxyClientError::NoRuntime)?;
        // The stream first, then the message: its timestamp is not before the stream's clock,
        // so the final message gets `durationMs`, as in the reference.
        let (tx, rx) = assistant_stream();
        let mut rebuild = Rebuild::new(model);
        let config = self.config.clone();
        let model = model.clone();
        let options = options.clone();
        runtime.spawn(async move {
            if let Err(message) =
                exchange(&config, &model, context, &options, &mut rebuild, &tx).await
            {
                let reason = if options.signal.is_cancelled() {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                tx.push(rebuild.fail(reason, message));
            }
        });
        Ok(rx)
    }
}

/// One request and its response. `Err` is a failure the caller turns into the final
/// `error` event (reason `aborted` when the signal fired).
async fn exchange(
    config: &Config,
    model: &Model,
    context: Context,
    options: &StreamOptions,
    rebuild: &mut Rebuild,
    tx: &AssistantMessageEventSender,
) -> Result<(), String> {
    let http = config.http.as_ref().map_err(Clone::clone)?;
    let url = format!("{}{STREAM_PATH}", config.proxy_url);
    if reqwest::Url::parse(&url).is_err() {
        return Err(format!("Failed to parse URL from {url}"));
    }
    let mut wire_options = ProxyRequestOptions::from_stream_options(options);
    wire_options.sampling_params = config.sampling_params.clone();
    wire_options.disable_continuation = config.disable_continuation;
    wire_options.transport = config.transport.clone();
    let body = serde_json::to_vec(&ProxyRequest {
        model: model.clone(),
        context,
        options: wire_options,
    })
    .map_err(|e| format!("Could not encode the proxy request: {e}"))?;
    let mut request = http
        .post(&url)
        .header("Authorization", format!("Bearer {}", (config.token)()))
        .header("Content-Type", "application/json")
        .body(body);
    if let Some(ms) = options.timeout_ms {
        request = request.timeout(Duration::from_millis(ms));
    }
    let signal = &options.signal;
    let response = step(
        options,
        request.send(),
        ABORTED_BEFORE_RESPONSE,
        "waiting for the response head",
    )
    .await?
    .map_err(|e| transport_message("fetch failed", &e))?;

    let status = response.status();
    if !status.is_success() {
        let reason = status.canonical_reason().unwrap_or("");
        // An abort while the error body is read leaves the status text (the reference's
        // `response.json()` fails and is ignored); the caller marks it `aborted`.
        let body = tokio::select! {
            biased;
            _ = signal.cancelled() => None,
            b = idle(options, response.bytes()) => b.and_then(Result::ok),
        };
        return Err(status::status_message(
            status.as_u16(),
            reason,
            body.as_deref().unwrap_or_default(),
        ));
    }
    read_events(response, options, rebuild, tx).await
}

/// Reads the event lines of a 2xx body until a final event or the end of the body.
async fn read_events(
    mut response: reqwest::Response,
    options: &StreamOptions,
    rebuild: &mut Rebuild,
    tx: &AssistantMessageEventSender,
) -> Result<(), String> {
    let signal = &options.signal;
    let mut lines = Lines::default();
    loop {
        let chunk = step(
            options,
            response.chunk(),
            ABORTED_WHILE_STREAMING,
            "streaming the response",
        )
        .await?
        .map_err(|e| transport_message("terminated", &e))?;
        let Some(chunk) = chunk else { break };
        if signal.is_cancelled() {
            return Err(ABORTED_WHILE_STREAMING.into());
        }
        lines.push(&chunk).map_err(|e| e.to_string())?;
        while let Some(line) = lines.next_line() {
            if handle_line(&line, rebuild, tx)? {
                return Ok(());
            }
        }
    }
    if signal.is_cancelled() {
        return Err(ABORTED_WHILE_STREAMING.into());
    }
    if let Some(line) = lines.finish() {
        if handle_line(&line, rebuild, tx)? {
            return Ok(());
        }
    }
    // A clean end without `done`/`error`: the server dropped the response. The reference
    // says `error` here whatever the signal says.
    tx.push(rebuild.fail(StopReason::Error, CLOSED_EARLY.into()));
    Ok(())
}

/// Applies one body line; `Ok(true)` once the response's final event was sent. The
/// reference keeps reading after it, but nothing after a final event reaches a consumer.
fn handle_line(
    line: &str,
    rebuild: &mut Rebuild,
    tx: &AssistantMessageEventSender,
) -> Result<bool, String> {
    match parse_line(line) {
        Line::Skip => Ok(false),
        Line::Invalid(message) => Err(message),
        Line::Event(event) => {
            let terminal = event.is_terminal();
            if let Some(event) = rebuild.apply(event)? {
                tx.push(event);
            }
            Ok(terminal)
        }
    }
}

/// Awaits `fut` within the idle timeout of `options`; `None` when it ran out.
async fn idle<F: Future>(options: &StreamOptions, fut: F) -> Option<F::Output> {
    match options.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS) {
        0 => Some(fut.await),
        ms => tokio::time::timeout(Duration::from_millis(ms), fut)
            .await
            .ok(),
    }
}

/// Awaits one step of the exchange: `Err(aborted)` when the signal fires first, the idle
/// timeout's message when nothing arrives in time while `what`.
async fn step<F: Future>(
    options: &StreamOptions,
    fut: F,
    aborted: &str,
    what: &str,
) -> Result<F::Output, String> {
    tokio::select! {
        biased;
        _ = options.signal.cancelled() => Err(aborted.into()),
        r = idle(options, fut) => r.ok_or_else(|| idle_message(options, what)),
    }
}

fn idle_message(options: &StreamOptions, what: &str) -> String {
    let ms = options.idle_timeout_ms.unwrap_or(DEFAULT_IDLE_TIMEOUT_MS);
    format!(
        "Idle timeout: the proxy server sent nothing for {ms} ms while {what} (idle_timeout_ms)"
    )
}

/// The reference's text for a transport failure (`fetch failed` before the response,
/// `terminated` while reading it), with the underlying cause, which Node keeps apart.
fn transport_message(text: &str, e: &reqwest::Error) -> String {
    use std::error::Error as _;
    if e.is_timeout() {
        return format!("{text}: the request timed out (timeout_ms)");
    }
    let mut deepest = None;
    let mut source = e.source();
    while let Some(s) = source {
        deepest = Some(s.to_string());
        source = s.source();
    }
    match deepest {
        Some(cause) => format!("{text}: {cause}"),
        None => format!("{text}: {e}"),
    }
}
