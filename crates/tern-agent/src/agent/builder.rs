//! [`AgentBuilder`]: the Rust-shaped way to build an [`Agent`], from the two things every
//! agent needs (a model and a stream function) plus whatever else it sets.

use std::sync::Arc;

use tern_ai::{Message, Model, StreamFn, StreamOptions, ThinkingLevel};

use super::{Agent, AgentOptions};
use crate::hooks::Hooks;
use crate::queue::QueueMode;
use crate::tool::{AgentTool, ToolExecutionMode};

// Setters that assign one option each: `name(arg: Type) => options.path = value;`.
macro_rules! setters {
    ($(
        $(#[$doc:meta])*
        $name:ident($arg:ident: $ty:ty) => $($field:ident).+ = $value:expr;
    )*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.options.$($field).+ = $value;
            self
        }
    )*};
}

/// Builds an [`Agent`]; made by [`Agent::builder`]. Hooks are plain async closures, one
/// setter each (`before_tool_call`, `after_tool_call`, `finish_turn`, `prepare_request`,
/// `prepare_next_turn`, `transform_context`, `convert_to_llm`, `get_api_key`).
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tern_agent::hooks::BeforeToolCallResult;
/// use tern_agent::{Agent, AgentTool, QueueMode, ToolResult};
/// use tern_ai::faux::{FauxModel, FauxResponse};
/// use tern_ai::{Model, ThinkingLevel};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Path { path: String }
///
/// let read = AgentTool::typed("read", "Read a file.", |p: Path, _| async move {
///     Ok(ToolResult::text(format!("contents of {}", p.path)))
/// });
/// let agent = Agent::builder(Model::default(), FauxModel::new(vec![FauxResponse::text("ok")]))
///     .system_prompt("You read files.")
///     .tool(read)
///     .thinking_level(ThinkingLevel::Low)
///     .steering_mode(QueueMode::All)
///     .session_id("session-1")
///     .before_tool_call(|ctx, _signal| async move {
///         Ok(ctx.args["path"].as_str().is_some_and(|p| p.starts_with('/'))
///             .then(|| BeforeToolCallResult::block("absolute paths are not allowed")))
///     })
///     .build();
/// assert_eq!(agent.state().tools.len(), 1);
/// assert_eq!(agent.steering_mode(), QueueMode::All);
/// ```
#[must_use = "an agent builder does nothing until `build` is called"]
pub struct AgentBuilder {
    options: AgentOptions,
}

impl AgentBuilder {
    pub(super) fn new(model: Arc<Model>, stream_fn: Arc<dyn StreamFn>) -> Self {
        AgentBuilder {
            options: AgentOptions {
                model: Some(model),
                stream_fn: Some(stream_fn),
                ..AgentOptions::default()
            },
        }
    }

    setters! {
        /// Sets the system prompt.
        system_prompt(prompt: impl Into<String>) => system_prompt = Some(prompt.into());
        /// Sets the initial transcript (a leading system message in it replaces the one the
        /// system prompt and tools would create).
        messages(messages: Vec<Message>) => messages = messages;
        /// Sets the requested thinking level.
        thinking_level(level: ThinkingLevel) => thinking_level = level;
        /// Sets how the calls of one assistant message run.
        tool_execution(mode: ToolExecutionMode) => tool_execution = mode;
        /// Sets how queued steering messages are delivered.
        steering_mode(mode: QueueMode) => steering_mode = mode;
        /// Sets how queued follow-up messages are delivered.
        follow_up_mode(mode: QueueMode) => follow_up_mode = mode;
        /// Sets the session id sent with every request (providers use it for caching).
        session_id(id: impl Into<String>) => stream_options.session_id = Some(id.into());
        /// Sets the base options of every request (API key, max tokens, headers, ...). The
        /// run's signal and the thinking level are set per request.
        stream_options(options: StreamOptions) => stream_options = options;
        /// Replaces all hooks at once.
        hooks(hooks: Hooks) => hooks = hooks;
    }

    /// Adds one executable tool.
    pub fn tool(mut self, tool: AgentTool) -> Self {
        self.options.tools.push(tool);
        self
    }

    /// Adds executable tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = AgentTool>) -> Self {
        self.options.tools.extend(tools);
        self
    }

    /// Changes the hooks; the hook setters of this builder go through here.
    pub(crate) fn map_hooks(mut self, f: impl FnOnce(Hooks) -> Hooks) -> Self {
        self.options.hooks = f(std::mem::take(&mut self.options.hooks));
        self
    }

    /// Builds the agent.
    pub fn build(self) -> Agent {
        Agent::new(self.options)
    }
}
