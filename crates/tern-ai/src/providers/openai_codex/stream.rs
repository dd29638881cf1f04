//! The Codex stream: records split at blank lines (a last record without one still counts),
//! `[DONE]` skipped; `error` and `response.failed` events fail the stream; `response.done`,
//! `.completed` and `.incomplete` become the terminal `response.completed` (status normalized,
//! `end_turn` kept) and end reading; everything else goes to the Responses mapper.
//!
//! Both transports map through [`State::event`]: the SSE records parsed here, the WebSocket
//! messages parsed by the WebSocket reader. [`State::failure`] says what kind of failure a
//! mapping error was, which the WebSocket transport needs to decide on a retry or a fallback.

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

/// What kind of failure the last mapping error was (the reference's error classes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MapFailure {
    /// An `error` or `response.failed` event (`CodexApiError`), with its code if any.
    Api {
        /// The event's `code` (or `error.code`, `response.error.code`).
        code: Option<String>,
    },
    /// A message that is not JSON (`CodexProtocolError`).
    Protocol,
}

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    responses: ResponsesState,
    /// The terminal response arrived: the rest of the body is not read.
    finished: bool,
    /// The class of the error [`State::event`] or [`WireStream::record`] last returned, when
    /// it was Codex's own; `None` for the Responses mapper's errors.
    failure: Option<MapFailure>,
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

    /// Whether the terminal response was mapped.
    pub(crate) fn finished(&self) -> bool {
        self.finished
    }

    /// The class of the last error, when Codex's own (see [`MapFailure`]).
    pub(crate) fn failure(&self) -> Option<&MapFailure> {
        self.failure.as_ref()
    }

    /// Maps one parsed event; `Err` ends the stream with that message.
    pub(crate) fn event(&mut self, out: &mut Output<'_>, event: &Value) -> Result<(), String> {
        if self.finished {
            return Ok(());
        }
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
                    .unwrap_or_else(|| compact(event));
                self.failure = Some(MapFailure::Api {
                    code: code.map(str::to_string),
                });
                Err(format!("Codex error: {what}"))
            }
            "response.failed" => {
                self.failure = Some(MapFailure::Api {
                    code: event
                        .pointer("/response/error/code")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                });
                Err(text(event.pointer("/response/error/message"))
                    .unwrap_or("Codex response failed")
                    .to_string())
            }
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
                    if !status.is_some_and(|s| STATUSES.contains(&s)) {
                        response.remove("status");
                    }
                }
                self.forward(out, &event)
            }
            _ => self.forward(out, event),
        }
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
        let event: Value = serde_json::from_str(data).map_err(|e| {
            self.failure = Some(MapFailure::Protocol);
            format!("Invalid Codex SSE JSON: {e}")
        })?;
        self.event(out, &event)
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
