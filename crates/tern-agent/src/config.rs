//! The loop's configuration: model, hooks and message sources.
//!
//! Every hook is an async function returning `Result<_, BoxError>`; an `Err` is the
//! reference's "the hook threw". Closures become hooks through the `From`-style helpers in
//! this module, e.g. [`before_tool_call`]:
//!
//! ```
//! use tern_agent::config::{before_tool_call, BeforeToolCallResult};
//! let hook = before_tool_call(|ctx, _signal| async move {
//!     Ok((ctx.tool_call.name == "bash").then(|| BeforeToolCallResult::block("no shell")))
//! });
//! # let _ = hook;
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tern_ai::{
    AssistantMessage, BoxError, ContentBlock, Message, Model, StreamOptions, ThinkingLevel,
    ToolCall, ToolResultMessage, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool::{AgentTool, ToolExecutionMode, ToolResult};

/// What hooks return.
pub type HookFuture<T> = BoxFuture<'static, Result<T, BoxError>>;

/// The loop's view of the run: the transcript so far and the executable tools.
/// Both are shared; cloning a context is O(1).
#[derive(Clone, Debug, Default)]
pub struct AgentContext {
    /// Transcript.
    pub messages: Arc<Vec<Message>>,
    /// Tools the loop can execute.
    pub tools: Arc<Vec<AgentTool>>,
}

impl AgentContext {
    /// A context over these messages and tools.
    pub fn new(messages: Vec<Message>, tools: Vec<AgentTool>) -> Self {
        AgentContext {
            messages: Arc::new(messages),
            tools: Arc::new(tools),
        }
    }
}

/// Input of `before_tool_call`.
#[derive(Clone, Debug)]
pub struct BeforeToolCallContext {
    /// The assistant message holding the call.
    pub assistant_message: Arc<AssistantMessage>,
    /// The call as the model sent it (raw arguments).
    pub tool_call: ToolCall,
    /// Prepared and validated arguments.
    pub args: Value,
    /// The run's context.
    pub context: AgentContext,
}

/// Output of `before_tool_call`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BeforeToolCallResult {
    /// Do not execute the call.
    pub block: bool,
    /// Text of the error result (default `Tool execution was blocked`).
    pub reason: Option<String>,
    /// Mark the blocked result as terminating.
    pub terminate: bool,
}

impl BeforeToolCallResult {
    /// Blocks the call with a reason the model sees.
    pub fn block(reason: impl Into<String>) -> Self {
        BeforeToolCallResult {
            block: true,
            reason: Some(reason.into()),
            terminate: false,
        }
    }
}

/// Input of `after_tool_call`.
#[derive(Clone, Debug)]
pub struct AfterToolCallContext {
    /// The assistant message holding the call.
    pub assistant_message: Arc<AssistantMessage>,
    /// The call as the model sent it.
    pub tool_call: ToolCall,
    /// Prepared and validated arguments.
    pub args: Value,
    /// The executed result.
    pub result: ToolResult,
    /// Its error flag.
    pub is_error: bool,
    /// The run's context.
    pub context: AgentContext,
}

/// Output of `after_tool_call`: each field set replaces the result's field; no deep merge.
/// Replacing `content` without `structured_content` drops the old structured content.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterToolCallResult {
    /// New content.
    pub content: Option<Vec<ContentBlock>>,
    /// New details.
    pub details: Option<Value>,
    /// New structured content.
    pub structured_content: Option<Value>,
    /// New error flag.
    pub is_error: Option<bool>,
    /// New usage.
    pub usage: Option<Usage>,
    /// New terminate flag.
    pub terminate: Option<bool>,
}

/// A completed turn, as `finish_turn` and `prepare_next_turn` see it.
#[derive(Clone, Debug)]
pub struct TurnContext {
    /// The turn's assistant message.
    pub message: Arc<AssistantMessage>,
    /// Its tool results.
    pub tool_results: Vec<Arc<ToolResultMessage>>,
    /// The run's context.
    pub context: AgentContext,
    /// Messages added by this run so far.
    pub new_messages: Vec<Message>,
}

/// What `finish_turn` decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnDecision {
    /// Make sure one more request happens.
    Continue,
    /// End the run now (queued steering stays queued).
    End,
}

/// Input of `prepare_request`.
#[derive(Clone, Debug)]
pub struct PrepareRequestContext {
    /// The context the request will be built from.
    pub context: AgentContext,
    /// The model about to be asked.
    pub model: Model,
    /// The thinking level about to be requested.
    pub thinking_level: ThinkingLevel,
}

/// Output of `prepare_request` (changes last for the rest of the run).
#[derive(Clone, Debug, Default)]
pub struct RequestUpdate {
    /// Replacement context (reaches the provider, never the agent state).
    pub context: Option<AgentContext>,
    /// Replacement model.
    pub model: Option<Model>,
    /// Replacement thinking level.
    pub thinking_level: Option<ThinkingLevel>,
}

/// Output of `prepare_next_turn`.
#[derive(Clone, Debug, Default)]
pub struct TurnUpdate {
    /// Replacement context.
    pub context: Option<AgentContext>,
    /// Messages to emit before the next request (before steering messages).
    pub messages: Option<Vec<Message>>,
    /// Replacement model.
    pub model: Option<Model>,
    /// Replacement thinking level.
    pub thinking_level: Option<ThinkingLevel>,
}

/// `before_tool_call` hook.
pub type BeforeToolCallHook = Arc<
    dyn Fn(BeforeToolCallContext, CancellationToken) -> HookFuture<Option<BeforeToolCallResult>>
        + Send
        + Sync,
>;
/// `after_tool_call` hook.
pub type AfterToolCallHook = Arc<
    dyn Fn(AfterToolCallContext, CancellationToken) -> HookFuture<Option<AfterToolCallResult>>
        + Send
        + Sync,
>;
/// `finish_turn` hook.
pub type FinishTurnHook =
    Arc<dyn Fn(TurnContext, CancellationToken) -> HookFuture<Option<TurnDecision>> + Send + Sync>;
/// `prepare_request` hook.
pub type PrepareRequestHook = Arc<
    dyn Fn(PrepareRequestContext, CancellationToken) -> HookFuture<Option<RequestUpdate>>
        + Send
        + Sync,
>;
/// `prepare_next_turn` hook.
pub type PrepareNextTurnHook =
    Arc<dyn Fn(TurnContext, CancellationToken) -> HookFuture<Option<TurnUpdate>> + Send + Sync>;
/// `transform_context` hook: rewrites the messages of a request (not the transcript).
pub type TransformContextHook = Arc<
    dyn Fn(Arc<Vec<Message>>, CancellationToken) -> HookFuture<Arc<Vec<Message>>> + Send + Sync,
>;
/// `convert_to_llm` hook: turns transcript messages into the messages a provider accepts.
pub type ConvertToLlmHook =
    Arc<dyn Fn(Arc<Vec<Message>>) -> HookFuture<Arc<Vec<Message>>> + Send + Sync>;
/// `get_api_key` hook: the key for a provider, asked before every request.
pub type GetApiKeyHook = Arc<dyn Fn(String) -> HookFuture<Option<String>> + Send + Sync>;
/// A source of queued messages (steering or follow-up).
pub type MessageSource = Arc<dyn Fn() -> BoxFuture<'static, Vec<Message>> + Send + Sync>;

macro_rules! hook_ctor {
    ($(#[$doc:meta])* $name:ident, $alias:ident, ($($arg:ident : $ty:ty),*), $out:ty) => {
        $(#[$doc])*
        pub fn $name<F, Fut>(f: F) -> $alias
        where
            F: Fn($($ty),*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<$out, BoxError>> + Send + 'static,
        {
            Arc::new(move |$($arg),*| Box::pin(f($($arg),*)))
        }
    };
}

hook_ctor!(
    /// Boxes a closure as a `before_tool_call` hook.
    before_tool_call, BeforeToolCallHook,
    (c: BeforeToolCallContext, s: CancellationToken), Option<BeforeToolCallResult>
);
hook_ctor!(
    /// Boxes a closure as an `after_tool_call` hook.
    after_tool_call, AfterToolCallHook,
    (c: AfterToolCallContext, s: CancellationToken), Option<AfterToolCallResult>
);
hook_ctor!(
    /// Boxes a closure as a `finish_turn` hook.
    finish_turn, FinishTurnHook,
    (c: TurnContext, s: CancellationToken), Option<TurnDecision>
);
hook_ctor!(
    /// Boxes a closure as a `prepare_request` hook.
    prepare_request, PrepareRequestHook,
    (c: PrepareRequestContext, s: CancellationToken), Option<RequestUpdate>
);
hook_ctor!(
    /// Boxes a closure as a `prepare_next_turn` hook.
    prepare_next_turn, PrepareNextTurnHook,
    (c: TurnContext, s: CancellationToken), Option<TurnUpdate>
);
hook_ctor!(
    /// Boxes a closure as a `transform_context` hook.
    transform_context, TransformContextHook,
    (m: Arc<Vec<Message>>, s: CancellationToken), Arc<Vec<Message>>
);
hook_ctor!(
    /// Boxes a closure as a `convert_to_llm` hook.
    convert_to_llm, ConvertToLlmHook,
    (m: Arc<Vec<Message>>), Arc<Vec<Message>>
);
hook_ctor!(
    /// Boxes a closure as a `get_api_key` hook.
    get_api_key, GetApiKeyHook,
    (p: String), Option<String>
);

/// The tool hooks, shared by the loop and [`run_tool_call`](crate::run_tool_call).
#[derive(Clone, Default)]
pub struct ToolHooks {
    /// Runs after validation, before execution; may block.
    pub before_tool_call: Option<BeforeToolCallHook>,
    /// Runs after execution; may override the result.
    pub after_tool_call: Option<AfterToolCallHook>,
}

/// Configuration of one low-level loop run (the reference's `AgentLoopConfig`).
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// The model asked.
    pub model: Model,
    /// Requested reasoning; `None` is off.
    pub reasoning: Option<ThinkingLevel>,
    /// Base options of every request (signal and reasoning are set per request).
    pub stream_options: StreamOptions,
    /// Message conversion; `None` keeps system/user/assistant/toolResult messages.
    pub convert_to_llm: Option<ConvertToLlmHook>,
    /// Request-time transcript rewrite.
    pub transform_context: Option<TransformContextHook>,
    /// API key lookup before each request.
    pub get_api_key: Option<GetApiKeyHook>,
    /// Decides after each turn.
    pub finish_turn: Option<FinishTurnHook>,
    /// Runs before each request.
    pub prepare_request: Option<PrepareRequestHook>,
    /// Runs between turns.
    pub prepare_next_turn: Option<PrepareNextTurnHook>,
    /// Steering messages, polled at the start and after each turn.
    pub get_steering_messages: Option<MessageSource>,
    /// Follow-up messages, polled when the agent would stop.
    pub get_follow_up_messages: Option<MessageSource>,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
    /// Tool hooks.
    pub tool_hooks: ToolHooks,
}

impl AgentLoopConfig {
    /// A configuration for `model` with no hooks.
    pub fn new(model: Model) -> Self {
        AgentLoopConfig {
            model,
            reasoning: None,
            stream_options: StreamOptions::default(),
            convert_to_llm: None,
            transform_context: None,
            get_api_key: None,
            finish_turn: None,
            prepare_request: None,
            prepare_next_turn: None,
            get_steering_messages: None,
            get_follow_up_messages: None,
            tool_execution: ToolExecutionMode::Parallel,
            tool_hooks: ToolHooks::default(),
        }
    }
}

/// The thinking level as the loop stores it: `Off` becomes `None`.
pub(crate) fn reasoning_of(level: ThinkingLevel) -> Option<ThinkingLevel> {
    (level != ThinkingLevel::Off).then_some(level)
}
