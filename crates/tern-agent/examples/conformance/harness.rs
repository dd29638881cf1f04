//! The conformance harness: runs one scenario (FORMAT.md) against tern and returns the
//! normalized trace. Shared by the `conformance` example (the runner `check.sh` drives) and
//! by the `conformance` integration test.
//!
//! Everything runs on one current-thread tokio runtime, so that, as in the reference's
//! single JavaScript event loop, the interleaving of tasks depends only on the scripted
//! delays.

#![allow(dead_code)]

#[path = "compare.rs"]
pub mod compare;
#[path = "model.rs"]
mod model;
#[path = "norm.rs"]
pub mod norm;
#[path = "spec.rs"]
pub mod spec;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tern_agent::config::{
    self, AfterToolCallContext, AfterToolCallHook, AfterToolCallResult, BeforeToolCallContext,
    BeforeToolCallHook, BeforeToolCallResult, ConvertToLlmHook, FinishTurnHook,
    PrepareNextTurnHook, PrepareRequestContext, PrepareRequestHook, RequestUpdate,
    TransformContextHook, TurnContext, TurnDecision, TurnUpdate,
};
use tern_agent::{
    agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue, run_tool_call, Agent,
    AgentContext, AgentEvent, AgentLoopConfig, AgentOptions, AgentTool, RunToolCallOptions,
    ToolCallInput, ToolCallOutcome, ToolOutput, ToolResult,
};
use tern_ai::{
    AssistantMessage, BoxError, Content, ContentBlock, Message, StopReason, StreamFn,
    ThinkingLevel, ToolCall, Usage, UserMessage,
};
use tokio_util::sync::CancellationToken;

use model::{make_model, ScriptedModel};
use norm::{canonical, js_template, norm, norm_of, strict_equal, truthy};
use spec::{ActionSpec, CallSpec, PrepOp, ResponseSpec, Rule, Scenario, Step, ToolDef};

pub const FORMAT: &str = "pi-conformance-trace/1";
const STANDARD_ROLES: &[&str] = &["system", "user", "assistant", "toolResult"];
const WATCHDOG: Duration = Duration::from_secs(30);

/// Why a scenario produced no complete trace.
#[derive(Debug)]
pub enum RunError {
    /// The scenario is not valid (bad JSON shape, unknown tool id, unknown action ...).
    Invalid(String),
    /// The scenario did not finish within 30 s; `partial` is the trace so far with
    /// `"incomplete": true`.
    Incomplete { partial: Value },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Invalid(m) => write!(f, "invalid scenario: {m}"),
            RunError::Incomplete { .. } => {
                write!(
                    f,
                    "runner: scenario did not finish within {} s",
                    WATCHDOG.as_secs()
                )
            }
        }
    }
}

/// Runs a scenario and returns its trace (`{"format","trace","final"?}`).
pub fn run_scenario(scenario: &Value) -> Result<Value, RunError> {
    let spec = spec::parse(scenario).map_err(RunError::Invalid)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Invalid(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let h = Harness::new(spec);
        match tokio::time::timeout(WATCHDOG, h.clone().main()).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(message)) => Err(RunError::Invalid(message)),
            Err(_) => Err(RunError::Incomplete {
                partial: json!({
                    "format": FORMAT,
                    "trace": h.trace.lock().clone(),
                    "incomplete": true,
                }),
            }),
        }
    })
}

/// The trace as the reference prints it: one trace entry (and one final-state field or
/// message) per line.
pub fn render(out: &Value) -> String {
    let compact = |v: &Value| serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    let Some(obj) = out.as_object() else {
        return format!("{}\n", compact(out));
    };
    let mut lines = vec!["{".to_string()];
    let n = obj.len();
    for (i, (key, value)) in obj.iter().enumerate() {
        let comma = if i + 1 < n { "," } else { "" };
        match (key.as_str(), value) {
            ("trace", Value::Array(entries)) => {
                lines.push("  \"trace\": [".into());
                for (j, e) in entries.iter().enumerate() {
                    let c = if j + 1 < entries.len() { "," } else { "" };
                    lines.push(format!("    {}{c}", compact(e)));
                }
                lines.push(format!("  ]{comma}"));
            }
            ("final", Value::Object(fields)) => {
                lines.push("  \"final\": {".into());
                let m = fields.len();
                for (j, (f, v)) in fields.iter().enumerate() {
                    let c = if j + 1 < m { "," } else { "" };
                    match v {
                        Value::Array(msgs) if f == "messages" && !msgs.is_empty() => {
                            lines.push("    \"messages\": [".into());
                            for (k, msg) in msgs.iter().enumerate() {
                                let cc = if k + 1 < msgs.len() { "," } else { "" };
                                lines.push(format!("      {}{cc}", compact(msg)));
                            }
                            lines.push(format!("    ]{c}"));
                        }
                        _ => lines.push(format!("    {}: {}{c}", compact(&json!(f)), compact(v))),
                    }
                }
                lines.push(format!("  }}{comma}"));
            }
            _ => lines.push(format!(
                "  {}: {}{comma}",
                compact(&json!(key)),
                compact(value)
            )),
        }
    }
    lines.push("}".into());
    format!("{}\n", lines.join("\n"))
}

// ---------------------------------------------------------------------------------- harness

#[derive(Clone, Default)]
struct HookSet {
    before_tool_call: Option<BeforeToolCallHook>,
    after_tool_call: Option<AfterToolCallHook>,
    finish_turn: Option<FinishTurnHook>,
    prepare_request: Option<PrepareRequestHook>,
    prepare_next_turn: Option<PrepareNextTurnHook>,
    transform_context: Option<TransformContextHook>,
    convert_to_llm: Option<ConvertToLlmHook>,
}

impl HookSet {
    fn tool_hooks(&self) -> config::ToolHooks {
        config::ToolHooks {
            before_tool_call: self.before_tool_call.clone(),
            after_tool_call: self.after_tool_call.clone(),
        }
    }
}

struct LowLevel {
    signal: CancellationToken,
    tools: Vec<AgentTool>,
}

#[derive(Default)]
struct Requests {
    count: u64,
    next_response: usize,
}

struct TriggerState {
    action: Arc<ActionSpec>,
    count: u64,
    fired: bool,
}

/// Where an action runs: sequentially, from a trigger, or inside a hook or tool.
#[derive(Clone)]
enum Place {
    Sequential,
    At(String),
    In(String),
}

/// How an action failed: an `error` entry, or a scenario the runner cannot execute.
enum Failure {
    Error(String),
    Fatal(String),
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Error(e.to_string())
    }
}

pub struct Harness {
    me: Weak<Harness>,
    spec: Scenario,
    trace: Mutex<Vec<Value>>,
    built_tools: Mutex<HashMap<String, AgentTool>>,
    hooks: OnceLock<HookSet>,
    counts: Mutex<HashMap<&'static str, u64>>,
    repeats: Mutex<HashMap<String, u64>>,
    requests: Mutex<Requests>,
    triggers: Mutex<Vec<TriggerState>>,
    agent: OnceLock<Agent>,
    low_level: Mutex<Option<LowLevel>>,
    fatal: Mutex<Option<String>>,
}

fn facts(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn rule_matches(m: Option<&Map<String, Value>>, facts: &Map<String, Value>) -> bool {
    let Some(m) = m else {
        return true;
    };
    m.iter().all(|(k, want)| match k.as_str() {
        "minN" | "minRepeat" => {
            let fact = if k == "minN" { "n" } else { "repeat" };
            match (facts.get(fact).and_then(Value::as_f64), want.as_f64()) {
                (Some(have), Some(want)) => have >= want,
                _ => false,
            }
        }
        _ => facts.get(k).is_some_and(|have| strict_equal(have, want)),
    })
}

fn first_rule<'a>(rules: &'a [Rule], facts: &Map<String, Value>) -> Option<&'a Rule> {
    rules
        .iter()
        .find(|r| rule_matches(r.matcher.as_ref(), facts))
}

fn roles(messages: &[Message]) -> Value {
    Value::Array(messages.iter().map(|m| json!(m.role())).collect())
}

fn entry(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn or_null(v: Option<Value>) -> Value {
    v.unwrap_or(Value::Null)
}

async fn sleep_ms(ms: f64) {
    if ms > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
    } else {
        // A zero-delay timer still lets other tasks run first.
        tokio::task::yield_now().await;
    }
}

/// `if (x) await sleep(x)`: waits only for a truthy number.
async fn sleep_if(v: Option<&Value>) {
    if let Some(ms) = v.filter(|v| truthy(v)).and_then(Value::as_f64) {
        sleep_ms(ms).await;
    }
}

/// Waits `ms` unless `signal` fires first (or already fired): `Err` then.
async fn abortable_sleep(ms: f64, signal: &CancellationToken) -> Result<(), ()> {
    if signal.is_cancelled() {
        return Err(());
    }
    // A timer that already elapsed wins, as its JavaScript callback would have run first.
    tokio::select! {
        biased;
        _ = sleep_ms(ms) => Ok(()),
        _ = signal.cancelled() => Err(()),
    }
}

fn synthetic_assistant(call: &ToolCall) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::tool_call(call.clone())],
        api: "scripted".into(),
        provider: "scripted".into(),
        model: spec::DEFAULT_MODEL_ID.into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        timestamp: 0,
        ..AssistantMessage::default()
    }
}

fn apply_prepare_ops(ops: &[PrepOp], args: &Value) -> Option<Value> {
    let Value::Object(original) = args else {
        return None;
    };
    let mut out: Option<Map<String, Value>> = None;
    for op in ops {
        let cur = out.as_ref().unwrap_or(original);
        match op {
            PrepOp::Rename { from, to } => {
                if cur.contains_key(from) && !cur.contains_key(to) {
                    let m = out.get_or_insert_with(|| original.clone());
                    let v = m.get(from).cloned().unwrap_or(Value::Null);
                    m.insert(to.clone(), v);
                    m.shift_remove(from);
                }
            }
            PrepOp::Default { key, value } => {
                if !cur.contains_key(key) {
                    let m = out.get_or_insert_with(|| original.clone());
                    m.insert(key.clone(), value.clone());
                }
            }
            PrepOp::Drop { key } => {
                if cur.contains_key(key) {
                    let m = out.get_or_insert_with(|| original.clone());
                    m.shift_remove(key);
                }
            }
        }
    }
    out.map(Value::Object)
}

fn outcome_entry(parent: Value, o: &ToolCallOutcome) -> Value {
    let mut e = Map::new();
    e.insert("kind".into(), json!("runToolCall"));
    e.insert("parent".into(), parent);
    e.insert("toolCallId".into(), json!(o.tool_call.id));
    e.insert("result".into(), norm_of(&o.result));
    e.insert("isError".into(), json!(o.is_error));
    if o.duration_ms.is_some() {
        e.insert("durationMs".into(), json!(true));
    }
    Value::Object(e)
}

/// The reference's `normEvent`: `message_update` reduced to its provider event type and delta.
fn norm_event(event: &AgentEvent) -> Value {
    match event {
        AgentEvent::MessageUpdate {
            assistant_message_event: a,
            ..
        } => {
            let mut m = Map::new();
            m.insert("type".into(), json!("message_update"));
            m.insert("event".into(), json!(a.kind()));
            if let Some(d) = a.delta() {
                m.insert("delta".into(), json!(d));
            }
            Value::Object(m)
        }
        other => norm_of(other),
    }
}

/// The fields triggers filter on: `toolName`, `message.role`, `assistantMessageEvent.type`.
fn event_filters(event: &AgentEvent) -> (Option<String>, Option<String>, Option<&'static str>) {
    match event {
        AgentEvent::ToolExecutionStart { tool_call }
        | AgentEvent::ToolExecutionUpdate { tool_call, .. }
        | AgentEvent::ToolExecutionEnd { tool_call, .. } => {
            (Some(tool_call.name.clone()), None, None)
        }
        AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
            (None, Some(message.role().to_string()), None)
        }
        AgentEvent::TurnEnd { message, .. } => (None, Some(message.role().to_string()), None),
        AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } => (
            None,
            Some("assistant".into()),
            Some(assistant_message_event.kind()),
        ),
        _ => (None, None, None),
    }
}

fn filter_holds(want: &Option<Value>, have: Option<&str>) -> bool {
    match want {
        None => true,
        Some(want) => have.is_some_and(|h| strict_equal(&json!(h), want)),
    }
}

impl Harness {
    fn new(spec: Scenario) -> Arc<Harness> {
        let h = Arc::new_cyclic(|me| Harness {
            me: me.clone(),
            spec,
            trace: Mutex::new(Vec::new()),
            built_tools: Mutex::new(HashMap::new()),
            hooks: OnceLock::new(),
            counts: Mutex::new(HashMap::new()),
            repeats: Mutex::new(HashMap::new()),
            requests: Mutex::new(Requests::default()),
            triggers: Mutex::new(Vec::new()),
            agent: OnceLock::new(),
            low_level: Mutex::new(None),
            fatal: Mutex::new(None),
        });
        let _ = h.hooks.set(h.build_hooks());
        h
    }

    pub(crate) fn push(&self, entry: Value) {
        self.trace.lock().push(entry);
    }

    fn set_fatal(&self, message: String) {
        let mut f = self.fatal.lock();
        if f.is_none() {
            *f = Some(message);
        }
    }

    fn hooks(&self) -> HookSet {
        self.hooks.get().cloned().unwrap_or_default()
    }

    fn next_count(&self, hook: &'static str) -> u64 {
        let mut c = self.counts.lock();
        let n = c.entry(hook).or_insert(0);
        *n += 1;
        *n
    }

    /// Counts a provider request and takes the next scripted response.
    pub(crate) fn next_request(&self) -> (u64, Option<Arc<ResponseSpec>>) {
        let mut r = self.requests.lock();
        r.count += 1;
        let spec = self.spec.model.get(r.next_response).cloned();
        r.next_response += 1;
        (r.count, spec)
    }

    fn stream_fn(&self) -> Arc<dyn StreamFn> {
        Arc::new(ScriptedModel {
            harness: self.me.clone(),
        })
    }

    fn agent(&self, action: &str) -> Result<Agent, Failure> {
        self.agent
            .get()
            .cloned()
            .ok_or_else(|| Failure::Fatal(format!("runner: action {action} needs an agent")))
    }

    // ------------------------------------------------------------------------ main

    async fn main(self: Arc<Self>) -> Result<Value, String> {
        if let Some(a) = &self.spec.agent {
            let hooks = self.hooks();
            let agent = Agent::new(AgentOptions {
                system_prompt: a.system_prompt.clone(),
                model: Some(make_model(&a.model).into()),
                thinking_level: a.thinking_level,
                tools: self.tools_for(&a.tools),
                messages: a.messages.clone(),
                stream_fn: Some(self.stream_fn()),
                convert_to_llm: hooks.convert_to_llm.clone(),
                transform_context: hooks.transform_context.clone(),
                before_tool_call: hooks.before_tool_call.clone(),
                after_tool_call: hooks.after_tool_call.clone(),
                finish_turn: hooks.finish_turn.clone(),
                prepare_request: hooks.prepare_request.clone(),
                prepare_next_turn: hooks.prepare_next_turn.clone(),
                tool_execution: a.tool_execution.unwrap_or_default(),
                steering_mode: a.steering_mode.unwrap_or_default(),
                follow_up_mode: a.follow_up_mode.unwrap_or_default(),
                ..AgentOptions::default()
            });
            let w = self.me.clone();
            agent.subscribe(move |event: Arc<AgentEvent>, _signal| {
                let h = w.upgrade();
                async move {
                    if let Some(h) = h {
                        h.record_event(&event).await;
                    }
                }
            });
            for l in &self.spec.listeners {
                let w = self.me.clone();
                let l = l.clone();
                agent.subscribe(move |event: Arc<AgentEvent>, _signal| {
                    let h = w.upgrade();
                    let l = l.clone();
                    async move {
                        let Some(h) = h else { return };
                        if let Some(events) = &l.events {
                            if !events.iter().any(|e| e == event.kind()) {
                                return;
                            }
                        }
                        let state = h.listener_snapshot();
                        sleep_if(l.delay_ms.as_ref()).await;
                        h.push(entry(vec![
                            ("kind", json!("listener")),
                            ("name", l.name.clone()),
                            ("type", json!(event.kind())),
                            ("state", state),
                        ]));
                    }
                });
            }
            let _ = self.agent.set(agent);
        }
        let mut sequential = Vec::new();
        {
            let mut triggers = self.triggers.lock();
            for a in &self.spec.actions {
                if a.at.is_some() {
                    triggers.push(TriggerState {
                        action: a.clone(),
                        count: 0,
                        fired: false,
                    });
                } else {
                    sequential.push(a.clone());
                }
            }
        }
        for a in sequential {
            self.do_action(a, Place::Sequential).await;
            if let Some(f) = self.fatal.lock().clone() {
                return Err(f);
            }
        }
        sleep_ms(self.spec.settle_ms).await;
        if let Some(f) = self.fatal.lock().clone() {
            return Err(f);
        }
        let mut out = Map::new();
        out.insert("format".into(), json!(FORMAT));
        out.insert("trace".into(), Value::Array(self.trace.lock().clone()));
        if self.agent.get().is_some() {
            out.insert("final".into(), self.full_state()?);
        }
        Ok(Value::Object(out))
    }

    fn listener_snapshot(&self) -> Value {
        let Some(agent) = self.agent.get() else {
            return Value::Null;
        };
        json!({
            "messageCount": agent.message_count(),
            "lastRole": agent.last_role(),
            "isStreaming": agent.is_streaming(),
            "streamingRole": agent.streaming_role(),
            "pendingToolCalls": agent.pending_tool_calls(),
            "errorMessage": agent.error_message(),
        })
    }

    fn full_state(&self) -> Result<Value, String> {
        let agent = self.agent.get().ok_or("runner: no agent")?;
        let s = agent.state();
        let (steering, follow_up) = agent.queued();
        let mut m = Map::new();
        m.insert("messages".into(), norm_of(&s.messages));
        m.insert("systemPrompt".into(), json!(s.system_prompt));
        m.insert("model".into(), json!(s.model.id));
        m.insert("thinkingLevel".into(), json!(s.thinking_level.as_str()));
        m.insert(
            "tools".into(),
            Value::Array(s.tools.iter().map(|t| json!(t.name())).collect()),
        );
        m.insert("isStreaming".into(), json!(s.is_streaming));
        m.insert(
            "streamingMessage".into(),
            s.streaming_message
                .as_ref()
                .map(norm_of)
                .unwrap_or(Value::Null),
        );
        m.insert("pendingToolCalls".into(), json!(s.pending_tool_calls));
        m.insert("errorMessage".into(), json!(s.error_message));
        m.insert(
            "queued".into(),
            json!({"steering": norm_of(&steering), "followUp": norm_of(&follow_up)}),
        );
        Ok(Value::Object(m))
    }

    // ------------------------------------------------------------------------ tools

    fn tool(&self, id: &str) -> Option<AgentTool> {
        if let Some(t) = self.built_tools.lock().get(id) {
            return Some(t.clone());
        }
        let def = self.spec.tools.get(id)?.clone();
        let w = self.me.clone();
        let exec_def = def.clone();
        let mut tool = AgentTool::dynamic(
            &def.name,
            &def.description,
            def.parameters.clone(),
            move |input: ToolCallInput| {
                let h = w.upgrade();
                let def = exec_def.clone();
                async move {
                    match h {
                        Some(h) => h.execute_tool(def, input).await,
                        None => Err::<ToolResult, BoxError>("scenario ended".into()),
                    }
                }
            },
        )
        .with_label(&def.label);
        if let Some(mode) = def.execution_mode {
            tool = tool.with_execution_mode(mode);
        }
        if def.prepare.is_some() {
            let d = def.clone();
            tool = tool.with_prepare_arguments(move |args: &Value| {
                apply_prepare_ops(d.prepare.as_deref().unwrap_or(&[]), args)
            });
        }
        self.built_tools.lock().insert(id.to_string(), tool.clone());
        Some(tool)
    }

    fn tools_for(&self, ids: &[String]) -> Vec<AgentTool> {
        ids.iter()
            .filter_map(|id| {
                let t = self.tool(id);
                if t.is_none() {
                    self.set_fatal(format!("scenario references unknown tool {id}"));
                }
                t
            })
            .collect()
    }

    /// Tools visible to nested `runToolCall` steps: the running low-level loop's, else the
    /// agent's.
    fn nested_tools(&self) -> Vec<AgentTool> {
        if let Some(ll) = self.low_level.lock().as_ref() {
            return ll.tools.clone();
        }
        self.agent
            .get()
            .map(|a| a.state().tools)
            .unwrap_or_default()
    }

    async fn execute_tool(self: Arc<Self>, def: Arc<ToolDef>, input: ToolCallInput) -> ToolOutput {
        let b = def
            .calls
            .get(&input.tool_call_id)
            .unwrap_or(&def.behavior)
            .clone();
        self.push(entry(vec![
            ("kind", json!("execute")),
            ("toolCallId", json!(input.tool_call_id)),
            ("toolName", json!(def.name)),
            ("args", norm(&input.args)),
        ]));
        for step in &b.steps {
            match step {
                Step::Sleep(ms) => {
                    if b.ignore_abort {
                        sleep_ms(*ms).await;
                    } else if abortable_sleep(*ms, &input.signal).await.is_err() {
                        return Err(b.abort_error.clone().into());
                    }
                }
                Step::Update(r) => input.updater.update(r.clone()),
                Step::RunToolCall(c) => {
                    let outcome = self
                        .run_tool_call_for(c, self.nested_tools(), input.signal.clone())
                        .await;
                    self.push(outcome_entry(json!(input.tool_call_id), &outcome));
                }
                Step::Do(a) => {
                    self.do_action(a.clone(), Place::In(format!("tool:{}", input.tool_call_id)))
                        .await
                }
                Step::Ignored => {}
            }
        }
        if b.late_updates.is_some() {
            let b = b.clone();
            let updater = input.updater.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                for step in b.late_updates.iter().flatten() {
                    match step {
                        Step::Sleep(ms) => sleep_ms(*ms).await,
                        Step::Update(r) => updater.update(r.clone()),
                        _ => {}
                    }
                }
            });
        }
        if let Some(message) = &b.throw {
            return Err(message.clone().into());
        }
        Ok(b.result.clone())
    }

    async fn run_tool_call_for(
        &self,
        c: &CallSpec,
        tools: Vec<AgentTool>,
        signal: CancellationToken,
    ) -> ToolCallOutcome {
        let call = ToolCall {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            ..ToolCall::default()
        };
        let w = self.me.clone();
        let id = call.id.clone();
        let on_update: Arc<dyn Fn(ToolResult) + Send + Sync> = Arc::new(move |r: ToolResult| {
            if let Some(h) = w.upgrade() {
                h.push(entry(vec![
                    ("kind", json!("runToolCallUpdate")),
                    ("toolCallId", json!(id)),
                    ("partialResult", norm_of(&r)),
                ]));
            }
        });
        run_tool_call(
            call.clone(),
            RunToolCallOptions {
                tools: tools.clone(),
                assistant_message: synthetic_assistant(&call),
                context: AgentContext::new(Vec::new(), tools),
                signal,
                hooks: self.hooks().tool_hooks(),
                on_update: Some(on_update),
            },
        )
        .await
    }

    // ------------------------------------------------------------------------ events

    fn record_event(self: &Arc<Self>, event: &AgentEvent) -> BoxFuture<'static, ()> {
        let mut e = Map::new();
        e.insert("kind".into(), json!("event"));
        if let Value::Object(fields) = norm_event(event) {
            e.extend(fields);
        }
        self.push(Value::Object(e));
        let kind = event.kind();
        let (tool_name, role, update) = event_filters(event);
        let h = self.clone();
        Box::pin(async move {
            let mut i = 0;
            loop {
                let fire = {
                    let mut triggers = h.triggers.lock();
                    let Some(t) = triggers.get_mut(i) else { break };
                    let Some(at) = t.action.at.as_ref() else {
                        i += 1;
                        continue;
                    };
                    let matches = !t.fired
                        && at.event == kind
                        && filter_holds(&at.tool_name, tool_name.as_deref())
                        && filter_holds(&at.role, role.as_deref())
                        && filter_holds(&at.update, update);
                    if matches {
                        t.count += 1;
                        if t.count as f64 == at.nth {
                            t.fired = true;
                            Some((t.action.clone(), at.label.clone()))
                        } else {
                            None
                        }
                    } else {
                        None
                    }
                };
                if let Some((action, label)) = fire {
                    h.do_action(action, Place::At(label)).await;
                }
                i += 1;
            }
        })
    }

    // ------------------------------------------------------------------------ actions

    fn do_action(self: &Arc<Self>, a: Arc<ActionSpec>, place: Place) -> BoxFuture<'static, ()> {
        let h = self.clone();
        Box::pin(async move {
            let mut e = Map::new();
            e.insert("kind".into(), json!("action"));
            e.insert("do".into(), json!(a.do_));
            match &place {
                Place::Sequential => {}
                Place::At(label) => {
                    e.insert("at".into(), json!(label));
                }
                Place::In(where_) => {
                    e.insert("in".into(), json!(where_));
                }
            }
            h.push(Value::Object(e));
            match h.perform(&a).await {
                Ok(()) => {}
                Err(Failure::Error(message)) => h.push(entry(vec![
                    ("kind", json!("error")),
                    ("do", json!(a.do_)),
                    ("message", json!(message)),
                ])),
                Err(Failure::Fatal(message)) => h.set_fatal(message),
            }
        })
    }

    async fn perform(self: &Arc<Self>, a: &ActionSpec) -> Result<(), Failure> {
        match a.do_.as_str() {
            "prompt" => {
                let agent = self.agent(&a.do_)?;
                match &a.messages {
                    Some(m) => agent.prompt_messages(m.clone()).await?,
                    None => agent.prompt(a.text.as_deref().unwrap_or("")).await?,
                }
            }
            "continue" => self.agent(&a.do_)?.continue_run().await?,
            "steer" | "followUp" => {
                let agent = self.agent(&a.do_)?;
                let m = match &a.message {
                    Some(m) => m.clone(),
                    None => Message::from(UserMessage {
                        content: Content::Blocks(vec![ContentBlock::text(
                            a.text.clone().unwrap_or_default(),
                        )]),
                        timestamp: 0,
                        extra: None,
                    }),
                };
                if a.do_ == "steer" {
                    agent.steer(m);
                } else {
                    agent.follow_up(m);
                }
            }
            "abort" => {
                let low = self.low_level.lock().as_ref().map(|l| l.signal.clone());
                match low {
                    Some(signal) => signal.cancel(),
                    None => self.agent(&a.do_)?.abort(),
                }
            }
            "reset" => self.agent(&a.do_)?.reset()?,
            "set" => {
                let agent = self.agent(&a.do_)?;
                if let Some(ids) = &a.tools {
                    agent.set_tools(self.tools_for(ids));
                }
                if let Some(m) = &a.messages {
                    agent.set_messages(m.clone());
                }
                if let Some(id) = &a.model {
                    agent.set_model(make_model(id));
                }
                if let Some(level) = a.thinking_level {
                    agent.set_thinking_level(level);
                }
                if let Some(mode) = a.tool_execution {
                    agent.set_tool_execution(mode);
                }
                if let Some(mode) = a.steering_mode {
                    agent.set_steering_mode(mode);
                }
                if let Some(mode) = a.follow_up_mode {
                    agent.set_follow_up_mode(mode);
                }
            }
            "sleep" => sleep_ms(a.ms).await,
            "snapshot" => {
                self.agent(&a.do_)?;
                let state = self.full_state().map_err(Failure::Fatal)?;
                self.push(entry(vec![("kind", json!("snapshot")), ("state", state)]));
            }
            "runToolCall" => {
                let Some(c) = &a.tool_call else {
                    return Err(Failure::Fatal("runner: runToolCall needs toolCall".into()));
                };
                let tools = self.tools_for(a.tools.as_deref().unwrap_or(&[]));
                let signal = CancellationToken::new();
                if a.aborted {
                    signal.cancel();
                }
                let outcome = self.run_tool_call_for(c, tools, signal).await;
                self.push(outcome_entry(Value::Null, &outcome));
            }
            "agentLoop" | "agentLoopContinue" | "runAgentLoop" | "runAgentLoopContinue" => {
                let tools = self.tools_for(&a.ctx_tools);
                let signal = CancellationToken::new();
                *self.low_level.lock() = Some(LowLevel {
                    signal: signal.clone(),
                    tools: tools.clone(),
                });
                let result = self.low_level_loop(a, tools, signal).await;
                *self.low_level.lock() = None;
                result?;
            }
            other => return Err(Failure::Fatal(format!("runner: unknown action {other}"))),
        }
        Ok(())
    }

    fn loop_config(&self, a: &ActionSpec) -> AgentLoopConfig {
        let hooks = self.hooks();
        let mut c = AgentLoopConfig::new(make_model(&a.cfg_model));
        c.reasoning = (a.cfg_thinking_level != ThinkingLevel::Off).then_some(a.cfg_thinking_level);
        if let Some(mode) = a.cfg_tool_execution {
            c.tool_execution = mode;
        }
        // Without the hook the library's default is the standard-role filter.
        c.convert_to_llm = hooks.convert_to_llm.clone();
        c.transform_context = hooks.transform_context.clone();
        c.finish_turn = hooks.finish_turn.clone();
        c.prepare_request = hooks.prepare_request.clone();
        c.prepare_next_turn = hooks.prepare_next_turn.clone();
        c.tool_hooks = hooks.tool_hooks();
        c
    }

    async fn low_level_loop(
        self: &Arc<Self>,
        a: &ActionSpec,
        tools: Vec<AgentTool>,
        signal: CancellationToken,
    ) -> Result<(), Failure> {
        let context = AgentContext::new(a.ctx_messages.clone(), tools);
        let config = self.loop_config(a);
        let stream_fn = self.stream_fn();
        match a.do_.as_str() {
            "runAgentLoop" | "runAgentLoopContinue" => {
                let h = self.clone();
                let sink = move |event: AgentEvent| h.record_event(&event);
                if a.do_ == "runAgentLoop" {
                    run_agent_loop(a.prompts.clone(), context, config, &sink, signal, stream_fn)
                        .await?;
                } else {
                    run_agent_loop_continue(context, config, &sink, signal, stream_fn).await?;
                }
            }
            _ => {
                let mut stream = if a.do_ == "agentLoop" {
                    agent_loop(a.prompts.clone(), context, config, signal, stream_fn)
                } else {
                    agent_loop_continue(context, config, signal, stream_fn)?
                };
                let mut events = Vec::new();
                while let Some(event) = stream.next().await {
                    events.push(norm_event(&event));
                }
                let result = stream.final_result().await;
                let mut e = Map::new();
                e.insert("kind".into(), json!("stream"));
                e.insert("do".into(), json!(a.do_));
                e.insert("events".into(), Value::Array(events));
                if let Some(messages) = result {
                    e.insert("result".into(), norm_of(&messages));
                }
                self.push(Value::Object(e));
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------------ hooks

    fn build_hooks(&self) -> HookSet {
        let spec = &self.spec.hooks;
        let mut hooks = HookSet::default();
        macro_rules! weak {
            () => {
                self.me.clone()
            };
        }
        if spec.before_tool_call.is_some() {
            let w = weak!();
            hooks.before_tool_call = Some(config::before_tool_call(move |ctx, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.before_tool_call(ctx).await,
                        None => Ok(None),
                    }
                }
            }));
        }
        if spec.after_tool_call.is_some() {
            let w = weak!();
            hooks.after_tool_call = Some(config::after_tool_call(move |ctx, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.after_tool_call(ctx).await,
                        None => Ok(None),
                    }
                }
            }));
        }
        if spec.finish_turn.is_some() {
            let w = weak!();
            hooks.finish_turn = Some(config::finish_turn(move |ctx, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.finish_turn(ctx).await,
                        None => Ok(None),
                    }
                }
            }));
        }
        if spec.prepare_request.is_some() {
            let w = weak!();
            hooks.prepare_request = Some(config::prepare_request(move |ctx, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.prepare_request(ctx).await,
                        None => Ok(None),
                    }
                }
            }));
        }
        if spec.prepare_next_turn.is_some() {
            let w = weak!();
            hooks.prepare_next_turn = Some(config::prepare_next_turn(move |ctx, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.prepare_next_turn(ctx).await,
                        None => Ok(None),
                    }
                }
            }));
        }
        if spec.transform_context.is_some() {
            let w = weak!();
            hooks.transform_context = Some(config::transform_context(move |messages, _signal| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.transform_context(messages).await,
                        None => Ok(messages),
                    }
                }
            }));
        }
        if spec.convert_to_llm.is_some() {
            let w = weak!();
            hooks.convert_to_llm = Some(config::convert_to_llm(move |messages| {
                let h = w.upgrade();
                async move {
                    match h {
                        Some(h) => h.convert_to_llm(messages),
                        None => Ok(messages),
                    }
                }
            }));
        }
        hooks
    }

    /// Runs a rule's actions (recorded with `"in": hook`), then its delay.
    async fn side_effects(self: &Arc<Self>, rule: Option<&Rule>, hook: &str) {
        let Some(rule) = rule else { return };
        for a in &rule.actions {
            self.do_action(a.clone(), Place::In(hook.to_string())).await;
        }
        sleep_if(rule.delay_ms.as_ref()).await;
    }

    async fn before_tool_call(
        self: Arc<Self>,
        ctx: BeforeToolCallContext,
    ) -> Result<Option<BeforeToolCallResult>, BoxError> {
        let rules = self.spec.hooks.before_tool_call.as_deref().unwrap_or(&[]);
        let n = self.next_count("beforeToolCall");
        let key = format!("{}\u{0}{}", ctx.tool_call.name, canonical(&ctx.args));
        let repeat = {
            let mut r = self.repeats.lock();
            let c = r.entry(key).or_insert(0);
            *c += 1;
            *c
        };
        let rule = first_rule(
            rules,
            &facts(&[
                ("n", json!(n)),
                ("repeat", json!(repeat)),
                ("toolName", json!(ctx.tool_call.name)),
                ("toolCallId", json!(ctx.tool_call.id)),
            ]),
        );
        let returned: Option<Map<String, Value>> = rule
            .filter(|r| {
                r.throw.is_none()
                    && (r.block.is_some() || r.reason.is_some() || r.terminate.is_some())
            })
            .map(|r| {
                let mut m = Map::new();
                for (k, v) in [
                    ("block", &r.block),
                    ("reason", &r.reason),
                    ("terminate", &r.terminate),
                ] {
                    if let Some(v) = v {
                        m.insert(k.into(), v.clone());
                    }
                }
                m
            });
        let mut e = vec![
            ("kind", json!("hook")),
            ("hook", json!("beforeToolCall")),
            ("n", json!(n)),
            ("toolCallId", json!(ctx.tool_call.id)),
            ("toolName", json!(ctx.tool_call.name)),
            ("args", norm(&ctx.args)),
            ("toolCallArgs", norm(&ctx.tool_call.arguments)),
            ("repeat", json!(repeat)),
        ];
        match rule.and_then(|r| r.throw.as_ref()) {
            Some(t) => e.push(("threw", t.clone())),
            None => e.push(("returned", or_null(returned.clone().map(Value::Object)))),
        }
        self.push(entry(e));
        self.side_effects(rule, "beforeToolCall").await;
        if let Some(t) = rule.and_then(|r| r.throw.as_ref()) {
            return Err(js_template(t).into());
        }
        Ok(returned.map(|m| BeforeToolCallResult {
            block: m.get("block").is_some_and(truthy),
            reason: m.get("reason").map(js_template),
            terminate: m.get("terminate").is_some_and(truthy),
        }))
    }

    async fn after_tool_call(
        self: Arc<Self>,
        ctx: AfterToolCallContext,
    ) -> Result<Option<AfterToolCallResult>, BoxError> {
        let rules = self.spec.hooks.after_tool_call.as_deref().unwrap_or(&[]);
        let n = self.next_count("afterToolCall");
        let rule = first_rule(
            rules,
            &facts(&[
                ("n", json!(n)),
                ("toolName", json!(ctx.tool_call.name)),
                ("toolCallId", json!(ctx.tool_call.id)),
                ("isError", json!(ctx.is_error)),
            ]),
        );
        let returned = rule.and_then(|r| r.override_.as_ref());
        let mut e = vec![
            ("kind", json!("hook")),
            ("hook", json!("afterToolCall")),
            ("n", json!(n)),
            ("toolCallId", json!(ctx.tool_call.id)),
            ("toolName", json!(ctx.tool_call.name)),
            ("args", norm(&ctx.args)),
            ("result", norm_of(&ctx.result)),
            ("isError", json!(ctx.is_error)),
        ];
        match rule.and_then(|r| r.throw.as_ref()) {
            Some(t) => e.push(("threw", t.clone())),
            None => e.push(("returned", or_null(returned.map(|(v, _)| norm(v))))),
        }
        self.push(entry(e));
        self.side_effects(rule, "afterToolCall").await;
        if let Some(t) = rule.and_then(|r| r.throw.as_ref()) {
            return Err(js_template(t).into());
        }
        Ok(returned.map(|(_, typed)| typed.clone()))
    }

    async fn finish_turn(
        self: Arc<Self>,
        ctx: TurnContext,
    ) -> Result<Option<TurnDecision>, BoxError> {
        let rules = self.spec.hooks.finish_turn.as_deref().unwrap_or(&[]);
        let n = self.next_count("finishTurn");
        let tool_calls = ctx.message.tool_calls().count();
        let rule = first_rule(
            rules,
            &facts(&[
                ("n", json!(n)),
                ("hasToolCalls", json!(tool_calls > 0)),
                ("stopReason", json!(ctx.message.stop_reason.as_str())),
            ]),
        );
        let action = rule.and_then(|r| r.action.clone()).filter(truthy);
        self.push(entry(vec![
            ("kind", json!("hook")),
            ("hook", json!("finishTurn")),
            ("n", json!(n)),
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
            ("toolCalls", json!(tool_calls)),
            (
                "toolResults",
                Value::Array(
                    ctx.tool_results
                        .iter()
                        .map(|r| json!(r.tool_call_id))
                        .collect(),
                ),
            ),
            ("newMessageRoles", roles(&ctx.new_messages)),
            (
                "returned",
                or_null(action.clone().map(|a| json!({"action": a}))),
            ),
        ]));
        self.side_effects(rule, "finishTurn").await;
        Ok(match action.as_ref().and_then(Value::as_str) {
            Some("end") => Some(TurnDecision::End),
            Some("continue") => Some(TurnDecision::Continue),
            _ => None,
        })
    }

    async fn prepare_request(
        self: Arc<Self>,
        ctx: PrepareRequestContext,
    ) -> Result<Option<RequestUpdate>, BoxError> {
        let rules = self.spec.hooks.prepare_request.as_deref().unwrap_or(&[]);
        let n = self.next_count("prepareRequest");
        let rule = first_rule(rules, &facts(&[("n", json!(n))])).filter(|r| {
            r.model.is_some() || r.thinking_level.is_some() || r.context_append.is_some()
        });
        let any_rule = first_rule(rules, &facts(&[("n", json!(n))]));
        let returned = rule.map(|r| {
            let mut m = Map::new();
            if let Some(model) = &r.model {
                m.insert("model".into(), json!(model));
            }
            if let Some((level, _)) = &r.thinking_level {
                m.insert("thinkingLevel".into(), json!(level));
            }
            if let Some((raw, _)) = &r.context_append {
                m.insert("contextAppend".into(), raw.clone());
            }
            norm(&Value::Object(m))
        });
        self.push(entry(vec![
            ("kind", json!("hook")),
            ("hook", json!("prepareRequest")),
            ("n", json!(n)),
            ("model", json!(ctx.model.id)),
            ("thinkingLevel", json!(ctx.thinking_level.as_str())),
            ("messageRoles", roles(&ctx.context.messages)),
            ("returned", or_null(returned)),
        ]));
        self.side_effects(any_rule, "prepareRequest").await;
        let Some(rule) = rule else {
            return Ok(None);
        };
        Ok(Some(RequestUpdate {
            model: rule.model.as_deref().map(make_model),
            thinking_level: rule.thinking_level.as_ref().map(|(_, l)| *l),
            context: rule.context_append.as_ref().map(|(_, extra)| {
                let mut messages = ctx.context.messages.as_ref().clone();
                messages.extend(extra.iter().cloned());
                AgentContext {
                    messages: Arc::new(messages),
                    tools: ctx.context.tools.clone(),
                }
            }),
        }))
    }

    async fn prepare_next_turn(
        self: Arc<Self>,
        ctx: TurnContext,
    ) -> Result<Option<TurnUpdate>, BoxError> {
        let rules = self.spec.hooks.prepare_next_turn.as_deref().unwrap_or(&[]);
        let n = self.next_count("prepareNextTurn");
        let f = facts(&[
            ("n", json!(n)),
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
        ]);
        let any_rule = first_rule(rules, &f);
        let rule = any_rule
            .filter(|r| r.model.is_some() || r.thinking_level.is_some() || r.messages.is_some());
        let returned = rule.map(|r| {
            let mut m = Map::new();
            if let Some(model) = &r.model {
                m.insert("model".into(), json!(model));
            }
            if let Some((level, _)) = &r.thinking_level {
                m.insert("thinkingLevel".into(), json!(level));
            }
            if let Some((raw, _)) = &r.messages {
                m.insert("messages".into(), raw.clone());
            }
            norm(&Value::Object(m))
        });
        self.push(entry(vec![
            ("kind", json!("hook")),
            ("hook", json!("prepareNextTurn")),
            ("n", json!(n)),
            ("stopReason", json!(ctx.message.stop_reason.as_str())),
            (
                "toolResults",
                Value::Array(
                    ctx.tool_results
                        .iter()
                        .map(|r| json!(r.tool_call_id))
                        .collect(),
                ),
            ),
            ("returned", or_null(returned)),
        ]));
        self.side_effects(any_rule, "prepareNextTurn").await;
        let Some(rule) = rule else {
            return Ok(None);
        };
        Ok(Some(TurnUpdate {
            context: None,
            messages: rule.messages.as_ref().map(|(_, m)| m.clone()),
            model: rule.model.as_deref().map(make_model),
            thinking_level: rule.thinking_level.as_ref().map(|(_, l)| *l),
        }))
    }

    async fn transform_context(
        self: Arc<Self>,
        messages: Arc<Vec<Message>>,
    ) -> Result<Arc<Vec<Message>>, BoxError> {
        let Some(spec) = &self.spec.hooks.transform_context else {
            return Ok(messages);
        };
        let n = self.next_count("transformContext");
        let out = match spec.keep_last {
            None => messages.clone(),
            Some(k) => {
                let lead = usize::from(matches!(messages.first(), Some(Message::System(_))));
                let rest = &messages[lead..];
                let kept: &[Message] = if k > 0.0 {
                    let t = k.trunc() as usize;
                    if t == 0 || t >= rest.len() {
                        rest
                    } else {
                        &rest[rest.len() - t..]
                    }
                } else {
                    &[]
                };
                let mut out: Vec<Message> = messages[..lead].to_vec();
                out.extend(kept.iter().cloned());
                Arc::new(out)
            }
        };
        let mut e = vec![
            ("kind", json!("hook")),
            ("hook", json!("transformContext")),
            ("n", json!(n)),
            ("inputRoles", roles(&messages)),
        ];
        match &spec.throw {
            Some(t) => e.push(("threw", t.clone())),
            None => e.push(("outputRoles", roles(&out))),
        }
        self.push(entry(e));
        if let Some(t) = &spec.throw {
            return Err(js_template(t).into());
        }
        Ok(out)
    }

    fn convert_to_llm(&self, messages: Arc<Vec<Message>>) -> Result<Arc<Vec<Message>>, BoxError> {
        let to_user = self.spec.hooks.convert_to_llm.clone().unwrap_or_default();
        let n = self.next_count("convertToLlm");
        let mut out = Vec::new();
        for m in messages.iter() {
            let role = m.role();
            if STANDARD_ROLES.contains(&role) {
                out.push(m.clone());
            } else if to_user.contains(role) {
                let Message::Custom(c) = m else { continue };
                let timestamp = c.0.get("timestamp").cloned().unwrap_or(json!(0));
                let user =
                    json!({"role": "user", "content": m.content_json(), "timestamp": timestamp});
                match serde_json::from_value::<Message>(user) {
                    Ok(u) => out.push(u),
                    Err(e) => {
                        let message = format!(
                            "runner: convertToLlm cannot turn a {role} message into a user message: {e}"
                        );
                        self.set_fatal(message.clone());
                        return Err(message.into());
                    }
                }
            }
        }
        self.push(entry(vec![
            ("kind", json!("hook")),
            ("hook", json!("convertToLlm")),
            ("n", json!(n)),
            ("inputRoles", roles(&messages)),
            ("outputRoles", roles(&out)),
        ]));
        Ok(Arc::new(out))
    }
}
