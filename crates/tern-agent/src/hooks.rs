//! The hooks: every point where an embedder can inspect or change a run, with the context
//! each hook receives and the decision it returns, gathered in one [`Hooks`] set that the
//! [`Agent`](crate::Agent), the low-level [loop](crate::AgentLoopConfig) and
//! [`run_tool_call`](crate::run_tool_call) all take.
//!
//! Every hook is an async function returning `Result<_, BoxError>`; an `Err` is the
//! reference's "the hook threw". Plain closures become hooks through the setters of
//! [`Hooks`] (or the free functions of the same names, which return the shared hook):
//!
//! ```
//! use tern_agent::hooks::{BeforeToolCallResult, Hooks};
//! let hooks = Hooks::default().before_tool_call(|ctx, _signal| async move {
//!     Ok((ctx.tool_call.name == "bash").then(|| BeforeToolCallResult::block("no shell")))
//! });
//! assert!(hooks.before_tool_call.is_some());
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_ai::{
    AssistantMessage, BoxError, ContentBlock, Message, Model, ThinkingLevel, ToolCall,
    ToolResultMessage, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::config::AgentContext;
use crate::tool::ToolResult;

/// What hooks return.
pub type HookFuture<T> = BoxFuture<'static, Result<T, BoxError>>;

/// Input of `before_tool_call`.
#[derive(Clone, Debug)]
#[non_exhaustive]
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

impl BeforeToolCallContext {
    /// The context of a call (for hosts that call a hook outside the loop, such as a
    /// durable backend's worker).
    pub fn new(
        assistant_message: Arc<AssistantMessage>,
        tool_call: ToolCall,
        args: Value,
        context: AgentContext,
    ) -> Self {
        BeforeToolCallContext {
            assistant_message,
            tool_call,
            args,
            context,
        }
    }
}

/// Output of `before_tool_call` (serializable for hosts that carry it across processes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BeforeToolCallResult {
    /// Do not execute the call.
    pub block: bool,
    /// Text of the error result (default `Tool execution was blocked`).
    pub reason: Option<String>,
    /// Mark the blocked result as terminating.
    pub terminate: bool,
    /// Replacement for the validated arguments that `execute` and `after_tool_call` receive
    /// when the call is not blocked (a reference hook changes `args` in place for this);
    /// the call block in the transcript and in events keeps its raw arguments.
    pub args: Option<Value>,
}

impl BeforeToolCallResult {
    /// Blocks the call with a reason the model sees.
    pub fn block(reason: impl Into<String>) -> Self {
        BeforeToolCallResult {
            block: true,
            reason: Some(reason.into()),
            terminate: false,
            args: None,
        }
    }
}

/// Input of `after_tool_call`.
#[derive(Clone, Debug)]
#[non_exhaustive]
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

impl AfterToolCallContext {
    /// The context of an executed call (for hosts that call a hook outside the loop).
    pub fn new(
        assistant_message: Arc<AssistantMessage>,
        tool_call: ToolCall,
        args: Value,
        result: ToolResult,
        is_error: bool,
        context: AgentContext,
    ) -> Self {
        AfterToolCallContext {
            assistant_message,
            tool_call,
            args,
            result,
            is_error,
            context,
        }
    }
}

/// Output of `after_tool_call`: each field set replaces the result's field; no deep merge.
/// Replacing `content` without `structured_content` drops the old structured content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
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
#[non_exhaustive]
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

impl TurnContext {
    /// A completed turn (for hosts that call a hook outside the loop).
    pub fn new(
        message: Arc<AssistantMessage>,
        tool_results: Vec<Arc<ToolResultMessage>>,
        context: AgentContext,
        new_messages: Vec<Message>,
    ) -> Self {
        TurnContext {
            message,
            tool_results,
            context,
            new_messages,
        }
    }
}

/// What `finish_turn` decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnDecision {
    /// Make sure one more request happens.
    Continue,
    /// End the run now (queued steering stays queued).
    End,
}

/// Input of `prepare_request`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PrepareRequestContext {
    /// The context the request will be built from.
    pub context: AgentContext,
    /// The model about to be asked.
    pub model: Model,
    /// The thinking level about to be requested.
    pub thinking_level: ThinkingLevel,
}

impl PrepareRequestContext {
    /// The request about to be made (for hosts that call a hook outside the loop).
    pub fn new(context: AgentContext, model: Model, thinking_level: ThinkingLevel) -> Self {
        PrepareRequestContext {
            context,
            model,
            thinking_level,
        }
    }
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

macro_rules! hooks {
    ($(
        $(#[$doc:meta])*
        $name:ident: $alias:ident, ($($arg:ident : $ty:ty),*) -> $out:ty;
    )*) => {
        $(
            #[doc = concat!("Shares a closure as a `", stringify!($name), "` hook.")]
            pub fn $name<F, Fut>(f: F) -> $alias
            where
                F: Fn($($ty),*) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = Result<$out, BoxError>> + Send + 'static,
            {
                Arc::new(move |$($arg),*| Box::pin(f($($arg),*)))
            }
        )*

        /// Every hook of a run; each is optional and unset by default.
        ///
        /// Set a hook with its setter (a plain async closure) or assign a shared hook to its
        /// field. New hooks may be added, so the struct is built from [`Hooks::default`].
        #[derive(Clone, Default)]
        #[non_exhaustive]
        pub struct Hooks {
            $( $(#[$doc])* pub $name: Option<$alias>, )*
        }

        impl Hooks {
            $(
                #[doc = concat!("Sets `", stringify!($name), "` from a closure.")]
                pub fn $name<F, Fut>(mut self, f: F) -> Self
                where
                    F: Fn($($ty),*) -> Fut + Send + Sync + 'static,
                    Fut: Future<Output = Result<$out, BoxError>> + Send + 'static,
                {
                    self.$name = Some($name(f));
                    self
                }
            )*

            /// Whether no hook is set.
            pub fn is_empty(&self) -> bool {
                let Hooks { $($name),* } = self;
                true $(&& $name.is_none())*
            }
        }

        impl crate::agent::AgentBuilder {
            $(
                #[doc = concat!("Sets the `", stringify!($name), "` hook from a closure (see [`Hooks`]).")]
                pub fn $name<F, Fut>(self, f: F) -> Self
                where
                    F: Fn($($ty),*) -> Fut + Send + Sync + 'static,
                    Fut: Future<Output = Result<$out, BoxError>> + Send + 'static,
                {
                    self.map_hooks(|hooks| hooks.$name(f))
                }
            )*
        }

        impl std::fmt::Debug for Hooks {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut set = f.debug_set();
                $( if self.$name.is_some() { set.entry(&stringify!($name)); } )*
                set.finish()
            }
        }
    };
}

hooks! {
    /// Turns transcript messages into the messages a provider accepts (default: drop
    /// custom roles).
    convert_to_llm: ConvertToLlmHook, (m: Arc<Vec<Message>>) -> Arc<Vec<Message>>;
    /// Rewrites the messages of a request (never the transcript).
    transform_context: TransformContextHook,
        (m: Arc<Vec<Message>>, s: CancellationToken) -> Arc<Vec<Message>>;
    /// Looks up the API key of a provider before every request.
    get_api_key: GetApiKeyHook, (p: String) -> Option<String>;
    /// Runs after argument validation, before execution; may block the call.
    before_tool_call: BeforeToolCallHook,
        (c: BeforeToolCallContext, s: CancellationToken) -> Option<BeforeToolCallResult>;
    /// Runs after execution; may override the result.
    after_tool_call: AfterToolCallHook,
        (c: AfterToolCallContext, s: CancellationToken) -> Option<AfterToolCallResult>;
    /// Decides after each turn whether the run goes on.
    finish_turn: FinishTurnHook, (c: TurnContext, s: CancellationToken) -> Option<TurnDecision>;
    /// Runs before each request; may replace context, model and thinking level.
    prepare_request: PrepareRequestHook,
        (c: PrepareRequestContext, s: CancellationToken) -> Option<RequestUpdate>;
    /// Runs between turns; may add messages and replace context, model and thinking level.
    prepare_next_turn: PrepareNextTurnHook,
        (c: TurnContext, s: CancellationToken) -> Option<TurnUpdate>;
}
