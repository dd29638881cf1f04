//! What a stream's consumer sees when a read's events are queued together: the same events,
//! and the same partial message at each, as when they are queued one by one.

use bytes::Bytes;

use super::read_body;
use super::WireApi;
use crate::event::AssistantMessageEvent;
use crate::message::AssistantMessage;
use crate::model::Model;
use crate::providers::http::Body;
use crate::providers::openai_completions::Completions;
use crate::providers::output::Output;
use crate::providers::ProviderSink;
use crate::stream::{assistant_stream, AssistantMessageEventSender};
use crate::stream_fn::StreamOptions;

/// A Chat Completions body with text, a tool call in pieces, a finish reason and usage.
fn body() -> String {
    let head = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":"#;
    let mut records = vec![format!(
        r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#
    )];
    for i in 0..12 {
        records.push(format!(
            r#"{head}[{{"index":0,"delta":{{"content":"t{i:06} "}},"finish_reason":null}}]}}"#
        ));
    }
    for piece in [r#"{\"n\""#, r#":4"#, r#"2}"#] {
        records.push(format!(
            r#"{head}[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_1","function":{{"name":"noop","arguments":"{piece}"}}}}]}},"finish_reason":null}}]}}"#
        ));
    }
    records.push(format!(
        r#"{head}[{{"index":0,"delta":{{}},"finish_reason":"tool_calls"}}]}}"#
    ));
    records.push(format!(
        r#"{head}[],"usage":{{"prompt_tokens":3,"completion_tokens":15,"total_tokens":18}}}}"#
    ));
    records.push("[DONE]".into());
    records.iter().map(|r| format!("data: {r}\n\n")).collect()
}

/// The sink of before the batched path: each event queued as it is made.
struct OneByOne(AssistantMessageEventSender);

impl ProviderSink for OneByOne {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.0.push(event);
    }
}

/// A message as compared: the clock fields cleared.
fn shown(message: &AssistantMessage) -> String {
    let mut m = message.clone();
    m.timestamp = 0;
    m.duration_ms = None;
    format!("{m:?}")
}

/// What the consumer sees, event by event: the event and the partial message as it reads
/// it right then; `batched` queues each read's events together.
async fn observe(chunks: &[Bytes], batched: bool) -> Vec<(String, String)> {
    let (tx, mut rx) = assistant_stream();
    let chunks = chunks.to_vec();
    let producer = tokio::spawn(async move {
        let model = Model {
            api: "openai-completions".into(),
            provider: "openai".into(),
            id: "m".into(),
            ..Model::default()
        };
        let options = StreamOptions::default();
        let stream = <Completions as WireApi>::Stream::default();
        let body = Body::Paced(chunks.into());
        let mut tx = tx;
        let mut one_by_one;
        let sink: &mut dyn ProviderSink = match batched {
            true => &mut tx,
            false => {
                one_by_one = OneByOne(tx);
                &mut one_by_one
            }
        };
        let mut out = Output::new(&model, sink);
        read_body::<Completions>(&model, &options, &mut out, body, stream).await;
    });
    let mut seen = Vec::new();
    while let Some(e) = rx.next().await {
        let event = format!("{} {:?} {:?}", e.kind(), e.content_index(), e.delta());
        let state = match (&e, e.partial()) {
            (_, Some(p)) => p.with(shown),
            (AssistantMessageEvent::Done { message, .. }, None) => shown(message),
            (AssistantMessageEvent::Error { error, .. }, None) => shown(error),
            _ => String::new(),
        };
        seen.push((event, state));
    }
    producer.await.expect("the producer finishes");
    seen
}

#[tokio::test]
async fn a_consumer_sees_the_same_events_and_partials_when_reads_are_batched() {
    let body = body();
    let bytes = body.as_bytes();
    let whole = vec![Bytes::copy_from_slice(bytes)];
    let one_byte: Vec<Bytes> = bytes
        .iter()
        .map(|b| Bytes::copy_from_slice(&[*b]))
        .collect();
    // Cuts that fall inside records and between them, several records to some reads.
    let uneven: Vec<Bytes> = bytes
        .chunks(97)
        .flat_map(|c| {
            let (a, b) = c.split_at(c.len().min(13));
            [Bytes::copy_from_slice(a), Bytes::copy_from_slice(b)]
        })
        .collect();
    let mut events = None;
    for chunks in [&whole, &one_byte, &uneven] {
        let batched = observe(chunks, true).await;
        assert_eq!(batched, observe(chunks, false).await);
        // The same events whatever the reads.
        let kinds: Vec<&String> = batched.iter().map(|(e, _)| e).collect();
        // start, text_start, 12 deltas, toolcall_start, 3 deltas, the two ends, done.
        assert_eq!(kinds.len(), 21);
        match &events {
            None => events = Some(kinds.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
            Some(first) => assert_eq!(
                &kinds.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
                first
            ),
        }
        // At each event the partial holds at least the text announced so far.
        let mut text = String::new();
        for (event, state) in &batched {
            if let Some(delta) = event.strip_prefix("text_delta Some(0) Some(\"") {
                text.push_str(delta.trim_end_matches("\")"));
            }
            assert!(
                state.contains(&format!("{text:?}")[..text.len() + 1]),
                "{event}: {state}"
            );
        }
    }
    // Read a byte at a time, the consumer does see the message grow (the test can tell).
    let one_byte = observe(&one_byte, true).await;
    let states: std::collections::HashSet<&String> = one_byte.iter().map(|(_, s)| s).collect();
    assert!(states.len() > 10);
}
