//! The scenario's actions (prompt, steer, abort, set, the low-level loop entry points, ...)
//! and the events that trigger them.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Map, Value};
use tern_agent::{
    agent_loop, agent_loop_continue, run_agent_loop, run_agent_loop_continue, AgentContext,
    AgentEvent, AgentLoopConfig, AgentTool,
};
use tern_ai::{Content, ContentBlock, Message, ThinkingLevel, UserMessage};
use tokio_util::sync::CancellationToken;

use super::model::make_model;
use super::norm::outcome_entry;
use super::norm::{norm_of, strict_equal};
use super::spec::ActionSpec;
use super::{entry, sleep_ms, Harness};

pub(super) struct LowLevel {
    signal: CancellationToken,
    pub(super) tools: Vec<AgentTool>,
}

pub(super) struct TriggerState {
    action: Arc<ActionSpec>,
    count: u64,
    fired: bool,
}

impl TriggerState {
    pub(super) fn new(action: Arc<ActionSpec>) -> Self {
        TriggerState {
            action,
            count: 0,
            fired: false,
        }
    }
}

/// Where an action runs: sequentially, from a trigger, or inside a hook or tool.
#[derive(Clone)]
pub(super) enum Place {
    Sequential,
    At(String),
    In(String),
}

/// How an action failed: an `error` entry, or a scenario the runner cannot execute.
pub(super) enum Failure {
    Error(String),
    Fatal(String),
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Error(e.to_string())
    }
}

impl Harness {
    pub(super) fn record_event(self: &Arc<Self>, event: &AgentEvent) -> BoxFuture<'static, ()> {
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

    pub(super) fn do_action(
        self: &Arc<Self>,
        a: Arc<ActionSpec>,
        place: Place,
    ) -> BoxFuture<'static, ()> {
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

    pub(super) async fn perform(self: &Arc<Self>, a: &ActionSpec) -> Result<(), Failure> {
        match a.do_.as_str() {
            "prompt" => {
                let agent = self.agent(&a.do_)?;
                let messages = a.messages.clone();
                let text = a.text.clone().unwrap_or_default();
                // How the run ended is in the trace already: the outcome adds nothing to it.
                let run = async move {
                    match messages {
                        Some(m) => agent.prompt_messages(m).await.map(drop),
                        None => agent.prompt(&text).await.map(drop),
                    }
                };
                self.await_or_detach(a, run).await?;
            }
            "continue" => {
                let agent = self.agent(&a.do_)?;
                let run = async move { agent.continue_run().await.map(drop) };
                self.await_or_detach(a, run).await?;
            }
            "waitForIdle" => {
                self.agent(&a.do_)?.wait_for_idle().await;
                self.push(entry(vec![("kind", json!("idle"))]));
            }
            "clearSteeringQueue" => self.agent(&a.do_)?.clear_steering_queue(),
            "clearFollowUpQueue" => self.agent(&a.do_)?.clear_follow_up_queue(),
            "clearAllQueues" => self.agent(&a.do_)?.clear_all_queues(),
            "unsubscribe" => {
                let Some(index) = self.listener_index(&a.name) else {
                    return Err(Failure::Fatal(format!(
                        "runner: unknown listener {}",
                        super::norm::js_template(&a.name)
                    )));
                };
                self.unsubscribe_listener(index);
            }
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

    /// Awaits a run, or with `wait: false` starts it on its own task (its error recorded
    /// when it comes) and lets it go as far as it can before its first timer.
    async fn await_or_detach<E: std::fmt::Display>(
        self: &Arc<Self>,
        a: &ActionSpec,
        run: impl std::future::Future<Output = Result<(), E>> + Send + 'static,
    ) -> Result<(), Failure> {
        if a.wait {
            return run.await.map_err(|e| Failure::Error(e.to_string()));
        }
        let h = self.clone();
        let do_ = a.do_.clone();
        tokio::spawn(async move {
            if let Err(e) = run.await {
                h.push(entry(vec![
                    ("kind", json!("error")),
                    ("do", json!(do_)),
                    ("message", json!(e.to_string())),
                ]));
            }
        });
        // The reference waits for a 0 ms timer: every task that is ready runs first.
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        Ok(())
    }

    pub(super) fn loop_config(&self, a: &ActionSpec) -> AgentLoopConfig {
        let mut c = AgentLoopConfig::new(make_model(&a.cfg_model));
        c.reasoning = (a.cfg_thinking_level != ThinkingLevel::Off).then_some(a.cfg_thinking_level);
        if let Some(mode) = a.cfg_tool_execution {
            c.tool_execution = mode;
        }
        c.stream_options = a.cfg_options.stream_options();
        // Without `convert_to_llm` the library's default is the standard-role filter.
        c.hooks = self.hooks();
        c
    }

    pub(super) async fn low_level_loop(
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
}

/// The reference's `normEvent` of a library event.
fn norm_event(event: &AgentEvent) -> Value {
    super::norm::norm_event(&serde_json::to_value(event).unwrap_or(Value::Null))
}

/// The fields triggers filter on: `toolName`, `message.role`, `assistantMessageEvent.type`.
fn event_filters(event: &AgentEvent) -> (Option<String>, Option<String>, Option<&'static str>) {
    match event {
        AgentEvent::ToolExecutionStart { tool_call }
        | AgentEvent::ToolExecutionUpdate { tool_call, .. }
        | AgentEvent::ToolExecutionEnd { tool_call, .. } => {
            (Some(tool_call.name.to_string()), None, None)
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
