//! What a journal says about its last run, folded into what recovery needs: the model
//! requests in order, the tool calls by call id, the inputs and whether the run finished.

use std::collections::HashMap;

use tern_agent::{Replay, Restart};
use tern_ai::{AssistantMessage, Message};

use crate::{Queue, Record, RunEnd, Step, ToolEnd};

/// One model request of a recorded run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedModel {
    /// The step id.
    pub id: String,
    /// Digests of what it was sent with.
    pub digests: crate::digest::RequestDigests,
    /// Attempts made (intents written).
    pub attempts: u32,
    /// The final message, if the request finished before the journal ends.
    pub outcome: Option<AssistantMessage>,
    /// The messages a repeated `start` left behind, in order ([`Step::ModelOutcome`]).
    pub restarts: Vec<Restart>,
}

/// One tool call of a recorded run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedTool {
    /// The step id.
    pub id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments it ran with.
    pub args: serde_json::Value,
    /// The policy it started under.
    pub replay: Replay,
    /// How it ended, if it did before the journal ends.
    pub outcome: Option<ToolEnd>,
}

/// One accepted input of a recorded run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedInput {
    /// The input id.
    pub id: String,
    /// Its queue.
    pub queue: Queue,
    /// The message.
    pub message: Message,
    /// The model request it was placed before, once placed into the transcript.
    pub committed_before: Option<usize>,
    /// Handed back to the host.
    pub returned: bool,
}

/// One decision asked of someone outside the program (a permission answer) in a recorded run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedDecision {
    /// The step id.
    pub id: String,
    /// The hook that asked.
    pub hook: String,
    /// What it asked.
    pub question: serde_json::Value,
    /// The answer, if it came before the journal ends.
    pub answer: Option<serde_json::Value>,
}

/// The last run of a journal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedRun {
    /// The run id.
    pub run_id: String,
    /// Digest of the transcript it started from.
    pub transcript_digest: String,
    /// Messages in the transcript it started from.
    pub transcript_length: usize,
    /// The prompt it started with.
    pub prompt: Vec<Message>,
    /// Model requests in the order they were made.
    pub models: Vec<RecordedModel>,
    /// Tool calls by the model's tool-call id.
    pub tools: HashMap<String, RecordedTool>,
    /// Tool-call ids in the order their calls started.
    pub tool_order: Vec<String>,
    /// Inputs accepted while the run went on, in acceptance order.
    pub inputs: Vec<RecordedInput>,
    /// How the run ended, if it did.
    pub finished: Option<RunEnd>,
    /// The limits it was started with.
    pub budget: crate::Budgets,
    /// Decisions asked outside the program, by the tool-call id they are about.
    pub decisions: HashMap<String, RecordedDecision>,
}

impl RecordedRun {
    /// The last run in `records`, or `None` when no run was ever started.
    pub fn last(records: &[Record]) -> Option<RecordedRun> {
        let start = records
            .iter()
            .rposition(|r| matches!(r.step, Step::RunStarted { .. }))?;
        let mut run = RecordedRun::default();
        for r in &records[start..] {
            run.apply(&r.step);
        }
        Some(run)
    }

    /// Whether the run was cut before it ended.
    pub fn interrupted(&self) -> bool {
        self.finished.is_none()
    }

    fn apply(&mut self, step: &Step) {
        match step {
            Step::RunStarted {
                run_id,
                transcript_digest,
                transcript_length,
                prompt,
                budget,
            } => {
                self.budget = budget.clone();
                self.prompt = prompt.clone();
                self.run_id = run_id.clone();
                self.transcript_digest = transcript_digest.clone();
                self.transcript_length = *transcript_length;
            }
            Step::InputAccepted { id, queue, message } => self.inputs.push(RecordedInput {
                id: id.clone(),
                queue: *queue,
                message: message.clone(),
                committed_before: None,
                returned: false,
            }),
            Step::InputCommitted { id, before_request } => {
                if let Some(i) = self.inputs.iter_mut().find(|i| &i.id == id) {
                    i.committed_before = Some(*before_request);
                }
            }
            Step::InputReturned { id } => {
                if let Some(i) = self.inputs.iter_mut().find(|i| &i.id == id) {
                    i.returned = true;
                }
            }
            Step::ModelIntent {
                id,
                context_digest,
                system_digest,
                tools_digest,
                ..
            } => match self.models.iter_mut().find(|m| &m.id == id) {
                Some(m) => m.attempts += 1,
                None => self.models.push(RecordedModel {
                    id: id.clone(),
                    digests: crate::digest::RequestDigests {
                        system: system_digest.clone(),
                        tools: tools_digest.clone(),
                        context: context_digest.clone(),
                    },
                    attempts: 1,
                    outcome: None,
                    restarts: Vec::new(),
                }),
            },
            Step::ModelOutcome {
                id,
                message,
                restarts,
            } => {
                if let Some(m) = self.models.iter_mut().find(|m| &m.id == id) {
                    m.outcome = Some(message.clone());
                    m.restarts.clone_from(restarts);
                }
            }
            Step::ToolIntent {
                id,
                tool_call_id,
                tool_name,
                args,
                replay,
                ..
            } => {
                if !self.tools.contains_key(tool_call_id) {
                    self.tool_order.push(tool_call_id.clone());
                }
                self.tools.insert(
                    tool_call_id.clone(),
                    RecordedTool {
                        id: id.clone(),
                        tool_name: tool_name.clone(),
                        args: args.clone(),
                        replay: *replay,
                        outcome: None,
                    },
                );
            }
            Step::ToolOutcome { id, end } => {
                if let Some(t) = self.tools.values_mut().find(|t| &t.id == id) {
                    t.outcome = Some(end.clone());
                }
            }
            Step::DecisionIntent {
                id,
                hook,
                tool_call_id,
                question,
                ..
            } => {
                self.decisions.insert(
                    tool_call_id.clone(),
                    RecordedDecision {
                        id: id.clone(),
                        hook: hook.clone(),
                        question: question.clone(),
                        answer: None,
                    },
                );
            }
            Step::Decision { id, value, .. } => {
                if let Some(d) = self.decisions.values_mut().find(|d| &d.id == id) {
                    d.answer = Some(value.clone());
                }
            }
            Step::RunFinished { end, .. } => self.finished = Some(end.clone()),
        }
    }
}
