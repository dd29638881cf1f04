//! The Pi-shaped way to build an [`Agent`](super::Agent): [`AgentOptions`] as a struct
//! literal, and the settings an agent keeps from it.

use std::sync::Arc;

use tern_ai::{BoxError, Message, Model, StreamFn, StreamOptions, ThinkingLevel};

use crate::hooks::Hooks;
use crate::queue::QueueMode;
use crate::tool::{AgentTool, ToolExecutionMode};

/// How an [`Agent`](super::Agent) is built, the reference's `AgentOptions`. Every field has a
/// default, so a struct literal ends with `..Default::default()`; the struct stays open to
/// such literals (it is not `#[non_exhaustive]`), which is why new settings reach it only
/// through defaulted fields. [`Agent::builder`](super::Agent::builder) is the Rust-shaped
/// alternative and cannot be built without a stream function.
///
/// ```
/// use std::sync::Arc;
/// use tern_agent::{Agent, AgentOptions, Hooks};
/// use tern_ai::faux::{FauxModel, FauxResponse};
/// let agent = Agent::new(AgentOptions {
///     system_prompt: Some("You are terse.".into()),
///     stream_fn: Some(Arc::new(FauxModel::new(vec![FauxResponse::text("Hi.")]))),
///     hooks: Hooks::default().finish_turn(|_turn, _signal| async { Ok(None) }),
///     ..Default::default()
/// });
/// assert_eq!(agent.system_prompt(), "You are terse.");
/// ```
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
    /// The stream function (a provider, or a scripted model). Without one every run fails
    /// with [`NO_STREAM_FN`](super::NO_STREAM_FN) as its error message.
    pub stream_fn: Option<Arc<dyn StreamFn>>,
    /// The hooks.
    pub hooks: Hooks,
    /// Parallel (default) or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
    /// Steering queue mode.
    pub steering_mode: QueueMode,
    /// Follow-up queue mode.
    pub follow_up_mode: QueueMode,
    /// Base request options (API key, session id, max tokens, ...).
    pub stream_options: StreamOptions,
}

/// What every run reads of the agent's configuration besides its state.
pub(super) struct Settings {
    pub(super) stream_fn: Arc<dyn StreamFn>,
    pub(super) tool_execution: ToolExecutionMode,
    // Hooks and request options, out of line: most agents set none of them, and inline they
    // would be most of an idle agent's footprint. `None` means all of them are defaults.
    pub(super) custom: Option<Box<CustomSettings>>,
}

#[derive(Default)]
pub(super) struct CustomSettings {
    pub(super) hooks: Hooks,
    pub(super) stream_options: StreamOptions,
}

impl CustomSettings {
    pub(super) fn new(hooks: Hooks, stream_options: StreamOptions) -> Option<Box<Self>> {
        let custom = CustomSettings {
            hooks,
            stream_options,
        };
        (!custom.is_default()).then(|| Box::new(custom))
    }

    // Whether these settings behave as the defaults do.
    fn is_default(&self) -> bool {
        self.hooks.is_empty() && self.stream_options.is_default()
    }
}

pub(super) fn default_model() -> Arc<Model> {
    static UNKNOWN: std::sync::OnceLock<Arc<Model>> = std::sync::OnceLock::new();
    UNKNOWN
        .get_or_init(|| Arc::new(Model::new("unknown", "unknown", "unknown", "")))
        .clone()
}

/// The error message of every run of an agent built without a stream function.
pub const NO_STREAM_FN: &str = "No stream function configured: set AgentOptions::stream_fn, or build the agent with Agent::builder(model, stream_fn).";

pub(super) fn no_stream_fn() -> Arc<dyn StreamFn> {
    Arc::new(
        |_: &Model, _: tern_ai::Context, _: &StreamOptions| -> Result<_, BoxError> {
            Err(NO_STREAM_FN.into())
        },
    )
}
