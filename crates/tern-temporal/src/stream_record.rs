//! A model response as the `model` activity returns it: the final message and, compactly,
//! the stream of events that built it, so the workflow replays the same events into the
//! loop (a local run's `message_update`s have the same kinds, deltas and order).
//!
//! The record is linear in the response's size: deltas are kept, partial snapshots are not.
//! The workflow rebuilds the partial message from the first snapshot, text and thinking
//! deltas, and each block's start and end; a tool call's arguments in the partial only
//! change at its end. A `start` that comes again (Bedrock's repeated `messageStart`) is a
//! step with its snapshot, and the reply says what the partials it left behind show at the
//! end ([`Restart`]), so the workflow's loop keeps in its context what a local one keeps.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tern_agent::{ResponsePartials, Restart};
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
    /// The partial message at a repeated `start` (kind `start`: Bedrock streams one at each
    /// `messageStart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Box<AssistantMessage>>,
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
    /// What the partials a repeated `start` left behind show as the response ended, one per
    /// `start` step, in order: the loop keeps them in its context before the final message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<Restart>,
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
    /// The partial handles, as the loop follows them (for what a repeated `start` leaves).
    partials: ResponsePartials,
}

impl Recorder {
    /// The message as the stream's latest `start` showed it, as recorded (the snapshot the
    /// workflow plays).
    pub(crate) fn start(&self) -> Option<&AssistantMessage> {
        match self.steps.last() {
            Some(StreamStep {
                started: Some(m), ..
            }) => Some(m),
            _ => self.start.as_ref(),
        }
    }

    pub(crate) fn record(&mut self, event: &AssistantMessageEvent) {
        use AssistantMessageEvent::*;
        self.partials.observe(event);
        if let Start { partial } = event {
            if self.start.is_none() {
                self.start = Some(partial.snapshot());
            } else {
                self.steps.push(StreamStep {
                    kind: event.kind().to_string(),
                    content_index: 0,
                    delta: None,
                    content: None,
                    tool_call: None,
                    block: None,
                    started: Some(Box::new(partial.snapshot())),
                });
            }
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
            started: None,
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

    /// The reply of a stream that ended with `done` (its final message, as the stream shares
    /// it).
    pub(crate) fn finish(self, done: &Arc<AssistantMessage>) -> ModelReply {
        ModelReply {
            restarts: self.partials.restarts(done),
            start: self.start,
            steps: self.steps,
            message: (**done).clone(),
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
    let ended_on = play(reply, recorded.start, recorded.steps, recorded.restarts);
    let message = match ended_on {
        // A partial that a repeated `start` left behind is the one the response ended on:
        // the final event shares its message, as the provider's did.
        Some(partial) => {
            partial.update(|m| *m = recorded.message);
            partial.shared()
        }
        None => Arc::new(recorded.message),
    };
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
    play(reply, start.map(|s| *s), steps, Vec::new());
    reply.fail(message);
}

/// Plays a record's `start` and steps (everything but the end). Returns the working partial
/// the final event must share, when a repeated `start` left it behind
/// ([`Restart::Final`]).
fn play(
    reply: &AssistantMessageEventSender,
    start: Option<AssistantMessage>,
    steps: Vec<StreamStep>,
    restarts: Vec<Restart>,
) -> Option<PartialMessage> {
    use AssistantMessageEvent::*;
    let start = start?;
    let mut partial = PartialMessage::new(start.clone());
    // The whole record is played before the loop reads its first event, and the working
    // partial below changes as it is: the start event gets the message as it started.
    let mut start_partial = PartialMessage::new(start);
    reply.push(Start {
        partial: start_partial.clone(),
    });
    // What the loop holds when the next `start` comes: the start's handle until an update
    // carries the working one.
    let mut updated = false;
    let mut restarts = restarts.into_iter();
    let mut left: Vec<(PartialMessage, AssistantMessage)> = Vec::new();
    let mut ended_on = None;
    for step in steps {
        if let Some(started) = step.started {
            let held = if updated {
                partial.clone()
            } else {
                start_partial.clone()
            };
            match restarts.next() {
                // The provider's one partial: the same working partial goes on, and the
                // final event will share it.
                Some(Restart::Final) if updated => ended_on = Some(partial.clone()),
                // No update came between the two starts: the loop holds the first start's
                // own handle, which shows its snapshot (the final message only live).
                Some(Restart::Final) => {}
                Some(Restart::Partial { message }) => {
                    left.push((held, message));
                    partial = PartialMessage::new((*started).clone());
                }
                None => partial = PartialMessage::new((*started).clone()),
            }
            start_partial = PartialMessage::new(*started);
            reply.push(Start {
                partial: start_partial.clone(),
            });
            updated = false;
            continue;
        }
        updated = true;
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
    // Each left-behind partial shows, once the response has ended, what it showed live.
    for (held, message) in left {
        held.update(|m| *m = message);
    }
    ended_on
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
        restarts: Vec::new(),
        prepared: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tern_agent::{Agent, AgentOptions};
    use tern_ai::{
        assistant_stream, AssistantMessageEventStream, Context, Message, Model, StreamFn,
        StreamOptions, StreamStart,
    };

    use super::*;

    /// Request 0 streams as a provider with one partial does when the response starts again
    /// (Bedrock's repeated `messageStart`): start, text_start, text_delta, start, text_delta,
    /// text_end, and `done` sharing the partial; later requests answer "ok" at once.
    fn answer(n: usize) -> AssistantMessageEventStream {
        use AssistantMessageEvent as E;
        let (tx, rx) = assistant_stream();
        let p = PartialMessage::new(AssistantMessage::default());
        let text = |p: &PartialMessage, delta: &str| {
            p.update(|m| append(m, 0, delta));
            E::TextDelta {
                content_index: 0,
                delta: delta.into(),
                partial: p.clone(),
            }
        };
        tx.push(E::Start { partial: p.clone() });
        p.update(|m| m.content.push(ContentBlock::text("")));
        tx.push(E::TextStart {
            content_index: 0,
            partial: p.clone(),
        });
        if n == 0 {
            tx.push(text(&p, "Hel"));
            tx.push(E::Start { partial: p.clone() });
            tx.push(text(&p, "lo"));
        } else {
            tx.push(text(&p, "ok"));
        }
        let content = p.with(|m| match &m.content[0] {
            ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        });
        tx.push(E::TextEnd {
            content_index: 0,
            content: content.into(),
            partial: p.clone(),
        });
        let reason = if n == 0 {
            // A call, so that the next request is the same run's (its context).
            let call = Arc::new(ToolCall {
                id: "c1".into(),
                name: "noop".into(),
                ..ToolCall::default()
            });
            p.update(|m| m.content.push(ContentBlock::ToolCall(call.clone())));
            tx.push(E::ToolcallStart {
                content_index: 1,
                partial: p.clone(),
            });
            tx.push(E::ToolcallEnd {
                content_index: 1,
                tool_call: call,
                partial: p.clone(),
            });
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        p.update(|m| m.stop_reason = reason);
        tx.push(E::Done {
            reason,
            message: p.shared(),
        });
        rx
    }

    /// Answers with [`answer`], straight or through a record and its replay, as a session's
    /// workflow gets it; keeps the requests.
    #[derive(Default)]
    struct Model0 {
        recorded: bool,
        requests: Mutex<Vec<Vec<Message>>>,
    }

    impl StreamFn for Model0 {
        fn stream(&self, _: &Model, context: Context, _: &StreamOptions) -> StreamStart {
            let mut requests = self.requests.lock().expect("requests");
            let live = answer(requests.len());
            requests.push(context.messages.to_vec());
            if !self.recorded {
                return Ok(live);
            }
            let (tx, rx) = assistant_stream();
            Ok(rx.driven_by(async move {
                let mut live = live;
                let mut recorder = Recorder::default();
                while let Some(event) = live.next().await {
                    recorder.record(&event);
                }
                let done = live.result().await;
                replay(&tx, recorder.finish(&done));
            }))
        }
    }

    /// The digests of the requests of a run of "go", straight or recorded.
    async fn requests(recorded: bool) -> Vec<String> {
        let model = Arc::new(Model0 {
            recorded,
            ..Default::default()
        });
        let noop = tern_agent::AgentTool::dynamic(
            "noop",
            "Does nothing.",
            serde_json::json!({"type": "object"}),
            |_call| async { Ok(tern_agent::ToolResult::text("done")) },
        );
        let agent = Agent::new(AgentOptions {
            model: Some(Arc::new(Model::default())),
            stream_fn: Some(model.clone()),
            tools: vec![noop],
            ..Default::default()
        });
        agent.prompt("go").await.expect("go");
        let requests = model.requests.lock().expect("requests").clone();
        let second = &requests[1];
        assert_eq!(
            second.len(),
            5,
            "the tools' system message, user, the partial left behind, the final message, the \
             tool's result"
        );
        assert_eq!(
            second[2], second[3],
            "the provider's one partial shows the final message"
        );
        requests
            .iter()
            .map(|r| tern_durable::context_digest(r))
            .collect()
    }

    #[tokio::test]
    async fn a_recorded_response_that_starts_again_leaves_what_the_live_one_left() {
        assert_eq!(requests(true).await, requests(false).await);
    }
}
