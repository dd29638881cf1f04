//! The choice between the WebSocket and SSE and what happens between them: the WebSocket
//! first (unless `transport` is `sse` or the session already fell back), one retry when the
//! server's connection limit is reached before the stream starts and one when it no longer
//! knows the previous response, and on a transport failure a `provider_transport_failure`
//! diagnostic, the session's memory of the fallback, and SSE when nothing was streamed yet.

use serde_json::{json, Map, Value};

use super::request::{
    account_id, cache_session, grammar_inputs, websocket_headers, websocket_session, websocket_url,
};
use super::session;
use super::stream::State;
use super::websocket::{self, Exchange, Failure, FailureKind, Progress};
use crate::model::Model;
use crate::providers::driver::{WireApi, WireStream};
use crate::providers::http::HttpRequest;
use crate::providers::js_json::compact;
use crate::providers::model_options::api_key;
use crate::providers::output::{append_error_diagnostic, Output};
use crate::stream_fn::{Context, StreamOptions, Transport};

const CONNECTION_LIMIT_REACHED: &str = "websocket_connection_limit_reached";
const PREVIOUS_RESPONSE_NOT_FOUND: &str = "previous_response_not_found";

/// How the WebSocket attempt ended.
pub(super) enum Outcome {
    /// The run ended (`done` or `error` reported).
    Ended,
    /// Nothing was streamed and the transport failed: send the request over SSE.
    FallBack,
}

/// Whether these options try the WebSocket first.
pub(super) fn wants_websocket(options: &StreamOptions) -> bool {
    options.transport != Some(Transport::Sse)
}

/// Ends the run with the failure (after the mapper's last touches).
fn end_with(state: &mut State, out: &mut Output<'_>, failure: Failure, aborted: bool) -> Outcome {
    if aborted {
        state.on_abort(out);
    } else {
        state.on_failure(out);
    }
    out.fail(failure.message, aborted);
    Outcome::Ended
}

/// Runs the request over the WebSocket, retrying and falling back as the reference does.
pub(super) async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    request: &HttpRequest,
    out: &mut Output<'_>,
) -> Outcome {
    let session = websocket_session(options);
    if session.as_deref().is_some_and(session::fallback_active) {
        return Outcome::FallBack;
    }
    let account = account_id(&api_key(model, options).unwrap_or_default()).unwrap_or_default();
    let request_id = cache_session(options)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(crate::providers::uuid::v7);
    let headers = websocket_headers(model, options, &request_id);
    let url = websocket_url(model);
    let grammar = grammar_inputs(model, context);
    let exchange = Exchange {
        model,
        options,
        grammar_inputs: &grammar,
        body: &request.body,
        use_cached_context: matches!(
            options.transport,
            Some(Transport::Auto | Transport::WebSocketCached)
        ),
    };
    let mut progress = Progress::default();
    let (mut retried_limit, mut retried_continuation) = (false, false);
    loop {
        let mut started = false;
        let mut state = <super::Codex as WireApi>::new_stream(model, context);
        let leased = session::acquire(session.as_deref(), &account, || {
            websocket::connect(&url, &headers, options)
        })
        .await;
        let result = match leased {
            Ok(lease) => {
                websocket::exchange(
                    lease,
                    &exchange,
                    &mut state,
                    out,
                    &mut progress,
                    &mut started,
                )
                .await
            }
            Err(failure) => Err(failure),
        };
        let failure = match result {
            Ok(()) if options.signal.is_cancelled() => Failure::aborted(),
            Ok(()) => match state.settle(out) {
                Ok(()) => {
                    out.done();
                    return Outcome::Ended;
                }
                Err(message) => Failure::other(message),
            },
            Err(failure) => failure,
        };
        let aborted = options.signal.is_cancelled() || failure.kind == FailureKind::Aborted;
        let limit_before_start = !started && failure.api_code() == Some(CONNECTION_LIMIT_REACHED);
        if !aborted
            && failure.api_code() == Some(PREVIOUS_RESPONSE_NOT_FOUND)
            && !retried_continuation
        {
            retried_continuation = true;
            continue;
        }
        if !aborted && limit_before_start && !retried_limit {
            retried_limit = true;
            continue;
        }
        if aborted || (failure.is_api_or_protocol() && !limit_before_start) {
            return end_with(&mut state, out, failure, aborted);
        }
        let mut details = Map::new();
        details.insert(
            "configuredTransport".into(),
            json!(options.transport.unwrap_or_default().as_str()),
        );
        if !started {
            details.insert("fallbackTransport".into(), json!("sse"));
        }
        details.insert("eventsEmitted".into(), json!(started));
        details.insert(
            "phase".into(),
            json!(match started {
                true => "after_message_stream_start",
                false => "before_message_stream_start",
            }),
        );
        details.insert("requestBytes".into(), json!(compact(&request.body).len()));
        let error = failure.diagnostic_error();
        out.update(|m| {
            append_error_diagnostic(
                m,
                "provider_transport_failure",
                Some(error),
                Value::Object(details),
            )
        });
        if let Some(s) = &session {
            session::remember_fallback(s);
        }
        if started {
            return end_with(&mut state, out, failure, false);
        }
        return Outcome::FallBack;
    }
}
