//! Streaming LLM providers, one per wire API: `openai-completions`, `openai-responses`,
//! `anthropic-messages`, `google-generative-ai`, `mistral-conversations`, `azure-openai-responses`, `google-vertex`,
//! `openai-codex-responses` and `bedrock-converse-stream`.
//!
//! Each provider turns a [`Model`], a transcript ([`Context`]) and [`StreamOptions`] into an
//! HTTP request, parses the response incrementally and reports the assistant-message events.
//! Failures are values: the stream ends with an `error` event and a message whose
//! `stopReason` is `error` or `aborted`.
//!
//! [`stream`] picks the provider from `model.api` and returns an
//! [`AssistantMessageEventStream`]; [`run`] drives a provider to completion with a custom
//! [`ProviderSink`] (tests and the replay example record events at emission time this way).
//!
//! Modules:
//! - `driver`: the `WireApi` (request half) and `WireStream` (stream half) traits and the
//!   loop every API shares: prologue, reading, abort and idle handling, end-of-stream checks.
//! - `anthropic/`, `azure_responses/`, `bedrock/`, `google/`, `google_vertex/`, `mistral/`, `openai_codex/`, `openai_completions/`, `openai_responses/`: one folder per API,
//!   each with its `request.rs` and its `stream.rs` (the completions API adds `compat`,
//!   `reasoning` and `chunk`; Codex adds its WebSocket transport: `websocket`, `session`,
//!   `transport`).
//! - `output` (the message being built), `http` (client, sending, body chunks), `retry`,
//!   `transform` (history transforms), `model_options`, `thinking`, `typed_json`,
//!   `openai_sdk` (what both OpenAI APIs share), `custom_input` (freeform tool input as both
//!   OpenAI APIs stream it), `constrained` (strict JSON-schema and grammar tools),
//!   `strict_limits` (Claude's strict-tool limits: the retry without `prefer` strict tools
//!   and the sessions that went over them). `README.md` lists every wire shape and how it maps.
//! - Public: [`catalog`] (models as data), [`cost`], [`overflow`], [`js_json`] (JSON as
//!   JavaScript sees it), the thinking-level
//!   helpers; with the `testing` feature, `replay` (a local replay server), `map_body` and
//!   `testing`.

mod anthropic;
mod azure_responses;
mod bedrock;
pub mod catalog;
mod constrained;
pub mod cost;
mod custom_input;
mod driver;
mod google;
mod google_vertex;
mod http;
pub mod js_json;
mod mistral;
mod model_options;
mod openai_codex;
mod openai_completions;
mod openai_responses;
mod openai_sdk;
mod output;
pub mod overflow;
#[cfg(feature = "testing")]
pub mod replay;
mod retry;
mod retryable;
mod strict_limits;
mod subprocess;
mod thinking;
mod transform;
mod typed_json;
mod uuid;

use crate::event::AssistantMessageEvent;
use crate::message::AssistantMessage;
use crate::model::Model;
use crate::stream::{assistant_stream, AssistantMessageEventSender, AssistantMessageEventStream};
use crate::stream_fn::{Context, StreamFn, StreamOptions, StreamStart};

use driver::{boxed_run, RunFuture, WireApi};
use output::Output;

pub use openai_codex::{close_codex_websocket_sessions, reset_codex_websocket_fallback};
pub use overflow::is_context_overflow;
pub use retryable::is_retryable_assistant_error;
pub use strict_limits::{cleanup_session_resources, MAX_SESSIONS as MAX_STRICT_LIMIT_SESSIONS};

/// Entry points for differential tests of the provider internals (the `testing` feature).
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use super::openai_completions::testing::CompletionsChunks;
}
pub use thinking::{clamp_thinking_level, supported_thinking_levels};

/// Where a provider reports its events. The partial message in each event is the shared
/// handle the provider updates in place; a sink that needs the state at emission time reads
/// it inside [`emit`](ProviderSink::emit).
///
/// ```
/// use tern_ai::providers::ProviderSink;
/// use tern_ai::AssistantMessageEvent;
///
/// /// Keeps the kind of every event.
/// struct Kinds(Vec<&'static str>);
///
/// impl ProviderSink for Kinds {
///     fn emit(&mut self, event: AssistantMessageEvent) {
///         self.0.push(event.kind());
///     }
/// }
/// ```
pub trait ProviderSink: Send {
    /// Receives one event, in order.
    fn emit(&mut self, event: AssistantMessageEvent);

    /// Whether the events mapped from one network read may arrive together, through
    /// [`emit_all`](ProviderSink::emit_all), once all of them are made. `false` by default:
    /// each event then arrives as it is made, so a sink that reads the partial message in
    /// `emit` sees it as it was at that event. A sink whose consumer reads the partial later
    /// anyway (an event stream) says `true` and saves work per event.
    fn takes_batches(&self) -> bool {
        false
    }

    /// Receives the events of one network read, in order, draining `events` (only when
    /// [`takes_batches`](ProviderSink::takes_batches) says so); by default `emit` for each.
    fn emit_all(&mut self, events: &mut Vec<AssistantMessageEvent>) {
        for event in events.drain(..) {
            self.emit(event);
        }
    }

    /// Stamps the final message just before its `done` or `error` is made; by default
    /// nothing. An event stream gives it `durationMs` here: the final event then shares the
    /// partial message as it is, instead of copying it to stamp it.
    fn stamp_final(&self, message: &mut AssistantMessage) {
        let _ = message;
    }
}

impl ProviderSink for AssistantMessageEventSender {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.push(event);
    }

    fn stamp_final(&self, message: &mut AssistantMessage) {
        self.time_message(message);
    }

    /// On the current-thread runtime the consumer runs only while the provider waits for the
    /// network, and reads the partial then: it sees the same whether a read's events are
    /// queued one by one or together (one queue lock and one wake-up per read). On other
    /// runtimes a consumer could always find the partial ahead of the event it reads.
    fn takes_batches(&self) -> bool {
        true
    }

    fn emit_all(&mut self, events: &mut Vec<AssistantMessageEvent>) {
        self.push_all(events.drain(..));
    }
}

/// An API's entry point for one request: the model's stream, told to `sink`.
type RunFn = for<'a> fn(
    &'a Model,
    &'a Context,
    &'a StreamOptions,
    &'a mut dyn ProviderSink,
) -> RunFuture<'a>;

/// One built-in API: its name (`model.api`) and its entry points.
struct Api {
    name: &'static str,
    run: RunFn,
    #[cfg(feature = "testing")]
    map_body: for<'a> fn(
        &'a Model,
        &'a StreamOptions,
        Vec<bytes::Bytes>,
        &'a mut dyn ProviderSink,
    ) -> RunFuture<'a>,
}

impl Api {
    const fn of<A: WireApi>(name: &'static str) -> Api {
        Api {
            name,
            run: boxed_run::<A>,
            #[cfg(feature = "testing")]
            map_body: driver::boxed_map_body::<A>,
        }
    }

    /// An API whose run is its own (`run`), its bodies mapped as `A` maps them.
    const fn with_run<A: WireApi>(name: &'static str, run: RunFn) -> Api {
        Api {
            name,
            run,
            #[cfg(feature = "testing")]
            map_body: driver::boxed_map_body::<A>,
        }
    }
}

/// Provider selection: the one place that names the built-in APIs.
const TABLE: [Api; 9] = [
    Api::of::<openai_completions::Completions>("openai-completions"),
    Api::of::<openai_responses::Responses>("openai-responses"),
    Api::of::<anthropic::Anthropic>("anthropic-messages"),
    Api::of::<google::Google>("google-generative-ai"),
    Api::of::<mistral::Mistral>("mistral-conversations"),
    Api::of::<azure_responses::AzureResponses>("azure-openai-responses"),
    Api::of::<google_vertex::Vertex>("google-vertex"),
    Api::with_run::<openai_codex::Codex>("openai-codex-responses", openai_codex::boxed_run),
    Api::of::<bedrock::Bedrock>("bedrock-converse-stream"),
];

/// The wire APIs with a built-in provider.
pub const APIS: [&str; TABLE.len()] = {
    let mut names = [""; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        names[i] = TABLE[i].name;
        i += 1;
    }
    names
};

fn api(name: &str) -> Option<&'static Api> {
    TABLE.iter().find(|a| a.name == name)
}

fn unknown_api(model: &Model, sink: &mut dyn ProviderSink) {
    Output::new(model, sink).fail(
        format!("No API provider registered for api: {}", model.api),
        false,
    );
}

/// Runs the provider of `model.api` to completion, reporting to `sink`. Unknown APIs end
/// with an `error` event.
pub async fn run(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn ProviderSink,
) {
    match api(&model.api) {
        Some(api) => (api.run)(model, context, options, sink).await,
        None => unknown_api(model, sink),
    }
}

/// Maps a response body already in memory to events, as the provider of `model.api` would
/// map a `200` streaming response made of these chunks: no request, no network. The entry
/// point of the provider fuzz targets and of body-level tests.
#[cfg(feature = "testing")]
pub async fn map_body(
    model: &Model,
    options: &StreamOptions,
    chunks: Vec<bytes::Bytes>,
    sink: &mut dyn ProviderSink,
) {
    match api(&model.api) {
        Some(api) => (api.map_body)(model, options, chunks, sink).await,
        None => unknown_api(model, sink),
    }
}

/// Starts the provider of `model.api` on the current tokio runtime and returns its stream.
pub fn stream(
    model: &Model,
    context: Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let (mut tx, rx) = assistant_stream();
    let model = model.clone();
    tokio::spawn(async move {
        run(&model, &context, &options, &mut tx).await;
        tx.end(None);
    });
    rx
}

/// The built-in providers as a [`StreamFn`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Providers;

impl StreamFn for Providers {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err("the built-in providers need a tokio runtime".into());
        }
        // The request task keeps its own copy.
        Ok(stream(model, context, options.clone()))
    }
}
