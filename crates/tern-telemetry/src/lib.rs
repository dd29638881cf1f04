//! Traces of tern agent runs, built from the agent's event stream (the core does not
//! change): `invoke_agent {agent}`, `chat {model}` and `execute_tool {tool}` spans with the
//! OpenTelemetry GenAI attribute names, and pi-telemetry's `pi.ai.request` span as an option.
//!
//! The spans are [`tracing`] spans; with the `otel` feature, `export::init` bridges them
//! to OpenTelemetry and exports them over OTLP/HTTP, configured by the standard `OTEL_*`
//! variables (on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set or `OTEL_TRACES_EXPORTER=otlp`).
//! With `otel`, each model request also records the `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.duration` histograms on the global meter provider.
//! When telemetry is off the host attaches nothing, so it costs nothing.
//!
//! ```
//! use tern_agent::Agent;
//! use tern_ai::{faux::{FauxModel, FauxResponse}, Model};
//! use tern_telemetry::{attach, TraceOptions};
//!
//! let agent = Agent::builder(Model::default(), FauxModel::new(vec![FauxResponse::text("hi")])).build();
//! let _traces = attach(&agent, TraceOptions::new("tern"));
//! // every run of `agent` now makes an `invoke_agent tern` span
//! ```
//!
//! Message and tool contents are never recorded unless [`TraceOptions::record_content`] is set.

#[cfg(feature = "otel")]
pub mod export;
mod listener;
#[cfg(feature = "otel")]
mod metrics;
#[cfg(feature = "testing")]
pub mod testing;

pub use listener::{attach, TraceOptions};
