//! The Codex stream: records split at blank lines (a last record without one still counts),
//! `[DONE]` skipped; `error` and `response.failed` events fail the stream; `response.done`,
//! `.completed` and `.incomplete` become the terminal `response.completed` (status normalized,
//! `end_turn` kept) and end reading; everything else goes to the Responses mapper.

use serde_json::{json, Value};

use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::js_json::compact;
use crate::providers::openai_responses::stream::State as ResponsesState;
use crate::providers::output::Output;

const STATUSES: [&str; 6] = [
    "completed",
    "incomplete",
    "failed",
    "cancelled",
    "queued",
    "in_progress",
];

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    responses: ResponsesState,
    /// The terminal response arrived: the rest of the body is not read.
    finished: bool,
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl State {
    /// A mapper whose custom tool calls take the declared grammar tools' input properties.
    pub(super) fn new(grammar_inputs: crate::providers::constrained::GrammarInputs) -> Self {
        let mut state = State::default();
        state.responses.grammar_inputs = grammar_inputs;
        state
    }

    fn forward(&mut self, out: &mut Output<'_>, event: &Value) -> Result<(), String> {
        let data = compact(event);
        self.responses.record(
            out,
            SseRecord {
                event: None,
                data: &data,
            },
        )
    }
}

impl WireStream for State {
    const FRAMING: Framing = Framing::SseFlushAtEnd;

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let data = record.data.trim();
        if self.finished || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Value =
            serde_json::from_str(data).map_err(|e| format!("Invalid Codex SSE JSON: {e}"))?;
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return Ok(());
        };
        match kind {
            "error" => {
                let nested = event.get("error").filter(|e| e.is_object());
                let code =
                    text(event.get("code")).or_else(|| text(nested.and_then(|n| n.get("code"))));
                let message = text(event.get("message"))
                    .or_else(|| text(nested.and_then(|n| n.get("message"))));
                let what = message
                    .or(code)
                    .map(str::to_string)
                    .unwrap_or_else(|| compact(&event));
                Err(format!("Codex error: {what}"))
            }
            "response.failed" => Err(text(event.pointer("/response/error/message"))
                .unwrap_or("Codex response failed")
                .to_string()),
            "response.done" | "response.completed" | "response.incomplete" => {
                self.finished = true;
                let mut event = event.clone();
                if let Some(end_turn) = event.pointer("/response/end_turn").and_then(Value::as_bool)
                {
                    out.update(|m| m.extra_mut().end_turn = Some(end_turn));
                }
                event["type"] = json!("response.completed");
                if let Some(response) = event.get_mut("response").and_then(Value::as_object_mut) {
                    let status = response.get("status").and_then(Value::as_str);
                    match status.filter(|s| STATUSES.contains(s)) {
                        Some(_) => {}
                        None => {
                            response.remove("status");
                        }
                    }
                }
                self.forward(out, &event)
            }
            _ => self.forward(out, &event),
        }
    }

    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        self.responses.end_of_stream(out)
    }

    fn on_failure(&mut self, out: &mut Output<'_>) {
        self.responses.on_failure(out);
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(out, "Codex stream ended without a stop reason", |m| {
            m.error_message.clone()
        })
    }
}
