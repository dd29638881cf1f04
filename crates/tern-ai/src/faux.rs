//! A scripted ("faux") model: a stream function that answers from a list of prepared
//! responses, for tests, examples and offline demos.
//!
//! ```
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use serde_json::json;
//! let model = FauxModel::new(vec![
//!     FauxResponse::tool_call("call_1", "read", json!({"path": "a.txt"})),
//!     FauxResponse::text("The file says hello."),
//! ]);
//! assert_eq!(model.remaining(), 2);
//! ```

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use crate::clock::now_ms;
use crate::event::{content_index, AssistantMessageEvent, PartialMessage};
use crate::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use crate::model::Model;
use crate::stream::{assistant_stream, AssistantMessageEventSender};
use crate::stream_fn::{Context, StreamFn, StreamOptions, StreamStart};

/// One prepared response.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FauxResponse {
    /// Text, thinking and toolCall blocks.
    pub content: Vec<ContentBlock>,
    /// The stop reason; `error`/`aborted` end with an `error` event.
    pub stop_reason: StopReason,
    /// Error text for `error`/`aborted`.
    pub error_message: Option<String>,
    /// Usage to report.
    pub usage: Usage,
}

impl FauxResponse {
    /// A text answer that stops.
    pub fn text(text: &str) -> Self {
        FauxResponse {
            content: vec![ContentBlock::text(text)],
            stop_reason: StopReason::Stop,
            ..Default::default()
        }
    }

    /// One tool call (stop reason `toolUse`).
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        FauxResponse::tool_calls(vec![(id, name, arguments)])
    }

    /// Several tool calls in one response (stop reason `toolUse`).
    pub fn tool_calls(calls: Vec<(&str, &str, Value)>) -> Self {
        FauxResponse {
            content: calls
                .into_iter()
                .map(|(id, name, arguments)| {
                    ContentBlock::tool_call(ToolCall {
                        id: id.into(),
                        name: name.into(),
                        arguments,
                        ..Default::default()
                    })
                })
                .collect(),
            stop_reason: StopReason::ToolUse,
            ..Default::default()
        }
    }

    /// Puts `text` before the existing blocks.
    pub fn with_text_first(mut self, text: &str) -> Self {
        self.content.insert(0, ContentBlock::text(text));
        self
    }

    /// Puts a thinking block before the existing blocks.
    pub fn with_thinking(mut self, thinking: &str) -> Self {
        self.content.insert(
            0,
            ContentBlock::Thinking(ThinkingContent {
                thinking: thinking.into(),
                ..Default::default()
            }),
        );
        self
    }

    /// A failed request with this error text.
    pub fn error(message: &str) -> Self {
        FauxResponse {
            stop_reason: StopReason::Error,
            error_message: Some(message.into()),
            ..Default::default()
        }
    }
}

/// A stream function answering from prepared responses, one per request.
///
/// Text is streamed in deltas of `chunk_chars` characters, `delay` apart (no delay: the
/// whole response is pushed before the stream is returned). When the responses run out, a
/// request ends with an `error` message.
pub struct FauxModel {
    responses: Mutex<VecDeque<FauxResponse>>,
    chunk_chars: usize,
    delay: Duration,
}

impl FauxModel {
    /// A model that answers with `responses` in order.
    pub fn new(responses: Vec<FauxResponse>) -> Self {
        FauxModel {
            responses: Mutex::new(responses.into()),
            chunk_chars: 0,
            delay: Duration::ZERO,
        }
    }

    /// Streams text in deltas of `chars` characters with `delay` between them
    /// (needs a tokio runtime when `delay` is non-zero).
    pub fn streaming(mut self, chars: usize, delay: Duration) -> Self {
        self.chunk_chars = chars;
        self.delay = delay;
        self
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        self.responses.lock().len()
    }
}

impl StreamFn for FauxModel {
    fn stream(&self, model: &Model, _context: Context, options: &StreamOptions) -> StreamStart {
        let (tx, rx) = assistant_stream();
        let base = AssistantMessage {
            api: model.api.as_str().into(),
            provider: model.provider.as_str().into(),
            model: model.id.as_str().into(),
            timestamp: now_ms(),
            ..Default::default()
        };
        let Some(response) = self.responses.lock().pop_front() else {
            tx.push(AssistantMessageEvent::Error {
                reason: StopReason::Error,
                error: Arc::new(AssistantMessage {
                    stop_reason: StopReason::Error,
                    error_message: Some("The scripted model has no response left".into()),
                    ..base
                }),
            });
            return Ok(rx);
        };
        let chunk = self.chunk_chars;
        if self.delay.is_zero() {
            play(&tx, base, response, chunk, options);
        } else {
            let delay = self.delay;
            let signal = options.signal.clone();
            tokio::spawn(async move {
                play_async(tx, base, response, chunk, delay, signal).await;
            });
        }
        Ok(rx)
    }
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    if size == 0 {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A change to the partial message, applied right before its event is sent, so a listener
/// reading the partial sees exactly what the events so far announced.
enum Edit {
    None,
    Push(ContentBlock),
    Append(usize, String),
    Set(usize, ContentBlock),
}

fn apply(partial: &PartialMessage, edit: Edit) {
    partial.update(|m| match edit {
        Edit::None => {}
        Edit::Push(b) => m.content.push(b),
        Edit::Append(i, d) => match m.content.get_mut(i) {
            Some(ContentBlock::Text(t)) => t.text.push_str(&d),
            Some(ContentBlock::Thinking(t)) => t.thinking.push_str(&d),
            _ => {}
        },
        Edit::Set(i, b) => {
            if let Some(slot) = m.content.get_mut(i) {
                *slot = b;
            }
        }
    });
}

/// The steps of a block that streams as text (text or thinking): the empty block and its
/// start event, one append and delta event per chunk, then the end event with the whole
/// text. The two kinds differ only in their block and event variants.
macro_rules! prose_steps {
    ($out:ident, $i:ident, $p:ident, $chunks:expr, $text:expr, $empty:expr, $start:ident, $delta:ident, $end:ident) => {{
        $out.push((
            Edit::Push($empty),
            AssistantMessageEvent::$start {
                content_index: content_index($i),
                partial: $p(),
            },
        ));
        for d in $chunks {
            $out.push((
                Edit::Append($i, d.clone()),
                AssistantMessageEvent::$delta {
                    content_index: content_index($i),
                    delta: d.into(),
                    partial: $p(),
                },
            ));
        }
        $out.push((
            Edit::None,
            AssistantMessageEvent::$end {
                content_index: content_index($i),
                content: $text.as_str().into(),
                partial: $p(),
            },
        ));
    }};
}

/// The response as (edit, event) steps in order, without the final event.
fn steps(
    partial: &PartialMessage,
    response: &FauxResponse,
    chunk: usize,
) -> Vec<(Edit, AssistantMessageEvent)> {
    let p = || partial.clone();
    let mut out = vec![(Edit::None, AssistantMessageEvent::Start { partial: p() })];
    for (i, block) in response.content.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => prose_steps!(
                out,
                i,
                p,
                chunks(&t.text, chunk),
                &t.text,
                ContentBlock::Text(TextContent::default()),
                TextStart,
                TextDelta,
                TextEnd
            ),
            ContentBlock::Thinking(t) => prose_steps!(
                out,
                i,
                p,
                chunks(&t.thinking, chunk),
                &t.thinking,
                ContentBlock::Thinking(ThinkingContent::default()),
                ThinkingStart,
                ThinkingDelta,
                ThinkingEnd
            ),
            ContentBlock::ToolCall(c) => {
                let empty = ToolCall {
                    arguments: Value::Object(Default::default()),
                    ..(**c).clone()
                };
                out.push((
                    Edit::Push(ContentBlock::tool_call(empty)),
                    AssistantMessageEvent::ToolcallStart {
                        content_index: content_index(i),
                        partial: p(),
                    },
                ));
                out.push((
                    Edit::None,
                    AssistantMessageEvent::ToolcallDelta {
                        content_index: content_index(i),
                        delta: c.arguments.to_string().into(),
                        partial: p(),
                    },
                ));
                out.push((
                    Edit::Set(i, ContentBlock::ToolCall(c.clone())),
                    AssistantMessageEvent::ToolcallEnd {
                        content_index: content_index(i),
                        tool_call: c.clone(),
                        partial: p(),
                    },
                ));
            }
            ContentBlock::Image(_) => {}
        }
    }
    out
}

fn new_partial(base: &AssistantMessage) -> PartialMessage {
    PartialMessage::new(AssistantMessage {
        stop_reason: StopReason::Pending,
        ..base.clone()
    })
}

/// Pushes the whole response at once (no delay).
fn play(
    tx: &AssistantMessageEventSender,
    base: AssistantMessage,
    response: FauxResponse,
    chunk: usize,
    options: &StreamOptions,
) {
    let partial = new_partial(&base);
    if options.signal.is_cancelled() {
        tx.push(aborted(&partial));
        return;
    }
    for (edit, event) in steps(&partial, &response, chunk) {
        apply(&partial, edit);
        tx.push(event);
    }
    tx.push(final_event(base, &response));
}

/// Pushes the response with `delay` before each delta, checking the signal.
async fn play_async(
    tx: AssistantMessageEventSender,
    base: AssistantMessage,
    response: FauxResponse,
    chunk: usize,
    delay: Duration,
    signal: tokio_util::sync::CancellationToken,
) {
    let partial = new_partial(&base);
    for (edit, event) in steps(&partial, &response, chunk) {
        if event.delta().is_some() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = signal.cancelled() => {}
            }
        }
        if signal.is_cancelled() {
            tx.push(aborted(&partial));
            return;
        }
        apply(&partial, edit);
        tx.push(event);
    }
    tx.push(final_event(base, &response));
}

fn final_event(base: AssistantMessage, response: &FauxResponse) -> AssistantMessageEvent {
    let message = AssistantMessage {
        content: response.content.clone(),
        usage: response.usage.clone().into(),
        stop_reason: response.stop_reason,
        error_message: response.error_message.clone(),
        ..base
    };
    match response.stop_reason {
        StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
            reason: response.stop_reason,
            error: Arc::new(message),
        },
        reason => AssistantMessageEvent::Done {
            reason,
            message: Arc::new(message),
        },
    }
}

fn aborted(partial: &PartialMessage) -> AssistantMessageEvent {
    let mut m = partial.snapshot();
    m.stop_reason = StopReason::Aborted;
    m.error_message = Some("Request was aborted".into());
    AssistantMessageEvent::Error {
        reason: StopReason::Aborted,
        error: Arc::new(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn check_partials(model: FauxModel) {
        let mut stream = model
            .stream(
                &Model::default(),
                Context::default(),
                &StreamOptions::default(),
            )
            .unwrap();
        let mut seen = String::new();
        let mut deltas = 0;
        while let Some(event) = stream.next().await {
            if let AssistantMessageEvent::TextDelta { delta, partial, .. } = &event {
                seen.push_str(delta);
                deltas += 1;
                // The partial shows exactly the text announced so far, never more.
                assert_eq!(partial.snapshot().text(), seen);
            }
        }
        assert_eq!(deltas, 3);
        assert_eq!(stream.result().await.text(), "abcdef");
    }

    #[tokio::test]
    async fn partial_follows_the_deltas_when_streamed() {
        check_partials(
            FauxModel::new(vec![FauxResponse::text("abcdef")])
                .streaming(2, Duration::from_millis(1)),
        )
        .await;
    }

    #[tokio::test]
    async fn partial_is_complete_when_prefilled() {
        // Without a delay everything is pushed before the consumer reads, like the
        // reference's pre-filled streams: the shared partial then already holds all text.
        let model = FauxModel::new(vec![FauxResponse::text("abcdef")]).streaming(2, Duration::ZERO);
        let mut stream = model
            .stream(
                &Model::default(),
                Context::default(),
                &StreamOptions::default(),
            )
            .unwrap();
        let mut deltas = 0;
        while let Some(event) = stream.next().await {
            if let AssistantMessageEvent::TextDelta { partial, .. } = &event {
                deltas += 1;
                assert_eq!(partial.snapshot().text(), "abcdef");
            }
        }
        assert_eq!(deltas, 3);
    }
}
