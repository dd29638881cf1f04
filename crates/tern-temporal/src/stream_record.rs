//! A model response as the `model` activity returns it: the final message and, compactly,
//! the stream of events that built it, so the workflow replays the same events into the
//! loop (a local run's `message_update`s have the same kinds, deltas and order).
//!
//! The record is linear in the response's size: deltas are kept, partial snapshots are not.
//! The workflow rebuilds the partial message from the first snapshot, text and thinking
//! deltas, and each block's start and end; a tool call's arguments in the partial only
//! change at its end.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tern_ai::event::content_index;
use tern_ai::{
    AssistantMessage, AssistantMessageEvent, AssistantMessageEventSender, ContentBlock, Delta,
    PartialMessage, StopReason, ToolCall,
};

/// One streamed event without its partial snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamStep {
    /// The event's kind (`text_delta`, ...).
    pub kind: String,
    /// The block it is about.
    #[serde(default)]
    pub content_index: usize,
    /// The text a delta added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// A block's whole text at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The finished tool call at `toolcall_end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCall>,
    /// The block as it started (at a `*_start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<ContentBlock>,
}

/// The `model` activity's output.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelReply {
    /// The partial message at `start` (`None`: the stream had no `start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<AssistantMessage>,
    /// The events between `start` and the end.
    #[serde(default)]
    pub steps: Vec<StreamStep>,
    /// The final message (`done` or `error`).
    pub message: AssistantMessage,
    /// The arguments the worker's tools prepared (`prepareArguments`) for the message's
    /// calls, for the calls whose tool changed them: the loop validates these instead of
    /// the raw ones, as a local loop does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prepared: Vec<PreparedCall>,
}

/// A call's arguments as its tool's `prepareArguments` rewrote them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedCall {
    /// The call's id.
    pub tool_call_id: String,
    /// The [`ToolSpec::fingerprint`](crate::ToolSpec::fingerprint) of the tool that prepared
    /// them, when the worker hosts several of that name (each prepares); `None`: its only
    /// tool of that name did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The prepared arguments.
    pub arguments: serde_json::Value,
}

/// What the `model` activity returns: a response, or the stream function's refusal.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ModelOutcome {
    /// The provider answered (an error response is a message too).
    Streamed(Box<ModelReply>),
    /// The stream function refused the request before streaming (bad provider config, a
    /// stream function that throws): the run fails with this text, as a local run does.
    /// Retrying cannot help, so it is an outcome, not a failed activity.
    Refused {
        /// The stream function's error.
        message: String,
    },
    /// The stream failed part-way (the stream function's stream threw): the events it had
    /// sent, then the run fails with its error, as a local run does. A provider's own errors
    /// are error messages ([`ModelOutcome::Streamed`]), not this.
    Broke {
        /// The partial message at `start`, when the stream got that far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<Box<AssistantMessage>>,
        /// The events between `start` and the failure.
        #[serde(default)]
        steps: Vec<StreamStep>,
        /// The stream's error.
        message: String,
    },
}

/// Records events as a stream delivers them.
#[derive(Default)]
pub(crate) struct Recorder {
    start: Option<AssistantMessage>,
    steps: Vec<StreamStep>,
}

impl Recorder {
    /// The message as the stream started, as recorded (the snapshot the workflow plays).
    pub(crate) fn start(&self) -> Option<&AssistantMessage> {
        self.start.as_ref()
    }

    pub(crate) fn record(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent::*;
        if let Start { partial } = event {
            self.start = Some(partial.snapshot());
            return;
        }
        // Block events only; the final `done` or `error` is not a step.
        let Some(index) = event.content_index() else {
            return;
        };
        let block = start_block(event, index);
        self.steps.push(StreamStep {
            kind: event.kind().to_string(),
            content_index: index,
            delta: event.delta().map(str::to_string),
            content: match event {
                TextEnd { content, .. } | ThinkingEnd { content, .. } => Some(content.to_string()),
                _ => None,
            },
            tool_call: match event {
                ToolcallEnd { tool_call, .. } => Some((**tool_call).clone()),
                _ => None,
            },
            block,
        });
    }

    /// The outcome of a stream that broke part-way with `message`.
    pub(crate) fn broke(self, message: String) -> ModelOutcome {
        ModelOutcome::Broke {
            start: self.start.map(Box::new),
            steps: self.steps,
            message,
        }
    }

    pub(crate) fn finish(self, message: AssistantMessage) -> ModelReply {
        ModelReply {
            start: self.start,
            steps: self.steps,
            message,
            prepared: Vec::new(),
        }
    }
}

/// The block a `*_start` event starts, as it starts (a thinking block without its text).
fn start_block(event: &AssistantMessageEvent, index: usize) -> Option<ContentBlock> {
    use AssistantMessageEvent::*;
    match event {
        TextStart { .. } => Some(ContentBlock::text("")),
        ThinkingStart { partial, .. } | ToolcallStart { partial, .. } => partial
            .with(|m| m.content.get(index).cloned())
            .map(|b| match b {
                ContentBlock::Thinking(mut t) => {
                    t.thinking.clear();
                    ContentBlock::Thinking(t)
                }
                other => other,
            }),
        _ => None,
    }
}

/// Applies one streamed event to `m`, the message as far as the stream got before it: the
/// message as it stands at that event, which a replayed event's live partial (already at
/// the end: the whole record is played at once) does not say.
pub(crate) fn advance(m: &mut AssistantMessage, event: &AssistantMessageEvent) {
    use AssistantMessageEvent::*;
    match event {
        TextStart { content_index, .. }
        | ThinkingStart { content_index, .. }
        | ToolcallStart { content_index, .. } => {
            let index = *content_index as usize;
            if let Some(block) = start_block(event, index) {
                set_block(m, index, block);
            }
        }
        TextDelta { content_index, .. } | ThinkingDelta { content_index, .. } => append(
            m,
            *content_index as usize,
            event.delta().unwrap_or_default(),
        ),
        TextEnd {
            content_index,
            content,
            ..
        }
        | ThinkingEnd {
            content_index,
            content,
            ..
        } => set_text(m, *content_index as usize, content),
        ToolcallEnd {
            content_index,
            tool_call,
            ..
        } => set_block(
            m,
            *content_index as usize,
            ContentBlock::ToolCall(tool_call.clone()),
        ),
        _ => {}
    }
}

fn set_block(m: &mut AssistantMessage, index: usize, block: ContentBlock) {
    match m.content.get_mut(index) {
        Some(slot) => *slot = block,
        None => m.content.push(block),
    }
}

fn append(m: &mut AssistantMessage, index: usize, delta: &str) {
    match m.content.get_mut(index) {
        Some(ContentBlock::Text(t)) => t.text.push_str(delta),
        Some(ContentBlock::Thinking(t)) => t.thinking.push_str(delta),
        _ => {}
    }
}

fn set_text(m: &mut AssistantMessage, index: usize, content: &str) {
    match m.content.get_mut(index) {
        Some(ContentBlock::Text(t)) => t.text = content.to_string(),
        Some(ContentBlock::Thinking(t)) => t.thinking = content.to_string(),
        _ => {}
    }
}

/// Plays a recorded response into `reply`, as the stream function that produced it did.
pub(crate) fn replay(reply: &AssistantMessageEventSender, recorded: ModelReply) {
    play(reply, recorded.start, recorded.steps);
    let message = Arc::new(recorded.message);
    reply.push(match message.stop_reason {
        StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
            reason: message.stop_reason,
            error: message,
        },
        reason => AssistantMessageEvent::Done { reason, message },
    });
}

/// Plays the events of a stream that broke part-way, then fails it with its error.
pub(crate) fn replay_broken(
    reply: &AssistantMessageEventSender,
    start: Option<Box<AssistantMessage>>,
    steps: Vec<StreamStep>,
    message: String,
) {
    play(reply, start.map(|s| *s), steps);
    reply.fail(message);
}

/// Plays a record's `start` and steps (everything but the end).
fn play(
    reply: &AssistantMessageEventSender,
    start: Option<AssistantMessage>,
    steps: Vec<StreamStep>,
) {
    use AssistantMessageEvent::*;
    if let Some(start) = start {
        let partial = PartialMessage::new(start.clone());
        // The whole record is played before the loop reads its first event, and the working
        // partial below changes as it is: the start event gets the message as it started.
        reply.push(Start {
            partial: PartialMessage::new(start),
        });
        for step in steps {
            let i = step.content_index;
            let delta = || Delta::from(step.delta.clone().unwrap_or_default());
            let content = step.content.clone().unwrap_or_default();
            let p = partial.clone();
            let event = match step.kind.as_str() {
                "text_start" | "thinking_start" | "toolcall_start" => {
                    if let Some(b) = step.block.clone() {
                        partial.update(|m| set_block(m, i, b));
                    }
                    match step.kind.as_str() {
                        "text_start" => TextStart {
                            content_index: content_index(i),
                            partial: p,
                        },
                        "thinking_start" => ThinkingStart {
                            content_index: content_index(i),
                            partial: p,
                        },
                        _ => ToolcallStart {
                            content_index: content_index(i),
                            partial: p,
                        },
                    }
                }
                "text_delta" | "thinking_delta" => {
                    partial.update(|m| append(m, i, step.delta.as_deref().unwrap_or_default()));
                    if step.kind == "text_delta" {
                        TextDelta {
                            content_index: content_index(i),
                            delta: delta(),
                            partial: p,
                        }
                    } else {
                        ThinkingDelta {
                            content_index: content_index(i),
                            delta: delta(),
                            partial: p,
                        }
                    }
                }
                "toolcall_delta" => ToolcallDelta {
                    content_index: content_index(i),
                    delta: delta(),
                    partial: p,
                },
                "text_end" | "thinking_end" => {
                    partial.update(|m| set_text(m, i, &content));
                    if step.kind == "text_end" {
                        TextEnd {
                            content_index: content_index(i),
                            content: content.into(),
                            partial: p,
                        }
                    } else {
                        ThinkingEnd {
                            content_index: content_index(i),
                            content: content.into(),
                            partial: p,
                        }
                    }
                }
                "toolcall_end" => {
                    let Some(call) = step.tool_call.clone().map(Arc::new) else {
                        continue;
                    };
                    partial.update(|m| set_block(m, i, ContentBlock::ToolCall(call.clone())));
                    ToolcallEnd {
                        content_index: content_index(i),
                        tool_call: call,
                        partial: p,
                    }
                }
                // A kind this version does not know: the final message still carries it.
                _ => continue,
            };
            reply.push(event);
        }
    }
}

/// The reply of a request cut by an abort (as a provider reports one), stamped with the
/// loop's clock.
pub(crate) fn aborted(model: &tern_ai::Model) -> ModelReply {
    ModelReply {
        start: None,
        steps: Vec::new(),
        message: AssistantMessage {
            api: model.api.as_str().into(),
            provider: model.provider.as_str().into(),
            model: model.id.as_str().into(),
            stop_reason: StopReason::Aborted,
            error_message: Some("Request was aborted".into()),
            timestamp: tern_ai::clock::now_ms(),
            ..AssistantMessage::default()
        },
        prepared: Vec::new(),
    }
}
