//! Errors of the library API. Their texts are the reference's, so applications and tests
//! can match on either the variant or the message.

use tern_ai::BoxError;

/// An error from [`Agent`](crate::Agent) methods or the low-level loop entry points.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// `prompt` while a run is active.
    #[error("Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.")]
    PromptWhileRunning,
    /// `continue` while a run is active.
    #[error("Agent is already processing. Wait for completion before continuing.")]
    ContinueWhileRunning,
    /// `reset` while a run is active.
    #[error("Agent is already processing. Wait for completion before resetting.")]
    ResetWhileRunning,
    /// `continue` on an empty or system-only transcript.
    #[error("No messages to continue from")]
    NothingToContinue,
    /// `continue` from a message the model cannot answer (an assistant tail with empty queues).
    #[error("Cannot continue from message role: {0}")]
    CannotContinueFrom(String),
    /// Low-level continuation with an empty context.
    #[error("Cannot continue: no messages in context")]
    EmptyContext,
    /// A hook or the stream function failed; the run ends with a failure message.
    #[error("{0}")]
    Failed(String),
}

impl AgentError {
    /// A run failure from any error.
    pub fn failed(e: impl std::fmt::Display) -> Self {
        AgentError::Failed(e.to_string())
    }
}

impl From<BoxError> for AgentError {
    fn from(e: BoxError) -> Self {
        AgentError::Failed(e.to_string())
    }
}
