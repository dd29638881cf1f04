//! One WebSocket exchange with the Codex backend: the handshake, the `response.create`
//! message, and the received messages mapped through the Codex mapper ([`State::event`])
//! until the terminal response. [`Failure`] keeps the reference's error classes, which decide
//! between a retry, a fallback to SSE and the end of the run.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::Connector;

use super::session::{self, Continuation, Lease, Socket};
use super::stream::{MapFailure, State};
use crate::message::Message;
use crate::model::Model;
use crate::providers::constrained::GrammarInputs;
use crate::providers::driver::WireStream;
use crate::providers::http::idle_timeout;
use crate::providers::js_json::compact;
use crate::providers::openai_responses::request::{
    convert_input, InputOptions, TOOL_CALL_PROVIDERS,
};
use crate::providers::output::Output;
use crate::stream_fn::StreamOptions;

/// The handshake timeout when the options set none.
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 15_000;
/// The close code of a message the server found too big.
const MESSAGE_TOO_BIG: u16 = 1009;
/// What the reference's WebSocket client says of any failed handshake (refused connection,
/// an answer other than `101`, a TLS failure).
const HANDSHAKE_FAILED: &str = "Received network error or non-101 status code.";

/// The reference's class of a failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum FailureKind {
    /// An `error` or `response.failed` event (`CodexApiError`).
    Api {
        /// Its code, when it has one.
        code: Option<String>,
    },
    /// A message that is not JSON (`CodexProtocolError`).
    Protocol,
    /// The socket closed (`WebSocketCloseError`) with this code.
    Closed {
        /// The close code (1005 when the close frame had none, 1006 without a close frame).
        code: u16,
    },
    /// Any other failure (a plain `Error`): handshake, timeouts, the mapper's own checks.
    Other,
    /// The caller aborted.
    Aborted,
}

/// Why a WebSocket exchange failed.
#[derive(Clone, Debug)]
pub(super) struct Failure {
    /// The class.
    pub kind: FailureKind,
    /// The message, in the reference's words.
    pub message: String,
    /// What tern knows beyond the reference's words (the handshake's own error).
    pub cause: Option<String>,
}

impl Failure {
    pub(super) fn other(message: impl Into<String>) -> Self {
        Failure {
            kind: FailureKind::Other,
            message: message.into(),
            cause: None,
        }
    }

    pub(super) fn aborted() -> Self {
        Failure {
            kind: FailureKind::Aborted,
            message: "Request was aborted".into(),
            cause: None,
        }
    }

    fn closed(code: u16, reason: &str) -> Self {
        let reason = match reason {
            "" if code == MESSAGE_TOO_BIG => " message too big".to_string(),
            "" => String::new(),
            r => format!(" {r}"),
        };
        Failure {
            kind: FailureKind::Closed { code },
            message: format!("WebSocket closed {code}{reason}"),
            cause: None,
        }
    }

    /// The code of an API error.
    pub(super) fn api_code(&self) -> Option<&str> {
        match &self.kind {
            FailureKind::Api { code } => code.as_deref(),
            _ => None,
        }
    }

    /// Whether the failure is the server's answer rather than the transport's: no fallback.
    pub(super) fn is_api_or_protocol(&self) -> bool {
        matches!(self.kind, FailureKind::Api { .. } | FailureKind::Protocol)
    }

    /// The `error` of a diagnostic: `name`, `message`, then `code` when there is one (and
    /// tern's `cause`).
    pub(super) fn diagnostic_error(&self) -> Value {
        let mut error = Map::new();
        let name = match self.kind {
            FailureKind::Api { .. } => "CodexApiError",
            FailureKind::Protocol => "CodexProtocolError",
            FailureKind::Closed { .. } => "WebSocketCloseError",
            FailureKind::Other | FailureKind::Aborted => "Error",
        };
        error.insert("name".into(), json!(name));
        error.insert("message".into(), json!(self.message));
        match &self.kind {
            FailureKind::Api { code: Some(code) } => {
                error.insert("code".into(), json!(code));
            }
            FailureKind::Closed { code } => {
                error.insert("code".into(), json!(code));
            }
            _ => {}
        }
        if let Some(cause) = &self.cause {
            error.insert("cause".into(), json!(cause));
        }
        Value::Object(error)
    }
}

/// The rustls configuration of `wss` handshakes: ring and the webpki roots, as reqwest's.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| format!("WebSocket TLS configuration failed: {e}"))
        })
        .clone()
}

/// Opens a socket to `url` with these handshake headers, within the connect timeout and
/// until the signal fires.
pub(super) async fn connect(
    url: &str,
    headers: &[(String, String)],
    options: &StreamOptions,
) -> Result<Socket, Failure> {
    if options.signal.is_cancelled() {
        return Err(Failure::aborted());
    }
    let mut request = url.into_client_request().map_err(|e| Failure {
        cause: Some(format!("bad WebSocket URL {url}: {e}")),
        ..Failure::other(HANDSHAKE_FAILED)
    })?;
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| Failure::other(format!("Invalid header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| Failure::other(format!("Invalid value of header {name}: {e}")))?;
        request.headers_mut().insert(name, value);
    }
    let connector = match url
        .get(..6)
        .is_some_and(|s| s.eq_ignore_ascii_case("wss://"))
    {
        true => Some(Connector::Rustls(tls_config().map_err(Failure::other)?)),
        false => None,
    };
    let timeout_ms = options
        .websocket_connect_timeout_ms
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT_MS);
    let handshake =
        tokio_tungstenite::connect_async_tls_with_config(request, None, true, connector);
    let timed = async {
        match timeout_ms {
            0 => Some(handshake.await),
            ms => tokio::time::timeout(Duration::from_millis(ms), handshake)
                .await
                .ok(),
        }
    };
    tokio::select! {
        biased;
        () = options.signal.cancelled() => Err(Failure::aborted()),
        result = timed => match result {
            None => Err(Failure::other(format!("WebSocket connect timeout after {timeout_ms}ms"))),
            Some(Ok((socket, _))) => Ok(socket),
            Some(Err(e)) => Err(Failure {
                cause: Some(format!("WebSocket handshake with {url} failed: {e}")),
                ..Failure::other(HANDSHAKE_FAILED)
            }),
        },
    }
}

/// What one exchange needs besides the socket.
pub(super) struct Exchange<'r> {
    /// The model.
    pub model: &'r Model,
    /// The options (signal, timeouts).
    pub options: &'r StreamOptions,
    /// The whole request body.
    pub body: &'r Value,
    /// The declared grammar tools' input properties (the response's custom tool calls
    /// convert with them).
    pub grammar_inputs: &'r GrammarInputs,
    /// Whether the request continues from the socket's last response when it can.
    pub use_cached_context: bool,
}

/// The progress of one run across its exchanges.
#[derive(Default)]
pub(super) struct Progress {
    /// `start` was reported (by this or an earlier exchange).
    pub start_emitted: bool,
}

/// Leases a socket, sends the request and maps the answer until the terminal response.
/// `started` turns true with the first mapped event. A cached socket goes back to its
/// session after a full answer, with the continuation of this response.
pub(super) async fn exchange(
    lease: Lease,
    ex: &Exchange<'_>,
    state: &mut State,
    out: &mut Output<'_>,
    progress: &mut Progress,
    started: &mut bool,
) -> Result<(), Failure> {
    let mut lease = lease;
    let request_body = match ex.use_cached_context && lease.cached() {
        true => cached_request_body(&mut lease.continuation, ex.body),
        false => ex.body.clone(),
    };
    let result = send_and_map(
        &mut lease.socket,
        &request_body,
        ex.options,
        state,
        out,
        progress,
        started,
    )
    .await;
    let keep = match &result {
        Ok(()) if ex.options.signal.is_cancelled() => false,
        Ok(()) => {
            let response_id = out.with(|m| m.response_id.clone());
            if let (true, true, Some(id)) = (ex.use_cached_context, lease.cached(), response_id) {
                lease.continuation =
                    response_items(ex.model, ex.grammar_inputs, out).map(|items| Continuation {
                        last_request_body: ex.body.clone(),
                        last_response_id: id,
                        last_response_items: items,
                    });
            }
            true
        }
        Err(_) => {
            lease.continuation = None;
            false
        }
    };
    session::release(lease, keep);
    result
}

/// The message sent: `{"type": "response.create", ...body}`.
fn create_message(body: &Value) -> String {
    let mut message = Map::new();
    message.insert("type".into(), json!("response.create"));
    if let Value::Object(fields) = body {
        for (k, v) in fields {
            message.insert(k.clone(), v.clone());
        }
    }
    compact(&Value::Object(message))
}

/// What a received message is.
enum Received {
    /// A JSON text (possibly empty).
    Text(String),
    /// A ping, a pong or a raw frame.
    Nothing,
}

fn receive_failure(e: tokio_tungstenite::tungstenite::Error) -> Failure {
    use tokio_tungstenite::tungstenite::Error as E;
    match e {
        E::Capacity(c) => Failure {
            cause: Some(format!("a received message is too big: {c}")),
            ..Failure::closed(MESSAGE_TOO_BIG, "")
        },
        other => Failure {
            cause: Some(format!("the WebSocket failed: {other}")),
            ..Failure::closed(1006, "")
        },
    }
}

fn classify(
    message: Option<Result<WsMessage, tokio_tungstenite::tungstenite::Error>>,
) -> Result<Received, Failure> {
    match message {
        None => Err(Failure::closed(1006, "")),
        Some(Err(e)) => Err(receive_failure(e)),
        Some(Ok(WsMessage::Text(t))) => Ok(Received::Text(t.as_str().to_string())),
        Some(Ok(WsMessage::Binary(b))) => {
            Ok(Received::Text(String::from_utf8_lossy(&b).into_owned()))
        }
        Some(Ok(WsMessage::Close(frame))) => Err(match frame {
            Some(f) => Failure::closed(u16::from(f.code), f.reason.as_str()),
            None => Failure::closed(1005, ""),
        }),
        Some(Ok(_)) => Ok(Received::Nothing),
    }
}

/// How long the socket may stay silent, and the words of a stall: the reference's
/// `timeoutMs` when set, else tern's idle timeout.
fn silence(options: &StreamOptions) -> Option<(Duration, String)> {
    match options.timeout_ms.filter(|&ms| ms > 0) {
        Some(ms) => Some((
            Duration::from_millis(ms),
            format!("WebSocket idle timeout after {ms}ms"),
        )),
        None => idle_timeout(options).map(|d| {
            (
                d,
                format!(
                    "WebSocket idle timeout: the server sent nothing for {} ms; raise the idle \
                     timeout, or set it to 0 to wait forever",
                    d.as_millis()
                ),
            )
        }),
    }
}

async fn send_and_map(
    socket: &mut Socket,
    body: &Value,
    options: &StreamOptions,
    state: &mut State,
    out: &mut Output<'_>,
    progress: &mut Progress,
    started: &mut bool,
) -> Result<(), Failure> {
    socket
        .send(WsMessage::text(create_message(body)))
        .await
        .map_err(receive_failure)?;
    let silence = silence(options);
    loop {
        let next = async {
            match &silence {
                Some((d, _)) => tokio::time::timeout(*d, socket.next()).await.ok(),
                None => Some(socket.next().await),
            }
        };
        let message = tokio::select! {
            biased;
            () = options.signal.cancelled() => return Err(Failure::aborted()),
            message = next => message,
        };
        let Some(message) = message else {
            let words = silence.map(|(_, w)| w).unwrap_or_default();
            return Err(Failure::other(words));
        };
        let Received::Text(text) = classify(message)? else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(&text).map_err(|e| Failure {
            kind: FailureKind::Protocol,
            message: format!("Invalid Codex WebSocket JSON: {e}"),
            cause: None,
        })?;
        if event.is_null() {
            return Err(Failure {
                kind: FailureKind::Protocol,
                message:
                    "Invalid Codex WebSocket JSON: Cannot read properties of null (reading 'type')"
                        .into(),
                cause: None,
            });
        }
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        if !kind.is_empty() && kind != "error" && kind != "response.failed" && !*started {
            *started = true;
            if !progress.start_emitted {
                progress.start_emitted = true;
                out.start();
            }
        }
        if let Err(message) = state.event(out, &event) {
            return Err(match state.failure() {
                Some(MapFailure::Api { code }) => Failure {
                    kind: FailureKind::Api { code: code.clone() },
                    message,
                    cause: None,
                },
                Some(MapFailure::Protocol) => Failure {
                    kind: FailureKind::Protocol,
                    message,
                    cause: None,
                },
                None => Failure::other(message),
            });
        }
        if state.finished() {
            return state.end_of_stream(out).map_err(Failure::other);
        }
    }
}

/// The last response as input items for the next request's baseline (tool outputs left
/// out), converted as the transcript will convert it; `None` when it does not convert (the
/// next request then sends the whole context).
fn response_items(
    model: &Model,
    grammar_inputs: &GrammarInputs,
    out: &Output<'_>,
) -> Option<Vec<Value>> {
    let message = Message::Assistant(out.partial.shared());
    let options = InputOptions {
        tool_changes: false,
        tool_strict: None,
        configuration_update: None,
        grammar_inputs: Some(grammar_inputs),
        grammar_tools: false,
    };
    let items = convert_input(model, &[message], &TOOL_CALL_PROVIDERS, &options).ok()?;
    Some(
        items
            .into_iter()
            .filter(|item| {
                !matches!(
                    item.get("type").and_then(Value::as_str),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            })
            .collect(),
    )
}

/// `body` without `input` and `previous_response_id`, as compact JSON.
fn without_input(body: &Value) -> String {
    let mut rest = body.clone();
    if let Some(o) = rest.as_object_mut() {
        o.remove("input");
        o.remove("previous_response_id");
    }
    compact(&rest)
}

fn input_of(body: &Value) -> &[Value] {
    body.get("input")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The input items after the last request's input and response, when `body` is that
/// request grown by them (everything else the same).
fn input_delta(body: &Value, continuation: &Continuation) -> Option<Vec<Value>> {
    if without_input(body) != without_input(&continuation.last_request_body) {
        return None;
    }
    let current = input_of(body);
    let baseline: Vec<Value> = input_of(&continuation.last_request_body)
        .iter()
        .chain(&continuation.last_response_items)
        .cloned()
        .collect();
    if current.len() < baseline.len() {
        return None;
    }
    let (prefix, delta) = current.split_at(baseline.len());
    (compact(&Value::Array(prefix.to_vec())) == compact(&Value::Array(baseline)))
        .then(|| delta.to_vec())
}

/// The body to send on a cached socket: the delta with `previous_response_id` when the
/// request continues the socket's last response, else the whole body (and the
/// continuation is dropped).
fn cached_request_body(continuation: &mut Option<Continuation>, body: &Value) -> Value {
    let Some(c) = continuation.as_ref() else {
        return body.clone();
    };
    match input_delta(body, c).filter(|_| !c.last_response_id.is_empty()) {
        Some(delta) => {
            let mut out = body.clone();
            out["previous_response_id"] = json!(c.last_response_id);
            out["input"] = Value::Array(delta);
            out
        }
        None => {
            *continuation = None;
            body.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn continuation() -> Continuation {
        Continuation {
            last_request_body: json!({"model": "m", "input": [{"role": "user", "content": "a"}], "store": false}),
            last_response_id: "resp_1".into(),
            last_response_items: vec![json!({"type": "message", "role": "assistant"})],
        }
    }

    #[test]
    fn a_grown_request_sends_only_its_new_items() {
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "a"},
            {"type": "message", "role": "assistant"},
            {"role": "user", "content": "b"}
        ], "store": false});
        let mut c = Some(continuation());
        let sent = cached_request_body(&mut c, &body);
        assert_eq!(sent["previous_response_id"], "resp_1");
        assert_eq!(sent["input"], json!([{"role": "user", "content": "b"}]));
        assert!(c.is_some());
    }

    #[test]
    fn a_changed_request_sends_everything_and_drops_the_continuation() {
        let body = json!({"model": "other", "input": [
            {"role": "user", "content": "a"},
            {"type": "message", "role": "assistant"}
        ], "store": false});
        let mut c = Some(continuation());
        assert_eq!(cached_request_body(&mut c, &body), body);
        assert!(c.is_none());
        let edited = json!({"model": "m", "input": [{"role": "user", "content": "z"}, {"type": "message", "role": "assistant"}], "store": false});
        let mut c = Some(continuation());
        assert_eq!(cached_request_body(&mut c, &edited), edited);
        assert!(c.is_none());
    }

    #[test]
    fn close_messages_read_as_the_reference_words_them() {
        assert_eq!(
            Failure::closed(1009, "").message,
            "WebSocket closed 1009 message too big"
        );
        assert_eq!(
            Failure::closed(1011, "boom").message,
            "WebSocket closed 1011 boom"
        );
        assert_eq!(Failure::closed(1005, "").message, "WebSocket closed 1005");
        assert_eq!(
            Failure::closed(1006, "").diagnostic_error(),
            json!({"name": "WebSocketCloseError", "message": "WebSocket closed 1006", "code": 1006})
        );
    }
}
