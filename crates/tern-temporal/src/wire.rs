//! What crosses Temporal: the workflow's input and output, and each activity's input and
//! output. Everything here lands in the workflow history, so it stays compact.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_agent::{QueueMode, Replay, ToolExecutionMode, ToolResult};
use tern_ai::{Message, Model, StreamOptions, ThinkingBudgets, ThinkingLevel};

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
    /// Its constrained-sampling preference (strict JSON-schema sampling), as declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
    /// `sequential` makes the whole batch sequential, as in the core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ToolExecutionMode>,
    /// `never`: one attempt, an interrupted call ends with "outcome unknown"; `safe`: retried.
    #[serde(default)]
    pub replay: Replay,
}

impl ToolSpec {
    /// `tool` with this spec's constrained sampling, as the session declared it.
    pub(crate) fn declare(&self, tool: tern_agent::AgentTool) -> tern_agent::AgentTool {
        match &self.constrained_sampling {
            Some(config) => tool.with_constrained_sampling(config.clone()),
            None => tool,
        }
    }

    /// A short, stable digest of the declaration (name, description, parameters): how a
    /// workflow names the version of a tool it calls, so that a worker hosting two tools of
    /// one name (a tool redefined between runs) runs the one the session declared.
    ///
    /// ```
    /// use serde_json::json;
    /// let t = tern_agent::AgentTool::dynamic("read", "Read.", json!({"type": "object"}),
    ///     |_c| async { Ok(tern_agent::ToolResult::text("ok")) });
    /// let spec = tern_temporal::ToolSpec::of(&t);
    /// assert_eq!(spec.fingerprint(), tern_temporal::wire::fingerprint_of(&t));
    /// ```
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.name, &self.description, &self.parameters)
    }

    /// The declaration and policies of a tool the caller also runs locally.
    pub fn of(tool: &tern_agent::AgentTool) -> Self {
        ToolSpec {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            parameters: tool.parameters().clone(),
            constrained_sampling: tool.declaration().constrained_sampling.clone(),
            execution_mode: tool.execution_mode(),
            replay: tool.replay(),
        }
    }
}

/// [`ToolSpec::fingerprint`] of a tool's declaration.
pub fn fingerprint_of(tool: &tern_agent::AgentTool) -> String {
    fingerprint(tool.name(), tool.description(), tool.parameters())
}

/// [`ToolSpec::fingerprint`] of a declaration's parts.
pub(crate) fn fingerprint(name: &str, description: &str, parameters: &Value) -> String {
    // FNV-1a over the compact JSON: the same on every worker and build (std's hashers
    // promise no stability across releases).
    let text = serde_json::to_string(&(name, description, parameters)).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// The tool of `tools` a call of `name` runs: the only one of that name (whatever its
/// declaration: a worker whose tool's description changed still serves older sessions),
/// or, when several share it, the one whose declaration has `fingerprint`.
pub(crate) fn find_tool<'a>(
    tools: &'a [tern_agent::AgentTool],
    name: &str,
    fingerprint: Option<&str>,
) -> Option<&'a tern_agent::AgentTool> {
    if !is_redefined(tools, name) {
        return tools.iter().find(|t| t.name() == name);
    }
    let fingerprint = fingerprint?;
    tools
        .iter()
        .filter(|t| t.name() == name)
        .find(|t| fingerprint_of(t) == fingerprint)
}

/// Whether `tools` has several tools named `name`.
pub(crate) fn is_redefined(tools: &[tern_agent::AgentTool], name: &str) -> bool {
    tools.iter().filter(|t| t.name() == name).nth(1).is_some()
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
    /// Whether the listener's state carries the transcript, the streamed message and the
    /// queues too ([`ListenerState::full`](crate::hooks::ListenerState::full)): each call
    /// then carries the whole transcript (not into the history: a local activity's input is
    /// not recorded), so ask for it only when the listener reads them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub listen_full_state: bool,
    /// The options of every model request (the Agent's `streamOptions`, without key and
    /// headers).
    #[serde(default, skip_serializing_if = "RequestOptions::is_empty")]
    pub stream_options: RequestOptions,
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
    /// so subscribers' offsets stay valid): the offset of the first of `events`.
    #[serde(default)]
    pub event_offset: usize,
    /// A continue-as-new carries the events of the run before it, so that a follower that
    /// had not read them all yet still can (empty for a new session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// Where the workers send each model request's events while it streams
    /// ([`LiveListener`](crate::live::LiveListener)s; see [`crate::live`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<LiveTarget>,
}

/// A live subscriber: where it listens, and the token its workers must present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveTarget {
    /// `HOST:PORT` of the subscriber's [`LiveListener`](crate::live::LiveListener).
    pub address: String,
    /// The listener's token: a connection that does not send it is closed, so another
    /// process that finds the port cannot put events in the subscriber's stream.
    pub token: String,
}

/// A `live` update: a subscriber added or removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSubscription {
    /// The subscriber.
    pub target: LiveTarget,
    /// Added (`true`) or removed.
    pub subscribe: bool,
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

impl ClearQueues {
    /// Whether it clears nothing.
    pub fn is_none(&self) -> bool {
        !self.steering && !self.follow_up
    }
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
    /// The run was aborted before the loop made the request: the worker's stream function
    /// gets a cancelled signal (a provider answers such a request as aborted), as a local
    /// loop's does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
    /// The request options the session's loop passed (session id, token limit, ...).
    #[serde(default, skip_serializing_if = "RequestOptions::is_empty")]
    pub options: RequestOptions,
    /// How many events the session had published when the loop made this request: where
    /// in the session's event log the request's own events begin.
    #[serde(default)]
    pub event_offset: usize,
    /// The session's live subscribers: the worker sends them the request's events while
    /// it streams ([`crate::live`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live: Vec<LiveTarget>,
}

/// The options of a session's model requests that cross to the worker (the Agent's
/// `streamOptions`): everything but the API key and the headers, which may carry
/// credentials and would land in the history (workers hold their keys:
/// [`AgentActivities::with_api_key`](crate::AgentActivities::with_api_key)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestOptions {
    /// Session id for cache-aware backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature (the worker's, when unset here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Cap on server-requested retry delays, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u64>,
    /// Per-level thinking budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// Request timeout in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Longest silence allowed from the server, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Maximum client-side retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Tool choice sent to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Prompt-cache retention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_retention: Option<String>,
    /// Request metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

impl RequestOptions {
    /// The options of `o` that cross (not its key, headers, reasoning or signal).
    ///
    /// ```
    /// use tern_temporal::wire::RequestOptions;
    /// let o = tern_ai::StreamOptions { session_id: Some("s-1".into()), ..Default::default() };
    /// let crossed = RequestOptions::of(&o);
    /// assert_eq!(crossed.session_id.as_deref(), Some("s-1"));
    /// assert_eq!(crossed.stream_options().session_id.as_deref(), Some("s-1"));
    /// ```
    pub fn of(o: &StreamOptions) -> Self {
        RequestOptions {
            session_id: o.session_id.clone(),
            max_tokens: o.max_tokens,
            temperature: o.temperature,
            max_retry_delay_ms: o.max_retry_delay_ms,
            thinking_budgets: o.thinking_budgets.clone(),
            timeout_ms: o.timeout_ms,
            idle_timeout_ms: o.idle_timeout_ms,
            max_retries: o.max_retries,
            tool_choice: o.tool_choice.clone(),
            cache_retention: o.cache_retention.clone(),
            metadata: o.metadata.clone(),
        }
    }

    /// These options as stream options (no key, headers, reasoning or signal).
    pub fn stream_options(&self) -> StreamOptions {
        StreamOptions {
            session_id: self.session_id.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            max_retry_delay_ms: self.max_retry_delay_ms,
            thinking_budgets: self.thinking_budgets.clone(),
            timeout_ms: self.timeout_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            max_retries: self.max_retries,
            tool_choice: self.tool_choice.clone(),
            cache_retention: self.cache_retention.clone(),
            metadata: self.metadata.clone(),
            ..StreamOptions::default()
        }
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        *self == RequestOptions::default()
    }
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
    /// The called tool's [`ToolSpec::fingerprint`] (which of several tools of one name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The session's tools when the call started, as [`ToolSpec::fingerprint`]s: the tools
    /// a call the tool makes itself sees
    /// ([`activities::session_tools`](crate::activities::session_tools)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_tools: Vec<String>,
    /// The session's tool-call hooks (`before_tool_call`, `after_tool_call`), which apply to
    /// a call the tool makes itself
    /// ([`activities::session_hooks`](crate::activities::session_hooks)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_hooks: Vec<HookName>,
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
        /// The input it queued for its session ([`hooks::steer`](crate::hooks::steer),
        /// [`hooks::follow_up`](crate::hooks::follow_up)).
        #[serde(default, skip_serializing_if = "QueuedInput::is_empty")]
        queued: QueuedInput,
    },
    /// The tool failed; the loop turns the message into an error result.
    Failed {
        /// The error's text.
        message: String,
        /// The partial results it reported before failing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        updates: Vec<ToolResult>,
        /// The input it queued for its session.
        #[serde(default, skip_serializing_if = "QueuedInput::is_empty")]
        queued: QueuedInput,
    },
}

/// Steering and follow-up messages a hook or tool on a worker queued for its own session,
/// and the queues it cleared before (they travel with its answer and are applied before
/// the loop sees it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedInput {
    /// The session's queues it emptied (before queuing the messages below).
    #[serde(default, skip_serializing_if = "ClearQueues::is_none")]
    pub clear: ClearQueues,
    /// Steering messages, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steer: Vec<Message>,
    /// Follow-up messages, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow_up: Vec<Message>,
    /// Whether it aborted the session's run (`Agent::abort`), before the loop goes on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abort: bool,
}

impl QueuedInput {
    /// Whether it did nothing to the session.
    pub fn is_empty(&self) -> bool {
        !self.abort && self.clear.is_none() && self.steer.is_empty() && self.follow_up.is_empty()
    }
}

impl ToolReply {
    /// A failure without partial results (the call never ran, or ended unknown).
    pub fn failed(message: impl Into<String>) -> Self {
        ToolReply::Failed {
            message: message.into(),
            updates: Vec::new(),
            queued: QueuedInput::default(),
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
    /// The offset of the first event the session still keeps: a continue-as-new leaves the
    /// events before the last run behind, and a follower further behind skips to here.
    #[serde(default)]
    pub first_event: usize,
    /// The model the next request goes to.
    #[serde(default)]
    pub model: Model,
    /// The reasoning level of the next request (`off`: none).
    #[serde(default)]
    pub thinking_level: ThinkingLevel,
    /// How the steering queue is drained.
    #[serde(default)]
    pub steering_mode: QueueMode,
    /// How the follow-up queue is drained.
    #[serde(default)]
    pub follow_up_mode: QueueMode,
}
