//! The span tree of a scripted run with a tool call and a provider error, through the
//! OpenTelemetry bridge into an in-memory exporter.

use std::collections::HashMap;

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tern_agent::{Agent, AgentTool, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{Model, Usage};
use tern_telemetry::{attach, TraceOptions};
use tracing_subscriber::layer::SubscriberExt;

fn attrs(span: &SpanData) -> HashMap<String, Value> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.to_string(), kv.value.clone()))
        .collect()
}

fn model() -> Model {
    Model {
        id: "faux-1".into(),
        provider: "faux".into(),
        api: "faux".into(),
        ..Model::default()
    }
}

async fn run(options: TraceOptions) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry().with(tern_telemetry::export::layer(&provider));
    // The test runtime has one thread, so this subscriber sees every span of the run.
    let _default = tracing::subscriber::set_default(subscriber);

    let usage = Usage {
        input: 100,
        output: 20,
        cache_read: 50,
        cache_write: 5,
        reasoning: Some(7),
        ..Usage::default()
    };
    let mut call = FauxResponse::tool_call("call-1", "lookup", json!({"q": "secret question"}));
    call.usage = usage.clone();
    let failing = FauxResponse::error("upstream exploded");
    let model_script = FauxModel::new(vec![call, failing]);
    let lookup = AgentTool::dynamic(
        "lookup",
        "Looks up.",
        json!({"type": "object"}),
        |_| async {
            Ok(ToolResult {
                is_error: Some(true),
                ..ToolResult::text("not found: secret answer")
            })
        },
    );
    let agent = Agent::builder(model(), model_script).tool(lookup).build();
    let _traces = attach(&agent, options);
    agent.prompt("my secret prompt").await.unwrap();
    drop(_traces);
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

#[tokio::test]
async fn a_run_makes_invoke_agent_over_chat_and_execute_tool_spans() {
    let spans = run(TraceOptions::new("tern")).await;
    let by_name =
        |name: &str| -> Vec<&SpanData> { spans.iter().filter(|s| s.name == name).collect() };
    let root = by_name("invoke_agent tern");
    assert_eq!(
        root.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let root = root[0];
    let chats = by_name("chat faux-1");
    let tools = by_name("execute_tool lookup");
    assert_eq!((chats.len(), tools.len()), (2, 1));
    for child in chats.iter().chain(&tools) {
        assert_eq!(
            child.parent_span_id,
            root.span_context.span_id(),
            "{}",
            child.name
        );
        assert_eq!(child.span_context.trace_id(), root.span_context.trace_id());
    }

    let a = attrs(root);
    assert_eq!(a["gen_ai.operation.name"], Value::from("invoke_agent"));
    assert_eq!(a["gen_ai.agent.name"], Value::from("tern"));
    assert_eq!(a["gen_ai.provider.name"], Value::from("faux"));
    assert_eq!(a["gen_ai.request.model"], Value::from("faux-1"));
    assert_eq!(a["error.type"], Value::from("provider_error"));
    assert!(
        matches!(root.status, Status::Error { .. }),
        "{:?}",
        root.status
    );

    let first = attrs(
        chats
            .iter()
            .find(|c| c.start_time == chats.iter().map(|c| c.start_time).min().unwrap())
            .unwrap(),
    );
    assert_eq!(first["gen_ai.operation.name"], Value::from("chat"));
    // Input tokens include the cached ones (GenAI), unlike pi's `input`.
    assert_eq!(first["gen_ai.usage.input_tokens"], Value::I64(155));
    assert_eq!(first["gen_ai.usage.output_tokens"], Value::I64(20));
    assert_eq!(
        first["gen_ai.usage.cache_read.input_tokens"],
        Value::I64(50)
    );
    assert_eq!(
        first["gen_ai.usage.cache_creation.input_tokens"],
        Value::I64(5)
    );
    assert_eq!(first["gen_ai.usage.reasoning.output_tokens"], Value::I64(7));
    assert!(!first.contains_key("error.type"));
    let failed = chats
        .iter()
        .find(|c| matches!(c.status, Status::Error { .. }))
        .expect("the failed chat is an error");
    let failed_attrs = attrs(failed);
    assert_eq!(failed_attrs["error.type"], Value::from("provider_error"));
    assert!(
        matches!(&failed.status, Status::Error { description } if description.contains("upstream exploded")),
        "{:?} {:?}",
        failed.status,
        failed_attrs
    );
    assert_eq!(chats[0].span_kind, SpanKind::Client);

    let t = attrs(tools[0]);
    assert_eq!(t["gen_ai.operation.name"], Value::from("execute_tool"));
    assert_eq!(t["gen_ai.tool.name"], Value::from("lookup"));
    assert_eq!(t["gen_ai.tool.call.id"], Value::from("call-1"));
    assert_eq!(t["error.type"], Value::from("tool_error"));

    // Contents are not recorded by default.
    let all = format!("{spans:?}");
    assert!(!all.contains("secret"), "content leaked into the spans");
}

#[tokio::test]
async fn content_and_pi_spans_are_opt_in() {
    let spans = run(TraceOptions {
        record_content: true,
        pi_spans: true,
        ..TraceOptions::new("tern")
    })
    .await;
    let all = format!("{spans:?}");
    assert!(
        all.contains("my secret prompt") && all.contains("secret answer"),
        "content recorded when asked"
    );
    let pi: Vec<&SpanData> = spans.iter().filter(|s| s.name == "pi.ai.request").collect();
    assert_eq!(pi.len(), 2);
    let chat_ids: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "chat faux-1")
        .map(|s| s.span_context.span_id())
        .collect();
    assert!(pi.iter().all(|p| chat_ids.contains(&p.parent_span_id)));
    let first = pi
        .iter()
        .map(|p| attrs(p))
        .find(|a| a.get("stop") == Some(&Value::from("toolUse")))
        .expect("a toolUse request");
    assert_eq!(first["provider"], Value::from("faux"));
    assert_eq!(first["usage.input"], Value::I64(100));
    assert_eq!(first["usage.cache_read"], Value::I64(50));
}
