//! Token counts from the wire are hostile input: counts too large for a `u64`, and sums of
//! them, saturate instead of overflowing (found by the mistral fuzz target: a
//! `completion_tokens` of 1.2e58 with no `total_tokens` panicked when the total was summed).

use bytes::Bytes;
use serde_json::{json, Value};
use tern_ai::providers::replay::chunk_bytes;
use tern_ai::providers::{map_body, ProviderSink};
use tern_ai::{AssistantMessage, AssistantMessageEvent, Model, StreamOptions};

struct Collect(Vec<AssistantMessageEvent>);

impl ProviderSink for Collect {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.0.push(event);
    }
}

/// The message a `200` body of `chunks` ends with (the chunks as the provider cases write
/// them); fails the test when the body does not end in `done`.
fn done_message(api: &str, provider: &str, chunks: &[Value]) -> AssistantMessage {
    let model = Model {
        api: api.into(),
        provider: provider.into(),
        id: "counts-model".into(),
        ..Model::default()
    };
    let chunks = chunks.iter().map(|c| Bytes::from(chunk_bytes(c))).collect();
    let mut sink = Collect(Vec::new());
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(map_body(
            &model,
            &StreamOptions::default(),
            chunks,
            &mut sink,
        ));
    match sink.0.pop() {
        Some(AssistantMessageEvent::Done { message, .. }) => AssistantMessage::clone(&message),
        other => panic!("{api}: the body did not end in done: {other:?}"),
    }
}

#[test]
fn mistral_counts_beyond_u64_saturate() {
    let sse = |v: Value| Value::String(format!("data: {v}\n\n"));
    let chunk = |delta: Value, finish: Value, usage: Option<Value>| {
        let mut c = json!({
            "id": "cmpl-1",
            "object": "chat.completion.chunk",
            "model": "mistral-small-2506",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        sse(c)
    };
    let message = done_message(
        "mistral-conversations",
        "mistral",
        &[
            chunk(json!({"content": "A"}), Value::Null, None),
            chunk(
                json!({}),
                json!("stop"),
                Some(json!({"prompt_tokens": 10, "completion_tokens": 1.2e58})),
            ),
            Value::String("data: [DONE]\n\n".into()),
        ],
    );
    assert_eq!(message.usage.input, 10);
    assert_eq!(message.usage.output, u64::MAX);
    assert_eq!(message.usage.total_tokens, u64::MAX);
}

#[test]
fn bedrock_counts_beyond_u64_saturate() {
    let event = |name: &str, payload: Value| json!({"event": name, "payload": payload});
    let message = done_message(
        "bedrock-converse-stream",
        "amazon-bedrock",
        &[
            event("messageStart", json!({"role": "assistant"})),
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "A"}}),
            ),
            event("contentBlockStop", json!({"contentBlockIndex": 0})),
            event("messageStop", json!({"stopReason": "end_turn"})),
            event(
                "metadata",
                json!({"usage": {
                    "inputTokens": 1e30,
                    "outputTokens": 1e30,
                    "cacheDetails": [
                        {"ttl": "1h", "inputTokens": u64::MAX},
                        {"ttl": "1h", "inputTokens": u64::MAX},
                    ],
                }}),
            ),
        ],
    );
    assert_eq!(message.usage.input, u64::MAX);
    assert_eq!(message.usage.output, u64::MAX);
    assert_eq!(message.usage.total_tokens, u64::MAX);
    assert_eq!(message.usage.cache_write_1h, Some(u64::MAX));
}
