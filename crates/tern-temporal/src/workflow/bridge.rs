//! The seam between tern-agent's loop and the workflow: the loop's `StreamFn` and tools only
//! queue requests here; the workflow's driver turns each into an activity and hands the
//! result back. The loop's types must be `Send`, the workflow's are not (`Rc` inside), so
//! nothing of Temporal reaches the loop.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::channel::oneshot;
use parking_lot::Mutex;
use serde_json::Value;
use tern_agent::{AgentTool, ToolCallInput, ToolResult};
use tern_ai::{
    assistant_stream, AssistantMessageEventSender, BoxError, ContentBlock, Context, Model,
    StreamFn, StreamOptions, StreamStart, ToolCall,
};

use super::session::Shared;
use crate::hooks::{HookAnswer, HookCall, HookName, HookReply, HookRequest};
use crate::stream_record::ModelReply;
use crate::wire::{ModelRequest, RequestOptions, ToolReply, ToolRequest, ToolSpec};

/// One request of the loop, with where its answer goes.
pub(crate) enum Request {
    Model {
        request: Box<ModelRequest>,
        reply: AssistantMessageEventSender,
        /// Where the response's prepared arguments go (before its events reach the loop).
        prepared: Prepared,
    },
    Tool {
        request: Box<ToolRequest>,
        spec: Box<ToolSpec>,
        reply: oneshot::Sender<ToolReply>,
    },
    Hook {
        request: Box<HookRequest>,
        reply: oneshot::Sender<HookAnswer>,
    },
}

/// The arguments the worker's tools prepared for the calls of the last response: the loop's
/// tools hand them to the loop (their `prepare_arguments`), which validates them.
#[derive(Clone, Default)]
pub(crate) struct Prepared(Arc<Mutex<Vec<PreparedArgs>>>);

struct PreparedArgs {
    name: String,
    raw: Value,
    fingerprint: Option<String>,
    arguments: Value,
}

impl Prepared {
    /// Keeps `reply`'s prepared arguments (replacing the last response's).
    pub(crate) fn set(&self, reply: &ModelReply) {
        let calls: Vec<&ToolCall> = reply
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall(c) => Some(&**c),
                _ => None,
            })
            .collect();
        *self.0.lock() = reply
            .prepared
            .iter()
            .filter_map(|p| {
                let call = calls.iter().find(|c| c.id == p.tool_call_id)?;
                Some(PreparedArgs {
                    name: call.name.to_string(),
                    raw: call.arguments.clone(),
                    fingerprint: p.fingerprint.clone(),
                    arguments: p.arguments.clone(),
                })
            })
            .collect();
    }

    /// The prepared arguments of a call of the tool `name` (of that fingerprint) with `raw`
    /// arguments, `None` when its tool left them unchanged.
    fn of(&self, name: &str, fingerprint: &str, raw: &Value) -> Option<Value> {
        self.0
            .lock()
            .iter()
            .find(|p| {
                p.name == name
                    && p.raw == *raw
                    && p.fingerprint.as_deref().is_none_or(|f| f == fingerprint)
            })
            .map(|p| p.arguments.clone())
    }
}

/// The queue of requests the driver has not started yet.
pub(crate) struct Bridge {
    requests: Mutex<VecDeque<Request>>,
    prepared: Prepared,
    /// The workflow was cancelled: the session ends, no new activity starts.
    ending: std::sync::atomic::AtomicBool,
    /// The session, whose event count each request records.
    session: Shared,
}

impl Bridge {
    pub(crate) fn new(session: Shared) -> Self {
        Bridge {
            requests: Mutex::default(),
            prepared: Prepared::default(),
            ending: Default::default(),
            session,
        }
    }

    /// Notes that the workflow was cancelled (the session ends with its run).
    pub(crate) fn set_ending(&self) {
        self.ending.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the workflow was cancelled.
    pub(crate) fn is_ending(&self) -> bool {
        self.ending.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn published(&self) -> usize {
        self.session.0.lock().published()
    }

    fn live(&self) -> Vec<crate::wire::LiveTarget> {
        self.session.0.lock().settings.live.clone()
    }

    pub(crate) fn take(&self) -> Vec<Request> {
        self.requests.lock().drain(..).collect()
    }

    fn push(&self, r: Request) {
        self.requests.lock().push_back(r);
    }

    /// Queues a hook call; its reply (a hook that threw is an `Err` with its text). What the
    /// hook queued for its session is in the session's queues before the loop sees the reply.
    pub(crate) fn hook(
        &self,
        call: HookCall,
    ) -> impl std::future::Future<Output = Result<HookReply, BoxError>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        self.push(Request::Hook {
            request: Box::new(HookRequest {
                call,
                event_offset: self.published(),
            }),
            reply,
        });
        let session = self.session.clone();
        async move {
            let answer = answer.await.map(|a| {
                session.queue(a.queued);
                a.reply
            });
            match answer {
                Ok(HookReply::Threw { message }) => Err(message.into()),
                Ok(reply) => Ok(reply),
                // The driver dropped the call: the workflow is ending.
                Err(_) => Err("Operation aborted".into()),
            }
        }
    }
}

/// The loop's stream function: a model request becomes a `model` activity.
pub(crate) struct BridgedModel(pub(crate) Arc<Bridge>);

impl StreamFn for BridgedModel {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        let (reply, stream) = assistant_stream();
        if options.signal.is_cancelled() && self.0.is_ending() {
            // The session ends: no activity; aborted, as a provider answers.
            crate::stream_record::replay(&reply, crate::stream_record::aborted(model));
            return Ok(stream);
        }
        self.0.push(Request::Model {
            request: Box::new(ModelRequest {
                model: model.clone(),
                messages: context.messages.to_vec(),
                reasoning: options.reasoning,
                // An aborted run still asks (the provider answers it), as a local one does.
                aborted: options.signal.is_cancelled(),
                options: RequestOptions::of(options),
                event_offset: self.0.published(),
                live: self.0.live(),
            }),
            reply,
            prepared: self.0.prepared.clone(),
        });
        Ok(stream)
    }
}

/// A tool whose execution is a `tool` activity; its declaration is validated in the loop
/// like any other tool's.
pub(crate) fn bridged_tool(spec: &ToolSpec, bridge: Arc<Bridge>) -> AgentTool {
    let owned = spec.clone();
    let fingerprint = spec.fingerprint();
    let prepared = bridge.prepared.clone();
    let (prepare_name, prepare_fingerprint) = (spec.name.clone(), fingerprint.clone());
    let tool = AgentTool::dynamic(
        &spec.name,
        &spec.description,
        spec.parameters.clone(),
        move |input: ToolCallInput| {
            let (reply, answer) = oneshot::channel();
            let (session_tools, session_hooks) = {
                let s = bridge.session.0.lock();
                let tools = s.tool_fingerprints.clone();
                let hooks =
                    s.settings.hooks.iter().copied().filter(|h| {
                        matches!(h, HookName::BeforeToolCall | HookName::AfterToolCall)
                    });
                (tools, hooks.collect())
            };
            bridge.push(Request::Tool {
                request: Box::new(ToolRequest {
                    tool_call_id: input.tool_call_id.to_string(),
                    name: owned.name.clone(),
                    args: input.args.into_value(),
                    fingerprint: Some(fingerprint.clone()),
                    session_tools,
                    session_hooks,
                    event_offset: bridge.published(),
                }),
                spec: Box::new(owned.clone()),
                reply,
            });
            let updater = input.updater;
            let session = bridge.session.clone();
            async move {
                let mut answer = answer.await;
                if let Ok(
                    ToolReply::Returned {
                        updates, queued, ..
                    }
                    | ToolReply::Failed {
                        updates, queued, ..
                    },
                ) = &mut answer
                {
                    // Queued and reported before `execute` settles, as the tool did them.
                    session.queue(std::mem::take(queued));
                    updates.iter().for_each(|u| updater.update(u.clone()));
                }
                match answer {
                    Ok(ToolReply::Returned { result, .. }) => Ok(*result),
                    Ok(ToolReply::Failed { message, .. }) => Err(message.into()),
                    // The driver dropped the call: the workflow is ending.
                    Err(_) => Ok(ToolResult::error("Operation aborted")),
                }
            }
        },
    )
    .with_replay(spec.replay)
    // The worker ran the tool's `prepareArguments` when the response came (the code is
    // there); the loop asks here, before it validates.
    .with_prepare_arguments(move |raw| prepared.of(&prepare_name, &prepare_fingerprint, raw));
    let tool = spec.declare(tool);
    match spec.execution_mode {
        Some(mode) => tool.with_execution_mode(mode),
        None => tool,
    }
}
