//! The conformance harness on the Temporal backend: runs one scenario (FORMAT.md) as a
//! session and returns the trace its caller sees. Shared by the `conformance_temporal`
//! example (the runner `check.sh` drives) and by the `conformance` test.
//!
//! Per scenario: a worker in this process whose model activity is the scenario's scripted
//! model and whose tools are its scripted tools, on a task queue of its own; a session
//! workflow started with the agent's initial state; the actions driven through the session
//! client; the events read back from the session. The scenario's parsing, the scripted model,
//! the normalization and the layout are the in-process runner's own modules.

#![allow(dead_code)]

#[path = "../../../tern-agent/examples/conformance/compare.rs"]
pub mod compare;
#[path = "../../../tern-agent/examples/conformance/hooks.rs"]
mod hooks;
#[path = "../../../tern-agent/examples/conformance/model.rs"]
mod model;
#[path = "../../../tern-agent/examples/conformance/norm.rs"]
pub mod norm;
#[path = "../../../tern-agent/examples/conformance/render.rs"]
pub mod render;
#[path = "scope.rs"]
pub mod scope;
#[path = "scripted.rs"]
mod scripted;
#[path = "../../../tern-agent/examples/conformance/spec.rs"]
pub mod spec;
#[path = "trace.rs"]
mod trace;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use temporalio_sdk::Runtime;
use tern_agent::AgentTool;
use tern_ai::transcript::{create_initial_system_message, get_current_system_prompt};
use tern_ai::{Content, ContentBlock, Message, ThinkingLevel, UserMessage};
use tern_temporal::hooks::HookName;
use tern_temporal::{
    build_worker, connect_client, AgentActivities, ClearQueues, RequestOptions, SessionHandle,
    SessionInput, SessionSettings, SessionState, Sessions, ToolSpec,
};

use model::{make_model, Script, ScriptedModel};
use norm::norm_of;
use spec::{ActionSpec, AgentSpec, Scenario};
use trace::Trace;

pub const FORMAT: &str = "pi-conformance-trace/1";
/// As the in-process runner's watchdog.
const WATCHDOG: Duration = Duration::from_secs(30);
/// How long a fresh dev server may take to serve its namespace.
const CONNECT_PATIENCE: Duration = Duration::from_secs(60);

/// Why a scenario produced no complete trace.
#[derive(Debug)]
pub enum RunError {
    /// The scenario is not valid (bad JSON shape, unknown tool id ...).
    Invalid(String),
    /// The scenario needs something a session does not offer (see `scope`).
    Unsupported(String),
    /// Temporal could not be reached or the worker failed.
    Backend(String),
    /// The scenario did not finish within 30 s; `partial` is the trace so far with
    /// `"incomplete": true`.
    Incomplete { partial: Value },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Invalid(m) => write!(f, "invalid scenario: {m}"),
            RunError::Unsupported(m) => write!(f, "not run through Temporal: {m}"),
            RunError::Backend(m) => write!(f, "Temporal: {m}"),
            RunError::Incomplete { .. } => write!(
                f,
                "runner: scenario did not finish within {} s",
                WATCHDOG.as_secs()
            ),
        }
    }
}

/// A Temporal server to run scenarios on, and the Temporal runtime of this process's workers.
pub struct Backend {
    address: String,
    runtime: Runtime,
    runs: AtomicU64,
}

impl Backend {
    /// Connects to the server at `address` (retrying while a fresh one starts). Call inside
    /// a multi-threaded tokio runtime.
    pub async fn connect(address: &str) -> Result<Backend, RunError> {
        let deadline = Instant::now() + CONNECT_PATIENCE;
        loop {
            match Sessions::connect(address, "default", "conformance-probe").await {
                Ok(_) => break,
                Err(e) if Instant::now() > deadline => {
                    return Err(RunError::Backend(e.to_string()))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let runtime = tern_temporal::runtime().map_err(|e| RunError::Backend(e.to_string()))?;
        Ok(Backend {
            address: address.to_string(),
            runtime,
            runs: AtomicU64::new(0),
        })
    }

    /// Runs a scenario and returns its trace (`{"format","trace","final"}`).
    pub async fn run(&self, scenario: &Value) -> Result<Value, RunError> {
        let spec = Arc::new(spec::parse(scenario).map_err(RunError::Invalid)?);
        if let Some(why) = scope::unsupported(&spec) {
            return Err(RunError::Unsupported(why));
        }
        let Some(agent) = spec.agent.as_ref() else {
            return Err(RunError::Unsupported("no agent".into()));
        };
        let trace = Arc::new(Trace::default());
        let tools = scripted::tools(&spec, &agent.tools, &trace).map_err(RunError::Invalid)?;
        // The worker hosts every tool of the scenario: a `set` may name any of them.
        let ids: Vec<String> = spec.tools.keys().cloned().collect();
        let hosted = scripted::tools(&spec, &ids, &trace).map_err(RunError::Invalid)?;
        // What a `set` changed: the runner's actions and the worker's snapshots read it.
        let now = Arc::new(parking_lot::Mutex::new(Current {
            tools: agent.tools.clone(),
            model: agent.model.clone().unwrap_or_else(placeholder_model_id),
            thinking_level: agent.thinking_level,
        }));
        let side = Arc::new(scripted::WorkerSide::new(
            spec.clone(),
            trace.clone(),
            now.clone(),
        ));
        let script: Weak<dyn Script> = Arc::downgrade(&side) as Weak<dyn Script>;
        // The scenario's hooks run on the worker; the session names them.
        let hooks = hooks::build_hooks(&Arc::downgrade(&side));
        let mut input = session_input(agent, &tools, HookName::set_in(&hooks));
        input.listen = scripted::listened(&spec);
        // A triggered snapshot reads the whole state in the worker's listener.
        input.listen_full_state = spec
            .actions
            .iter()
            .any(|a| a.at.is_some() && a.do_ == "snapshot");
        let activities = AgentActivities::new(Arc::new(ScriptedModel { script }), hosted)
            .with_hooks(hooks)
            .with_listener(scripted::listener(&side));

        // A task queue (and session id) of its own: another run's worker never takes it.
        let run = self.runs.fetch_add(1, Ordering::Relaxed);
        let queue = format!(
            "conformance-{}-{}-{run}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        );
        let backend = |e: tern_temporal::Error| RunError::Backend(e.to_string());
        let client = connect_client(&self.address, "default")
            .await
            .map_err(backend)?;
        let mut worker =
            build_worker(&self.runtime, client, &queue, activities).map_err(backend)?;
        let shutdown = worker.shutdown_handle();
        let sessions = Sessions::connect(&self.address, "default", &queue)
            .await
            .map_err(backend)?;
        let local = tokio::task::LocalSet::new();
        let out = local
            .run_until(async {
                let running = tokio::task::spawn_local(async move { worker.run().await });
                let out = async {
                    let session = sessions.start(&queue, input).await.map_err(backend)?;
                    let driven =
                        tokio::time::timeout(WATCHDOG, drive(&spec, &now, &session, &trace, &side))
                            .await;
                    // The workflow ends with the scenario; its result adds nothing.
                    let _ = tokio::time::timeout(Duration::from_secs(5), session.close()).await;
                    match driven {
                        Ok(result) => result,
                        Err(_) => Err(RunError::Incomplete {
                            partial: json!({
                                "format": FORMAT,
                                "trace": trace.entries(),
                                "incomplete": true,
                            }),
                        }),
                    }
                }
                .await;
                shutdown();
                let _ = running.await;
                out
            })
            .await;
        if let Some(fatal) = side.fatal() {
            return Err(RunError::Invalid(fatal));
        }
        out
    }
}

/// The model of an Agent built without one (its placeholder).
fn placeholder_model() -> tern_ai::Model {
    tern_agent::Agent::new(Default::default()).state().model
}

fn placeholder_model_id() -> String {
    placeholder_model().id
}

/// The session's start: the Agent's initial state (its leading system message made from
/// the system prompt and the tools, as `Agent::new` makes it).
fn session_input(agent: &AgentSpec, tools: &[AgentTool], hooks: Vec<HookName>) -> SessionInput {
    let mut messages = agent.messages.clone();
    if !matches!(messages.first(), Some(Message::System(_))) {
        let declarations: Vec<_> = tools.iter().map(|t| t.declaration().clone()).collect();
        if let Some(first) =
            create_initial_system_message(agent.system_prompt.as_deref(), &declarations)
        {
            messages.insert(0, Message::from(first));
        }
    }
    // Without a model, the Agent's placeholder.
    let model = match agent.model.as_deref() {
        Some(id) => make_model(id),
        None => placeholder_model(),
    };
    SessionInput {
        model,
        stream_options: RequestOptions::of(&agent.options.stream_options()),
        reasoning: (agent.thinking_level != ThinkingLevel::Off).then_some(agent.thinking_level),
        messages,
        tools: tools.iter().map(ToolSpec::of).collect(),
        hooks,
        listen: Vec::new(),
        listen_full_state: false,
        tool_execution: agent.tool_execution.unwrap_or_default(),
        steering_mode: agent.steering_mode.unwrap_or_default(),
        follow_up_mode: agent.follow_up_mode.unwrap_or_default(),
        event_offset: 0,
        events: Vec::new(),
        live: Vec::new(),
    }
}

/// The actions, in order (the scope admits sequential prompts only), then the final state.
async fn drive(
    spec: &Scenario,
    now: &parking_lot::Mutex<Current>,
    session: &SessionHandle,
    trace: &Arc<Trace>,
    side: &Arc<scripted::WorkerSide>,
) -> Result<Value, RunError> {
    let backend = |e: tern_temporal::Error| RunError::Backend(e.to_string());
    let mut offset = 0;
    // Triggered actions run in the worker's listener.
    for a in spec.actions.iter().filter(|a| a.at.is_none()) {
        trace.here(json!({"kind": "action", "do": a.do_}));
        let done = match a.do_.as_str() {
            "prompt" => session.prompt(prompt_messages(a)).await,
            "continue" => session.continue_run().await,
            "steer" => session.queue_steer(vec![queued_message(a)]).await,
            "followUp" => session.queue_follow_up(vec![queued_message(a)]).await,
            "reset" => session.reset().await.inspect(|()| trace.reset()),
            "abort" => session.abort_run().await,
            "set" => {
                let settings = settings_of(spec, a)?;
                let done = session.set(settings).await;
                if done.is_ok() {
                    now.lock().apply(a);
                }
                done
            }
            "clearSteeringQueue" | "clearFollowUpQueue" | "clearAllQueues" => {
                let which = ClearQueues {
                    steering: a.do_ != "clearFollowUpQueue",
                    follow_up: a.do_ != "clearSteeringQueue",
                };
                session.clear_queues(which).await
            }
            // The listeners live on the worker.
            "unsubscribe" => {
                side.unsubscribe(&a.name).map_err(RunError::Invalid)?;
                Ok(())
            }
            // A library function, not a session operation: called here, with the
            // scenario's tools and the worker's hooks, as an embedder calls it.
            "runToolCall" => {
                let Some(c) = &a.tool_call else {
                    return Err(RunError::Invalid("runToolCall needs toolCall".into()));
                };
                let tools = scripted::tools(spec, a.tools.as_deref().unwrap_or(&[]), trace)
                    .map_err(RunError::Invalid)?;
                let signal = tokio_util::sync::CancellationToken::new();
                if a.aborted {
                    signal.cancel();
                }
                let hooks = hooks::build_hooks(&Arc::downgrade(side));
                let outcome = scripted::run_tool_call(c, tools, hooks, signal, trace).await;
                trace.here(norm::outcome_entry(Value::Null, &outcome));
                Ok(())
            }
            "snapshot" => {
                let state = state_now(spec, now, session, trace).await?;
                trace.here(json!({"kind": "snapshot", "state": state}));
                Ok(())
            }
            "waitForIdle" => {
                offset = session
                    .follow(offset, |e| trace.event(e))
                    .await
                    .map_err(backend)?;
                trace.here(json!({"kind": "idle"}));
                Ok(())
            }
            other => return Err(RunError::Unsupported(format!("the action {other}"))),
        };
        match done {
            // A run started: its events, until it ends. (Queued messages start none.)
            Ok(()) if matches!(a.do_.as_str(), "prompt" | "continue") => {
                offset = session
                    .follow(offset, |e| trace.event(e))
                    .await
                    .map_err(backend)?;
            }
            Ok(()) => {}
            // The session's refusal, in the Agent's words.
            Err(tern_temporal::Error::Rejected { reason, .. }) => {
                trace.here(json!({"kind": "error", "do": a.do_, "message": reason}))
            }
            Err(e) => return Err(backend(e)),
        }
    }
    if spec.settle_ms > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(spec.settle_ms / 1000.0)).await;
    }
    let fin = state_now(spec, now, session, trace).await?;
    let mut out = Map::new();
    out.insert("format".into(), json!(FORMAT));
    out.insert("trace".into(), Value::Array(trace.entries()));
    out.insert("final".into(), fin);
    Ok(Value::Object(out))
}

/// What the Agent's state would say of the settings a `set` changes (the session keeps
/// them for its runs; the runner tracks them to print the state).
pub struct Current {
    tools: Vec<String>,
    model: String,
    thinking_level: ThinkingLevel,
}

impl Current {
    fn apply(&mut self, a: &ActionSpec) {
        if let Some(ids) = &a.tools {
            self.tools = ids.clone();
        }
        if let Some(id) = &a.model {
            self.model = id.clone();
        }
        if let Some(level) = a.thinking_level {
            self.thinking_level = level;
        }
    }
}

/// A `set` action as the session's settings.
fn settings_of(spec: &Scenario, a: &ActionSpec) -> Result<SessionSettings, RunError> {
    let tools = match &a.tools {
        None => None,
        Some(ids) => Some(
            ids.iter()
                .map(|id| {
                    spec.tools
                        .get(id)
                        .map(|t| tool_spec(t))
                        .ok_or_else(|| RunError::Invalid(format!("unknown tool {id}")))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(SessionSettings {
        tools,
        messages: a.messages.clone(),
        model: a.model.as_deref().map(make_model),
        thinking_level: a.thinking_level,
        tool_execution: a.tool_execution,
        steering_mode: a.steering_mode,
        follow_up_mode: a.follow_up_mode,
    })
}

/// A tool's declaration and policies as the workflow sees them.
fn tool_spec(def: &spec::ToolDef) -> ToolSpec {
    ToolSpec {
        name: def.name.clone(),
        description: def.description.clone(),
        parameters: def.parameters.clone(),
        constrained_sampling: None,
        execution_mode: def.execution_mode,
        replay: Default::default(),
    }
}

/// The Agent's state as the runner prints it (`final`, `snapshot`), from the session's.
async fn state_now(
    spec: &Scenario,
    now: &parking_lot::Mutex<Current>,
    session: &SessionHandle,
    trace: &Trace,
) -> Result<Value, RunError> {
    let state = session
        .state()
        .await
        .map_err(|e| RunError::Backend(e.to_string()))?;
    // Between runs nothing streams; the session keeps no partial message.
    let now = now.lock();
    Ok(state_json(spec, &now, &state, None, trace.error_message()))
}

/// The Agent's state (FORMAT.md 2.4) from a session's state, the message it streams, its
/// error and what a `set` changed.
pub fn state_json(
    spec: &Scenario,
    now: &Current,
    state: &SessionState,
    streaming: Option<&Message>,
    error_message: Option<String>,
) -> Value {
    let mut fin = Map::new();
    fin.insert("messages".into(), norm_of(&state.messages));
    fin.insert(
        "systemPrompt".into(),
        json!(get_current_system_prompt(&state.messages)),
    );
    fin.insert("model".into(), json!(now.model));
    fin.insert("thinkingLevel".into(), json!(now.thinking_level.as_str()));
    let tools: Vec<&str> = now
        .tools
        .iter()
        .filter_map(|id| spec.tools.get(id).map(|t| t.name.as_str()))
        .collect();
    fin.insert("tools".into(), json!(tools));
    fin.insert("isStreaming".into(), json!(state.is_streaming));
    fin.insert(
        "streamingMessage".into(),
        streaming.map_or(Value::Null, norm_of),
    );
    fin.insert("pendingToolCalls".into(), json!(state.pending_tool_calls));
    fin.insert("errorMessage".into(), json!(error_message));
    fin.insert(
        "queued".into(),
        json!({
            "steering": norm_of(&state.steering_queue),
            "followUp": norm_of(&state.follow_up_queue),
        }),
    );
    Value::Object(fin)
}

/// A prompt's messages: its `messages`, or its `text` as `Agent.prompt(string)` builds it.
fn prompt_messages(a: &ActionSpec) -> Vec<Message> {
    match &a.messages {
        Some(m) => m.clone(),
        None => vec![text_message(a)],
    }
}

/// A steering or follow-up message: its `message`, or its `text` as a user message.
fn queued_message(a: &ActionSpec) -> Message {
    a.message.clone().unwrap_or_else(|| text_message(a))
}

fn text_message(a: &ActionSpec) -> Message {
    Message::from(UserMessage {
        content: Content::Blocks(vec![ContentBlock::text(a.text.clone().unwrap_or_default())]),
        timestamp: 0,
        extra: None,
    })
}
