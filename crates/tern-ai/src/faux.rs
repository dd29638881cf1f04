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
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use crate::clock::now_ms;
use crate::event::{AssistantMessageEvent, PartialMessage};
use crate::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use crate::model::Model;
use crate::stream::{assistant_stream, AssistantMessageEventSender, AssistantMessageEventStream};
use crate::stream_fn::{BoxError, Context, StreamFn, StreamOptions};

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
                    ContentBlock::ToolCall(ToolCall {
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
    fn stream(
        &self,
        model: &Model,
        _context: Context,
        options: StreamOptions,
    ) -> Result<AssistantMessageEventStream, BoxError> {
        let (tx, rx) = assistant_stream();
        let base = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            timestamp: now_ms(),
            ..Default::default()
        };
        let Some(response) = self.responses.lock().pop_front() else {
            tx.push(AssistantMessageEvent::Error {
                reason: StopReason::Error,
                error: Box::new(AssistantMessage {
                    stop_reason: StopReason::Error,
                    error_message: Some("The scripted model has no response left".into()),
                    ..base
                }),
            });
            return Ok(rx);
        };
        let chunk = self.chunk_chars;
        if self.delay.is_zero() {
            play(&tx, base, response, chunk, None, &options);
        } else {
            let delay = self.delay;
            tokio::spawn(async move {
                play_async(tx, base, response, chunk, delay, options).await;
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

/// The events of one response, in order (without the final one).
fn script(partial: &PartialMessage, response: &FauxResponse, chunk: usize) -> Vec<Step> {
    let mut steps = vec![Step::Event(AssistantMessageEvent::Start {
        partial: partial.clone(),
    })];
    for (i, block) in response.content.iter().enumerate() {
        steps.push(Step::Block(i, block.clone(), chunk));
    }
    steps
}

enum Step {
    Event(AssistantMessageEvent),
    Block(usize, ContentBlock, usize),
}

fn block_events(
    partial: &PartialMessage,
    i: usize,
    block: &ContentBlock,
    chunk: usize,
) -> Vec<AssistantMessageEvent> {
    let p = || partial.clone();
    let mut out = Vec::new();
    match block {
        ContentBlock::Text(t) => {
            partial.update(|m| m.content.push(ContentBlock::Text(TextContent::default())));
            out.push(AssistantMessageEvent::TextStart {
                content_index: i,
                partial: p(),
            });
            for d in chunks(&t.text, chunk) {
                partial.update(|m| {
                    if let Some(ContentBlock::Text(x)) = m.content.get_mut(i) {
                        x.text.push_str(&d);
                    }
                });
                out.push(AssistantMessageEvent::TextDelta {
                    content_index: i,
                    delta: d,
                    partial: p(),
                });
            }
            out.push(AssistantMessageEvent::TextEnd {
                content_index: i,
                content: t.text.clone(),
                partial: p(),
            });
        }
        ContentBlock::Thinking(t) => {
            partial.update(|m| {
                m.content
                    .push(ContentBlock::Thinking(ThinkingContent::default()))
            });
            out.push(AssistantMessageEvent::ThinkingStart {
                content_index: i,
                partial: p(),
            });
            for d in chunks(&t.thinking, chunk) {
                partial.update(|m| {
                    if let Some(ContentBlock::Thinking(x)) = m.content.get_mut(i) {
                        x.thinking.push_str(&d);
                    }
                });
                out.push(AssistantMessageEvent::ThinkingDelta {
                    content_index: i,
                    delta: d,
                    partial: p(),
                });
            }
            out.push(AssistantMessageEvent::ThinkingEnd {
                content_index: i,
                content: t.thinking.clone(),
                partial: p(),
            });
        }
        ContentBlock::ToolCall(c) => {
            partial.update(|m| {
                m.content.push(ContentBlock::ToolCall(ToolCall {
                    arguments: Value::Object(Default::default()),
                    ..c.clone()
                }))
            });
            out.push(AssistantMessageEvent::ToolcallStart {
                content_index: i,
                partial: p(),
            });
            out.push(AssistantMessageEvent::ToolcallDelta {
                content_index: i,
                delta: c.arguments.to_string(),
                partial: p(),
            });
            partial.update(|m| {
                if let Some(slot) = m.content.get_mut(i) {
                    *slot = ContentBlock::ToolCall(c.clone());
                }
            });
            out.push(AssistantMessageEvent::ToolcallEnd {
                content_index: i,
                tool_call: Box::new(c.clone()),
                partial: p(),
            });
        }
        ContentBlock::Image(_) => {}
    }
    out
}

fn final_event(base: AssistantMessage, response: &FauxResponse) -> AssistantMessageEvent {
    let message = AssistantMessage {
        content: response.content.clone(),
        usage: response.usage.clone(),
        stop_reason: response.stop_reason,
        error_message: response.error_message.clone(),
        ..base
    };
    match response.stop_reason {
        StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
            reason: response.stop_reason,
            error: Box::new(message),
        },
        reason => AssistantMessageEvent::Done {
            reason,
            message: Box::new(message),
        },
    }
}

fn aborted(partial: &PartialMessage) -> AssistantMessageEvent {
    let mut m = partial.snapshot();
    m.stop_reason = StopReason::Aborted;
    m.error_message = Some("Request was aborted".into());
    AssistantMessageEvent::Error {
        reason: StopReason::Aborted,
        error: Box::new(m),
    }
}

fn play(
    tx: &AssistantMessageEventSender,
    base: AssistantMessage,
    response: FauxResponse,
    chunk: usize,
    _delay: Option<Duration>,
    options: &StreamOptions,
) {
    let partial = PartialMessage::new(AssistantMessage {
        stop_reason: StopReason::Pending,
        ..base.clone()
    });
    if options.signal.is_cancelled() {
        tx.push(aborted(&partial));
        return;
    }
    for step in script(&partial, &response, chunk) {
        match step {
            Step::Event(e) => tx.push(e),
            Step::Block(i, b, c) => {
                for e in block_events(&partial, i, &b, c) {
                    tx.push(e);
                }
            }
        }
    }
    tx.push(final_event(base, &response));
}

async fn play_async(
    tx: AssistantMessageEventSender,
    base: AssistantMessage,
    response: FauxResponse,
    chunk: usize,
    delay: Duration,
    options: StreamOptions,
) {
    let partial = PartialMessage::new(AssistantMessage {
        stop_reason: StopReason::Pending,
        ..base.clone()
    });
    for step in script(&partial, &response, chunk) {
        let events = match step {
            Step::Event(e) => vec![e],
            Step::Block(i, b, c) => block_events(&partial, i, &b, c),
        };
        for e in events {
            if e.delta().is_some() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = options.signal.cancelled() => {}
                }
            }
            if options.signal.is_cancelled() {
                tx.push(aborted(&partial));
                return;
            }
            tx.push(e);
        }
    }
    tx.push(final_event(base, &response));
}
