//! The tool-call step: a tool around the real one. Live, it journals the intent (with the
//! tool's replay policy) before the call and the result after it. Recovering, it returns a
//! recorded result without running the tool; a call that was cut off runs again only when
//! its policy is `safe`, and otherwise ends with an error saying its outcome is unknown.

use std::sync::Arc;

use tern_agent::{AgentTool, Replay, ToolCallInput, ToolOutput};

use super::RunInner;
use crate::{Divergence, Record, Step, ToolEnd};

/// The text of the result a `never` tool gets when a crash cut its call.
pub fn interrupted_text(tool_name: &str) -> String {
    format!(
        "The {tool_name} call was interrupted (the process ended while it ran) and its outcome \
         is unknown: it may or may not have taken effect. It was not run again because it is \
         not safe to repeat. Check its effect before calling it again."
    )
}

enum Plan {
    Recorded(ToolEnd),
    Interrupted,
    Live { id: String },
}

impl RunInner {
    fn plan_tool(&self, tool: &AgentTool, call_id: &str) -> Plan {
        let mut cursor = self.cursor.lock();
        let index = cursor.next_tool;
        cursor.next_tool += 1;
        if let Some(recorded) = cursor.recorded.tool_order.get(index) {
            if recorded != call_id && cursor.recorded.tools.contains_key(call_id) {
                self.note_divergence(Divergence::ToolCallOrder {
                    index: index + 1,
                    recorded: recorded.clone(),
                    now: call_id.to_string(),
                });
            }
        }
        match cursor.recorded.tools.get(call_id) {
            None if self.offline => {
                self.note_divergence(Divergence::ExtraToolCall {
                    call_id: call_id.to_string(),
                    tool: tool.name().to_string(),
                });
                Plan::Interrupted
            }
            None => Plan::Live {
                id: format!("{}:t:{call_id}", self.run_id),
            },
            Some(t) => match &t.outcome {
                Some(end) => Plan::Recorded(end.clone()),
                // Both the policy it started under and today's tool must say safe.
                // A replay never runs a tool.
                None if !self.offline
                    && t.replay == Replay::Safe
                    && tool.replay() == Replay::Safe =>
                {
                    Plan::Live { id: t.id.clone() }
                }
                None => Plan::Interrupted,
            },
        }
    }
}

fn output_of(end: ToolEnd) -> ToolOutput {
    match end {
        ToolEnd::Ok { result } => Ok(*result),
        ToolEnd::Err { message } => Err(message.into()),
    }
}

/// `tool`, journaled as steps of `run`.
pub(super) fn durable_tool(run: Arc<RunInner>, tool: AgentTool) -> AgentTool {
    let original = tool.clone();
    tool.with_execute(move |mut input: ToolCallInput| {
        let run = run.clone();
        let tool = original.clone();
        async move {
            let call_id = input.tool_call_id.clone();
            if let Err(limit) = run.spending.lock().tool_call() {
                return Err(
                    format!("the {} budget is spent: no more tool calls", limit.name()).into(),
                );
            }
            let id = match run.plan_tool(&tool, &call_id) {
                Plan::Recorded(end) => return output_of(end),
                Plan::Interrupted => {
                    let end = ToolEnd::Err {
                        message: interrupted_text(tool.name()),
                    };
                    // The synthetic result is an outcome too: a second crash replays it.
                    let id = format!("{}:t:{call_id}", run.run_id);
                    run.journal
                        .append(&Record::new(Step::ToolOutcome {
                            id,
                            end: end.clone(),
                        }))
                        .await
                        .map_err(|e| format!("durable run: {e}"))?;
                    return output_of(end);
                }
                Plan::Live { id } => id,
            };
            // The arguments move into the record and back: copied only when they are the
            // call's own (shared with the transcript).
            let intent = Record::new(Step::ToolIntent {
                id: id.clone(),
                run_id: run.run_id.clone(),
                tool_call_id: call_id.to_string(),
                tool_name: tool.name().to_string(),
                args: std::mem::take(&mut input.args).into_value(),
                replay: tool.replay(),
            });
            let written = run.journal.append(&intent).await;
            if let Step::ToolIntent { args, .. } = intent.step {
                input.args = args.into();
            }
            written.map_err(|e| format!("durable run: the tool was not run: {e}"))?;
            let end = match tool.execute(input).await {
                Ok(result) => ToolEnd::Ok {
                    result: Box::new(result),
                },
                Err(e) => ToolEnd::Err {
                    message: e.to_string(),
                },
            };
            let outcome = Record::new(Step::ToolOutcome { id, end });
            run.journal
                .append(&outcome)
                .await
                .map_err(|e| format!("durable run: the result was not recorded: {e}"))?;
            match outcome.step {
                Step::ToolOutcome { end, .. } => output_of(end),
                // Built as a tool outcome just above.
                _ => Err("durable run: the result was not recorded".into()),
            }
        }
    })
}
