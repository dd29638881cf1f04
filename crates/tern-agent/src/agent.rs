//! The stateful [`Agent`]: owns a transcript, runs the loop on `prompt`, reduces events into
//! its state before its listeners see them, and queues steering and follow-up messages.
//!
//! ```
//! use std::sync::Arc;
//! use tern_agent::{Agent, AgentOptions};
//! use tern_ai::faux::{FauxModel, FauxResponse};
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = Agent::new(AgentOptions {
//!     system_prompt: Some("You are terse.".into()),
//!     stream_fn: Some(Arc::new(FauxModel::new(vec![FauxResponse::text("Hi.")]))),
//!     ..Default::default()
//! });
//! agent.subscribe_sync(|event| eprintln!("{}", event.kind()));
//! agent.prompt("hello").await.unwrap();
//! assert_eq!(agent.state().messages.len(), 3); // system, user, assistant
//! # });
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use parking_lot::Mutex;
use tern_ai::transcript::{
    create_initial_system_message, get_current_system_message, get_current_system_prompt,
};
use tern_ai::{
    AssistantMessage, BoxError, Content, ContentBlock, ImageContent, Message, Model,
    PartialMessage, StopReason, StreamFn, StreamOptions, ThinkingLevel, ToolCall, ToolDeclaration,
    UserMessage,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{run_agent_loop, run_agent_loop_continue};
use crate::config::{
    reasoning_of, AfterToolCallHook, AgentContext, AgentLoopConfig, BeforeToolCallHook,
    ConvertToLlmHook, FinishTurnHook, GetApiKeyHook, MessageSource, PrepareNextTurnHook,
    PrepareRequestHook, ToolHooks, TransformContextHook,
};
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::queue::{PendingMessageQueue, QueueMode};
use crate::sink::EventSink;
use crate::tool::{AgentTool, ToolExecutionMode};

/// How an [`Agent`] is built. Every field has a default.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// The system prompt (becomes the leading system message together with the tools).
    pub system_prompt: Option<String>,
    /// The model; default is a placeholder named `unknown`. Shared: agents built with
    /// clones of one `Arc` hold one copy of it (`Some(model.into())` for a fresh one).
    pub model: Option<Arc<Model>>,
    /// Requested thinking level.
    pub thinking_level: ThinkingLevel,
    /// Executable tools.
    pub tools: Vec<AgentTool>,
    /// Initial transcript.
    pub messages: Vec<Message>,
    /// The stream function (a provider, or a scripted model).
    pub stream_fn: Option<Arc<dyn StreamFn>>,
    /// Message conversion before each request (default: drop custom roles).
    pub convert_to_llm: Option<ConvertToLlmHook>,
    /// Request-time transcript rewrite.
    pub transform_context: Option<TransformContextHook>,
    /// API key lookup.
    pub get_api_key: Option<GetApiKeyHook>,
    /// Runs before each tool call.
    pub before_tool_call: Option<BeforeToolCallHook>,
    /// Runs after each tool call.
    pub after_tool_call: Option<AfterToolCallHook>,
    /// Decides after each turn.
    pub finish_turn: Option<FinishTurnHook>,
    /// Runs before each request.
    pub prepare_request: Option<PrepareRequestHook>,
    /// Runs between turns.
    pub prepare_next_turn: Option<PrepareNextTurnHook>,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
    /// Steering queue mode.
    pub steering_mode: QueueMode,
    /// Follow-up queue mode.
    pub follow_up_mode: QueueMode,
    /// Base request options (API key, session id, max tokens, ...).
    pub stream_options: StreamOptions,
}

/// A copy of the agent's state.
#[derive(Clone, Debug)]
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

#[derive(Clone)]
enum Streaming {
    Message(Message),
    Partial(PartialMessage),
}

impl Streaming {
    fn snapshot(&self) -> Message {
        match self {
            Streaming::Message(m) => m.clone(),
            Streaming::Partial(p) => Message::from(p.snapshot()),
        }
    }
    fn role(&self) -> String {
        match self {
            Streaming::Message(m) => m.role().to_string(),
            Streaming::Partial(_) => "assistant".to_string(),
        }
    }
}

struct State {
    messages: Vec<Message>,
    tools: Vec<AgentTool>,
    model: Arc<Model>,
    thinking_level: ThinkingLevel,
    is_streaming: bool,
    streaming_message: Option<Streaming>,
    // The calls themselves: their ids are read only when someone asks.
    pending_tool_calls: Vec<Arc<ToolCall>>,
    error_message: Option<String>,
    // Copy-on-write: an event clones the `Arc`, not the list. Kept with the state so that
    // one lock per event both reduces it and picks up the listeners.
    listeners: Arc<Listeners>,
}

#[derive(Clone)]
struct Listeners {
    list: Vec<(u64, Listener)>,
    all_sync: bool,
}

impl Default for Listeners {
    fn default() -> Self {
        Listeners {
            list: Vec::new(),
            all_sync: true,
        }
    }
}

impl Listeners {
    fn changed(&mut self) {
        self.all_sync = self
            .list
            .iter()
            .all(|(_, l)| matches!(l, Listener::Sync(_)));
    }
}

type AsyncListener =
    Arc<dyn Fn(Arc<AgentEvent>, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
type SyncListener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

#[derive(Clone)]
enum Listener {
    Async(AsyncListener),
    Sync(SyncListener),
}

struct ActiveRun {
    signal: CancellationToken,
    done: watch::Receiver<bool>,
}

struct Settings {
    stream_fn: Arc<dyn StreamFn>,
    tool_execution: ToolExecutionMode,
    // Hooks and request options, out of line: most agents set none of them, and inline they
    // would be most of an idle agent's footprint. `None` means all of them are defaults.
    custom: Option<Box<CustomSettings>>,
}

#[derive(Default)]
struct CustomSettings {
    convert_to_llm: Option<ConvertToLlmHook>,
    transform_context: Option<TransformContextHook>,
    get_api_key: Option<GetApiKeyHook>,
    tool_hooks: ToolHooks,
    finish_turn: Option<FinishTurnHook>,
    prepare_request: Option<PrepareRequestHook>,
    prepare_next_turn: Option<PrepareNextTurnHook>,
    stream_options: StreamOptions,
}

impl CustomSettings {
    // Whether these settings behave as the defaults do. The options' signal does not count:
    // every request gets the run's signal instead.
    fn is_default(&self) -> bool {
        let CustomSettings {
            convert_to_llm,
            transform_context,
            get_api_key,
            tool_hooks:
                ToolHooks {
                    before_tool_call,
                    after_tool_call,
                },
            finish_turn,
            prepare_request,
            prepare_next_turn,
            stream_options,
        } = self;
        let StreamOptions {
            reasoning,
            api_key,
            signal: _,
            session_id,
            max_tokens,
            temperature,
            headers,
            max_retry_delay_ms,
            thinking_budgets,
            timeout_ms,
            idle_timeout_ms,
            max_retries,
            tool_choice,
            cache_retention,
            metadata,
        } = stream_options;
        convert_to_llm.is_none()
            && transform_context.is_none()
            && get_api_key.is_none()
            && before_tool_call.is_none()
            && after_tool_call.is_none()
            && finish_turn.is_none()
            && prepare_request.is_none()
            && prepare_next_turn.is_none()
            && reasoning.is_none()
            && api_key.is_none()
            && session_id.is_none()
            && max_tokens.is_none()
            && temperature.is_none()
            && headers.is_empty()
            && max_retry_delay_ms.is_none()
            && thinking_budgets.is_none()
            && timeout_ms.is_none()
            && idle_timeout_ms.is_none()
            && max_retries.is_none()
            && tool_choice.is_none()
            && cache_retention.is_none()
            && metadata.is_none()
    }
}

struct Inner {
    state: Mutex<State>,
    settings: Mutex<Settings>,
    next_listener: AtomicU64,
    steering: Mutex<PendingMessageQueue>,
    follow_up: Mutex<PendingMessageQueue>,
    active: Mutex<Option<ActiveRun>>,
}

/// A stateful agent. Cloning gives another handle to the same agent.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

/// Handle returned by [`Agent::subscribe`]; call [`Subscription::unsubscribe`] to remove the
/// listener (dropping the handle keeps it).
pub struct Subscription {
    inner: std::sync::Weak<Inner>,
    id: u64,
}

impl Subscription {
    /// Removes the listener.
    pub fn unsubscribe(self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut st = inner.state.lock();
            let l = Arc::make_mut(&mut st.listeners);
            l.list.retain(|(id, _)| *id != self.id);
            l.changed();
        }
    }
}

fn pending_ids(calls: &[Arc<ToolCall>]) -> Vec<String> {
    calls.iter().map(|c| c.id.clone()).collect()
}

fn default_model() -> Arc<Model> {
    static UNKNOWN: std::sync::OnceLock<Arc<Model>> = std::sync::OnceLock::new();
    UNKNOWN
        .get_or_init(|| Arc::new(Model::new("unknown", "unknown", "unknown", "")))
        .clone()
}

fn no_stream_fn() -> Arc<dyn StreamFn> {
    Arc::new(
        |_: &Model, _: tern_ai::Context, _: StreamOptions| -> Result<_, BoxError> {
            Err("No default stream function configured. Pass streamFn explicitly or call setDefaultStreamFn().".into())
        },
    )
}

impl Agent {
    /// Builds an agent. A system prompt or tools create the leading system message unless
    /// the initial messages already start with one.
    pub fn new(options: AgentOptions) -> Self {
        let mut messages = options.messages;
        let decls: Vec<Arc<ToolDeclaration>> = options
            .tools
            .iter()
            .map(|t| t.declaration().clone())
            .collect();
        let starts_with_system = matches!(messages.first(), Some(Message::System(_)));
        if !starts_with_system {
            if let Some(first) =
                create_initial_system_message(options.system_prompt.as_deref(), &decls)
            {
                // Not `insert`: a full vector would double its capacity for one message.
                let mut with_first = Vec::with_capacity(messages.len() + 1);
                with_first.push(Message::from(first));
                with_first.append(&mut messages);
                messages = with_first;
            }
        }
        let custom = CustomSettings {
            convert_to_llm: options.convert_to_llm,
            transform_context: options.transform_context,
            get_api_key: options.get_api_key,
            tool_hooks: ToolHooks {
                before_tool_call: options.before_tool_call,
                after_tool_call: options.after_tool_call,
            },
            finish_turn: options.finish_turn,
            prepare_request: options.prepare_request,
            prepare_next_turn: options.prepare_next_turn,
            stream_options: options.stream_options,
        };
        Agent {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    messages,
                    tools: options.tools,
                    model: options.model.unwrap_or_else(default_model),
                    thinking_level: options.thinking_level,
                    is_streaming: false,
                    streaming_message: None,
                    pending_tool_calls: Vec::new(),
                    error_message: None,
                    listeners: Arc::default(),
                }),
                settings: Mutex::new(Settings {
                    stream_fn: options.stream_fn.unwrap_or_else(no_stream_fn),
                    tool_execution: options.tool_execution,
                    custom: Some(Box::new(custom)).filter(|c| !c.is_default()),
                }),
                next_listener: AtomicU64::new(1),
                steering: Mutex::new(PendingMessageQueue::new(options.steering_mode)),
                follow_up: Mutex::new(PendingMessageQueue::new(options.follow_up_mode)),
                active: Mutex::new(None),
            }),
        }
    }

    fn add_listener(&self, l: Listener) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let mut st = self.inner.state.lock();
        let listeners = Arc::make_mut(&mut st.listeners);
        // Agents usually have one or two listeners: no room for four.
        listeners.list.reserve_exact(1);
        listeners.list.push((id, l));
        listeners.changed();
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
        let st = self.inner.state.lock();
        AgentState {
            system_prompt: get_current_system_prompt(&st.messages),
            model: Model::clone(&st.model),
            thinking_level: st.thinking_level,
            tools: st.tools.clone(),
            messages: st.messages.clone(),
            is_streaming: st.is_streaming,
            streaming_message: st.streaming_message.as_ref().map(Streaming::snapshot),
            pending_tool_calls: pending_ids(&st.pending_tool_calls),
            error_message: st.error_message.clone(),
        }
    }

    /// The replayed system prompt.
    pub fn system_prompt(&self) -> String {
        get_current_system_prompt(&self.inner.state.lock().messages)
    }

    /// Reads the transcript without copying it.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        f(&self.inner.state.lock().messages)
    }

    /// Number of transcript messages.
    pub fn message_count(&self) -> usize {
        self.inner.state.lock().messages.len()
    }

    /// Role of the last transcript message.
    pub fn last_role(&self) -> Option<String> {
        self.inner
            .state
            .lock()
            .messages
            .last()
            .map(|m| m.role().to_string())
    }

    /// Whether a run is active.
    pub fn is_streaming(&self) -> bool {
        self.inner.state.lock().is_streaming
    }

    /// Role of the message being streamed.
    pub fn streaming_role(&self) -> Option<String> {
        self.inner
            .state
            .lock()
            .streaming_message
            .as_ref()
            .map(Streaming::role)
    }

    /// Tool calls in flight.
    pub fn pending_tool_calls(&self) -> Vec<String> {
        pending_ids(&self.inner.state.lock().pending_tool_calls)
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
        self.inner.state.lock().messages = messages;
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
        self.inner.active.lock().as_ref().map(|r| r.signal.clone())
    }

    /// Aborts the active run, if any.
    pub fn abort(&self) {
        if let Some(r) = self.inner.active.lock().as_ref() {
            r.signal.cancel();
        }
    }

    /// Resolves when the active run and its listeners have finished.
    pub async fn wait_for_idle(&self) {
        let rx = self.inner.active.lock().as_ref().map(|r| r.done.clone());
        if let Some(mut rx) = rx {
            let _ = rx.wait_for(|done| *done).await;
        }
    }

    /// Clears the conversation and queues, keeping the replayed prompt and tools as one
    /// system message.
    pub fn reset(&self) -> Result<(), AgentError> {
        if self.inner.active.lock().is_some() {
            return Err(AgentError::ResetWhileRunning);
        }
        let mut st = self.inner.state.lock();
        let baseline = get_current_system_message(&st.messages);
        st.messages = baseline.map(Message::from).into_iter().collect();
        st.is_streaming = false;
        st.streaming_message = None;
        st.pending_tool_calls.clear();
        st.error_message = None;
        drop(st);
        self.clear_all_queues();
        Ok(())
    }

    /// Runs a prompt given as text (one user message with one text block).
    pub async fn prompt(&self, text: &str) -> Result<(), AgentError> {
        self.prompt_messages(vec![Message::user_text(text)]).await
    }

    /// Runs a prompt of text and images.
    pub async fn prompt_with_images(
        &self,
        text: &str,
        images: Vec<ImageContent>,
    ) -> Result<(), AgentError> {
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
    pub async fn prompt_messages(&self, messages: Vec<Message>) -> Result<(), AgentError> {
        let run = self.begin(AgentError::PromptWhileRunning)?;
        self.run_prompt(run, messages, false).await;
        Ok(())
    }

    /// Continues from the transcript: the last message must be a user or tool-result
    /// message, or queued messages take its place after an assistant message.
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        if self.inner.active.lock().is_some() {
            return Err(AgentError::ContinueWhileRunning);
        }
        let last_is_assistant = {
            let st = self.inner.state.lock();
            let Some(last) = st.messages.last() else {
                return Err(AgentError::NothingToContinue);
            };
            if st.messages.iter().all(|m| matches!(m, Message::System(_))) {
                return Err(AgentError::NothingToContinue);
            }
            matches!(last, Message::Assistant(_))
        };
        if last_is_assistant {
            let steering = self.inner.steering.lock().drain();
            if !steering.is_empty() {
                let run = self.begin(AgentError::ContinueWhileRunning)?;
                self.run_prompt(run, steering, true).await;
                return Ok(());
            }
            let follow = self.inner.follow_up.lock().drain();
            if !follow.is_empty() {
                let run = self.begin(AgentError::ContinueWhileRunning)?;
                self.run_prompt(run, follow, false).await;
                return Ok(());
            }
            return Err(AgentError::CannotContinueFrom("assistant".into()));
        }
        let run = self.begin(AgentError::ContinueWhileRunning)?;
        let (context, config, stream_fn) = self.loop_setup(false);
        let sink = AgentSink::new(self.inner.clone(), run.signal.clone());
        let result = contain_panics(Box::pin(run_agent_loop_continue(
            context,
            config,
            &sink,
            run.signal.clone(),
            stream_fn,
        )))
        .await;
        Box::pin(self.end(run, result.err())).await;
        Ok(())
    }

    fn begin(&self, busy: AgentError) -> Result<RunHandle, AgentError> {
        let mut active = self.inner.active.lock();
        if active.is_some() {
            return Err(busy);
        }
        let signal = CancellationToken::new();
        let (tx, rx) = watch::channel(false);
        *active = Some(ActiveRun {
            signal: signal.clone(),
            done: rx,
        });
        drop(active);
        let mut st = self.inner.state.lock();
        st.is_streaming = true;
        st.streaming_message = None;
        st.error_message = None;
        Ok(RunHandle { signal, done: tx })
    }

    async fn run_prompt(
        &self,
        run: RunHandle,
        messages: Vec<Message>,
        skip_initial_steering: bool,
    ) {
        let (context, config, stream_fn) = self.loop_setup(skip_initial_steering);
        let sink = AgentSink::new(self.inner.clone(), run.signal.clone());
        let result = contain_panics(Box::pin(run_agent_loop(
            messages,
            context,
            config,
            &sink,
            run.signal.clone(),
            stream_fn,
        )))
        .await;
        Box::pin(self.end(run, result.err())).await;
    }

    async fn end(&self, run: RunHandle, error: Option<AgentError>) {
        if let Some(e) = error {
            self.handle_run_failure(e, &run.signal).await;
        }
        {
            let mut st = self.inner.state.lock();
            st.is_streaming = false;
            st.streaming_message = None;
            // Released here, not per call: within a run the list keeps its room, and an idle
            // agent keeps none.
            st.pending_tool_calls = Vec::new();
        }
        *self.inner.active.lock() = None;
        let _ = run.done.send(true);
    }

    async fn handle_run_failure(&self, error: AgentError, signal: &CancellationToken) {
        let model = self.inner.state.lock().model.clone();
        let failure = Message::from(AssistantMessage {
            content: vec![ContentBlock::text("")],
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: if signal.is_cancelled() {
                StopReason::Aborted
            } else {
                StopReason::Error
            },
            error_message: Some(error.to_string()),
            timestamp: tern_ai::clock::now_ms(),
            ..Default::default()
        });
        let sink = AgentSink::new(self.inner.clone(), signal.clone());
        sink.emit(AgentEvent::MessageStart {
            message: failure.clone(),
        })
        .await;
        sink.emit(AgentEvent::MessageEnd {
            message: failure.clone(),
        })
        .await;
        sink.emit(AgentEvent::TurnEnd {
            message: failure.clone(),
            tool_results: Vec::new(),
        })
        .await;
        sink.emit(AgentEvent::AgentEnd {
            messages: vec![failure],
        })
        .await;
    }

    fn loop_setup(
        &self,
        skip_initial_steering: bool,
    ) -> (AgentContext, AgentLoopConfig, Arc<dyn StreamFn>) {
        let (context, model, level) = {
            let st = self.inner.state.lock();
            (
                AgentContext::new(st.messages.clone(), st.tools.clone()),
                Model::clone(&st.model),
                st.thinking_level,
            )
        };
        let settings = self.inner.settings.lock();
        let defaults;
        let s = match &settings.custom {
            Some(custom) => custom,
            None => {
                defaults = CustomSettings::default();
                &defaults
            }
        };
        // The queues are drained when the loop asks, which it awaits at once.
        let weak = Arc::downgrade(&self.inner);
        let skip = AtomicBool::new(skip_initial_steering);
        let steering: MessageSource = Arc::new(move || {
            if skip.swap(false, Ordering::SeqCst) {
                return ready_messages(Vec::new());
            }
            ready_messages(
                weak.upgrade()
                    .map_or_else(Vec::new, |i| i.steering.lock().drain()),
            )
        });
        let weak = Arc::downgrade(&self.inner);
        let follow: MessageSource = Arc::new(move || {
            ready_messages(
                weak.upgrade()
                    .map_or_else(Vec::new, |i| i.follow_up.lock().drain()),
            )
        });
        let config = AgentLoopConfig {
            model,
            reasoning: reasoning_of(level),
            stream_options: s.stream_options.clone(),
            convert_to_llm: s.convert_to_llm.clone(),
            transform_context: s.transform_context.clone(),
            get_api_key: s.get_api_key.clone(),
            finish_turn: s.finish_turn.clone(),
            prepare_request: s.prepare_request.clone(),
            prepare_next_turn: s.prepare_next_turn.clone(),
            get_steering_messages: Some(steering),
            get_follow_up_messages: Some(follow),
            tool_execution: settings.tool_execution,
            tool_hooks: s.tool_hooks.clone(),
        };
        (context, config, settings.stream_fn.clone())
    }
}

/// Already drained messages as the loop's message future. An empty poll, the usual case,
/// allocates nothing: its future is zero-sized.
fn ready_messages(messages: Vec<Message>) -> BoxFuture<'static, Vec<Message>> {
    struct NoMessages;
    impl Future for NoMessages {
        type Output = Vec<Message>;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Vec<Message>> {
            std::task::Poll::Ready(Vec::new())
        }
    }
    if messages.is_empty() {
        Box::pin(NoMessages)
    } else {
        Box::pin(std::future::ready(messages))
    }
}

/// A panic in a hook or listener fails the run like a hook error instead of unwinding
/// through the agent, which would leave it busy forever.
///
/// Callers pass the run boxed: an agent's prompt future then stays small, which matters when
/// thousands of agents wait at once.
async fn contain_panics<T, F: Future<Output = Result<T, AgentError>>>(
    run: std::pin::Pin<Box<F>>,
) -> Result<T, AgentError> {
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(AgentError::Failed(format!(
            "Run panicked: {}",
            crate::tool_exec::panic_text(payload.as_ref())
        ))),
    }
}

struct RunHandle {
    signal: CancellationToken,
    done: watch::Sender<bool>,
}

/// The run's view of the agent. Shared: the tool executor clones it for every call.
#[derive(Clone)]
struct AgentSink(Arc<SinkInner>);

struct SinkInner {
    inner: Arc<Inner>,
    signal: CancellationToken,
}

impl AgentSink {
    fn new(inner: Arc<Inner>, signal: CancellationToken) -> Self {
        AgentSink(Arc::new(SinkInner { inner, signal }))
    }

    /// Applies the event to the state; returns the listeners to call, read in the same lock.
    fn reduce(&self, event: &AgentEvent) -> Arc<Listeners> {
        let mut st = self.0.inner.state.lock();
        match event {
            AgentEvent::MessageStart { message } => {
                st.streaming_message = Some(Streaming::Message(message.clone()))
            }
            // Every delta of one response carries the same handle: keep the stored one.
            AgentEvent::MessageUpdate { message, .. } if !matches!(&st.streaming_message, Some(Streaming::Partial(p)) if p.ptr_eq(message)) => {
                st.streaming_message = Some(Streaming::Partial(message.clone()))
            }
            AgentEvent::MessageEnd { message } => {
                st.streaming_message = None;
                st.messages.push(message.clone());
            }
            AgentEvent::ToolExecutionStart { tool_call }
                if !st.pending_tool_calls.iter().any(|c| c.id == tool_call.id) =>
            {
                st.pending_tool_calls.push(tool_call.clone());
            }
            AgentEvent::ToolExecutionEnd { tool_call, .. } => {
                st.pending_tool_calls.retain(|c| c.id != tool_call.id);
            }
            AgentEvent::TurnEnd {
                message: Message::Assistant(a),
                ..
            } => {
                if let Some(e) = a.error_message.as_ref().filter(|e| !e.is_empty()) {
                    st.error_message = Some(e.clone());
                }
            }
            AgentEvent::AgentEnd { .. } => st.streaming_message = None,
            _ => {}
        }
        st.listeners.clone()
    }
}

impl EventSink for AgentSink {
    async fn emit(&self, event: AgentEvent) {
        let listeners = self.reduce(&event);
        if listeners.all_sync {
            for (_, l) in listeners.list.iter() {
                if let Listener::Sync(f) = l {
                    f(&event);
                }
            }
            return;
        }
        // Async listeners share one allocation of the event.
        let event = Arc::new(event);
        for (_, l) in listeners.list.iter() {
            match l {
                Listener::Sync(f) => f(&event),
                Listener::Async(f) => f(event.clone(), self.0.signal.clone()).await,
            }
        }
    }
}
