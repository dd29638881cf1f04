//! The GenAI client histograms: `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.duration`, recorded on the global meter provider (a no-op
//! until a host installs one, as `export::init` does).

use std::time::Duration;

use opentelemetry::metrics::Histogram;
use opentelemetry::KeyValue;
use tern_ai::AssistantMessage;

/// The instruments, made once per attached agent.
pub(crate) struct Instruments {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
}

impl Instruments {
    pub(crate) fn new() -> Self {
        let meter = opentelemetry::global::meter("tern");
        Instruments {
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .build(),
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .build(),
        }
    }

    /// One finished model request of `provider`/`model`.
    pub(crate) fn record_chat(
        &self,
        provider: &str,
        model: &str,
        m: &AssistantMessage,
        took: Duration,
        error: Option<&str>,
    ) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_string()),
            KeyValue::new("gen_ai.request.model", model.to_string()),
            KeyValue::new("gen_ai.response.model", m.model.to_string()),
        ];
        if let Some(e) = error {
            attributes.push(KeyValue::new("error.type", e.to_string()));
        }
        self.duration.record(took.as_secs_f64(), &attributes);
        if error.is_none() {
            let u = &m.usage;
            let with = |kind: &'static str| {
                let mut a = attributes.clone();
                a.push(KeyValue::new("gen_ai.token.type", kind));
                a
            };
            self.tokens
                .record(u.input + u.cache_read + u.cache_write, &with("input"));
            self.tokens.record(u.output, &with("output"));
        }
    }
}
