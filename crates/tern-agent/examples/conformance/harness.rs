//! The conformance harness: runs one scenario (FORMAT.md) against tern and returns the
//! normalized trace. Shared by the `conformance` example (the runner `check.sh` drives) and
//! by the `conformance` integration test.
//!
//! Everything runs on one current-thread tokio runtime, so that, as in the reference's
//! single JavaScript event loop, the interleaving of tasks depends only on the scripted
//! delays. The parts: the scenario's [spec], the scripted [model], its [tools], [hooks] and
//! [actions], and the trace's normalization ([norm]), comparison ([compare]) and layout
//! ([render]).

#![allow(dead_code)]

#[path = "actions.rs"]
mod actions;
#[path = "compare.rs"]
pub mod compare;
#[path = "hooks.rs"]
mod hooks;
#[path = "model.rs"]
mod model;
#[path = "norm.rs"]
pub mod norm;
#[path = "render.rs"]
pub mod render;
#[path = "spec.rs"]
pub mod spec;
#[path = "tools.rs"]
mod tools;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, Hooks, Subscription};
use tern_ai::StreamFn;
use tokio_util::sync::CancellationToken;

use actions::{Failure, LowLevel, Place, TriggerState};
use hooks::{HookCounts, HookHost};
use model::{make_model, Script, ScriptedModel};
use norm::{entry, norm_of, truthy};
use spec::{ResponseSpec, Scenario};

pub const FORMAT: &str = "pi-conformance-trace/1";
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

#[derive(Default)]
struct Requests {
    count: u64,
    next_response: usize,
}

pub struct Harness {
    me: Weak<Harness>,
    spec: Scenario,
    trace: Mutex<Vec<Value>>,
    built_tools: Mutex<HashMap<String, AgentTool>>,
    hooks: OnceLock<Hooks>,
    counts: HookCounts,
    requests: Mutex<Requests>,
    triggers: Mutex<Vec<TriggerState>>,
    agent: OnceLock<Agent>,
    low_level: Mutex<Option<LowLevel>>,
    fatal: Mutex<Option<String>>,
    /// Listener subscriptions in scenario order (`None` once unsubscribed).
    subscriptions: Mutex<Vec<(Value, Option<Subscription>)>>,
}

impl HookHost for Harness {
    fn hook_rules(&self) -> &spec::HooksSpec {
        &self.spec.hooks
    }

    fn hook_counts(&self) -> &HookCounts {
        &self.counts
    }

    fn push(&self, entry: Value) {
        Harness::push(self, entry)
    }

    fn side_effects(
        self: Arc<Self>,
        actions: Vec<Arc<spec::ActionSpec>>,
        delay_ms: Option<Value>,
        hook: &'static str,
    ) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(async move {
            for a in actions {
                self.do_action(a, Place::In(hook.to_string())).await;
            }
            sleep_if(delay_ms.as_ref()).await;
        })
    }

    fn tools_for(&self, ids: &[String]) -> Vec<AgentTool> {
        Harness::tools_for(self, ids)
    }

    fn set_fatal(&self, message: String) {
        Harness::set_fatal(self, message)
    }
}

impl Script for Harness {
    fn next_request(&self) -> (u64, Option<Arc<ResponseSpec>>) {
        Harness::next_request(self)
    }

    fn push(&self, entry: Value) {
        Harness::push(self, entry)
    }
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

impl Harness {
    fn new(spec: Scenario) -> Arc<Harness> {
        let h = Arc::new_cyclic(|me| Harness {
            me: me.clone(),
            spec,
            trace: Mutex::new(Vec::new()),
            built_tools: Mutex::new(HashMap::new()),
            hooks: OnceLock::new(),
            counts: HookCounts::default(),
            requests: Mutex::new(Requests::default()),
            triggers: Mutex::new(Vec::new()),
            agent: OnceLock::new(),
            low_level: Mutex::new(None),
            fatal: Mutex::new(None),
            subscriptions: Mutex::new(Vec::new()),
        });
        let _ = h.hooks.set(hooks::build_hooks(&h.me));
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

    fn hooks(&self) -> Hooks {
        self.hooks.get().cloned().unwrap_or_default()
    }

    /// Counts a provider request and takes the next scripted response.
    pub(crate) fn next_request(&self) -> (u64, Option<Arc<ResponseSpec>>) {
        let mut r = self.requests.lock();
        r.count += 1;
        let spec = self.spec.model.get(r.next_response).cloned();
        r.next_response += 1;
        (r.count, spec)
    }

    fn scripted_model(&self) -> ScriptedModel {
        let script: Weak<dyn Script> = self.me.clone();
        ScriptedModel { script }
    }

    fn stream_fn(&self) -> Arc<dyn StreamFn> {
        Arc::new(self.scripted_model())
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
            let agent = Agent::new(AgentOptions {
                system_prompt: a.system_prompt.clone(),
                // Without a model the Agent's placeholder applies.
                model: a.model.as_deref().map(|id| Arc::new(make_model(id))),
                thinking_level: a.thinking_level,
                tools: self.tools_for(&a.tools),
                messages: a.messages.clone(),
                stream_fn: Some(self.stream_fn()),
                hooks: self.hooks(),
                tool_execution: a.tool_execution.unwrap_or_default(),
                steering_mode: a.steering_mode.unwrap_or_default(),
                follow_up_mode: a.follow_up_mode.unwrap_or_default(),
                stream_options: a.options.stream_options(),
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
            for (index, l) in self.spec.listeners.iter().enumerate() {
                let w = self.me.clone();
                let name = l.name.clone();
                let l = l.clone();
                let recorded = Arc::new(AtomicU64::new(0));
                let subscription = agent.subscribe(move |event: Arc<AgentEvent>, _signal| {
                    let h = w.upgrade();
                    let l = l.clone();
                    let recorded = recorded.clone();
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
                        let count = recorded.fetch_add(1, Ordering::SeqCst) + 1;
                        if l.unsubscribe_after == Some(count as f64) {
                            h.unsubscribe_listener(index);
                        }
                    }
                });
                self.subscriptions.lock().push((name, Some(subscription)));
            }
            let _ = self.agent.set(agent);
        }
        let mut sequential = Vec::new();
        {
            let mut triggers = self.triggers.lock();
            for a in &self.spec.actions {
                if a.at.is_some() {
                    triggers.push(TriggerState::new(a.clone()));
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

    /// Removes listener `index`; a second removal does nothing, as with the reference.
    fn unsubscribe_listener(&self, index: usize) {
        let subscription = self
            .subscriptions
            .lock()
            .get_mut(index)
            .and_then(|(_, s)| s.take());
        if let Some(s) = subscription {
            s.unsubscribe();
        }
    }

    /// The index of the last listener named `name` (the reference keeps one per name).
    fn listener_index(&self, name: &Value) -> Option<usize> {
        self.subscriptions
            .lock()
            .iter()
            .rposition(|(n, _)| norm::strict_equal(n, name))
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
}
