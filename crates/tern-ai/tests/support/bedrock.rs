//! What the Bedrock credential tests share: one Bedrock request against a local stand-in
//! answering with a recorded stream, and timestamps as the AWS files write them.

#![allow(dead_code)]

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tern_ai::providers::replay::{start_server, CapturedRequest};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, Model};

use super::final_message::Final;

/// `tests/providers/streams/bedrock-converse-stream/text-basic.json`.
pub fn bedrock_case() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/providers/streams/bedrock-converse-stream/text-basic.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs the case with `options` against a fresh Bedrock stand-in; the final message and
/// what the stand-in received.
pub async fn bedrock_run_with(options: StreamOptions) -> (AssistantMessage, Vec<CapturedRequest>) {
    let case = bedrock_case();
    let server = start_server(vec![case["response"].clone()]).await.unwrap();
    let mut model: Model = serde_json::from_value(case["request"]["model"].clone()).unwrap();
    model.base_url = server.origin.clone();
    let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
    let mut sink = Final::default();
    run(&model, &context, &options, &mut sink).await;
    let sent = server.requests.lock().clone();
    (sink.0.unwrap(), sent)
}

/// `at` in UTC as `2026-01-02T03:04:05Z` (GNU `date` does the calendar).
pub fn iso(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
