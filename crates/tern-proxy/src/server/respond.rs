//! The two kinds of answer: a stream of event lines, or a JSON error.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use tern_ai::AssistantMessageEventStream;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::event_json;
use crate::wire::ProxyEvent;

/// `status` with `{"error": text}`: the reference's client shows `Proxy error: <text>`.
pub(super) fn json_error(status: StatusCode, text: &str) -> Response {
    let body = serde_json::json!({ "error": text }).to_string();
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The upstream stream and what ends it: `signal` is cancelled when the body is dropped,
/// which is what happens when the client goes away.
struct Upstream {
    stream: AssistantMessageEventStream,
    _cancel_on_drop: DropGuard,
    finished: bool,
}

/// The events of `stream` as server-sent events, ending after the final one.
pub(super) fn events_response(
    stream: AssistantMessageEventStream,
    signal: CancellationToken,
    keep_alive: Option<Duration>,
) -> Response {
    let upstream = Upstream {
        stream,
        _cancel_on_drop: signal.drop_guard(),
        finished: false,
    };
    let sse = Sse::new(events(upstream));
    match keep_alive {
        Some(interval) => sse
            .keep_alive(KeepAlive::new().interval(interval))
            .into_response(),
        None => sse.into_response(),
    }
}

fn events(upstream: Upstream) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(upstream, |mut up| async move {
        if up.finished {
            return None;
        }
        let event = match up.stream.next().await {
            Some(event) => ProxyEvent::from_event(&event),
            // The producer went away without a final event: send the final message the
            // stream settled on, so the client gets an answer rather than a cut-off body.
            None => ProxyEvent::from_final(&*up.stream.result().await),
        };
        up.finished = event.is_terminal();
        let line = Event::default().data(event_json(&event));
        Some((Ok(line), up))
    })
}
