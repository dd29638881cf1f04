//! The scenario's tools: built once per id, scripted by their behaviours, and the nested
//! `runToolCall` steps they (and actions) take.

use std::sync::Arc;

use serde_json::{json, Value};
use tern_agent::{
    run_tool_call, AgentContext, AgentTool, RunToolCallOptions, ToolCallInput, ToolCallOutcome,
    ToolOutput, ToolResult,
};
use tern_ai::{AssistantMessage, BoxError, ContentBlock, StopReason, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

use super::norm::{norm, norm_of, outcome_entry};
use super::spec::{self, CallSpec, Step, ToolDef};
use super::{abortable_sleep, entry, sleep_ms, Harness, Place};

impl Harness {
    pub(super) fn tool(&self, id: &str) -> Option<AgentTool> {
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
            tool = tool.with_prepare_arguments(move |args: &Value| d.prepare_arguments(args));
        }
        self.built_tools.lock().insert(id.to_string(), tool.clone());
        Some(tool)
    }

    pub(super) fn tools_for(&self, ids: &[String]) -> Vec<AgentTool> {
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
    pub(super) fn nested_tools(&self) -> Vec<AgentTool> {
        if let Some(ll) = self.low_level.lock().as_ref() {
            return ll.tools.clone();
        }
        self.agent
            .get()
            .map(|a| a.state().tools)
            .unwrap_or_default()
    }

    pub(super) async fn execute_tool(
        self: Arc<Self>,
        def: Arc<ToolDef>,
        input: ToolCallInput,
    ) -> ToolOutput {
        let b = def
            .calls
            .get(input.tool_call_id.as_str())
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

    pub(super) async fn run_tool_call_for(
        &self,
        c: &CallSpec,
        tools: Vec<AgentTool>,
        signal: CancellationToken,
    ) -> ToolCallOutcome {
        let call = ToolCall {
            id: tern_ai::Name::unique(&c.id),
            name: c.name.as_str().into(),
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
                hooks: self.hooks(),
                on_update: Some(on_update),
            },
        )
        .await
    }
}

fn synthetic_assistant(call: &ToolCall) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::tool_call(call.clone())],
        api: "scripted".into(),
        provider: "scripted".into(),
        model: spec::DEFAULT_MODEL_ID.into(),
        usage: Usage::default().into(),
        stop_reason: StopReason::ToolUse,
        timestamp: 0,
        ..AssistantMessage::default()
    }
}
