//! The activities a worker runs: `model` (one model request through the worker's stream
//! function), `tool` (one call of one of the worker's tools) and `hook` (one call of one of
//! the worker's hooks, run as a local activity).
//!
//! `model` and `tool` heartbeat every second while they run, so that when a worker dies another one
//! retries within the workflow's heartbeat timeout rather than its close timeout.

// The SDK's macros add an undocumented constant per handler (its definition); the
// handlers themselves are documented.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tern_agent::{AgentTool, Hooks, ToolCallInput, ToolUpdater};
use tern_ai::{Context, StreamFn, StreamOptions};
use tokio_util::sync::CancellationToken;

use crate::hooks::{EventListener, HookAnswer, HookName, HookRequest};
use crate::stream_record::PreparedCall;
use crate::stream_record::{ModelOutcome, Recorder};
use crate::wire::{find_tool, is_redefined, ModelRequest, ToolReply, ToolRequest};

pub use tern_durable::run::interrupted_text;

const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

tokio::task_local! {
    /// The call this task runs.
    static CALL: CallInfo;
    /// The session's tools and tool-call hooks, inside a tool call.
    static SESSION: SessionTools;
}

/// What a tool running on a worker sees of its session, for the calls it makes itself.
struct SessionTools {
    activities: Arc<AgentActivities>,
    tools: Vec<String>,
    hooks: Vec<HookName>,
}

/// The session's tools as this worker hosts them (the tools of the declarations the session
/// had when the running call started, in its order; a declaration the worker does not host
/// is left out), when read inside a tool's `execute` on a worker; `None` elsewhere. With
/// [`session_hooks`], what a tool that calls other tools through
/// [`tern_agent::run_tool_call`] passes, as a local tool passes the Agent's tools and hooks.
///
/// ```
/// assert!(tern_temporal::activities::session_tools().is_none());
/// ```
pub fn session_tools() -> Option<Vec<AgentTool>> {
    SESSION
        .try_with(|s| {
            let hosted: Vec<(String, &AgentTool)> = s
                .activities
                .tools
                .iter()
                .map(|t| (crate::wire::fingerprint_of(t), t))
                .collect();
            s.tools
                .iter()
                .filter_map(|f| hosted.iter().find(|(h, _)| h == f))
                .map(|(_, t)| (*t).clone())
                .collect()
        })
        .ok()
}

/// The worker's `before_tool_call` and `after_tool_call` hooks that the running call's
/// session uses (see [`session_tools`]); `None` outside a tool call on a worker.
///
/// ```
/// assert!(tern_temporal::activities::session_hooks().is_none());
/// ```
pub fn session_hooks() -> Option<Hooks> {
    SESSION
        .try_with(|s| {
            let mut hooks = Hooks::default();
            if s.hooks.contains(&HookName::BeforeToolCall) {
                hooks.before_tool_call = s.activities.hooks.before_tool_call.clone();
            }
            if s.hooks.contains(&HookName::AfterToolCall) {
                hooks.after_tool_call = s.activities.hooks.after_tool_call.clone();
            }
            hooks
        })
        .ok()
}

/// Which call of which session an activity runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallInfo {
    /// The session (its workflow id).
    pub session: String,
    /// How many events the session had published when the loop made the call: the call's
    /// own events (deltas, tool updates, its end) come after this offset.
    pub event_offset: usize,
    /// When the workflow scheduled this attempt of the call (the calls of one batch share
    /// it; a worker may start them later).
    pub scheduled: Option<std::time::SystemTime>,
}

/// The call running on this worker, when read inside a tool's `execute` or a stream
/// function's `stream` (the synchronous part, before the stream is returned) in an
/// activity; `None` elsewhere.
///
/// ```
/// assert_eq!(tern_temporal::activities::current_call(), None);
/// ```
pub fn current_call() -> Option<CallInfo> {
    CALL.try_with(CallInfo::clone).ok()
}

/// The session (its workflow id) whose call is running, when read inside a tool's
/// `execute` on a worker; `None` elsewhere. A tool that keeps per-session state (a working
/// directory, an effect log) keys it by this.
///
/// ```
/// assert_eq!(tern_temporal::activities::current_session(), None);
/// ```
pub fn current_session() -> Option<String> {
    current_call().map(|c| c.session)
}

fn call_info(ctx: &ActivityContext, event_offset: usize) -> CallInfo {
    CallInfo {
        session: ctx.info().workflow_id.clone().unwrap_or_default(),
        event_offset,
        scheduled: ctx.info().current_attempt_scheduled_time,
    }
}

/// The worker's side of a session: its provider (a stream function) and its tools.
pub struct AgentActivities {
    stream_fn: Arc<dyn StreamFn>,
    tools: Vec<AgentTool>,
    hooks: Hooks,
    listener: Option<EventListener>,
    api_key: Option<String>,
    temperature: Option<f64>,
}

impl AgentActivities {
    /// Activities answering model requests with `stream_fn` and tool calls with `tools`.
    pub fn new(stream_fn: Arc<dyn StreamFn>, tools: Vec<AgentTool>) -> Self {
        AgentActivities {
            stream_fn,
            tools,
            hooks: Hooks::default(),
            listener: None,
            api_key: None,
            temperature: None,
        }
    }

    /// The key model requests use (kept on the worker: never in a workflow's history);
    /// without one, providers read their environment variable.
    pub fn with_api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// The hooks this worker runs for the sessions that name them
    /// ([`SessionInput::hooks`](crate::SessionInput::hooks)); each call is a local activity,
    /// so a hook may do I/O and keep state. Its answer is recorded in the session's history:
    /// a replay reads it back and does not call the hook again.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The listener this worker calls with the events of the kinds a session listens to
    /// ([`SessionInput::listen`](crate::SessionInput::listen)), with the session's state;
    /// the loop awaits it (a local activity per event, as the hooks).
    pub fn with_listener(mut self, listener: EventListener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// The sampling temperature of model requests.
    pub fn with_temperature(mut self, temperature: Option<f64>) -> Self {
        self.temperature = temperature;
        self
    }
}

impl AgentActivities {
    /// The arguments this worker's tools prepare for `message`'s calls (their
    /// `prepareArguments`, run here because the tool's code is here; the loop, in the
    /// workflow, validates them). When several tools share a call's name, each prepares,
    /// and the loop takes the answer of the one it declared.
    fn prepare(&self, message: &tern_ai::AssistantMessage) -> Vec<PreparedCall> {
        let calls = message.content.iter().filter_map(|block| match block {
            tern_ai::ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        });
        let mut prepared = Vec::new();
        for call in calls {
            let redefined = is_redefined(&self.tools, &call.name);
            for tool in self.tools.iter().filter(|t| t.name() == call.name) {
                if let Some(arguments) = tool.prepare_arguments(&call.arguments) {
                    prepared.push(PreparedCall {
                        tool_call_id: call.id.to_string(),
                        fingerprint: redefined.then(|| crate::wire::fingerprint_of(tool)),
                        arguments,
                    });
                }
            }
        }
        prepared
    }
}

/// Runs `work`, heartbeating every second until it ends; stops early (returning `None`) when
/// the activity is cancelled.
async fn heartbeating<T>(
    ctx: &ActivityContext,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    let mut work = std::pin::pin!(work);
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tokio::select! {
            out = &mut work => return Some(out),
            _ = ctx.cancelled() => return None,
            _ = tick.tick() => {
                // A heartbeat that fails to serialize `()` cannot happen; a lost one only
                // shortens the time another worker waits.
                let _ = ctx.record_heartbeat(()).await;
            }
        }
    }
}

#[activities]
impl AgentActivities {
    /// One model request: streams the response on this worker and returns the final message
    /// with the record of its stream (a provider error is an error message, and a stream
    /// function that refuses the request is a [`ModelOutcome::Refused`], not a failed
    /// activity).
    #[activity]
    pub async fn model(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: ModelRequest,
    ) -> Result<ModelOutcome, ActivityError> {
        let signal = CancellationToken::new();
        if request.aborted {
            signal.cancel();
        }
        let options = StreamOptions {
            reasoning: request.reasoning,
            api_key: self.api_key.clone(),
            temperature: request.options.temperature.or(self.temperature),
            signal: signal.clone(),
            ..request.options.stream_options()
        };
        let call = call_info(&ctx, request.event_offset);
        let started = CALL.sync_scope(call.clone(), || {
            self.stream_fn
                .stream(&request.model, Context::new(request.messages), &options)
        });
        let mut stream = match started {
            Ok(stream) => stream,
            Err(e) => {
                return Ok(ModelOutcome::Refused {
                    message: e.to_string(),
                })
            }
        };
        let mut recorder = Recorder::default();
        let live = crate::live::Publisher::start(
            &request.live,
            &call.session,
            request.event_offset,
            ctx.info().attempt,
        );
        let drained = heartbeating(&ctx, async {
            while let Some(event) = stream.next().await {
                recorder.record(&event);
                if let Some(live) = &live {
                    live.publish(&event, recorder.start());
                }
            }
        })
        .await;
        if drained.is_none() {
            signal.cancel();
            return Err(ActivityError::cancelled());
        }
        if let Some(failure) = stream.failure() {
            // What a local run sees too: the run fails with it. Retrying would ask anew.
            return Ok(recorder.broke(failure.to_string()));
        }
        let done = stream.result().await;
        let mut reply = recorder.finish(&done);
        reply.prepared = self.prepare(&reply.message);
        Ok(ModelOutcome::Streamed(Box::new(reply)))
    }

    /// One hook call (a local activity): runs the worker's hook on the call's context. A
    /// hook's error is its answer ([`HookReply::Threw`](crate::hooks::HookReply::Threw)),
    /// not a failed activity.
    #[activity]
    pub async fn hook(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: HookRequest,
    ) -> Result<HookAnswer, ActivityError> {
        let signal = CancellationToken::new();
        let call = call_info(&ctx, request.event_offset);
        let answer = crate::hooks::answer(
            &self.hooks,
            self.listener.as_ref(),
            &self.tools,
            request.call,
            signal.clone(),
        );
        tokio::select! {
            reply = CALL.scope(call, answer) => Ok(reply),
            _ = ctx.cancelled() => {
                signal.cancel();
                Err(ActivityError::cancelled())
            }
        }
    }

    /// One tool call: runs the named tool with the arguments the workflow validated.
    #[activity]
    pub async fn tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: ToolRequest,
    ) -> Result<ToolReply, ActivityError> {
        let Some(tool) = find_tool(&self.tools, &request.name, request.fingerprint.as_deref())
        else {
            return Ok(ToolReply::failed(format!(
                "Tool {} is not available on this worker",
                request.name
            )));
        };
        let signal = CancellationToken::new();
        // Partial results go back with the result (the loop publishes them in order, before
        // the call's end); those sent after `execute` settled are dropped, as the loop does.
        let updates = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let collected = updates.clone();
        let updater = ToolUpdater::new(move |partial| collected.lock().push(partial));
        let input = ToolCallInput {
            tool_call_id: tern_ai::Name::unique(&request.tool_call_id),
            args: request.args.into(),
            signal: signal.clone(),
            updater: updater.clone(),
        };
        let call = call_info(&ctx, request.event_offset);
        let session = SessionTools {
            activities: self.clone(),
            tools: request.session_tools,
            hooks: request.session_hooks,
        };
        let execute = SESSION.scope(session, CALL.scope(call, tool.execute(input)));
        let (outcome, queued) = crate::hooks::collecting(heartbeating(&ctx, execute)).await;
        updater.close();
        let updates = std::mem::take(&mut *updates.lock());
        match outcome {
            None => {
                signal.cancel();
                Err(ActivityError::cancelled())
            }
            Some(Ok(result)) => Ok(ToolReply::Returned {
                result: Box::new(result),
                updates,
                queued,
            }),
            Some(Err(e)) => Ok(ToolReply::Failed {
                message: e.to_string(),
                updates,
                queued,
            }),
        }
    }
}
