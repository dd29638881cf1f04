//! Replays the Codex WebSocket cases (tests/providers/ws/streams) against tern over a real
//! local WebSocket server (support/ws_server.rs, with the HTTP replay server behind it for the
//! SSE fallback) and compares the output document with the reference's
//! (tests/providers/ws/expected, written by reference/run_ws.mjs under Node 22).
//!
//! The cases share the process-wide session cache, so they run one after another in one
//! test, each starting from an empty cache and no remembered fallback.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tern_ai::message::Message;
use tern_ai::providers::replay::{
    case_inputs, describe_request, headers_of_api, responses_of, start_server, RecordingSink,
    HEADERS_THAT_MATTER,
};
use tern_ai::providers::{
    close_codex_websocket_sessions, is_context_overflow, reset_codex_websocket_fallback,
};
use tern_ai::Context;

#[path = "support/compare.rs"]
mod compare;
#[path = "support/runtime.rs"]
mod runtime;
#[path = "support/ws_server.rs"]
mod ws_server;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/providers/ws")
}

fn cases() -> Vec<(String, Value, Value)> {
    let streams = root().join("streams/openai-codex-responses");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&streams)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let case = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let expected = root().join("expected/openai-codex-responses").join(&name);
            let expected =
                serde_json::from_str(&std::fs::read_to_string(expected).unwrap()).unwrap();
            (name, case, expected)
        })
        .collect()
}

/// The final message as the runner reports it: no clock readings, no error stacks, and
/// without the `cause` tern adds to a diagnostic's error (the reference has none).
fn normalize(message: &tern_ai::message::AssistantMessage) -> Value {
    let mut v = serde_json::to_value(Message::from(message.clone())).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("timestamp");
    o.remove("durationMs");
    if let Some(Value::Array(diagnostics)) = o.get_mut("diagnostics") {
        for d in diagnostics.iter_mut().filter_map(Value::as_object_mut) {
            d.remove("timestamp");
            if let Some(e) = d.get_mut("error").and_then(Value::as_object_mut) {
                e.remove("stack");
                e.remove("cause");
            }
        }
    }
    v
}

/// Runs a WebSocket case as run_ws.mjs does and returns its output document.
async fn run_ws_case(case: &Value) -> Value {
    close_codex_websocket_sessions(None);
    reset_codex_websocket_fallback(None);
    let mut http_case = case.clone();
    if case.get("response").is_none() && case.get("responses").is_none() {
        http_case["response"] = json!({"status": 500, "chunks": []});
    }
    let http = start_server(responses_of(&http_case)).await.unwrap();
    let api = case["api"].as_str().unwrap().to_string();
    let mut extra: Vec<String> = headers_of_api(&api).iter().map(|h| h.to_string()).collect();
    for src in ["/request/model/headers", "/request/options/headers"] {
        if let Some(o) = case.pointer(src).and_then(Value::as_object) {
            extra.extend(o.keys().cloned());
        }
    }
    let mut wanted: Vec<String> = HEADERS_THAT_MATTER.iter().map(|h| h.to_string()).collect();
    wanted.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
    let scripts = case["websocket"].as_array().cloned().unwrap_or_default();
    let server = ws_server::start(
        scripts,
        wanted,
        http.origin.trim_start_matches("http://").to_string(),
    )
    .await;
    let (model, context, options) = case_inputs(case, &server.origin).unwrap();
    let mut messages: Vec<Message> = context.messages.to_vec();
    let extra_turns = case["turns"].as_array().cloned().unwrap_or_default();
    let mut turns = Vec::new();
    let mut last: Option<tern_ai::message::AssistantMessage> = None;
    for t in 0..=extra_turns.len() {
        if t > 0 {
            let wait = extra_turns[t - 1]["waitMs"].as_u64().unwrap_or(0);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            if let Some(m) = last.take() {
                messages.push(Message::Assistant(Arc::new(m)));
            }
            let more: Vec<Message> =
                serde_json::from_value(extra_turns[t - 1]["messages"].clone()).unwrap();
            messages.extend(more);
        }
        let mut options = options.clone();
        options.signal = tokio_util::sync::CancellationToken::new();
        let mut sink = RecordingSink::new(&api);
        if let (0, Some(n)) = (t, case.get("abortAfterEvents").and_then(Value::as_u64)) {
            sink.abort_after(n as usize, options.signal.clone());
        }
        let timer = match (t, case.get("abortAfterMs").and_then(Value::as_u64)) {
            (0, Some(ms)) => {
                let signal = options.signal.clone();
                Some(tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    signal.cancel();
                }))
            }
            _ => None,
        };
        let context = Context::new(messages.clone());
        tern_ai::providers::run(&model, &context, &options, &mut sink).await;
        if let Some(timer) = timer {
            timer.abort();
        }
        let overflow = sink
            .message
            .as_ref()
            .is_some_and(|m| is_context_overflow(m, model.context_window));
        turns.push(json!({
            "events": sink.events,
            "message": sink.message.as_ref().map(normalize).unwrap_or(Value::Null),
            "overflow": overflow,
        }));
        last = sink.message;
    }
    close_codex_websocket_sessions(None);
    let connections: Vec<Value> = server
        .connections
        .lock()
        .iter()
        .map(ws_server::Connection::to_json)
        .collect();
    let requests: Vec<Value> = http
        .requests
        .lock()
        .iter()
        .map(|r| describe_request(r, &extra))
        .collect();
    let mut out = Map::new();
    out.insert("case".into(), case["id"].clone());
    out.insert("api".into(), json!(api));
    out.insert("connections".into(), Value::Array(connections));
    out.insert("httpRequests".into(), Value::Array(requests));
    out.insert("turns".into(), Value::Array(turns));
    Value::Object(out)
}

fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    for k in ["connections", "httpRequests", "turns"] {
        compare::compare(k, &expected[k], &actual[k], &mut diffs);
    }
    diffs
}

#[test]
fn every_websocket_case_matches_the_reference() {
    let rt = runtime::runtime();
    let all = cases();
    assert!(all.len() >= 15, "{} cases", all.len());
    let mut failures = Vec::new();
    for (name, case, expected) in &all {
        let actual = rt.block_on(run_ws_case(case));
        let diffs = differences(expected, &actual);
        if !diffs.is_empty() {
            failures.push(format!(
                "{name}: {}",
                diffs[..diffs.len().min(6)].join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
