//! The worker's side of a scenario: the scripted model (tern-agent's, fed from here) and
//! the scripted tools. Their trace entries are placed at the event offset of the call they
//! run in.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_agent::{
    AgentContext, AgentTool, RunToolCallOptions, ToolCallInput, ToolCallOutcome, ToolOutput,
    ToolResult,
};
use tern_ai::{AssistantMessage, ContentBlock, StopReason, ToolCall, Usage};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use tern_temporal::hooks::{EventListener, ListenerState};
use tern_temporal::SessionState;

use super::hooks::{HookCounts, HookHost};
use super::model::Script;
use super::norm::{js_template, norm, norm_of, outcome_entry, strict_equal, truthy};
use super::spec::{ActionSpec, CallSpec, HooksSpec, ResponseSpec, Scenario, Step, ToolDef};
use super::trace::Trace;

/// The worker's side of a scenario: its scripted responses, one per model request, its
/// hooks' state, and the trace they record to.
pub struct WorkerSide {
    spec: Arc<Scenario>,
    taken: Mutex<u64>,
    counts: HookCounts,
    trace: Arc<Trace>,
    fatal: Mutex<Option<String>>,
    /// Per listener: the events it recorded, `None` once it unsubscribed.
    heard: Mutex<Vec<Option<u64>>>,
    /// Per action: how many events matched its trigger, and whether it fired.
    triggers: Mutex<Vec<(u64, bool)>>,
    /// What a `set` changed (a snapshot prints it).
    now: Arc<Mutex<super::Current>>,
}

impl WorkerSide {
    pub fn new(spec: Arc<Scenario>, trace: Arc<Trace>, now: Arc<Mutex<super::Current>>) -> Self {
        let spec_listeners = spec.listeners.len();
        let actions = spec.actions.len();
        WorkerSide {
            triggers: Mutex::new(vec![(0, false); actions]),
            now,
            spec,
            taken: Mutex::new(0),
            counts: HookCounts::default(),
            trace,
            fatal: Mutex::new(None),
            heard: Mutex::new(vec![Some(0); spec_listeners]),
        }
    }

    /// Unsubscribes the last listener named `name` (the reference keeps one per name); a
    /// second time does nothing.
    pub fn unsubscribe(&self, name: &Value) -> Result<(), String> {
        let index = self
            .spec
            .listeners
            .iter()
            .rposition(|l| strict_equal(&l.name, name))
            .ok_or_else(|| format!("runner: unknown listener {}", js_template(name)))?;
        if let Some(slot) = self.heard.lock().get_mut(index) {
            *slot = None;
        }
        Ok(())
    }

    /// Runs the actions whose trigger `event` completes, in the scenario's order (`state`:
    /// the session's with the event).
    async fn fire_triggers(&self, kind: &str, event: &Value, state: &ListenerState) {
        let message_role = || event["message"]["role"].as_str();
        let (tool_name, role, update) = match kind {
            "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
                (event["toolName"].as_str(), None, None)
            }
            "message_start" | "message_end" | "turn_end" => (None, message_role(), None),
            "message_update" => (
                None,
                Some("assistant"),
                event["assistantMessageEvent"]["type"].as_str(),
            ),
            _ => (None, None, None),
        };
        let holds = |want: &Option<Value>, have: Option<&str>| match want {
            None => true,
            Some(want) => have.is_some_and(|h| strict_equal(&json!(h), want)),
        };
        for (i, a) in self.spec.actions.iter().enumerate() {
            let Some(at) = &a.at else { continue };
            let fire = {
                let mut triggers = self.triggers.lock();
                let Some((count, fired)) = triggers.get_mut(i) else {
                    continue;
                };
                let matches = !*fired
                    && at.event == kind
                    && holds(&at.tool_name, tool_name)
                    && holds(&at.role, role)
                    && holds(&at.update, update);
                if matches {
                    *count += 1;
                    *fired = *count as f64 == at.nth;
                }
                matches && *fired
            };
            if !fire {
                continue;
            }
            place(
                &self.trace,
                json!({"kind": "action", "do": a.do_, "at": at.label}),
            );
            match a.do_.as_str() {
                // Inside the event's callback, as in process: the loop waits.
                "sleep" => sleep_ms(a.ms).await,
                "snapshot" => {
                    let full = state.full.as_deref().cloned().unwrap_or_default();
                    let session = SessionState {
                        messages: full.messages,
                        is_streaming: state.is_streaming,
                        pending_tool_calls: state.pending_tool_calls.clone(),
                        steering_queue: full.steering_queue,
                        follow_up_queue: full.follow_up_queue,
                        event_count: 0,
                        ..SessionState::default()
                    };
                    let snapshot = super::state_json(
                        &self.spec,
                        &self.now.lock(),
                        &session,
                        full.streaming_message.as_ref(),
                        state.error_message.clone(),
                    );
                    place(&self.trace, json!({"kind": "snapshot", "state": snapshot}));
                }
                _ => self.run_here(a, &at.label),
            }
        }
    }

    /// Runs an action a hook, trigger or tool on the worker runs for its own session: queue
    /// input, clear queues, abort its run, unsubscribe a listener. Sets the runner's error
    /// for any other.
    fn run_here(&self, a: &ActionSpec, place: &str) {
        let message = || vec![super::queued_message(a)];
        let clear = |steering, follow_up| {
            tern_temporal::hooks::clear_queues(tern_temporal::ClearQueues {
                steering,
                follow_up,
            })
        };
        let done = match a.do_.as_str() {
            "steer" => Ok(tern_temporal::hooks::steer(message())),
            "followUp" => Ok(tern_temporal::hooks::follow_up(message())),
            "clearSteeringQueue" => Ok(clear(true, false)),
            "clearFollowUpQueue" => Ok(clear(false, true)),
            "clearAllQueues" => Ok(clear(true, true)),
            "unsubscribe" => self.unsubscribe(&a.name).map(|()| true),
            "abort" => Ok(tern_temporal::hooks::abort()),
            _ => Ok(false),
        };
        match done {
            Ok(true) => {}
            Ok(false) => self.set_fatal(format!(
                "runner: {place}'s {} does not run on a worker",
                a.do_
            )),
            Err(e) => self.set_fatal(e),
        }
    }

    /// The runner error a hook ran into, if any.
    pub fn fatal(&self) -> Option<String> {
        self.fatal.lock().clone()
    }
}

/// Every event kind, for a listener without a filter.
const EVENT_KINDS: &[&str] = &[
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
];

/// The event kinds the scenario's listeners and triggers hear (the session sends only
/// these).
pub fn listened(spec: &Scenario) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for at in spec.actions.iter().filter_map(|a| a.at.as_ref()) {
        if !kinds.contains(&at.event) {
            kinds.push(at.event.clone());
        }
    }
    for l in &spec.listeners {
        let wanted: Vec<String> = match &l.events {
            Some(events) => events.clone(),
            None => EVENT_KINDS.iter().map(|k| k.to_string()).collect(),
        };
        for k in wanted {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    kinds
}

/// The scenario's triggers and listeners as the worker's one listener. The triggers come
/// first (the reference runs them in its recorder, the first subscriber): each counts the
/// events that match it and runs its action at its count, inside the event's callback (the
/// scope admits those a worker runs: queuing input for the session, unsubscribing). Then
/// each listener, in order, records the events it subscribed to with the session's state
/// (taken before its delay), waits its delay, and unsubscribes after its count.
pub fn listener(side: &Arc<WorkerSide>) -> EventListener {
    let side = Arc::downgrade(side);
    Arc::new(move |event: Value, state: ListenerState| {
        let side = side.upgrade();
        Box::pin(async move {
            let Some(side) = side else { return };
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            side.fire_triggers(&kind, &event, &state).await;
            for (i, l) in side.spec.listeners.iter().enumerate() {
                if side.heard.lock().get(i).is_some_and(|n| n.is_none()) {
                    continue;
                }
                if l.events.as_ref().is_some_and(|e| !e.contains(&kind)) {
                    continue;
                }
                let snapshot = json!({
                    "messageCount": state.message_count,
                    "lastRole": state.last_role,
                    "isStreaming": state.is_streaming,
                    "streamingRole": state.streaming_role,
                    "pendingToolCalls": state.pending_tool_calls,
                    "errorMessage": state.error_message,
                });
                if let Some(ms) = l
                    .delay_ms
                    .as_ref()
                    .filter(|v| truthy(v))
                    .and_then(Value::as_f64)
                {
                    sleep_ms(ms).await;
                }
                place(
                    &side.trace,
                    json!({"kind": "listener", "name": l.name, "type": kind, "state": snapshot}),
                );
                let mut heard = side.heard.lock();
                if let Some(Some(n)) = heard.get_mut(i) {
                    *n += 1;
                    if l.unsubscribe_after == Some(*n as f64) {
                        heard[i] = None;
                    }
                }
            }
        })
    })
}

tokio::task_local! {
    /// The tool call this task runs for the session (not a nested one), and how many
    /// partial results it sent so far.
    static TOOL_RUN: ToolRun;
}

struct ToolRun {
    call_id: String,
    updates: std::sync::atomic::AtomicUsize,
}

/// Where an entry made on the worker goes: at its call's offset (every entry is made inside
/// one), after the partial results the session's tool call it is made in sent before it;
/// else after what has been read.
pub fn place(trace: &Trace, entry: Value) {
    let Some(call) = tern_temporal::activities::current_call() else {
        return trace.here(entry);
    };
    let sent = TOOL_RUN
        .try_with(|r| {
            let n = r.updates.load(std::sync::atomic::Ordering::SeqCst);
            (r.call_id.clone(), n)
        })
        .ok();
    match sent {
        Some((id, n)) => trace.place_after_update(call.event_offset, &id, n, entry),
        None => trace.place(call.event_offset, entry),
    }
}

impl Script for WorkerSide {
    fn next_request(&self) -> (u64, Option<Arc<ResponseSpec>>) {
        let mut n = self.taken.lock();
        let spec = self.spec.model.get(*n as usize).cloned();
        *n += 1;
        (*n, spec)
    }

    fn push(&self, entry: Value) {
        place(&self.trace, entry);
    }
}

impl HookHost for WorkerSide {
    fn hook_rules(&self) -> &HooksSpec {
        &self.spec.hooks
    }

    fn hook_counts(&self) -> &HookCounts {
        &self.counts
    }

    fn push(&self, entry: Value) {
        place(&self.trace, entry);
    }

    /// A rule's steering and follow-up messages go to the hook's own session (with the
    /// hook's answer), an unsubscribe to the worker's listeners, its delay runs on the
    /// worker, inside the hook's call; other actions are not run (the scope leaves those
    /// scenarios out).
    fn side_effects(
        self: Arc<Self>,
        actions: Vec<Arc<ActionSpec>>,
        delay_ms: Option<Value>,
        hook: &'static str,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            for a in actions {
                place(
                    &self.trace,
                    json!({"kind": "action", "do": a.do_, "in": hook}),
                );
                self.run_here(&a, hook);
            }
            if let Some(ms) = delay_ms.filter(truthy).and_then(|v| v.as_f64()) {
                sleep_ms(ms).await;
            }
        })
    }

    fn tools_for(&self, ids: &[String]) -> Vec<AgentTool> {
        tools(&self.spec, ids, &self.trace).unwrap_or_else(|e| {
            self.set_fatal(e);
            Vec::new()
        })
    }

    fn set_fatal(&self, message: String) {
        self.fatal.lock().get_or_insert(message);
    }
}

/// The agent's tools as the worker runs them.
pub fn tools(
    spec: &Scenario,
    ids: &[String],
    trace: &Arc<Trace>,
) -> Result<Vec<AgentTool>, String> {
    ids.iter()
        .map(|id| {
            let def = spec
                .tools
                .get(id)
                .ok_or_else(|| format!("scenario references unknown tool {id}"))?;
            Ok(tool(def.clone(), trace.clone()))
        })
        .collect()
}

fn tool(def: Arc<ToolDef>, trace: Arc<Trace>) -> AgentTool {
    let d = def.clone();
    let tool = AgentTool::dynamic(
        &def.name,
        &def.description,
        def.parameters.clone(),
        move |input: ToolCallInput| {
            let (def, trace) = (d.clone(), trace.clone());
            async move {
                if TOOL_RUN.try_with(|_| ()).is_ok() {
                    // A nested call: its entries follow the session's call it runs in.
                    return execute(def, trace, input).await;
                }
                let run = ToolRun {
                    call_id: input.tool_call_id.to_string(),
                    updates: Default::default(),
                };
                TOOL_RUN.scope(run, execute(def, trace, input)).await
            }
        },
    )
    .with_label(&def.label);
    let tool = match def.execution_mode {
        Some(mode) => tool.with_execution_mode(mode),
        None => tool,
    };
    if def.prepare.is_none() {
        return tool;
    }
    tool.with_prepare_arguments(move |args| def.prepare_arguments(args))
}

/// FORMAT.md 1.2's behaviour on a worker. Late updates are not sent: the activity's updater
/// is closed once `execute` settles, so they would be dropped, as the loop drops them.
async fn execute(def: Arc<ToolDef>, trace: Arc<Trace>, input: ToolCallInput) -> ToolOutput {
    let b = def
        .calls
        .get(input.tool_call_id.as_str())
        .unwrap_or(&def.behavior)
        .clone();
    place(
        &trace,
        json!({
            "kind": "execute",
            "toolCallId": input.tool_call_id,
            "toolName": def.name,
            "args": norm(&input.args),
        }),
    );
    let nested = TOOL_RUN
        .try_with(|run| run.call_id != input.tool_call_id)
        .unwrap_or(true);
    let mut clock = CallClock::new(nested);
    for step in &b.steps {
        match step {
            Step::Sleep(ms) => {
                let until = clock.advance(*ms);
                if b.ignore_abort {
                    tokio::time::sleep_until(until).await;
                } else if abortable_sleep(until, &input.signal).await.is_err() {
                    return Err(b.abort_error.clone().into());
                }
            }
            Step::Update(r) => {
                input.updater.update(r.clone());
                // The session's call's partial results become events; a nested call's
                // are its caller's `runToolCallUpdate`s.
                let _ = TOOL_RUN.try_with(|run| {
                    if run.call_id == input.tool_call_id {
                        run.updates
                            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
            Step::RunToolCall(c) => {
                let tools = tern_temporal::activities::session_tools().unwrap_or_default();
                let hooks = tern_temporal::activities::session_hooks().unwrap_or_default();
                let outcome = run_tool_call(c, tools, hooks, input.signal.clone(), &trace).await;
                place(&trace, outcome_entry(json!(input.tool_call_id), &outcome));
            }
            Step::Do(a) => {
                place(
                    &trace,
                    json!({"kind": "action", "do": a.do_, "in": format!("tool:{}", input.tool_call_id)}),
                );
                // A tool on a worker queues input for its own session (the scope admits
                // no other action here).
                let message = vec![super::queued_message(a)];
                match a.do_.as_str() {
                    "steer" => tern_temporal::hooks::steer(message),
                    "followUp" => tern_temporal::hooks::follow_up(message),
                    _ => false,
                };
            }
            Step::Ignored => {}
        }
    }
    if let Some(message) = &b.throw {
        return Err(message.clone().into());
    }
    Ok(b.result.clone())
}

/// A `runToolCall` (FORMAT.md 1.9) with `tools` and `hooks`: the nested step's (the
/// session's tools and hooks on the worker) or the action's (in the runner's process).
pub async fn run_tool_call(
    c: &CallSpec,
    tools: Vec<AgentTool>,
    hooks: tern_agent::Hooks,
    signal: CancellationToken,
    trace: &Arc<Trace>,
) -> ToolCallOutcome {
    let call = ToolCall {
        id: tern_ai::Name::unique(&c.id),
        name: c.name.as_str().into(),
        arguments: c.arguments.clone(),
        ..ToolCall::default()
    };
    let (id, t) = (call.id.clone(), trace.clone());
    let on_update: Arc<dyn Fn(ToolResult) + Send + Sync> = Arc::new(move |r: ToolResult| {
        place(
            &t,
            json!({"kind": "runToolCallUpdate", "toolCallId": id, "partialResult": norm_of(&r)}),
        );
    });
    let assistant_message = AssistantMessage {
        content: vec![ContentBlock::tool_call(call.clone())],
        api: "scripted".into(),
        provider: "scripted".into(),
        model: super::spec::DEFAULT_MODEL_ID.into(),
        usage: Usage::default().into(),
        stop_reason: StopReason::ToolUse,
        timestamp: 0,
        ..AssistantMessage::default()
    };
    tern_agent::run_tool_call(
        call,
        RunToolCallOptions {
            tools: tools.clone(),
            assistant_message,
            context: AgentContext::new(Vec::new(), tools),
            signal,
            hooks,
            on_update: Some(on_update),
        },
    )
    .await
}

async fn sleep_ms(ms: f64) {
    if ms > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
    }
}

/// How much slower a scripted tool's time runs on a worker than in process. A scenario's
/// delays only order a batch's calls (the trace has no durations); a worker starts each
/// call's activity after a dispatch latency of its own (tens of ms on a loaded machine),
/// which would reorder calls a few ms apart.
const TOOL_TIME_SCALE: f64 = 4.0;

/// A call's scripted time: its delays count from when the workflow scheduled the call (as
/// in process, where a batch's calls start at once), so the calls of one batch keep their
/// relative timing when a busy worker starts one of them later than the others.
struct CallClock(Instant);

impl CallClock {
    /// `nested`: the call is not the session's (a nested one starts when it is made).
    fn new(nested: bool) -> Self {
        if nested {
            return CallClock(Instant::now());
        }
        let late = tern_temporal::activities::current_call()
            .and_then(|c| c.scheduled)
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or_default();
        let now = Instant::now();
        CallClock(now.checked_sub(late).unwrap_or(now))
    }

    /// The end of the next `ms` of the call's script.
    fn advance(&mut self, ms: f64) -> Instant {
        if ms > 0.0 {
            self.0 += Duration::from_secs_f64(ms * TOOL_TIME_SCALE / 1000.0);
        }
        self.0
    }
}

async fn abortable_sleep(until: Instant, signal: &CancellationToken) -> Result<(), ()> {
    if signal.is_cancelled() {
        return Err(());
    }
    tokio::select! {
        biased;
        _ = tokio::time::sleep_until(until) => Ok(()),
        _ = signal.cancelled() => Err(()),
    }
}
