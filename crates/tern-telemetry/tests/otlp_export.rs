//! End to end: a scripted run's spans exported over OTLP/HTTP to a receiver on 127.0.0.1
//! that decodes the protobuf export.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::json;
use tern_agent::{Agent, AgentTool, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::Model;
use tern_telemetry::export::{layer, tracer_provider, ExportConfig};
use tern_telemetry::testing::OtlpReceiver;
use tern_telemetry::{attach, TraceOptions};
use tracing_subscriber::layer::SubscriberExt;

#[test]
fn spans_reach_a_local_otlp_receiver() {
    let OtlpReceiver { port, exports } = OtlpReceiver::start().unwrap();
    let config = ExportConfig {
        traces_endpoint: format!("http://127.0.0.1:{port}/v1/traces"),
        metrics_endpoint: None,
        service_name: "tern-test".into(),
    };
    // The exporter's blocking HTTP client lives outside the async runtime.
    let provider = tracer_provider(&config).unwrap();
    let subscriber = tracing_subscriber::registry().with(layer(&provider));
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let model = FauxModel::new(vec![
                FauxResponse::tool_call("c1", "ping", json!({})),
                FauxResponse::text("pong"),
            ]);
            let ping = AgentTool::dynamic("ping", "Pings.", json!({"type": "object"}), |_| async {
                Ok(ToolResult::text("pong"))
            });
            let agent = Agent::builder(Model::new("m-1", "faux", "faux", ""), model)
                .tool(ping)
                .build();
            let _traces = attach(&agent, TraceOptions::new("tern"));
            agent.prompt("ping it").await.unwrap();
        });
    });
    provider.shutdown().expect("the export flushed");

    let mut names = Vec::new();
    let mut service = None;
    while let Ok(received) = exports.recv_timeout(Duration::from_secs(10)) {
        assert_eq!(received.path, "/v1/traces");
        let export = ExportTraceServiceRequest::decode(received.body.as_slice())
            .expect("an OTLP protobuf export");
        for resource in export.resource_spans {
            for kv in resource.resource.iter().flat_map(|r| &r.attributes) {
                if kv.key == "service.name" {
                    service = kv.value.clone();
                }
            }
            for scope in resource.scope_spans {
                names.extend(scope.spans.into_iter().map(|s| s.name));
            }
        }
        if names.len() >= 4 {
            break;
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "chat m-1",
            "chat m-1",
            "execute_tool ping",
            "invoke_agent tern"
        ]
    );
    let service = format!("{service:?}");
    assert!(service.contains("tern-test"), "{service}");
}
