// Shared by the provider targets (included with `#[path]`): arbitrary bytes as the
// body of a `200` streaming response, cut into chunks; the mapper never panics and reports
// exactly one `start` first (Bedrock: one at each `messageStart`, as the reference) and
// exactly one terminal event (`done` or `error`) last.
use std::sync::OnceLock;

use tern_ai::providers::{map_body, ProviderSink};
use tern_ai::{AssistantMessageEvent, Model, StreamOptions};

struct Collect(Vec<AssistantMessageEvent>);

impl ProviderSink for Collect {
    fn emit(&mut self, event: AssistantMessageEvent) {
        if let Some(p) = event.partial() {
            // Every content index names an existing block at emission time.
            let idx = event.content_index();
            if let Some(i) = idx {
                assert!(i < p.snapshot().content.len(), "content index out of range");
            }
        }
        self.0.push(event);
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    })
}

pub fn check(api: &str, provider: &str, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let step = data[0] as usize * 4 + 1;
    let chunks: Vec<bytes::Bytes> = data[1..]
        .chunks(step)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let model = Model {
        api: api.into(),
        provider: provider.into(),
        id: "fuzz-model".into(),
        ..Model::default()
    };
    let options = StreamOptions::default();
    let mut sink = Collect(Vec::new());
    runtime().block_on(map_body(&model, &options, chunks, &mut sink));
    let events = sink.0;
    let terminal = |e: &AssistantMessageEvent| {
        matches!(
            e,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    };
    let starts = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::Start { .. }))
        .count();
    // Bedrock starts the message at each `messageStart` event, as the reference pushes a
    // `start` for each: none, one or several, anywhere. A body without one ends with the error
    // alone, or, when content blocks came first, with their events and then the error: the
    // reference opens a block at its first delta whether or not the message started.
    if api != "bedrock-converse-stream" {
        assert_eq!(starts, 1, "{starts} starts");
        assert!(matches!(events.first(), Some(AssistantMessageEvent::Start { .. })));
    }
    assert!(events.last().is_some_and(terminal), "last event is not terminal");
    assert_eq!(events.iter().filter(|e| terminal(e)).count(), 1);
    if let Some(AssistantMessageEvent::Error { error, .. }) = events.last() {
        // Present, but possibly empty: an Anthropic `error` event with empty data gives an
        // empty message in the reference too (`throw new Error(sse.data)`).
        assert!(error.error_message.is_some());
    }
}
