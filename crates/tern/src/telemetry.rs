//! Traces of the CLI's runs over OTLP, when the standard `OTEL_*` variables ask for them
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, or `OTEL_TRACES_EXPORTER=otlp`); off, nothing is attached.
//!
//! Contents (prompts, answers, tool arguments and results) are recorded only with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; pi-telemetry's
//! `pi.ai.request` spans are added with `TERN_OTEL_PI_SPANS=true`.

use tern_telemetry::export::{ExportConfig, ExportGuard};
use tern_telemetry::TraceOptions;

use crate::secrets::eprintln_redacted;

/// The span options and the exporter's guard, or nothing when telemetry is off (or its
/// setup failed, which is reported: a run does not fail for want of traces).
pub fn start() -> (Option<TraceOptions>, Option<ExportGuard>) {
    let Some(config) = ExportConfig::from_env("tern") else {
        return (None, None);
    };
    match tern_telemetry::export::init(&config) {
        Ok(guard) => {
            let on = |name: &str| std::env::var(name).is_ok_and(|v| v.eq_ignore_ascii_case("true"));
            let options = TraceOptions {
                record_content: on("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
                pi_spans: on("TERN_OTEL_PI_SPANS"),
                ..TraceOptions::new("tern")
            };
            (Some(options), Some(guard))
        }
        Err(e) => {
            eprintln_redacted!("tern: traces are off: {e}");
            (None, None)
        }
    }
}
