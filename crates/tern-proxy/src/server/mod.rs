//! The server: [`ProxyServer`], an [`axum::Router`] that serves the proxy protocol from any
//! [`StreamFn`], so the reference's `streamProxy` (browser or Node) and tern's
//! [`ProxyStreamFn`](crate::ProxyStreamFn) can reach models through it.
//!
//! ```no_run
//! use tern_ai::providers::Providers;
//! use tern_proxy::ProxyServer;
//! # async fn demo() -> std::io::Result<()> {
//! let app = ProxyServer::new(Providers)
//!     .authorize(|token| token == "user-token")
//!     .router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! A request is `POST /api/stream` with a bearer token and a
//! [`ProxyRequest`] body. The answer is a stream of server-sent
//! events, one [`ProxyEvent`] each, ending after `done` or `error`; refusals are non-2xx
//! answers with `{"error": "<text>"}`. When the client goes away, the upstream request is
//! cancelled through its stream options' signal.

mod respond;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use tern_ai::{Model, StreamFn};
use tokio_util::sync::CancellationToken;

use crate::wire::{ProxyEvent, ProxyRequest, STREAM_PATH};
use respond::{events_response, json_error};

type Authorize = dyn Fn(&str) -> bool + Send + Sync;
type ResolveModel = dyn Fn(Model) -> Result<Model, String> + Send + Sync;

/// Serves `POST /api/stream` from a stream function. Build it, then take
/// [`router`](Self::router) (an `axum::Router`, which is a `tower::Service`).
pub struct ProxyServer {
    stream_fn: Arc<dyn StreamFn>,
    authorize: Option<Arc<Authorize>>,
    resolve_model: Option<Arc<ResolveModel>>,
    keep_alive: Option<Duration>,
    max_body_bytes: usize,
}

/// What a request handler shares.
struct Shared {
    stream_fn: Arc<dyn StreamFn>,
    authorize: Option<Arc<Authorize>>,
    resolve_model: Option<Arc<ResolveModel>>,
    keep_alive: Option<Duration>,
}

impl ProxyServer {
    /// The default limit on a request body: 32 MiB (transcripts with images are large).
    pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

    /// The default interval of keep-alive comments: 15 s.
    pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

    /// A server answering with `stream_fn`. Without [`authorize`](Self::authorize) it accepts
    /// every request: use that only behind another authenticating layer or on loopback.
    pub fn new(stream_fn: impl StreamFn + 'static) -> Self {
        Self::from_shared(Arc::new(stream_fn))
    }

    /// A server answering with a shared stream function.
    pub fn from_shared(stream_fn: Arc<dyn StreamFn>) -> Self {
        ProxyServer {
            stream_fn,
            authorize: None,
            resolve_model: None,
            keep_alive: Some(Self::DEFAULT_KEEP_ALIVE),
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// Checks the bearer token of each request; `false` answers `401`.
    pub fn authorize(mut self, check: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.authorize = Some(Arc::new(check));
        self
    }

    /// Decides which model a request gets: the client's description comes in (its
    /// `baseUrl` and `headers` included, so a server holding keys should not trust it),
    /// the model to call goes out, or `Err(text)` answers `403` with that text.
    pub fn resolve_model(
        mut self,
        resolve: impl Fn(Model) -> Result<Model, String> + Send + Sync + 'static,
    ) -> Self {
        self.resolve_model = Some(Arc::new(resolve));
        self
    }

    /// Sends an SSE comment after this much silence (`None`: never), so intermediaries keep
    /// the connection and the client's idle timeout does not fire while a model thinks.
    pub fn keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Refuses request bodies larger than this (`413`).
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// The router: `POST /api/stream`. Nest it to serve below a prefix (the client's proxy
    /// URL then includes the prefix).
    pub fn router(self) -> Router {
        let shared = Arc::new(Shared {
            stream_fn: self.stream_fn,
            authorize: self.authorize,
            resolve_model: self.resolve_model,
            keep_alive: self.keep_alive,
        });
        Router::new()
            .route(STREAM_PATH, post(handle))
            .layer(DefaultBodyLimit::max(self.max_body_bytes))
            .with_state(shared)
    }
}

async fn handle(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(authorize) = &shared.authorize {
        let token = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let Some(token) = token else {
            return json_error(
                StatusCode::UNAUTHORIZED,
                "Missing Authorization header: send `Authorization: Bearer <token>`",
            );
        };
        if !authorize(token) {
            return json_error(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: the proxy did not accept this token",
            );
        }
    }
    let request: ProxyRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &format!("Invalid request body (expected {{model, context, options}}): {e}"),
            )
        }
    };
    let model = match &shared.resolve_model {
        Some(resolve) => match resolve(request.model) {
            Ok(m) => m,
            Err(text) => return json_error(StatusCode::FORBIDDEN, &text),
        },
        None => request.model,
    };
    let signal = CancellationToken::new();
    let options = request.options.into_stream_options(signal.clone());
    match shared.stream_fn.stream(&model, request.context, &options) {
        Ok(stream) => events_response(stream, signal, shared.keep_alive),
        Err(e) => json_error(
            StatusCode::BAD_GATEWAY,
            &format!("The stream function could not start: {e}"),
        ),
    }
    .into_response()
}

/// The JSON of one event line (`data: <this>`).
fn event_json(event: &ProxyEvent) -> String {
    serde_json::to_string(event).unwrap_or_else(|e| {
        // Only a map with non-string keys fails to serialize; say so as a final event.
        let fallback = ProxyEvent::Error {
            reason: tern_ai::StopReason::Error,
            error_message: Some(format!("The proxy could not encode an event: {e}")),
            usage: tern_ai::Usage::default(),
            provider_thinking_level: None,
        };
        serde_json::to_string(&fallback).unwrap_or_default()
    })
}
