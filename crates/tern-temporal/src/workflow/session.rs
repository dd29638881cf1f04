//! A session's state inside its workflow: the transcript, the published events, the input
//! queues, and which inputs are committed. Shared (behind a lock) between the workflow's
//! handlers and the loop's sink and message sources, which must be `Send`.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::Value;
use tern_agent::{AgentError, AgentEvent, EventSink, PendingMessageQueue};
use tern_ai::transcript::get_current_system_message;
use tern_ai::{AssistantMessage, ContentBlock, Message, Model, StopReason, ThinkingLevel};
use tokio_util::sync::CancellationToken;

use super::bridge::Bridge;
use crate::hooks::{FullState, HookCall, ListenerState};
use crate::wire::{
    ClearQueues, QueuedInput, SessionInput, SessionSettings, SessionState, ToolSpec,
};

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

    /// Empties the queue; returns the inputs whose messages it held.
    fn clear(&mut self) -> Vec<Seq> {
        self.messages.clear();
        self.seqs.drain(..).collect()
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
    /// Where the last run's events begin (what a continue-as-new carries on from).
    pub(crate) run_start: usize,
    pub(crate) is_streaming: bool,
    /// The role of the message between its start and its end.
    streaming_role: Option<String>,
    /// The assistant message being streamed, as far as its events got (kept when the
    /// listener gets the full state).
    streaming: Option<AssistantMessage>,
    /// The Agent's `errorMessage`: cleared when a run starts, set by a failed turn.
    pub(crate) error_message: Option<String>,
    pending_tool_calls: Vec<String>,
    /// Runs asked for and not started: a prompt's messages, or `None` for a continue.
    runs: VecDeque<(Seq, Option<Vec<Message>>)>,
    /// The seq of the last run started (runs start in the order they were accepted).
    started: Seq,
    steering: Queue,
    follow_up: Queue,
    /// Delivered to the loop, not yet committed (seen at their `message_end`).
    delivered: VecDeque<(Seq, Message)>,
    next_seq: Seq,
    /// The inputs whose messages are all in the transcript, or were discarded by a clear
    /// or a reset. A set, not a high-water mark: a run delivers a prompt before steering
    /// accepted earlier, so inputs commit out of order.
    settled: std::collections::BTreeSet<Seq>,
    /// The running loop's signal (`None` between runs).
    pub(crate) run_signal: Option<CancellationToken>,
    /// What the next run uses (the input's, as changed by `set`).
    pub(crate) settings: SessionInput,
    /// The fingerprints of `settings.tools` (every tool call carries them).
    pub(crate) tool_fingerprints: Vec<String>,
    pub(crate) closed: bool,
}

/// Which queue an input goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Input {
    Prompt,
    Continue,
    Steer,
    FollowUp,
}

/// How a run starts, as the Agent starts one.
pub(crate) enum Start {
    /// With new messages: a prompt's, or the queued messages that answer an assistant tail
    /// (steering ones skip the loop's first steering poll, as the Agent's do).
    Prompt {
        messages: Vec<Message>,
        skip_initial_steering: bool,
    },
    /// From the transcript as it is (its tail is not an assistant message).
    Continue,
}

impl Session {
    /// A session starting from `input`.
    pub(crate) fn new(input: &SessionInput) -> Self {
        let mut s = Session {
            messages: input.messages.clone(),
            events: input.events.clone(),
            event_offset: input.event_offset,
            run_start: input.event_offset,
            settings: SessionInput {
                messages: Vec::new(),
                events: Vec::new(),
                ..input.clone()
            },
            ..Session::default()
        };
        s.steering.messages.mode = input.steering_mode;
        s.follow_up.messages.mode = input.follow_up_mode;
        s.tool_fingerprints = fingerprints(&input.tools);
        s
    }

    pub(crate) fn accept(&mut self, input: Input, messages: Vec<Message>) -> Seq {
        self.next_seq += 1;
        let seq = self.next_seq;
        match input {
            Input::Prompt => self.runs.push_back((seq, Some(messages))),
            Input::Continue => self.runs.push_back((seq, None)),
            Input::Steer => messages
                .into_iter()
                .for_each(|m| self.steering.push(seq, m)),
            Input::FollowUp => messages
                .into_iter()
                .for_each(|m| self.follow_up.push(seq, m)),
        }
        seq
    }

    /// How many events the session has published (across continue-as-new).
    pub(crate) fn published(&self) -> usize {
        self.event_offset + self.events.len()
    }

    pub(crate) fn is_committed(&self, seq: Seq) -> bool {
        self.settled.contains(&seq)
    }

    /// Aborts the running loop (`Agent::abort`); nothing between runs.
    pub(crate) fn abort_run(&mut self) {
        if let Some(signal) = &self.run_signal {
            signal.cancel();
        }
    }

    /// Empties the queues asked for (`Agent::clear_*_queue`); their inputs' updates complete.
    pub(crate) fn clear_queues(&mut self, which: ClearQueues) {
        let mut dropped = Vec::new();
        if which.steering {
            dropped.extend(self.steering.clear());
        }
        if which.follow_up {
            dropped.extend(self.follow_up.clear());
        }
        self.settled.extend(dropped);
    }

    /// Applies a `set` to the next runs (the queues' modes at once, as the Agent's).
    pub(crate) fn apply(&mut self, set: SessionSettings) {
        if let Some(tools) = set.tools {
            self.tool_fingerprints = fingerprints(&tools);
            self.settings.tools = tools;
        }
        if let Some(messages) = set.messages {
            self.messages = messages;
        }
        if let Some(model) = set.model {
            self.settings.model = model;
        }
        if let Some(level) = set.thinking_level {
            self.settings.reasoning = (level != ThinkingLevel::Off).then_some(level);
        }
        if let Some(mode) = set.tool_execution {
            self.settings.tool_execution = mode;
        }
        if let Some(mode) = set.steering_mode {
            self.steering.messages.mode = mode;
        }
        if let Some(mode) = set.follow_up_mode {
            self.follow_up.messages.mode = mode;
        }
    }

    /// The input a continue-as-new starts from: the settings, the transcript, and the last
    /// run's events with their offset (its end is published in the same workflow task as
    /// the continue-as-new, so no follower could have read it from this run).
    pub(crate) fn continued(&self) -> SessionInput {
        let from = self
            .run_start
            .saturating_sub(self.event_offset)
            .min(self.events.len());
        SessionInput {
            messages: self.messages.clone(),
            events: self.events[from..].to_vec(),
            event_offset: self.event_offset + from,
            steering_mode: self.steering.messages.mode,
            follow_up_mode: self.follow_up.messages.mode,
            ..self.settings.clone()
        }
    }

    pub(crate) fn is_started(&self, seq: Seq) -> bool {
        self.started >= seq
    }

    pub(crate) fn has_run(&self) -> bool {
        !self.runs.is_empty()
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.is_streaming || self.has_run()
    }

    /// Why a continue cannot start now (the Agent's errors), or `None` when it can.
    pub(crate) fn cannot_continue(&self) -> Option<AgentError> {
        if self.is_busy() {
            return Some(AgentError::ContinueWhileRunning);
        }
        if self
            .messages
            .iter()
            .all(|m| matches!(m, Message::System(_)))
        {
            return Some(AgentError::NothingToContinue);
        }
        let assistant_tail = matches!(self.messages.last(), Some(Message::Assistant(_)));
        if assistant_tail
            && !self.steering.messages.has_items()
            && !self.follow_up.messages.has_items()
        {
            return Some(AgentError::CannotContinueFrom("assistant".into()));
        }
        None
    }

    /// Why a reset cannot happen now (the Agent's error), or `None` when it can.
    pub(crate) fn cannot_reset(&self) -> Option<AgentError> {
        self.is_busy().then_some(AgentError::ResetWhileRunning)
    }

    /// Clears the conversation and the queues as `Agent::reset` does, keeping the replayed
    /// prompt and tools as one system message. Only while idle: every input accepted so far
    /// is then committed or queued, so the queued ones are settled (their updates complete:
    /// the reset discarded them).
    pub(crate) fn reset(&mut self) {
        let baseline = get_current_system_message(&self.messages);
        self.messages = baseline.map(Message::from).into_iter().collect();
        self.pending_tool_calls.clear();
        self.clear_queues(ClearQueues {
            steering: true,
            follow_up: true,
        });
    }

    /// Starts the next run asked for.
    pub(crate) fn take_run(&mut self) -> Option<Start> {
        let (seq, messages) = self.runs.pop_front()?;
        self.started = seq;
        if let Some(messages) = messages {
            self.delivered
                .extend(messages.iter().map(|m| (seq, m.clone())));
            return Some(Start::Prompt {
                messages,
                skip_initial_steering: false,
            });
        }
        if !matches!(self.messages.last(), Some(Message::Assistant(_))) {
            return Some(Start::Continue);
        }
        // An assistant tail is answered by queued steering first, then by follow-ups.
        for steering in [true, false] {
            let queue = if steering {
                &mut self.steering
            } else {
                &mut self.follow_up
            };
            let taken = queue.drain();
            if !taken.is_empty() {
                return Some(Start::Prompt {
                    messages: self.deliver(taken),
                    skip_initial_steering: steering,
                });
            }
        }
        // Validated with a message queued; nothing took it since. The loop reports it.
        Some(Start::Continue)
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
            event_count: self.published(),
            first_event: self.event_offset,
            model: self.settings.model.clone(),
            thinking_level: self.settings.reasoning.unwrap_or(ThinkingLevel::Off),
            steering_mode: self.settings.steering_mode,
            follow_up_mode: self.settings.follow_up_mode,
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

    /// The state a listener sees with the last event.
    pub(crate) fn listener_state(&self) -> ListenerState {
        ListenerState {
            message_count: self.messages.len(),
            last_role: self.messages.last().map(|m| m.role().to_string()),
            is_streaming: self.is_streaming,
            streaming_role: self.streaming_role.clone(),
            pending_tool_calls: self.pending_tool_calls.clone(),
            error_message: self.error_message.clone(),
            full: None,
        }
    }

    /// The rest of the state with `event` (just recorded).
    fn full_state(&self, event: &AgentEvent) -> FullState {
        FullState {
            messages: self.messages.clone(),
            // The Agent's `streamingMessage`: set by a message's start and updates, cleared
            // by its end, so no other event sees one.
            streaming_message: match event {
                AgentEvent::MessageStart { message } => Some(message.clone()),
                AgentEvent::MessageUpdate { .. } => self.streaming.clone().map(Message::from),
                _ => None,
            },
            steering_queue: self.steering.messages.all().to_vec(),
            follow_up_queue: self.follow_up.messages.all().to_vec(),
        }
    }

    fn record(&mut self, event: &AgentEvent) {
        if self.settings.listen_full_state {
            match event {
                AgentEvent::MessageStart {
                    message: Message::Assistant(a),
                } => self.streaming = Some((**a).clone()),
                AgentEvent::MessageUpdate {
                    assistant_message_event,
                    ..
                } => {
                    if let Some(m) = &mut self.streaming {
                        crate::stream_record::advance(m, assistant_message_event);
                    }
                }
                AgentEvent::MessageEnd { .. } | AgentEvent::AgentEnd { .. } => {
                    self.streaming = None
                }
                _ => {}
            }
        }
        match event {
            AgentEvent::MessageStart { message } => {
                self.streaming_role = Some(message.role().to_string());
            }
            AgentEvent::TurnEnd {
                message: Message::Assistant(a),
                ..
            } => {
                if let Some(e) = a.error_message.as_ref().filter(|e| !e.is_empty()) {
                    self.error_message = Some(e.clone());
                }
            }
            AgentEvent::AgentEnd { .. } => self.streaming_role = None,
            AgentEvent::MessageEnd { message } => {
                self.streaming_role = None;
                self.messages.push(message.clone());
                if self
                    .delivered
                    .front()
                    .is_some_and(|(_, m)| is_delivered(m, message))
                {
                    if let Some((seq, _)) = self.delivered.pop_front() {
                        // A batch is committed with its last message.
                        if self.delivered.front().is_none_or(|(s, _)| *s != seq) {
                            self.settled.insert(seq);
                        }
                    }
                }
            }
            AgentEvent::ToolExecutionStart { tool_call } => {
                self.pending_tool_calls.push(tool_call.id.to_string());
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

fn fingerprints(tools: &[ToolSpec]) -> Vec<String> {
    tools.iter().map(ToolSpec::fingerprint).collect()
}

/// The events that end a failed run as the Agent ends one: a failure message (empty text,
/// the error, `error` or, when aborted, `aborted`) published as the run's last message,
/// turn and end.
pub(crate) fn run_failure(
    model: &Model,
    error: String,
    aborted: bool,
    timestamp: u64,
) -> Vec<AgentEvent> {
    let failure = Message::from(AssistantMessage {
        content: vec![ContentBlock::text("")],
        api: model.api.as_str().into(),
        provider: model.provider.as_str().into(),
        model: model.id.as_str().into(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        error_message: Some(error),
        timestamp,
        ..AssistantMessage::default()
    });
    vec![
        AgentEvent::MessageStart {
            message: failure.clone(),
        },
        AgentEvent::MessageEnd {
            message: failure.clone(),
        },
        AgentEvent::TurnEnd {
            message: failure.clone(),
            tool_results: Vec::new(),
        },
        AgentEvent::AgentEnd {
            messages: vec![failure],
        },
    ]
}

/// Whether `ended` is the delivered input `m` as the loop committed it: the same message,
/// or a system message the loop gave the tool changes to announce (same content).
fn is_delivered(m: &Message, ended: &Message) -> bool {
    match (m, ended) {
        (Message::System(a), Message::System(b)) => a.content == b.content,
        _ => m == ended,
    }
}

/// The session as the loop reaches it.
#[derive(Clone, Default)]
pub(crate) struct Shared(pub(crate) Arc<Mutex<Session>>);

/// The loop's event sink: records each event, then, for the kinds the session listens to,
/// calls the worker's listener with the state after it and waits for it.
#[derive(Clone)]
pub(crate) struct Listening {
    pub(crate) shared: Shared,
    pub(crate) bridge: Arc<Bridge>,
    pub(crate) kinds: Arc<Vec<String>>,
    /// Whether the listener gets the full state.
    pub(crate) full_state: bool,
}

impl EventSink for Listening {
    async fn emit(&self, event: AgentEvent) {
        let heard = self.kinds.iter().any(|k| k == event.kind());
        let state = {
            let mut s = self.shared.0.lock();
            s.record(&event);
            let mut state = s.listener_state();
            if heard && self.full_state {
                state.full = Some(Box::new(s.full_state(&event)));
            }
            state
        };
        if heard {
            let event = serde_json::to_value(&event).unwrap_or(Value::Null);
            // A listener's failure is its own, as a subscriber's is in a local run.
            let _ = self.bridge.hook(HookCall::Event { event, state }).await;
        }
    }
}

impl Shared {
    /// Applies what a hook or tool on a worker did to this session's queues.
    pub(crate) fn queue(&self, queued: QueuedInput) {
        let mut s = self.0.lock();
        if queued.abort {
            s.abort_run();
        }
        s.clear_queues(queued.clear);
        for (input, messages) in [
            (Input::Steer, queued.steer),
            (Input::FollowUp, queued.follow_up),
        ] {
            if !messages.is_empty() {
                s.accept(input, messages);
            }
        }
    }

    /// The loop's steering source; with `skip_first`, its first poll takes nothing (the run
    /// started with the steering messages queued before it).
    pub(crate) fn steering_source(&self, skip_first: bool) -> tern_agent::config::MessageSource {
        let shared = self.clone();
        let skip = std::sync::atomic::AtomicBool::new(skip_first);
        Arc::new(move || -> BoxFuture<'static, Vec<Message>> {
            if skip.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return Box::pin(async { Vec::new() });
            }
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
