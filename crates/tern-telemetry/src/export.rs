//! The OpenTelemetry bridge: `tracing` spans to OTLP/HTTP (protobuf), configured by the
//! standard `OTEL_*` variables.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::layer::SubscriberExt;

/// Where spans go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportConfig {
    /// The full traces URL (`.../v1/traces`).
    pub traces_endpoint: String,
    /// The full metrics URL (`.../v1/metrics`), or `None` when metrics are off
    /// (`OTEL_METRICS_EXPORTER=none`, or no endpoint set for them).
    pub metrics_endpoint: Option<String>,
    /// `service.name` (`OTEL_SERVICE_NAME`, else the host's name).
    pub service_name: String,
}

impl ExportConfig {
    /// The config the environment asks for, or `None` when telemetry is off: on when
    /// `OTEL_TRACES_EXPORTER=otlp`, or when `OTEL_EXPORTER_OTLP_ENDPOINT` /
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (unless `OTEL_TRACES_EXPORTER=none` or
    /// `OTEL_SDK_DISABLED=true`).
    pub fn from_env(default_service: &str) -> Option<ExportConfig> {
        Self::from_vars(default_service, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) with the variables from `var`.
    ///
    /// ```
    /// use tern_telemetry::export::ExportConfig;
    /// let vars = |pairs: &'static [(&'static str, &'static str)]| {
    ///     move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    /// };
    /// assert_eq!(ExportConfig::from_vars("tern", vars(&[])), None);
    /// let on = ExportConfig::from_vars("tern", vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])).unwrap();
    /// assert_eq!(on.traces_endpoint, "http://c:4318/v1/traces");
    /// assert_eq!(on.metrics_endpoint.as_deref(), Some("http://c:4318/v1/metrics"));
    /// let default = ExportConfig::from_vars("tern", vars(&[("OTEL_TRACES_EXPORTER", "otlp")])).unwrap();
    /// assert_eq!(default.traces_endpoint, "http://localhost:4318/v1/traces");
    /// assert_eq!(default.metrics_endpoint, None);
    /// assert_eq!(ExportConfig::from_vars("tern", vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_SDK_DISABLED", "true")])), None);
    /// ```
    pub fn from_vars(
        default_service: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Option<ExportConfig> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return None;
        }
        let exporter = set("OTEL_TRACES_EXPORTER").map(|v| v.to_ascii_lowercase());
        let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
        let on = match exporter.as_deref() {
            Some("none") => false,
            Some("otlp") => true,
            _ => traces.is_some() || base.is_some(),
        };
        if !on {
            return None;
        }
        let under_base = |path: &str| {
            let base = base
                .clone()
                .unwrap_or_else(|| "http://localhost:4318".into());
            format!("{}/{path}", base.trim_end_matches('/'))
        };
        let traces_endpoint = traces.unwrap_or_else(|| under_base("v1/traces"));
        let metrics = set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        let metrics_endpoint = match set("OTEL_METRICS_EXPORTER")
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            Some("none") => None,
            Some("otlp") => Some(metrics.unwrap_or_else(|| under_base("v1/metrics"))),
            _ => metrics.or_else(|| base.is_some().then(|| under_base("v1/metrics"))),
        };
        Some(ExportConfig {
            traces_endpoint,
            metrics_endpoint,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| default_service.to_string()),
        })
    }
}

/// Why the exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The OTLP exporter refused its config.
    #[error("cannot export traces to {endpoint}: {message} (check OTEL_EXPORTER_OTLP_ENDPOINT)")]
    Exporter {
        /// The traces URL.
        endpoint: String,
        /// What the exporter said.
        message: String,
    },
    /// Another global `tracing` subscriber was installed first.
    #[error("cannot install the trace subscriber: another one is installed")]
    Subscriber,
}

/// A tracer provider that batches spans to `config`'s endpoint over OTLP/HTTP (protobuf).
pub fn tracer_provider(config: &ExportConfig) -> Result<SdkTracerProvider, ExportError> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(config.traces_endpoint.clone())
        .build()
        .map_err(|e| ExportError::Exporter {
            endpoint: config.traces_endpoint.clone(),
            message: e.to_string(),
        })?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build())
}

/// The `tracing` layer that turns spans into `provider`'s OpenTelemetry spans.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("tern"))
}

/// A meter provider that exports `config`'s metrics over OTLP/HTTP (protobuf), if they
/// are on.
pub fn meter_provider(config: &ExportConfig) -> Result<Option<SdkMeterProvider>, ExportError> {
    let Some(endpoint) = &config.metrics_endpoint else {
        return Ok(None);
    };
    let exporter = MetricExporter::builder()
        .with_http()
        .with_endpoint(endpoint.clone())
        .build()
        .map_err(|e| ExportError::Exporter {
            endpoint: endpoint.clone(),
            message: e.to_string(),
        })?;
    Ok(Some(
        SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(config.service_name.clone())
                    .build(),
            )
            .build(),
    ))
}

/// Flushes and stops the exporters when dropped (keep it until the program ends).
#[must_use = "dropping the guard stops the exporter"]
pub struct ExportGuard(SdkTracerProvider, Option<SdkMeterProvider>);

impl Drop for ExportGuard {
    fn drop(&mut self) {
        let _ = self.0.shutdown();
        if let Some(meters) = &self.1 {
            let _ = meters.shutdown();
        }
    }
}

/// Installs the global subscriber that exports every span to `config`'s endpoint, and the
/// global meter provider for the histograms.
pub fn init(config: &ExportConfig) -> Result<ExportGuard, ExportError> {
    let provider = tracer_provider(config)?;
    let meters = meter_provider(config)?;
    if let Some(m) = &meters {
        opentelemetry::global::set_meter_provider(m.clone());
    }
    let subscriber = tracing_subscriber::registry().with(layer(&provider));
    tracing::subscriber::set_global_default(subscriber).map_err(|_| ExportError::Subscriber)?;
    Ok(ExportGuard(provider, meters))
}
