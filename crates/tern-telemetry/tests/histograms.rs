//! The token-usage and duration histograms of a scripted run, read from an in-memory
//! metric exporter on the global meter provider (this file's only test owns it).

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use tern_agent::Agent;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{Model, Usage};
use tern_telemetry::{attach, TraceOptions};

/// The data of the exported metric named `name`.
fn metric<'a>(metrics: &[&'a Metric], name: &str) -> &'a AggregatedMetrics {
    metrics
        .iter()
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
        .data()
}

#[tokio::test]
async fn each_model_request_records_token_usage_and_duration() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_periodic_exporter(exporter.clone())
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());

    let mut answer = FauxResponse::text("hi");
    answer.usage = Usage {
        input: 10,
        output: 4,
        cache_read: 6,
        ..Usage::default()
    };
    let agent = Agent::builder(
        Model::new("m-1", "faux", "faux", ""),
        FauxModel::new(vec![answer]),
    )
    .build();
    let _traces = attach(&agent, TraceOptions::new("tern"));
    agent.prompt("hello").await.unwrap();
    provider.force_flush().unwrap();

    let exported = exporter.get_finished_metrics().unwrap();
    let metrics: Vec<_> = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .collect();
    let AggregatedMetrics::U64(MetricData::Histogram(h)) =
        metric(&metrics, "gen_ai.client.token.usage")
    else {
        panic!("token usage is a u64 histogram");
    };
    let mut by_type: Vec<(String, u64)> = h
        .data_points()
        .map(|p| {
            let kind = p
                .attributes()
                .find(|kv| kv.key.as_str() == "gen_ai.token.type")
                .map(|kv| kv.value.to_string())
                .unwrap_or_default();
            assert!(p
                .attributes()
                .any(|kv| *kv == KeyValue::new("gen_ai.request.model", "m-1")));
            (kind, p.sum())
        })
        .collect();
    by_type.sort();
    assert_eq!(
        by_type,
        [("input".to_string(), 16), ("output".to_string(), 4)]
    );
    let AggregatedMetrics::F64(MetricData::Histogram(d)) =
        metric(&metrics, "gen_ai.client.operation.duration")
    else {
        panic!("duration is an f64 histogram");
    };
    assert_eq!(d.data_points().map(|p| p.count()).sum::<u64>(), 1);
}
