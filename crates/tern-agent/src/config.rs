//! The low-level loop's configuration: the context a run works on, the model and request
//! options, the hooks and where queued messages come from.
//!
//! ```
//! use tern_agent::{AgentLoopConfig, Hooks, ToolExecutionMode};
//! use tern_ai::Model;
//! let mut config = AgentLoopConfig::new(Model::default());
//! config.tool_execution = ToolExecutionMode::Sequential;
//! config.hooks = Hooks::default().finish_turn(|_turn, _signal| async { Ok(None) });
//! # let _ = config;
//! ```

use std::sync::Arc;

use futures::future::BoxFuture;
use tern_ai::{Message, Model, StreamOptions, ThinkingLevel};

use crate::hooks::Hooks;
use crate::tool::{AgentTool, ToolExecutionMode};

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

/// A source of queued messages (steering or follow-up).
pub type MessageSource = Arc<dyn Fn() -> BoxFuture<'static, Vec<Message>> + Send + Sync>;

/// Configuration of one low-level loop run (the reference's `AgentLoopConfig`), built with
/// [`AgentLoopConfig::new`] and then changed field by field.
#[derive(Clone)]
#[non_exhaustive]
pub struct AgentLoopConfig {
    /// The model asked (shared: a run takes the agent's model without copying it).
    pub model: Arc<Model>,
    /// Requested reasoning; `None` is off.
    pub reasoning: Option<ThinkingLevel>,
    /// Base options of every request (signal and reasoning are set per request).
    pub stream_options: StreamOptions,
    /// The run's hooks.
    pub hooks: Hooks,
    /// Steering messages, polled at the start and after each turn.
    pub get_steering_messages: Option<MessageSource>,
    /// Follow-up messages, polled when the agent would stop.
    pub get_follow_up_messages: Option<MessageSource>,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
}

impl AgentLoopConfig {
    /// A configuration for `model` with no hooks.
    pub fn new(model: impl Into<Arc<Model>>) -> Self {
        AgentLoopConfig {
            model: model.into(),
            reasoning: None,
            stream_options: StreamOptions::default(),
            hooks: Hooks::default(),
            get_steering_messages: None,
            get_follow_up_messages: None,
            tool_execution: ToolExecutionMode::Parallel,
        }
    }
}

/// The thinking level as the loop stores it: `Off` becomes `None`.
pub(crate) fn reasoning_of(level: ThinkingLevel) -> Option<ThinkingLevel> {
    (level != ThinkingLevel::Off).then_some(level)
}
