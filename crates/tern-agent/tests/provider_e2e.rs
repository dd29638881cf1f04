//! End to end over real HTTP: an Agent driven by the openai-completions client against a
//! local scripted server completes a tool round trip, and an abort mid-stream ends the run
//! with an `aborted` message instead of waiting for the server.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, ToolResult};
use tern_ai::providers::replay::start_server;
use tern_ai::providers::Providers;
use tern_ai::{Message, Model, StopReason, StreamOptions};
use tern_testkit::agent::chat_model;

fn sse(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .map(|c| Value::String(format!("data: {c}\n\n")))
        .chain(std::iter::once(Value::String("data: [DONE]\n\n".into())))
        .collect()
}

fn delta(d: Value, finish: Value) -> Value {
    json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
           "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})
}

fn response(chunks: Vec<Value>, delay_ms: u64) -> Value {
    json!({"status": 200, "headers": {"content-type": "text/event-stream"},
           "chunks": chunks, "chunkDelayMs": delay_ms})
}

fn model(origin: &str) -> Model {
    chat_model("test-model", "openai", &format!("{origin}/v1"), 4096)
}

fn add_tool() -> AgentTool {
    AgentTool::dynamic(
        "add",
        "Add two integers.",
        json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}),
        |call| async move {
            let a = call.args["a"].as_i64().unwrap_or(0);
            let b = call.args["b"].as_i64().unwrap_or(0);
            Ok(ToolResult::text((a + b).to_string()))
        },
    )
}

#[tokio::test]
async fn tool_round_trip_over_http() {
    let first = sse(&[
        delta(
            json!({"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": \"2\","}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls":[{"index":0,"function":{"arguments":" \"b\": 3}"}}]}),
            Value::Null,
        ),
        delta(json!({}), json!("tool_calls")),
    ]);
    let second = sse(&[
        delta(
            json!({"role":"assistant","content":"2 + 3 = "}),
            Value::Null,
        ),
        delta(json!({"content":"5"}), Value::Null),
        delta(json!({}), json!("stop")),
    ]);
    let server = start_server(vec![response(first, 1), response(second, 1)])
        .await
        .unwrap();

    let agent = Agent::new(AgentOptions {
        system_prompt: Some("Use the add tool.".into()),
        model: Some(model(&server.origin).into()),
        tools: vec![add_tool()],
        stream_fn: Some(Arc::new(Providers)),
        stream_options: StreamOptions {
            api_key: Some("test-key".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    tokio::time::timeout(Duration::from_secs(20), agent.prompt("What is 2 + 3?"))
        .await
        .expect("the run finishes")
        .unwrap();

    let state = agent.state();
    let roles: Vec<&str> = state.messages.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    let Message::ToolResult(result) = &state.messages[3] else {
        unreachable!()
    };
    assert!(!result.is_error, "{result:?}");
    assert_eq!(tern_ai::content_text(&result.content, ""), "5");
    let answer = state.messages[4].as_assistant().unwrap();
    assert_eq!(answer.text(), "2 + 3 = 5");
    assert_eq!(answer.stop_reason, StopReason::Stop);

    // The second request carries the tool call and its result back to the model.
    let requests = server.requests.lock().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    let auth = requests[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization");
    assert_eq!(auth.map(|(_, v)| v.as_str()), Some("Bearer test-key"));
    let body: Value = serde_json::from_str(&requests[1].body).unwrap();
    let messages = body["messages"].as_array().unwrap();
    let tool_msg = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert_eq!(tool_msg["content"], "5");
    let call = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["tool_calls"].get(0))
        .unwrap();
    assert_eq!(call["function"]["name"], "add");
}

#[tokio::test]
async fn abort_mid_stream_ends_the_run() {
    // The server sends one delta, then waits 30 s before each further chunk.
    let slow = sse(&[
        delta(
            json!({"role":"assistant","content":"Let me think"}),
            Value::Null,
        ),
        delta(json!({"content":" about it"}), Value::Null),
        delta(json!({}), json!("stop")),
    ]);
    let server = start_server(vec![response(slow, 30_000)]).await.unwrap();
    let agent = Agent::new(AgentOptions {
        model: Some(model(&server.origin).into()),
        stream_fn: Some(Arc::new(Providers)),
        stream_options: StreamOptions {
            api_key: Some("test-key".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    let handle = agent.clone();
    agent.subscribe_sync(move |e| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } = e
        {
            if assistant_message_event.kind() == "text_delta" {
                handle.abort();
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), agent.prompt("hi"))
        .await
        .expect("abort ends the run without waiting for the server")
        .unwrap();
    let state = agent.state();
    let last = state
        .messages
        .last()
        .and_then(|m| m.as_assistant())
        .unwrap();
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.text(), "Let me think");
    assert!(last.error_message.is_some());
    assert_eq!(state.error_message, last.error_message);
    assert!(!state.is_streaming);
}
