//! Journal records: one per step boundary (an intent before an effect, an outcome after it).
//!
//! Every record is a JSON object `{"v":1,"type":…,…}`. `v` is the format version: a record
//! of another version is refused, never guessed at. The shapes follow the durable-harness
//! design of Pi (`harness-v2.md`, sections 5–6): intents carry the ids their outcomes will
//! use, queued input travels in full at acceptance, and a tool intent snapshots the tool's
//! replay policy.
//!
//! ```
//! use tern_durable::{Record, Step};
//! let r = Record::new(Step::ModelIntent {
//!     id: "s1".into(),
//!     run_id: "r1".into(),
//!     attempt: 1,
//!     context_digest: "ab12".into(),
//!     system_digest: "cd34".into(),
//!     tools_digest: "ef56".into(),
//! });
//! let json = serde_json::to_string(&r).unwrap();
//! assert_eq!(json, concat!(r#"{"v":1,"type":"model_intent","id":"s1","runId":"r1","attempt":1,"#,
//!     r#""contextDigest":"ab12","systemDigest":"cd34","toolsDigest":"ef56"}"#));
//! assert_eq!(Record::from_value(serde_json::from_str(&json).unwrap()).unwrap(), r);
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_agent::{Replay, Restart, ToolResult};
use tern_ai::{AssistantMessage, Message};

use crate::Budgets;

/// The record format this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// One journal record: the format version and the step boundary it marks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Format version ([`FORMAT_VERSION`]).
    pub v: u64,
    /// What happened.
    #[serde(flatten)]
    pub step: Step,
}

/// The queue an input was accepted into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Queue {
    /// The run's opening prompt.
    Prompt,
    /// A steering message (delivered after the current tool batch).
    Steer,
    /// A follow-up (delivered when the model would stop).
    FollowUp,
}

/// How a run ended, as its last record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum RunEnd {
    /// The loop finished normally.
    Completed,
    /// Stopped by abort.
    Aborted,
    /// Failed (the model's last message is an error).
    Failed,
    /// A budget ran out and the wrap-up turn answered; names the limit.
    Budget {
        /// Which limit (`turns`, `tokens`, `cost`, `wallTime`, `toolCalls`).
        limit: String,
    },
}

/// How a tool call ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "camelCase")]
pub enum ToolEnd {
    /// The tool returned a result (an `isError` result included).
    Ok {
        /// What it returned (boxed: results are large, errors small).
        result: Box<ToolResult>,
    },
    /// The tool failed (threw); the loop turns the message into an error result.
    Err {
        /// The failure's text.
        message: String,
    },
}

/// The step boundary a record marks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// A run was accepted: its id, and the digest of the transcript it starts from (a journal
    /// is replayed only onto the transcript it was written for).
    #[serde(rename_all = "camelCase")]
    RunStarted {
        /// The run id all its records carry.
        run_id: String,
        /// [`transcript_digest`](crate::transcript_digest) of the messages before the run.
        transcript_digest: String,
        /// How many messages the transcript held before the run.
        transcript_length: usize,
        /// The prompt the run was started with (accepted with the run, in the same record).
        prompt: Vec<Message>,
        /// The limits it runs under (absent: none), so a recovery or a replay keeps them.
        #[serde(default, skip_serializing_if = "Budgets::is_unlimited")]
        budget: Budgets,
    },
    /// An input was accepted into a queue (journaled before the call returns).
    #[serde(rename_all = "camelCase")]
    InputAccepted {
        /// The input's id (returned to the host).
        id: String,
        /// Which queue.
        queue: Queue,
        /// The full message.
        message: Message,
    },
    /// An accepted input was placed into the transcript.
    #[serde(rename_all = "camelCase")]
    InputCommitted {
        /// The input's id.
        id: String,
        /// The 0-based model request it was placed before (where recovery re-delivers it).
        before_request: usize,
    },
    /// An accepted input was handed back to the host (abort) instead of delivered.
    #[serde(rename_all = "camelCase")]
    InputReturned {
        /// The input's id.
        id: String,
    },
    /// A model request is about to be sent.
    #[serde(rename_all = "camelCase")]
    ModelIntent {
        /// The step id.
        id: String,
        /// The run.
        run_id: String,
        /// 1-based attempt of this request (durable across restarts).
        attempt: u32,
        /// [`context_digest`](crate::context_digest) of what is sent.
        context_digest: String,
        /// Digest of the system prompt sent ([`RequestDigests`](crate::digest::RequestDigests)).
        system_digest: String,
        /// Digest of the tool set and schemas sent.
        tools_digest: String,
    },
    /// A model request finished: its final message (deltas are not journaled).
    #[serde(rename_all = "camelCase")]
    ModelOutcome {
        /// The step id of the intent.
        id: String,
        /// The final assistant message.
        message: AssistantMessage,
        /// What the partials a repeated `start` left behind show (Bedrock streams a `start`
        /// at each `messageStart`), in order, as the response ended: the loop keeps them in
        /// its context before the final message, so a replay pushes them again. Empty for
        /// almost every response, and then not written.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restarts: Vec<Restart>,
    },
    /// A tool call is about to run.
    #[serde(rename_all = "camelCase")]
    ToolIntent {
        /// The step id.
        id: String,
        /// The run.
        run_id: String,
        /// The model's tool-call id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The validated arguments it runs with.
        args: Value,
        /// The tool's replay policy when it started.
        replay: Replay,
    },
    /// A tool call finished.
    #[serde(rename_all = "camelCase")]
    ToolOutcome {
        /// The step id of the intent.
        id: String,
        /// How it ended.
        #[serde(flatten)]
        end: ToolEnd,
    },
    /// A hook is about to ask outside the program (a person) for a decision about a tool
    /// call.
    #[serde(rename_all = "camelCase")]
    DecisionIntent {
        /// The step id (its [`Step::Decision`] carries it too).
        id: String,
        /// The run.
        run_id: String,
        /// Which hook asks (e.g. `permission`).
        hook: String,
        /// The model's tool-call id the decision is about.
        tool_call_id: String,
        /// What is asked (for the permission gate: the tool, its arguments, the question).
        question: Value,
    },
    /// A decision that came from outside the program (a permission answer typed by a person),
    /// journaled before it takes effect.
    #[serde(rename_all = "camelCase")]
    Decision {
        /// The step id of the intent.
        id: String,
        /// Which hook asked (e.g. `permission`).
        hook: String,
        /// The answer.
        value: Value,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        /// The run.
        run_id: String,
        /// How.
        #[serde(flatten)]
        end: RunEnd,
        /// How long the run went, in ms, as the process that ended it measured it (a
        /// recovered run: from its recovery); summed into session budgets.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wall_time_ms: Option<u64>,
    },
}

/// Why a JSON value is not a record this build replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordRejection {
    /// Written by another format version.
    Version(u64),
    /// Not a record of any known shape.
    Malformed(String),
}

impl Record {
    /// A record of the current format version.
    pub fn new(step: Step) -> Self {
        Record {
            v: FORMAT_VERSION,
            step,
        }
    }

    /// Parses a stored record, refusing other format versions before reading anything else.
    pub fn from_value(value: Value) -> Result<Record, RecordRejection> {
        match value.get("v").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            Some(other) => return Err(RecordRejection::Version(other)),
            None => return Err(RecordRejection::Malformed("no format version `v`".into())),
        }
        serde_json::from_value(value).map_err(|e| RecordRejection::Malformed(e.to_string()))
    }

    /// The run a `run_started` / `run_finished` record names.
    pub fn run_id(&self) -> Option<&str> {
        match &self.step {
            Step::RunStarted { run_id, .. }
            | Step::RunFinished { run_id, .. }
            | Step::ModelIntent { run_id, .. }
            | Step::ToolIntent { run_id, .. }
            | Step::DecisionIntent { run_id, .. } => Some(run_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_step_round_trips_through_json() {
        let steps = vec![
            Step::RunStarted {
                run_id: "r".into(),
                transcript_digest: "d".into(),
                transcript_length: 0,
                prompt: vec![Message::user_text("go")],
                budget: Budgets {
                    run: crate::Budget {
                        max_turns: Some(2),
                        max_wall_time: Some(std::time::Duration::from_millis(1500)),
                        ..Default::default()
                    },
                    session: crate::Budget {
                        max_cost: Some(0.5),
                        ..Default::default()
                    },
                },
            },
            Step::InputAccepted {
                id: "i".into(),
                queue: Queue::FollowUp,
                message: Message::user_text("more"),
            },
            Step::InputCommitted {
                id: "i".into(),
                before_request: 1,
            },
            Step::InputReturned { id: "i".into() },
            Step::ToolIntent {
                id: "t".into(),
                run_id: "r".into(),
                tool_call_id: "c1".into(),
                tool_name: "write".into(),
                args: json!({"path": "a"}),
                replay: Replay::Never,
            },
            Step::ToolOutcome {
                id: "t".into(),
                end: ToolEnd::Ok {
                    result: Box::new(ToolResult::text("done")),
                },
            },
            Step::ToolOutcome {
                id: "t".into(),
                end: ToolEnd::Err {
                    message: "boom".into(),
                },
            },
            Step::DecisionIntent {
                id: "p".into(),
                run_id: "r".into(),
                hook: "permission".into(),
                tool_call_id: "c1".into(),
                question: json!({"tool": "bash", "prompt": "Allow bash?"}),
            },
            Step::Decision {
                id: "p".into(),
                hook: "permission".into(),
                value: json!("allow"),
            },
            Step::RunFinished {
                run_id: "r".into(),
                end: RunEnd::Budget {
                    limit: "turns".into(),
                },
                wall_time_ms: Some(20),
            },
        ];
        for step in steps {
            let r = Record::new(step);
            let v = serde_json::to_value(&r).expect("serializes");
            assert_eq!(v["v"], json!(1));
            assert_eq!(Record::from_value(v).expect("parses"), r);
        }
    }

    #[test]
    fn the_wire_names_are_camel_case_inside_snake_case_types() {
        let r = Record::new(Step::ToolIntent {
            id: "t".into(),
            run_id: "r".into(),
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            args: json!({}),
            replay: Replay::Safe,
        });
        assert_eq!(
            serde_json::to_value(&r).expect("json"),
            json!({"v":1,"type":"tool_intent","id":"t","runId":"r","toolCallId":"c",
                   "toolName":"read","args":{},"replay":"safe"})
        );
        let end = Record::new(Step::RunFinished {
            run_id: "r".into(),
            end: RunEnd::Completed,
            wall_time_ms: None,
        });
        assert_eq!(
            serde_json::to_value(&end).expect("json"),
            json!({"v":1,"type":"run_finished","runId":"r","outcome":"completed"})
        );
    }

    #[test]
    fn a_model_outcome_keeps_its_restarts_and_omits_none() {
        let message = |text: &str| tern_ai::AssistantMessage {
            content: vec![tern_ai::ContentBlock::text(text)],
            ..Default::default()
        };
        let outcome = |restarts| {
            Record::new(Step::ModelOutcome {
                id: "m".into(),
                message: message("done"),
                restarts,
            })
        };
        let once = serde_json::to_value(outcome(Vec::new())).expect("json");
        assert!(once.get("restarts").is_none(), "{once}");
        let twice = outcome(vec![
            Restart::Partial {
                message: message("do"),
            },
            Restart::Final,
        ]);
        let v = serde_json::to_value(&twice).expect("json");
        assert_eq!(v["restarts"][0]["kind"], json!("partial"));
        assert_eq!(
            v["restarts"][0]["message"]["content"][0]["text"],
            json!("do")
        );
        assert_eq!(v["restarts"][1], json!({"kind": "final"}));
        assert_eq!(Record::from_value(v).expect("parses"), twice);
    }

    #[test]
    fn records_written_before_budgets_and_wall_times_still_read() {
        let started = json!({"v":1,"type":"run_started","runId":"r","transcriptDigest":"d",
                             "transcriptLength":0,"prompt":[]});
        match Record::from_value(started).expect("parses").step {
            Step::RunStarted { budget, .. } => assert!(budget.is_unlimited()),
            other => panic!("{other:?}"),
        }
        let finished = json!({"v":1,"type":"run_finished","runId":"r","outcome":"completed"});
        assert!(matches!(
            Record::from_value(finished).expect("parses").step,
            Step::RunFinished {
                wall_time_ms: None,
                ..
            }
        ));
    }

    #[test]
    fn another_version_is_refused_before_its_shape_is_read() {
        let v = json!({"v": 2, "type": "something_new"});
        assert_eq!(Record::from_value(v), Err(RecordRejection::Version(2)));
        let none = json!({"type": "model_intent"});
        assert!(matches!(
            Record::from_value(none),
            Err(RecordRejection::Malformed(_))
        ));
    }
}
