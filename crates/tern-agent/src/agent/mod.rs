//! The stateful [`Agent`]: owns a transcript, runs the loop on `prompt`, reduces events into
//! its state before its listeners see them, and queues steering and follow-up messages.
//!
//! Its parts: the public API here, [`AgentBuilder`] (builder), [`AgentOptions`] (the
//! Pi-shaped options), the state and its reduction (state), listeners, and a run's life
//! from claim to outcome (lifecycle).
//!
//! ```
//! use tern_agent::Agent;
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! use tern_ai::Model;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = Agent::builder(Model::default(), FauxModel::new(vec![FauxResponse::text("Hi.")]))
//!     .system_prompt("You are terse.")
//!     .build();
//! agent.subscribe_sync(|event| eprintln!("{}", event.kind()));
//! let outcome = agent.prompt("hello").await.unwrap();
//! assert!(outcome.is_completed());
//! assert_eq!(agent.state().messages.len(), 3); // system, user, assistant
//! # });
//! ```

mod builder;
mod lifecycle;
mod listeners;
mod options;
mod queues;
mod state;
mod transcript;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tern_ai::message::MessageKind;
use tern_ai::transcript::{
    create_initial_system_message, get_current_system_message, get_current_system_prompt,
};
use tern_ai::{
    Content, ContentBlock, ImageContent, Message, Model, StreamFn, ThinkingLevel, ToolDeclaration,
    UserMessage,
};
use tokio_util::sync::CancellationToken;

pub use builder::AgentBuilder;
pub use listeners::Subscription;
pub use options::{AgentOptions, NO_STREAM_FN};
pub use state::AgentState;

use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::outcome::RunOutcome;
use crate::queue::QueueMode;
use crate::tool::{AgentTool, ToolExecutionMode};
use lifecycle::{Runs, Start};
use listeners::Listener;
use options::{default_model, no_stream_fn, CustomSettings, Settings};
use queues::SharedQueue;
use state::{Changes, State, Streaming};
use transcript::Transcript;

struct Inner {
    state: Mutex<State>,
    // Beside the state: counts what its lock-free readers depend on.
    changes: Changes,
    settings: Mutex<Settings>,
    next_listener: AtomicU64,
    steering: SharedQueue,
    follow_up: SharedQueue,
    runs: Mutex<Runs>,
}

/// A stateful agent. Cloning gives another handle to the same agent.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl Agent {
    /// Starts building an agent that asks `model` through `stream_fn` (a provider such as
    /// [`tern_ai::providers::Providers`], or a scripted model). See [`AgentBuilder`].
    pub fn builder(
        model: impl Into<Arc<Model>>,
        stream_fn: impl StreamFn + 'static,
    ) -> AgentBuilder {
        AgentBuilder::new(model.into(), Arc::new(stream_fn))
    }

    /// Builds an agent. A system prompt or tools create the leading system message unless
    /// the initial messages already start with one.
    pub fn new(options: AgentOptions) -> Self {
        let messages = options.messages;
        let decls: Vec<Arc<ToolDeclaration>> = options
            .tools
            .iter()
            .map(|t| t.declaration().clone())
            .collect();
        let starts_with_system = matches!(messages.first(), Some(Message::System(_)));
        let first = match starts_with_system {
            true => None,
            false => create_initial_system_message(options.system_prompt.as_deref(), &decls)
                .map(Message::from),
        };
        // Packed: the given messages are not kept.
        let transcript = Transcript::new(first, &messages);
        drop(messages);
        let model = options.model.unwrap_or_else(default_model);
        Agent {
            inner: Arc::new(Inner {
                state: Mutex::new(State::new(
                    transcript,
                    options.tools,
                    model,
                    options.thinking_level,
                )),
                changes: Changes::default(),
                settings: Mutex::new(Settings {
                    stream_fn: options.stream_fn.unwrap_or_else(no_stream_fn),
                    tool_execution: options.tool_execution,
                    custom: CustomSettings::new(options.hooks, options.stream_options),
                }),
                next_listener: AtomicU64::new(1),
                steering: SharedQueue::new(options.steering_mode),
                follow_up: SharedQueue::new(options.follow_up_mode),
                runs: Mutex::new(Runs::default()),
            }),
        }
    }

    fn add_listener(&self, l: Listener) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut st = self.inner.state.lock();
        st.listeners_mut(&self.inner.changes).add(id, l);
        Subscription {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// Adds an async listener. Listeners run in subscription order, each awaited, after the
    /// state has been updated for the event; they receive the run's cancellation token.
    pub fn subscribe<F, Fut>(&self, f: F) -> Subscription
    where
        F: Fn(Arc<AgentEvent>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.add_listener(Listener::Async(Arc::new(move |e, s| Box::pin(f(e, s)))))
    }

    /// Adds a synchronous listener (cheaper: no allocation per event).
    pub fn subscribe_sync(&self, f: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Subscription {
        self.add_listener(Listener::Sync(Arc::new(f)))
    }

    /// A copy of the state.
    pub fn state(&self) -> AgentState {
        self.inner.state.lock().snapshot()
    }

    /// The replayed system prompt.
    pub fn system_prompt(&self) -> String {
        get_current_system_prompt(&self.inner.state.lock().transcript.system_messages())
    }

    /// Reads the transcript. During a run it is read in place; an idle agent keeps it
    /// packed (see [`PackedTranscript`](tern_ai::message::PackedTranscript)), and `f` reads a
    /// temporary decode of it.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        self.inner.state.lock().transcript.with(f)
    }

    /// Number of transcript messages.
    pub fn message_count(&self) -> usize {
        self.inner.state.lock().transcript.len()
    }

    /// Role of the last transcript message.
    pub fn last_role(&self) -> Option<String> {
        self.inner.state.lock().transcript.last_role()
    }

    /// Whether a run is active.
    pub fn is_streaming(&self) -> bool {
        self.inner.state.lock().is_streaming
    }

    /// Role of the message being streamed.
    pub fn streaming_role(&self) -> Option<String> {
        self.inner.state.lock().streaming().map(Streaming::role)
    }

    /// Tool calls in flight.
    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.inner.state.lock().pending_ids()
    }

    /// The last run's error text.
    pub fn error_message(&self) -> Option<String> {
        self.inner.state.lock().error_message.clone()
    }

    /// Replaces the executable tools (announced to the model on the next run).
    pub fn set_tools(&self, tools: Vec<AgentTool>) {
        self.inner.state.lock().tools = tools;
    }

    /// Replaces the transcript.
    pub fn set_messages(&self, messages: Vec<Message>) {
        self.inner.state.lock().transcript.replace(messages);
    }

    /// Replaces the model.
    pub fn set_model(&self, model: impl Into<Arc<Model>>) {
        self.inner.state.lock().model = model.into();
    }

    /// Sets the thinking level.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.inner.state.lock().thinking_level = level;
    }

    /// Sets the tool execution mode.
    pub fn set_tool_execution(&self, mode: ToolExecutionMode) {
        self.inner.settings.lock().tool_execution = mode;
    }

    /// The session id every request carries (pi's `agent.sessionId`): providers key their
    /// prompt caches and per-session state by it.
    pub fn session_id(&self) -> Option<String> {
        let settings = self.inner.settings.lock();
        settings.custom.as_ref()?.stream_options.session_id.clone()
    }

    /// Sets the session id of the next requests (a new or resumed session).
    ///
    /// ```
    /// use tern_agent::Agent;
    /// use tern_ai::{faux::FauxModel, Model};
    /// let agent = Agent::builder(Model::new("m", "p", "api", ""), FauxModel::new(vec![])).build();
    /// assert_eq!(agent.session_id(), None);
    /// agent.set_session_id(Some("session-2".into()));
    /// assert_eq!(agent.session_id().as_deref(), Some("session-2"));
    /// ```
    pub fn set_session_id(&self, id: Option<String>) {
        let mut settings = self.inner.settings.lock();
        let custom = settings.custom.get_or_insert_with(Default::default);
        custom.stream_options.session_id = id;
    }

    /// Sets how queued steering messages are drained.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.steering.lock().mode = mode;
    }

    /// Sets how queued follow-up messages are drained.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.follow_up.lock().mode = mode;
    }

    /// Steering mode.
    pub fn steering_mode(&self) -> QueueMode {
        self.inner.steering.lock().mode
    }

    /// Follow-up mode.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.inner.follow_up.lock().mode
    }

    /// Queues a message to be injected after the current turn.
    pub fn steer(&self, message: Message) {
        self.inner.steering.lock().enqueue(message);
    }

    /// Queues a message to run only after the agent would otherwise stop.
    pub fn follow_up(&self, message: Message) {
        self.inner.follow_up.lock().enqueue(message);
    }

    /// Removes queued steering messages.
    pub fn clear_steering_queue(&self) {
        self.inner.steering.lock().clear();
    }

    /// Removes queued follow-up messages.
    pub fn clear_follow_up_queue(&self) {
        self.inner.follow_up.lock().clear();
    }

    /// Removes all queued messages.
    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    /// Takes every queued message out: (steering, follow-up), oldest first. Each queue is
    /// emptied in one step, so a message queued meanwhile is either taken or left queued,
    /// never lost (pi's `clearQueue`).
    ///
    /// ```
    /// # use tern_agent::{Agent, AgentOptions};
    /// # use tern_ai::Message;
    /// let agent = Agent::new(AgentOptions::default());
    /// agent.steer(Message::user_text("look at the tests too"));
    /// let (steering, follow_up) = agent.take_queued();
    /// assert_eq!((steering.len(), follow_up.len()), (1, 0));
    /// assert!(!agent.has_queued_messages());
    /// ```
    pub fn take_queued(&self) -> (Vec<Message>, Vec<Message>) {
        (
            self.inner.steering.lock().take_all(),
            self.inner.follow_up.lock().take_all(),
        )
    }

    /// Whether either queue holds messages.
    pub fn has_queued_messages(&self) -> bool {
        self.inner.steering.lock().has_items() || self.inner.follow_up.lock().has_items()
    }

    /// The messages the next poll would deliver (steering first), without taking them.
    pub fn peek_queued_messages(&self) -> Vec<Message> {
        let steering = self.inner.steering.lock().peek();
        if !steering.is_empty() {
            return steering;
        }
        self.inner.follow_up.lock().peek()
    }

    /// Everything queued: (steering, follow-up), oldest first.
    pub fn queued(&self) -> (Vec<Message>, Vec<Message>) {
        (
            self.inner.steering.lock().all().to_vec(),
            self.inner.follow_up.lock().all().to_vec(),
        )
    }

    /// The active run's cancellation token.
    pub fn signal(&self) -> Option<CancellationToken> {
        self.inner.runs.lock().active.clone()
    }

    /// Aborts the active run, if any.
    pub fn abort(&self) {
        if let Some(signal) = &self.inner.runs.lock().active {
            signal.cancel();
        }
    }

    /// Resolves when the active run and its listeners have finished.
    pub async fn wait_for_idle(&self) {
        let Some(run) = self.inner.runs.lock().active_number() else {
            return;
        };
        std::future::poll_fn(
            |cx| match self.inner.runs.lock().ended_or_wake(run, cx.waker()) {
                true => std::task::Poll::Ready(()),
                false => std::task::Poll::Pending,
            },
        )
        .await;
    }

    /// Clears the conversation and queues, keeping the replayed prompt and tools as one
    /// system message.
    pub fn reset(&self) -> Result<(), AgentError> {
        if self.inner.runs.lock().active.is_some() {
            return Err(AgentError::ResetWhileRunning);
        }
        let mut st = self.inner.state.lock();
        let baseline = get_current_system_message(&st.transcript.system_messages());
        st.transcript
            .replace(baseline.map(Message::from).into_iter().collect());
        st.is_streaming = false;
        st.clear_streaming(&self.inner.changes);
        st.pending_tool_calls.clear();
        st.error_message = None;
        drop(st);
        self.clear_all_queues();
        Ok(())
    }

    /// Runs a prompt given as text (one user message with one text block).
    ///
    /// `Err` only when the agent is busy; how the run ended, failures included, is in the
    /// [`RunOutcome`].
    pub async fn prompt(&self, text: &str) -> Result<RunOutcome, AgentError> {
        self.prompt_messages(vec![Message::user_text(text)]).await
    }

    /// Runs a prompt of text and images.
    pub async fn prompt_with_images(
        &self,
        text: &str,
        images: Vec<ImageContent>,
    ) -> Result<RunOutcome, AgentError> {
        let mut content = vec![ContentBlock::text(text)];
        content.extend(images.into_iter().map(ContentBlock::Image));
        let m = Message::from(UserMessage {
            content: Content::Blocks(content),
            timestamp: tern_ai::clock::now_ms(),
            extra: None,
        });
        self.prompt_messages(vec![m]).await
    }

    /// Runs a prompt made of these messages.
    pub async fn prompt_messages(&self, messages: Vec<Message>) -> Result<RunOutcome, AgentError> {
        let run = self.begin(AgentError::PromptWhileRunning)?;
        Ok(self
            .run(
                run,
                Start::Prompt {
                    messages,
                    skip_initial_steering: false,
                },
            )
            .await)
    }

    /// Continues from the transcript: the last message must be a user or tool-result
    /// message, or queued messages take its place after an assistant message.
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        if self.inner.runs.lock().active.is_some() {
            return Err(AgentError::ContinueWhileRunning);
        }
        let last_is_assistant = {
            let st = self.inner.state.lock();
            let t = &st.transcript;
            // Kinds only: an idle transcript is not decoded for this.
            let last = t.len().checked_sub(1).and_then(|i| t.kind(i));
            let all_system = (0..t.len()).all(|i| t.kind(i) == Some(MessageKind::System));
            last.filter(|_| !all_system)
                .map(|k| k == MessageKind::Assistant)
        };
        let Some(last_is_assistant) = last_is_assistant else {
            return Err(AgentError::NothingToContinue);
        };
        if !last_is_assistant {
            let run = self.begin(AgentError::ContinueWhileRunning)?;
            return Ok(self.run(run, Start::Continue).await);
        }
        // Queued steering answers the assistant tail first, then queued follow-ups.
        for (queue, skip_initial_steering) in
            [(&self.inner.steering, true), (&self.inner.follow_up, false)]
        {
            let messages = queue.lock().drain();
            if !messages.is_empty() {
                let run = self.begin(AgentError::ContinueWhileRunning)?;
                let start = Start::Prompt {
                    messages,
                    skip_initial_steering,
                };
                return Ok(self.run(run, start).await);
            }
        }
        Err(AgentError::CannotContinueFrom("assistant".into()))
    }
}
