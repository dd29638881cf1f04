//! A session's state inside its workflow: the transcript, the published events, the input
//! queues, and which inputs are committed. Shared (behind a lock) between the workflow's
//! handlers and the loop's sink and message sources, which must be `Send`.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::Value;
use tern_agent::{AgentEvent, EventSink, PendingMessageQueue};
use tern_ai::Message;

use crate::wire::SessionState;

/// Numbers every accepted input, so an update can wait until its messages are committed.
pub(crate) type Seq = u64;

#[derive(Default)]
struct Queue {
    messages: PendingMessageQueue,
    seqs: VecDeque<Seq>,
}

impl Queue {
    fn push(&mut self, seq: Seq, m: Message) {
        self.messages.enqueue(m);
        self.seqs.push_back(seq);
    }

    fn drain(&mut self) -> Vec<(Seq, Message)> {
        let taken = self.messages.drain();
        let seqs = self.seqs.drain(..taken.len());
        seqs.zip(taken).collect()
    }
}

#[derive(Default)]
pub(crate) struct Session {
    pub(crate) messages: Vec<Message>,
    /// Every event so far, serialized as a local run prints it; `event_offset` counts those
    /// published before the last continue-as-new.
    pub(crate) events: Vec<Value>,
    pub(crate) event_offset: usize,
    pub(crate) is_streaming: bool,
    pending_tool_calls: Vec<String>,
    prompts: VecDeque<(Seq, Vec<Message>)>,
    steering: Queue,
    follow_up: Queue,
    /// Delivered to the loop, not yet committed (seen at their `message_end`).
    delivered: VecDeque<(Seq, Message)>,
    next_seq: Seq,
    committed: Seq,
    pub(crate) closed: bool,
}

/// Which queue an input goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Input {
    Prompt,
    Steer,
    FollowUp,
}

impl Session {
    pub(crate) fn accept(&mut self, input: Input, messages: Vec<Message>) -> Seq {
        self.next_seq += 1;
        let seq = self.next_seq;
        match input {
            Input::Prompt => self.prompts.push_back((seq, messages)),
            Input::Steer => messages
                .into_iter()
                .for_each(|m| self.steering.push(seq, m)),
            Input::FollowUp => messages
                .into_iter()
                .for_each(|m| self.follow_up.push(seq, m)),
        }
        seq
    }

    pub(crate) fn is_committed(&self, seq: Seq) -> bool {
        self.committed >= seq
    }

    pub(crate) fn has_prompt(&self) -> bool {
        !self.prompts.is_empty()
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.is_streaming || self.has_prompt()
    }

    pub(crate) fn take_prompt(&mut self) -> Option<Vec<Message>> {
        let (seq, messages) = self.prompts.pop_front()?;
        self.delivered
            .extend(messages.iter().map(|m| (seq, m.clone())));
        Some(messages)
    }

    fn deliver(&mut self, taken: Vec<(Seq, Message)>) -> Vec<Message> {
        taken
            .into_iter()
            .map(|(seq, m)| {
                self.delivered.push_back((seq, m.clone()));
                m
            })
            .collect()
    }

    pub(crate) fn state(&self) -> SessionState {
        SessionState {
            messages: self.messages.clone(),
            is_streaming: self.is_streaming,
            pending_tool_calls: self.pending_tool_calls.clone(),
            steering_queue: self.steering.messages.all().to_vec(),
            follow_up_queue: self.follow_up.messages.all().to_vec(),
            event_count: self.event_offset + self.events.len(),
        }
    }

    /// Events from `offset` on (offsets count from the session's first event).
    pub(crate) fn events_since(&self, offset: usize) -> Vec<Value> {
        let from = offset.saturating_sub(self.event_offset);
        self.events
            .get(from..)
            .map(<[Value]>::to_vec)
            .unwrap_or_default()
    }

    fn record(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageEnd { message } => {
                self.messages.push(message.clone());
                if self.delivered.front().is_some_and(|(_, m)| m == message) {
                    if let Some((seq, _)) = self.delivered.pop_front() {
                        // A batch is committed with its last message.
                        if self.delivered.front().is_none_or(|(s, _)| *s != seq) {
                            self.committed = seq;
                        }
                    }
                }
            }
            AgentEvent::ToolExecutionStart { tool_call } => {
                self.pending_tool_calls.push(tool_call.id.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call, .. } => {
                self.pending_tool_calls.retain(|id| *id != tool_call.id);
            }
            _ => {}
        }
        // Serializing an event cannot fail (no maps with non-string keys); keep the stream
        // whole all the same.
        let mut json = serde_json::to_value(event).unwrap_or(Value::Null);
        if let AgentEvent::MessageUpdate { .. } = event {
            // The partial message would make the log quadratic in a response's length: the
            // log keeps kinds and deltas; `message_end` has the message.
            if let Some(m) = json.as_object_mut() {
                m.remove("message");
            }
            if let Some(m) = json["assistantMessageEvent"].as_object_mut() {
                m.remove("partial");
            }
        }
        self.events.push(json);
    }
}

/// The session as the loop reaches it.
#[derive(Clone, Default)]
pub(crate) struct Shared(pub(crate) Arc<Mutex<Session>>);

impl EventSink for Shared {
    async fn emit(&self, event: AgentEvent) {
        self.0.lock().record(&event);
    }
}

impl Shared {
    pub(crate) fn steering_source(&self) -> tern_agent::config::MessageSource {
        let shared = self.clone();
        Arc::new(move || -> BoxFuture<'static, Vec<Message>> {
            let mut s = shared.0.lock();
            let taken = s.steering.drain();
            let out = s.deliver(taken);
            Box::pin(async move { out })
        })
    }

    pub(crate) fn follow_up_source(&self) -> tern_agent::config::MessageSource {
        let shared = self.clone();
        Arc::new(move || -> BoxFuture<'static, Vec<Message>> {
            let mut s = shared.0.lock();
            let taken = s.follow_up.drain();
            let out = s.deliver(taken);
            Box::pin(async move { out })
        })
    }
}
