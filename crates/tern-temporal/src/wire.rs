//! What crosses Temporal: the workflow's input and output, and each activity's input and
//! output. Everything here lands in the workflow history, so it stays compact.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_agent::{QueueMode, Replay, ToolExecutionMode, ToolResult};
use tern_ai::{Message, Model, ThinkingLevel};

use crate::hooks::HookName;

/// A tool as the workflow sees it: its declaration and policies. The worker holds the code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by (and the worker looks it up by).
    pub name: String,
    /// What the model reads about it.
    pub description: String,
    /// The JSON schema of its arguments (validated in the workflow, as the loop does).
    pub parameters: Value,
    /// `sequential` makes the whole batch sequential, as in the core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ToolExecutionMode>,
    /// `never`: one attempt, an interrupted call ends with "outcome unknown"; `safe`: retried.
    #[serde(default)]
    pub replay: Replay,
}

impl ToolSpec {
    /// The declaration and policies of a tool the caller also runs locally.
    pub fn of(tool: &tern_agent::AgentTool) -> Self {
        ToolSpec {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            parameters: tool.parameters().clone(),
            execution_mode: tool.execution_mode(),
            replay: tool.replay(),
        }
    }
}

/// How a session's workflow starts (and, carrying its transcript, how it continues as new).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInput {
    /// The model every request goes to (the worker's provider config resolves it).
    pub model: Model,
    /// The requested reasoning level (`None`: off).
    #[serde(default)]
    pub reasoning: Option<ThinkingLevel>,
    /// The transcript so far (empty for a new session).
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The hooks the loop calls (each on the worker, as a local activity; the workers must
    /// host them: `AgentActivities::with_hooks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookName>,
    /// The event kinds (`message_end`, ...) the workers' listener is called for, each
    /// awaited by the loop (`AgentActivities::with_listener`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listen: Vec<String>,
    /// How a batch of calls runs.
    #[serde(default)]
    pub tool_execution: ToolExecutionMode,
    /// How many queued steering messages the loop takes per poll.
    #[serde(default)]
    pub steering_mode: QueueMode,
    /// How many queued follow-up messages the loop takes per poll.
    #[serde(default)]
    pub follow_up_mode: QueueMode,
    /// Events already published by earlier runs of this session (kept across continue-as-new,
    /// so subscribers' offsets stay valid).
    #[serde(default)]
    pub event_offset: usize,
}

/// What a `set` changes for the session's next runs (`Agent::set_*`); each field set
/// replaces the current value, the others stay. The running loop keeps its own.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    /// The tools (their workers must host them, by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSpec>>,
    /// The whole transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    /// The model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// The reasoning level (`off`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// How a batch of calls runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_execution: Option<ToolExecutionMode>,
    /// How the steering queue is drained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering_mode: Option<QueueMode>,
    /// How the follow-up queue is drained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_mode: Option<QueueMode>,
}

/// Which queues a `clear_queues` empties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearQueues {
    /// The steering queue.
    pub steering: bool,
    /// The follow-up queue.
    pub follow_up: bool,
}

/// What a session's workflow returns when it is closed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOutput {
    /// The whole transcript.
    pub messages: Vec<Message>,
}

/// The `model` activity's input: one request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    /// The model.
    pub model: Model,
    /// The request messages (after the loop's conversion).
    pub messages: Vec<Message>,
    /// The reasoning level.
    #[serde(default)]
    pub reasoning: Option<ThinkingLevel>,
    /// How many events the session had published when the loop made this request: where
    /// in the session's event log the request's own events begin.
    #[serde(default)]
    pub event_offset: usize,
}

/// The `tool` activity's input: one call.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequest {
    /// The call's id (from the assistant message).
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The validated arguments.
    pub args: Value,
    /// How many events the session had published when the loop started this call.
    #[serde(default)]
    pub event_offset: usize,
}

/// The `tool` activity's output: what the tool returned, or the error it failed with (a tool
/// error is an outcome, not an activity failure: it is never retried).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ToolReply {
    /// The tool returned a result.
    Returned {
        /// The result.
        result: Box<ToolResult>,
        /// The partial results it reported before returning, in order (the workflow hands
        /// them to the loop, which publishes them as `tool_execution_update` events).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        updates: Vec<ToolResult>,
    },
    /// The tool failed; the loop turns the message into an error result.
    Failed {
        /// The error's text.
        message: String,
        /// The partial results it reported before failing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        updates: Vec<ToolResult>,
    },
}

impl ToolReply {
    /// A failure without partial results (the call never ran, or ended unknown).
    pub fn failed(message: impl Into<String>) -> Self {
        ToolReply::Failed {
            message: message.into(),
            updates: Vec::new(),
        }
    }
}

/// A message sent to a session (prompt, steer, follow-up).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMessages {
    /// The messages, in order.
    pub messages: Vec<Message>,
}

/// What the `state` query returns (the Agent's state, as the core names it).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// The transcript, committed messages only.
    pub messages: Vec<Message>,
    /// Whether a run is in progress.
    pub is_streaming: bool,
    /// Ids of the tool calls running now.
    pub pending_tool_calls: Vec<String>,
    /// Steering messages not yet delivered.
    pub steering_queue: Vec<Message>,
    /// Follow-up messages not yet delivered.
    pub follow_up_queue: Vec<Message>,
    /// How many events the session has published (the next offset to ask for).
    pub event_count: usize,
}
