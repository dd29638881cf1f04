//! The proxy protocol, as the reference's `streamProxy` speaks it.
//!
//! - Request: `POST {proxyUrl}/api/stream`, headers `Authorization: Bearer <token>` and
//!   `Content-Type: application/json`, body [`ProxyRequest`].
//! - Success: a `200` body of lines; each `data: <json>` line holds one [`ProxyEvent`] (the
//!   server writes server-sent events, `data: <json>\n\n`), other lines are ignored. The
//!   response ends after a `done` or `error` event.
//! - Failure before streaming: a non-2xx status, with `{"error": "<text>"}` as the body when
//!   the server has something to say; the client reports `Proxy error: <text>` (or
//!   `Proxy error: <status> <reason>`).

mod event;
mod line;
mod request;

pub use event::ProxyEvent;
pub use line::{parse_line, Line};
pub use request::{Budgets, ProxyRequest, ProxyRequestOptions};

/// The path the client posts to, below the proxy URL.
pub const STREAM_PATH: &str = "/api/stream";
