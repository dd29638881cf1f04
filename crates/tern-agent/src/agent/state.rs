//! The agent's state: the transcript and what a run is doing, reduced from the run's events
//! before any listener sees them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tern_ai::{Message, Model, PartialMessage, ThinkingLevel, ToolCall};

use super::listeners::Listeners;
use super::transcript::Transcript;
use crate::events::AgentEvent;
use crate::tool::AgentTool;

/// A copy of the agent's state.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentState {
    /// The replayed system prompt.
    pub system_prompt: String,
    /// The model.
    pub model: Model,
    /// The thinking level.
    pub thinking_level: ThinkingLevel,
    /// Executable tools.
    pub tools: Vec<AgentTool>,
    /// The transcript.
    pub messages: Vec<Message>,
    /// True while a run is active (also during `agent_end` listeners).
    pub is_streaming: bool,
    /// The message being streamed, if any.
    pub streaming_message: Option<Message>,
    /// Tool calls started and not yet finished, in start order.
    pub pending_tool_calls: Vec<String>,
    /// The last run's error text.
    pub error_message: Option<String>,
}

/// The message being streamed: complete (a non-assistant message) or the live handle of an
/// assistant message being built.
#[derive(Clone)]
pub(super) enum Streaming {
    Message(Message),
    Partial(PartialMessage),
}

impl Streaming {
    pub(super) fn snapshot(&self) -> Message {
        match self {
            Streaming::Message(m) => m.clone(),
            Streaming::Partial(p) => Message::Assistant(p.shared()),
        }
    }

    pub(super) fn role(&self) -> String {
        match self {
            Streaming::Message(m) => m.role().to_string(),
            Streaming::Partial(_) => "assistant".to_string(),
        }
    }
}

pub(super) struct State {
    pub(super) transcript: Transcript,
    pub(super) tools: Vec<AgentTool>,
    pub(super) model: Arc<Model>,
    pub(super) thinking_level: ThinkingLevel,
    pub(super) is_streaming: bool,
    // Private with `listeners`: every change to either is counted in the agent's `Changes`.
    streaming_message: Option<Streaming>,
    pub(super) pending_tool_calls: PendingCalls,
    pub(super) error_message: Option<String>,
    // Copy-on-write: an event clones the `Arc`, not the list. Kept with the state so that
    // one lock per event both reduces it and picks up the listeners.
    listeners: Arc<Listeners>,
}

/// The count of changes to a state's streaming message and listeners, kept beside the state
/// and readable without its lock: a run's sink skips the lock for a delta of the partial the
/// state already streams while this count stays where the sink last saw it (see
/// `AgentSink::reduce`). The state's methods that change either take it.
#[derive(Default)]
pub(super) struct Changes(AtomicU64);

impl Changes {
    /// The count now.
    pub(super) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    // Only a holder of the state's lock counts: a load and a store, no read-modify-write.
    fn count(&self) {
        let n = self.0.load(Ordering::Relaxed);
        self.0.store(n.wrapping_add(1), Ordering::Release);
    }
}

impl State {
    pub(super) fn new(
        transcript: Transcript,
        tools: Vec<AgentTool>,
        model: Arc<Model>,
        thinking_level: ThinkingLevel,
    ) -> Self {
        State {
            transcript,
            tools,
            model,
            thinking_level,
            is_streaming: false,
            streaming_message: None,
            pending_tool_calls: PendingCalls::default(),
            error_message: None,
            listeners: Arc::default(),
        }
    }

    fn set_streaming(&mut self, streaming: Option<Streaming>, changes: &Changes) {
        self.streaming_message = streaming;
        changes.count();
    }

    /// Nothing is streaming.
    pub(super) fn clear_streaming(&mut self, changes: &Changes) {
        self.set_streaming(None, changes);
    }

    /// The message being streamed.
    pub(super) fn streaming(&self) -> Option<&Streaming> {
        self.streaming_message.as_ref()
    }

    /// Whether the message being streamed is `partial`.
    pub(super) fn streams(&self, partial: &PartialMessage) -> bool {
        matches!(&self.streaming_message, Some(Streaming::Partial(p)) if p.ptr_eq(partial))
    }

    /// The listeners.
    pub(super) fn listeners(&self) -> &Arc<Listeners> {
        &self.listeners
    }

    /// The listeners, to change (a copy when a run holds them).
    pub(super) fn listeners_mut(&mut self, changes: &Changes) -> &mut Listeners {
        changes.count();
        Arc::make_mut(&mut self.listeners)
    }

    /// A copy for [`Agent::state`](super::Agent::state).
    pub(super) fn snapshot(&self) -> AgentState {
        let messages = self.transcript.to_vec();
        AgentState {
            system_prompt: tern_ai::transcript::get_current_system_prompt(&messages),
            model: Model::clone(&self.model),
            thinking_level: self.thinking_level,
            tools: self.tools.clone(),
            messages,
            is_streaming: self.is_streaming,
            streaming_message: self.streaming_message.as_ref().map(Streaming::snapshot),
            pending_tool_calls: self.pending_ids(),
            error_message: self.error_message.clone(),
        }
    }

    pub(super) fn pending_ids(&self) -> Vec<String> {
        self.pending_tool_calls.ids()
    }

    /// A run ended (or its future was dropped): nothing streams, nothing is pending.
    pub(super) fn settle_run(&mut self, changes: &Changes) {
        self.is_streaming = false;
        self.clear_streaming(changes);
        // Released here, not per call: within a run the list keeps its room, and an idle
        // agent keeps none.
        self.pending_tool_calls = PendingCalls::default();
    }

    /// Whether [`apply`](Self::apply) leaves the state as it is for `event`, whatever the
    /// state: such an event needs the lock only to read the listeners.
    pub(super) fn ignores(event: &AgentEvent) -> bool {
        match event {
            AgentEvent::AgentStart | AgentEvent::TurnStart => true,
            AgentEvent::ToolExecutionUpdate { .. } => true,
            AgentEvent::TurnEnd {
                message: Message::Assistant(a),
                ..
            } => a.error_message.as_ref().is_none_or(|e| e.is_empty()),
            AgentEvent::TurnEnd { .. } => true,
            _ => false,
        }
    }

    /// Applies one event of a run.
    pub(super) fn apply(&mut self, event: &AgentEvent, changes: &Changes) {
        // The one place that says which events change nothing: the run's sink skips the lock
        // for them on the same test.
        if Self::ignores(event) {
            return;
        }
        match event {
            AgentEvent::MessageStart { message } => {
                self.set_streaming(Some(Streaming::Message(message.clone())), changes)
            }
            // Every delta of one response carries the same handle: keep the stored one.
            AgentEvent::MessageUpdate { .. } => {
                if let Some(message) = event.partial_message() {
                    if !self.streams(message) {
                        self.set_streaming(Some(Streaming::Partial(message.clone())), changes)
                    }
                }
            }
            AgentEvent::MessageEnd { message } => {
                self.clear_streaming(changes);
                self.transcript.push(message.clone());
            }
            AgentEvent::ToolExecutionStart { tool_call } => {
                self.pending_tool_calls.start(tool_call)
            }
            AgentEvent::ToolExecutionEnd { tool_call, .. } => {
                self.pending_tool_calls.end(tool_call)
            }
            // Only a turn that ended in an error is not ignored.
            AgentEvent::TurnEnd {
                message: Message::Assistant(a),
                ..
            } => self.error_message.clone_from(&a.error_message),
            AgentEvent::AgentEnd { .. } => self.clear_streaming(changes),
            _ => {}
        }
    }
}

/// Tool calls started and not yet finished, in start order, as a set of ids: a call whose id
/// is pending already is not added twice.
///
/// Beside the calls, a fingerprint of each one's id. A parallel batch's starts test every
/// pair of its calls' ids: the fingerprints, side by side, tell different ids apart in one
/// comparison each, without reading every id's text from its own allocation.
#[derive(Default)]
pub(super) struct PendingCalls {
    keys: Vec<u64>,
    calls: Vec<Arc<ToolCall>>,
}

impl PendingCalls {
    /// The position of the call with `tool_call`'s id, whose fingerprint is `key`.
    fn find(&self, key: u64, tool_call: &Arc<ToolCall>) -> Option<usize> {
        self.keys
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == key)
            .map(|(i, _)| i)
            .find(|&i| self.calls[i].id == tool_call.id)
    }

    fn start(&mut self, tool_call: &Arc<ToolCall>) {
        let key = fingerprint(tool_call.id.as_str());
        if self.find(key, tool_call).is_none() {
            self.keys.push(key);
            self.calls.push(tool_call.clone());
        }
    }

    fn end(&mut self, tool_call: &Arc<ToolCall>) {
        // Calls mostly end in start order: the one that ends is usually the first.
        let position = match self.calls.first() {
            Some(c) if Arc::ptr_eq(c, tool_call) => Some(0),
            _ => self.find(fingerprint(tool_call.id.as_str()), tool_call),
        };
        if let Some(i) = position {
            self.keys.remove(i);
            self.calls.remove(i);
        }
    }

    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.calls.clear();
    }

    /// The pending calls' ids, in start order.
    pub(super) fn ids(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.id.to_string()).collect()
    }
}

/// A fingerprint of an id: equal ids have equal ones. Its length and its first and last
/// eight bytes, where providers' ids differ (`call_12` and `call_13`, random suffixes).
fn fingerprint(id: &str) -> u64 {
    let b = id.as_bytes();
    let word = |bytes: &[u8]| {
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(w)
    };
    let n = b.len();
    let (head, tail) = (word(&b[..n.min(8)]), word(&b[n.saturating_sub(8)..]));
    (n as u64) ^ head.rotate_left(29) ^ tail.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Arc<ToolCall> {
        Arc::new(ToolCall {
            id: id.into(),
            name: "t".into(),
            ..Default::default()
        })
    }

    #[test]
    fn pending_calls_are_a_set_of_ids_in_start_order() {
        let mut p = PendingCalls::default();
        let ids = [
            "call_1",
            "call_2",
            "call_12",
            "toolu_01ABCDEFGHIJKLMNOPQRSTUV",
            "",
            "x",
        ];
        for id in ids {
            p.start(&call(id));
        }
        // Another call with a pending id (a model may repeat one) is not added again.
        p.start(&call("call_12"));
        assert_eq!(p.ids(), ids);
        // A call ends by its id, whichever handle carries it.
        p.end(&call("call_2"));
        p.end(&call("toolu_01ABCDEFGHIJKLMNOPQRSTUV"));
        p.end(&call("never started"));
        assert_eq!(p.ids(), ["call_1", "call_12", "", "x"]);
        p.clear();
        assert!(p.ids().is_empty());
    }

    #[test]
    fn ids_differing_anywhere_can_share_a_fingerprint_without_being_equal() {
        // Same length, first and last eight bytes: equal fingerprints, different ids.
        let (a, b) = ("call_abcXdefghijk", "call_abcYdefghijk");
        assert_eq!(fingerprint(a), fingerprint(b));
        let mut p = PendingCalls::default();
        p.start(&call(a));
        p.start(&call(b));
        assert_eq!(p.ids(), [a, b]);
        p.end(&call(b));
        assert_eq!(p.ids(), [a]);
    }
}
