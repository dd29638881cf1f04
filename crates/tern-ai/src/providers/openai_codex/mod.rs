//! ChatGPT's Codex backend, the `openai-codex-responses` API: the Responses input with tools
//! declared in `additional_tools` items and effort in `configuration_update` items, a ChatGPT
//! OAuth token (its account id sent as `chatgpt-account-id`), Codex's event mapping in front
//! of the Responses mapper.
//!
//! Two transports, as the reference has them. Unless `transport` is `sse`, a request goes
//! over a WebSocket first (`ws(s)://…/codex/responses`, a `response.create` message, the
//! events as JSON messages; `websocket.rs`), on a socket cached per session and account
//! (`session.rs`) that continues from its previous response where the reference does. A
//! transport failure appends a `provider_transport_failure` diagnostic and, when nothing
//! was streamed yet, falls back to server-sent events (`POST {baseUrl}/codex/responses`),
//! which the session then keeps using (`transport.rs`). Both map events through the same
//! Codex mapper (`stream.rs`).

mod request;
mod session;
mod stream;
mod transport;
mod websocket;

pub use session::{
    close_sessions as close_codex_websocket_sessions,
    reset_fallback as reset_codex_websocket_fallback,
};

use crate::model::Model;
use crate::providers::driver::{self, RunFuture, WireApi};
use crate::providers::output::Output;
use crate::providers::ProviderSink;
use crate::stream_fn::{Context, StreamOptions};

/// The `openai-codex-responses` API.
pub(crate) struct Codex;

/// Runs a Codex request: the WebSocket unless the options or the session say SSE, then SSE
/// when the WebSocket fell back.
async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn ProviderSink,
) {
    let mut out = Output::new(model, sink);
    let Some(authorization) = driver::prepare::<Codex>(model, options, &mut out).await else {
        return;
    };
    if transport::wants_websocket(options) {
        let request = match <Codex as WireApi>::build_request(model, context, options) {
            Ok(request) => request,
            Err(message) => return out.fail(message, false),
        };
        match transport::run(model, context, options, &request, &mut out).await {
            transport::Outcome::Ended => return,
            transport::Outcome::FallBack => {}
        }
    }
    driver::send_and_read::<Codex>(model, context, options, &mut out, &authorization).await;
}

/// [`run`], boxed for the table of APIs.
pub(crate) fn boxed_run<'a>(
    model: &'a Model,
    context: &'a Context,
    options: &'a StreamOptions,
    sink: &'a mut dyn ProviderSink,
) -> RunFuture<'a> {
    Box::pin(run(model, context, options, sink))
}
