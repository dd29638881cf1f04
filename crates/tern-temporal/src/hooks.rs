//! Hooks on a worker: the session workflow's loop calls each hook it was started with as a
//! local activity (`AgentActivities::hook`) on the worker running its workflow task; the
//! worker runs the embedder's [`Hooks`] there. What crosses (this module's types) is the
//! hook's context and its answer; the answer lands in the workflow history (a local
//! activity's marker), so a replay reads it back and never calls the hook again. The
//! worker's event listener ([`EventListener`]) is called the same way, for each event of
//! the kinds a session listens to.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_agent::hooks::{
    AfterToolCallContext, AfterToolCallResult, BeforeToolCallContext, BeforeToolCallResult,
    PrepareRequestContext, RequestUpdate, TurnContext, TurnDecision, TurnUpdate,
};
use tern_agent::{AgentContext, AgentTool, Hooks, ToolCallInput, ToolResult};
use tern_ai::{AssistantMessage, Message, Model, ThinkingLevel, ToolCall, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use crate::wire::{find_tool, ClearQueues, QueuedInput, ToolSpec};

/// A hook a session's loop calls. The session names the ones it uses
/// ([`SessionInput::hooks`](crate::SessionInput::hooks)); the workers on its task queue host
/// them ([`AgentActivities::with_hooks`](crate::AgentActivities::with_hooks)). `get_api_key`
/// is not one: keys stay on the worker (see
/// [`AgentActivities::with_api_key`](crate::AgentActivities::with_api_key)), never in a
/// history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookName {
    /// `convert_to_llm`.
    ConvertToLlm,
    /// `transform_context`.
    TransformContext,
    /// `before_tool_call`.
    BeforeToolCall,
    /// `after_tool_call`.
    AfterToolCall,
    /// `finish_turn`.
    FinishTurn,
    /// `prepare_request`.
    PrepareRequest,
    /// `prepare_next_turn`.
    PrepareNextTurn,
}

impl HookName {
    /// Every hook a session can call.
    pub const ALL: [HookName; 7] = [
        HookName::ConvertToLlm,
        HookName::TransformContext,
        HookName::BeforeToolCall,
        HookName::AfterToolCall,
        HookName::FinishTurn,
        HookName::PrepareRequest,
        HookName::PrepareNextTurn,
    ];

    /// The hooks set in `hooks` that a session can call.
    ///
    /// ```
    /// use tern_temporal::hooks::HookName;
    /// let hooks = tern_agent::Hooks::default().finish_turn(|_, _| async { Ok(None) });
    /// assert_eq!(HookName::set_in(&hooks), vec![HookName::FinishTurn]);
    /// ```
    pub fn set_in(hooks: &Hooks) -> Vec<HookName> {
        HookName::ALL
            .into_iter()
            .filter(|name| name.is_set(hooks))
            .collect()
    }

    fn is_set(self, hooks: &Hooks) -> bool {
        match self {
            HookName::ConvertToLlm => hooks.convert_to_llm.is_some(),
            HookName::TransformContext => hooks.transform_context.is_some(),
            HookName::BeforeToolCall => hooks.before_tool_call.is_some(),
            HookName::AfterToolCall => hooks.after_tool_call.is_some(),
            HookName::FinishTurn => hooks.finish_turn.is_some(),
            HookName::PrepareRequest => hooks.prepare_request.is_some(),
            HookName::PrepareNextTurn => hooks.prepare_next_turn.is_some(),
        }
    }
}

/// The loop's context as a hook call carries it: the messages and the tools' declarations
/// (the worker hands the hook its own tools of those names).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireContext {
    /// The messages.
    pub messages: Vec<Message>,
    /// The tools.
    pub tools: Vec<ToolSpec>,
}

impl WireContext {
    /// The context as it crosses.
    pub fn of(context: &AgentContext) -> Self {
        WireContext {
            messages: context.messages.to_vec(),
            tools: context.tools.iter().map(ToolSpec::of).collect(),
        }
    }
}

/// A completed turn (`finish_turn`, `prepare_next_turn`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireTurn {
    /// The turn's assistant message.
    pub message: Message,
    /// Its tool results (tool result messages).
    pub tool_results: Vec<Message>,
    /// The run's context.
    pub context: WireContext,
    /// The messages the run added so far.
    pub new_messages: Vec<Message>,
}

/// One hook call, with its context.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "hook")]
pub enum HookCall {
    /// `convert_to_llm`.
    ConvertToLlm {
        /// The messages to convert.
        messages: Vec<Message>,
    },
    /// `transform_context`.
    TransformContext {
        /// The messages to transform.
        messages: Vec<Message>,
    },
    /// `before_tool_call`.
    #[serde(rename_all = "camelCase")]
    BeforeToolCall {
        /// The assistant message holding the call.
        assistant_message: Message,
        /// The call as the model sent it.
        tool_call: ToolCall,
        /// The validated arguments.
        args: Value,
        /// The run's context.
        context: WireContext,
    },
    /// `after_tool_call`.
    #[serde(rename_all = "camelCase")]
    AfterToolCall {
        /// The assistant message holding the call.
        assistant_message: Message,
        /// The call as the model sent it.
        tool_call: ToolCall,
        /// The validated arguments.
        args: Value,
        /// The executed result.
        result: Box<ToolResult>,
        /// Its error flag.
        is_error: bool,
        /// The run's context.
        context: WireContext,
    },
    /// `finish_turn`.
    FinishTurn {
        /// The turn.
        turn: Box<WireTurn>,
    },
    /// `prepare_request`.
    #[serde(rename_all = "camelCase")]
    PrepareRequest {
        /// The context the request will be built from.
        context: WireContext,
        /// The model about to be asked (boxed: the largest field of any call).
        model: Box<Model>,
        /// The thinking level about to be requested.
        thinking_level: ThinkingLevel,
    },
    /// `prepare_next_turn`.
    PrepareNextTurn {
        /// The turn.
        turn: Box<WireTurn>,
    },
    /// An event for the worker's listener
    /// ([`AgentActivities::with_listener`](crate::AgentActivities::with_listener)).
    Event {
        /// The event, as a local run prints it.
        event: Value,
        /// The session's state once the event is applied.
        state: ListenerState,
    },
}

impl HookCall {
    /// The hook (or `listener`) this call is for, as the loop names it.
    pub fn name(&self) -> &'static str {
        match self {
            HookCall::ConvertToLlm { .. } => "convert_to_llm",
            HookCall::TransformContext { .. } => "transform_context",
            HookCall::BeforeToolCall { .. } => "before_tool_call",
            HookCall::AfterToolCall { .. } => "after_tool_call",
            HookCall::FinishTurn { .. } => "finish_turn",
            HookCall::PrepareRequest { .. } => "prepare_request",
            HookCall::PrepareNextTurn { .. } => "prepare_next_turn",
            HookCall::Event { .. } => "listener",
        }
    }
}

/// A session's state as a listener sees it with an event (the Agent's state inside its
/// event callback).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerState {
    /// How many messages the transcript has.
    pub message_count: usize,
    /// The role of its last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_role: Option<String>,
    /// Whether a run is in progress.
    pub is_streaming: bool,
    /// The role of the message being streamed (between its start and its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_role: Option<String>,
    /// Ids of the tool calls running.
    #[serde(default)]
    pub pending_tool_calls: Vec<String>,
    /// The error of the run's last failed turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The rest of the state, for sessions that ask for it
    /// ([`SessionInput::listen_full_state`](crate::SessionInput::listen_full_state)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<Box<FullState>>,
}

/// The Agent's state beyond [`ListenerState`]'s summary: its transcript, the message being
/// streamed and the queues.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FullState {
    /// The transcript.
    pub messages: Vec<Message>,
    /// The message being streamed, as far as it is (at its `message_start` and
    /// `message_update`s; the Agent's `streamingMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming_message: Option<Message>,
    /// Steering messages not yet delivered.
    #[serde(default)]
    pub steering_queue: Vec<Message>,
    /// Follow-up messages not yet delivered.
    #[serde(default)]
    pub follow_up_queue: Vec<Message>,
}

/// A worker's event listener: called, and awaited by the loop, for each event of the kinds
/// a session listens to ([`SessionInput::listen`](crate::SessionInput::listen)), as the
/// Agent awaits its subscribers.
pub type EventListener =
    Arc<dyn Fn(Value, ListenerState) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The `hook` activity's input.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRequest {
    /// The call.
    pub call: HookCall,
    /// How many events the session had published when the loop called the hook.
    #[serde(default)]
    pub event_offset: usize,
}

/// `prepare_request`'s and `prepare_next_turn`'s answer (`RequestUpdate`, `TurnUpdate`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireUpdate {
    /// Replacement context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<WireContext>,
    /// Messages to emit before the next request (`prepare_next_turn` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    /// Replacement model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// Replacement thinking level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
}

/// The `hook` activity's output: the hook's reply, and what it did to its own session's
/// queues ([`steer`], [`follow_up`], [`clear_queues`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookAnswer {
    /// The hook's reply.
    pub reply: HookReply,
    /// What it queued for its session (and which queues it cleared first).
    #[serde(flatten)]
    pub queued: QueuedInput,
}

impl HookAnswer {
    /// A reply that queued nothing.
    pub fn only(reply: HookReply) -> Self {
        HookAnswer {
            reply,
            queued: QueuedInput::default(),
        }
    }
}

tokio::task_local! {
    /// The messages the running hook or tool call queued for its session.
    static QUEUED: parking_lot::Mutex<QueuedInput>;
}

/// Runs `work` (a hook or tool call), collecting what it queued for its session.
pub(crate) async fn collecting<F: std::future::Future>(work: F) -> (F::Output, QueuedInput) {
    QUEUED
        .scope(parking_lot::Mutex::default(), async {
            let out = work.await;
            (out, QUEUED.with(|q| std::mem::take(&mut *q.lock())))
        })
        .await
}

/// Queues steering messages for the session whose hook or tool is running, as a local
/// hook or tool calls `Agent::steer`: they are in the session's steering queue when the
/// call's answer reaches the loop. Returns `false` (and queues nothing) outside a hook or
/// tool call on a worker.
///
/// ```
/// assert!(!tern_temporal::hooks::steer(vec![tern_ai::Message::user_text("stop")]));
/// ```
pub fn steer(messages: Vec<Message>) -> bool {
    QUEUED.try_with(|q| q.lock().steer.extend(messages)).is_ok()
}

/// Queues follow-up messages for the session whose hook or tool is running (see [`steer`]).
pub fn follow_up(messages: Vec<Message>) -> bool {
    QUEUED
        .try_with(|q| q.lock().follow_up.extend(messages))
        .is_ok()
}

/// Aborts the run of the session whose hook or tool is running, as a local one calls
/// `Agent::abort`: the run's signal is cancelled when the call's answer reaches the loop,
/// before the loop goes on. Returns `false` outside a hook or tool call on a worker.
///
/// ```
/// assert!(!tern_temporal::hooks::abort());
/// ```
pub fn abort() -> bool {
    QUEUED.try_with(|q| q.lock().abort = true).is_ok()
}

/// Empties the steering and/or follow-up queue of the session whose hook or tool is
/// running, as a local one calls `Agent::clear_*_queue` (what the call queued before is
/// dropped with it). Returns `false` outside a hook or tool call on a worker.
///
/// ```
/// let all = tern_temporal::ClearQueues { steering: true, follow_up: true };
/// assert!(!tern_temporal::hooks::clear_queues(all));
/// ```
pub fn clear_queues(which: ClearQueues) -> bool {
    QUEUED
        .try_with(|q| {
            let mut q = q.lock();
            if which.steering {
                q.steer.clear();
                q.clear.steering = true;
            }
            if which.follow_up {
                q.follow_up.clear();
                q.clear.follow_up = true;
            }
        })
        .is_ok()
}

/// The hook's reply: its answer, or the error it failed with (a hook's error is its
/// outcome, as in a local run: never retried).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum HookReply {
    /// The hook failed ("threw") with this text.
    Threw {
        /// The error's text.
        message: String,
    },
    /// `convert_to_llm` / `transform_context`: the messages, `None` when the hook gave back
    /// its input unchanged (kept out of the history).
    Messages {
        /// The new messages.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<Vec<Message>>,
    },
    /// `before_tool_call`.
    Before {
        /// Its result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<BeforeToolCallResult>,
    },
    /// `after_tool_call`.
    After {
        /// Its result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<AfterToolCallResult>,
    },
    /// `finish_turn`.
    Finish {
        /// Its decision (`None`: the loop decides).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<TurnDecision>,
    },
    /// The listener heard the event.
    Heard,
    /// `prepare_request` / `prepare_next_turn`.
    Update {
        /// Its update.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        update: Option<WireUpdate>,
    },
}

/// The worker's side of one hook call: runs the embedder's hook on the call's context (the
/// worker's own tools under the declared names) and serializes its answer, with what it
/// queued for its session. `signal` is the hook's abort signal.
pub(crate) async fn answer(
    hooks: &Hooks,
    listener: Option<&EventListener>,
    tools: &[AgentTool],
    call: HookCall,
    signal: CancellationToken,
) -> HookAnswer {
    let name = call.name();
    let (ran, queued) = collecting(async {
        match call {
            HookCall::Event { event, state } => match listener {
                Some(listen) => {
                    listen(event, state).await;
                    Ok(Some(HookReply::Heard))
                }
                None => Ok(None),
            },
            call => run(hooks, tools, call, signal).await,
        }
    })
    .await;
    let reply = match ran {
        Ok(Some(reply)) => reply,
        Ok(None) => HookReply::Threw {
            message: format!("The hook {name} is not installed on this worker"),
        },
        Err(e) => HookReply::Threw {
            message: e.to_string(),
        },
    };
    HookAnswer { reply, queued }
}

/// `Ok(None)`: the hook is not set.
async fn run(
    hooks: &Hooks,
    tools: &[AgentTool],
    call: HookCall,
    signal: CancellationToken,
) -> Result<Option<HookReply>, tern_ai::BoxError> {
    let context = |c: WireContext| local_context(c, tools);
    Ok(Some(match call {
        HookCall::ConvertToLlm { messages } => {
            let Some(hook) = &hooks.convert_to_llm else {
                return Ok(None);
            };
            messages_reply(messages, |m| hook(m)).await?
        }
        HookCall::TransformContext { messages } => {
            let Some(hook) = &hooks.transform_context else {
                return Ok(None);
            };
            messages_reply(messages, |m| hook(m, signal.clone())).await?
        }
        HookCall::BeforeToolCall {
            assistant_message,
            tool_call,
            args,
            context: c,
        } => {
            let Some(hook) = &hooks.before_tool_call else {
                return Ok(None);
            };
            let ctx = BeforeToolCallContext::new(
                assistant_of(assistant_message)?,
                tool_call,
                args,
                context(c),
            );
            HookReply::Before {
                result: hook(ctx, signal).await?,
            }
        }
        HookCall::AfterToolCall {
            assistant_message,
            tool_call,
            args,
            result,
            is_error,
            context: c,
        } => {
            let Some(hook) = &hooks.after_tool_call else {
                return Ok(None);
            };
            let ctx = AfterToolCallContext::new(
                assistant_of(assistant_message)?,
                tool_call,
                args,
                *result,
                is_error,
                context(c),
            );
            HookReply::After {
                result: hook(ctx, signal).await?,
            }
        }
        HookCall::FinishTurn { turn } => {
            let Some(hook) = &hooks.finish_turn else {
                return Ok(None);
            };
            HookReply::Finish {
                decision: hook(turn_of(*turn, tools)?, signal).await?,
            }
        }
        HookCall::PrepareRequest {
            context: c,
            model,
            thinking_level,
        } => {
            let Some(hook) = &hooks.prepare_request else {
                return Ok(None);
            };
            let ctx = PrepareRequestContext::new(context(c), *model, thinking_level);
            let update = hook(ctx, signal).await?.map(|u| WireUpdate {
                context: u.context.as_ref().map(WireContext::of),
                messages: None,
                model: u.model,
                thinking_level: u.thinking_level,
            });
            HookReply::Update { update }
        }
        HookCall::PrepareNextTurn { turn } => {
            let Some(hook) = &hooks.prepare_next_turn else {
                return Ok(None);
            };
            let update = hook(turn_of(*turn, tools)?, signal)
                .await?
                .map(|u| WireUpdate {
                    context: u.context.as_ref().map(WireContext::of),
                    messages: u.messages,
                    model: u.model,
                    thinking_level: u.thinking_level,
                });
            HookReply::Update { update }
        }
        // Answered by `answer`.
        HookCall::Event { .. } => return Ok(None),
    }))
}

/// Runs a messages hook; an answer equal to its input is sent back as "unchanged".
async fn messages_reply<F, Fut>(
    messages: Vec<Message>,
    hook: F,
) -> Result<HookReply, tern_ai::BoxError>
where
    F: FnOnce(Arc<Vec<Message>>) -> Fut,
    Fut: std::future::Future<Output = Result<Arc<Vec<Message>>, tern_ai::BoxError>>,
{
    let input = Arc::new(messages);
    let out = hook(input.clone()).await?;
    let unchanged = Arc::ptr_eq(&input, &out) || *input == *out;
    Ok(HookReply::Messages {
        messages: (!unchanged).then(|| out.to_vec()),
    })
}

fn assistant_of(m: Message) -> Result<Arc<AssistantMessage>, tern_ai::BoxError> {
    match m {
        Message::Assistant(a) => Ok(a),
        other => Err(format!("a hook call's assistant message has role {}", other.role()).into()),
    }
}

fn turn_of(turn: WireTurn, tools: &[AgentTool]) -> Result<TurnContext, tern_ai::BoxError> {
    let results = turn
        .tool_results
        .into_iter()
        .map(|m| match m {
            Message::ToolResult(r) => Ok(r),
            other => Err(format!("a turn's tool result has role {}", other.role())),
        })
        .collect::<Result<Vec<Arc<ToolResultMessage>>, String>>()?;
    Ok(TurnContext::new(
        assistant_of(turn.message)?,
        results,
        local_context(turn.context, tools),
        turn.new_messages,
    ))
}

/// The context a hook sees on the worker: the worker's tools of the declared names (a
/// declared tool the worker lacks is its declaration, whose execution fails).
fn local_context(c: WireContext, tools: &[AgentTool]) -> AgentContext {
    let tools = c
        .tools
        .iter()
        .map(
            |spec| match find_tool(tools, &spec.name, Some(&spec.fingerprint())) {
                Some(tool) => tool.clone(),
                None => absent_tool(spec),
            },
        )
        .collect();
    AgentContext::new(c.messages, tools)
}

fn absent_tool(spec: &ToolSpec) -> AgentTool {
    let name = spec.name.clone();
    let tool = AgentTool::dynamic(
        &spec.name,
        &spec.description,
        spec.parameters.clone(),
        move |_input: ToolCallInput| {
            let message = format!("Tool {name} is not available on this worker");
            async move { Err(message.into()) }
        },
    );
    spec.declare(tool).with_replay(spec.replay)
}

/// `prepare_request`'s answer in the loop's type; `tools` makes the loop's tools of a
/// replacement context's declarations.
pub(crate) fn request_update(
    u: WireUpdate,
    tools: &dyn Fn(&[ToolSpec]) -> Vec<AgentTool>,
) -> RequestUpdate {
    RequestUpdate {
        context: u
            .context
            .map(|c| AgentContext::new(c.messages, tools(&c.tools))),
        model: u.model,
        thinking_level: u.thinking_level,
    }
}

/// `prepare_next_turn`'s answer in the loop's type (see [`request_update`]).
pub(crate) fn turn_update(
    u: WireUpdate,
    tools: &dyn Fn(&[ToolSpec]) -> Vec<AgentTool>,
) -> TurnUpdate {
    TurnUpdate {
        context: u
            .context
            .map(|c| AgentContext::new(c.messages, tools(&c.tools))),
        messages: u.messages,
        model: u.model,
        thinking_level: u.thinking_level,
    }
}
