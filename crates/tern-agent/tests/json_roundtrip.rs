//! Every agent event of the reference's conformance traces, rebuilt from its fields as a
//! tern [`AgentEvent`] and serialized, is the reference's JSON text (key order included).
//!
//! Compared as text: the event's keys and their order, and every message inside it. Two
//! parts are compared as values instead (key order ignored), because their order is the
//! scenario's, not the reference's: a tool's `result`/`partialResult` objects, which the
//! scenario's tool definitions build. `message_update` events are left out: the traces keep
//! only their type and delta (FORMAT.md 2.2). The traces' normalization (no `timestamp`,
//! `durationMs` as `true`, zero usage removed) is undone and redone as in tern-ai's
//! `tests/support/traces.rs`.

#[path = "../../tern-ai/tests/support/traces.rs"]
mod traces;

use std::sync::Arc;

use serde_json::{json, Value};
use tern_agent::{AgentEvent, ToolResult};
use tern_ai::{Message, ToolCall};

fn field<T: serde::de::DeserializeOwned>(e: &Value, key: &str) -> Result<T, String> {
    serde_json::from_value(e.get(key).cloned().unwrap_or(Value::Null))
        .map_err(|err| format!("{key}: {err}"))
}

fn call(e: &Value) -> Result<Arc<ToolCall>, String> {
    Ok(Arc::new(ToolCall {
        id: field(e, "toolCallId")?,
        name: field(e, "toolName")?,
        arguments: e.get("args").cloned().unwrap_or(json!({})),
        extra: None,
    }))
}

/// The event as tern's type, from the trace entry's fields (`None` for `message_update`).
fn rebuild(e: &Value) -> Result<Option<AgentEvent>, String> {
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
    Ok(Some(match kind {
        "agent_start" => AgentEvent::AgentStart,
        "turn_start" => AgentEvent::TurnStart,
        "agent_end" => AgentEvent::AgentEnd {
            messages: field(e, "messages")?,
        },
        "turn_end" => {
            let results: Vec<Message> = field(e, "toolResults")?;
            let tool_results = results
                .into_iter()
                .map(|m| match m {
                    Message::ToolResult(r) => Ok(r),
                    other => Err(format!("a {} message in toolResults", other.role())),
                })
                .collect::<Result<_, _>>()?;
            AgentEvent::TurnEnd {
                message: field(e, "message")?,
                tool_results,
            }
        }
        "message_start" => AgentEvent::MessageStart {
            message: field(e, "message")?,
        },
        "message_end" => AgentEvent::MessageEnd {
            message: field(e, "message")?,
        },
        "tool_execution_start" => AgentEvent::ToolExecutionStart {
            tool_call: call(e)?,
        },
        "tool_execution_update" => AgentEvent::ToolExecutionUpdate {
            tool_call: call(e)?,
            partial_result: Box::new(field::<ToolResult>(e, "partialResult")?),
        },
        "tool_execution_end" => AgentEvent::ToolExecutionEnd {
            tool_call: call(e)?,
            result: std::sync::Arc::new(field::<ToolResult>(e, "result")?),
            is_error: field(e, "isError")?,
            duration_ms: field(e, "durationMs")?,
        },
        "message_update" => return Ok(None),
        other => return Err(format!("unknown event type {other}")),
    }))
}

/// The events of a trace: `event` entries without their `kind`, and the events of `stream`
/// entries.
fn events_of(trace: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let entries = trace["trace"].as_array().cloned().unwrap_or_default();
    for entry in entries {
        match entry.get("kind").and_then(Value::as_str) {
            Some("event") => {
                let mut e = entry.clone();
                if let Some(o) = e.as_object_mut() {
                    o.shift_remove("kind");
                }
                out.push(e);
            }
            Some("stream") => out.extend(entry["events"].as_array().cloned().unwrap_or_default()),
            _ => {}
        }
    }
    out
}

/// The JSON text of a value, keys in their order.
fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Splits off the tool-result objects compared as values.
fn split_results(mut e: Value) -> (Value, Vec<Value>) {
    let mut results = Vec::new();
    if let Some(o) = e.as_object_mut() {
        for key in ["result", "partialResult"] {
            if let Some(r) = o.get_mut(key) {
                results.push(std::mem::replace(r, Value::Null));
            }
        }
    }
    (e, results)
}

#[test]
fn every_trace_event_is_written_as_the_reference_writes_it() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in traces::trace_files() {
        for reference in events_of(&traces::read_trace(&path)) {
            let event = match rebuild(&traces::with_durations(&reference)) {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(e) => {
                    failures.push(format!("{}: {e}\n  reference {reference}", path.display()));
                    continue;
                }
            };
            checked += 1;
            // Through the text, so that the number forms tern writes are the ones compared.
            let written = traces::durations_as_markers(
                &serde_json::from_str(&serde_json::to_string(&event).expect("serializes"))
                    .expect("tern writes JSON"),
            );
            let (got, got_results) = split_results(written);
            let (want, want_results) = split_results(reference.clone());
            // As text: `Value` equality would ignore key order.
            if text(&got) != text(&want) || got_results != want_results {
                failures.push(format!(
                    "{}:\n  reference {reference}\n  tern      {}",
                    path.display(),
                    traces::durations_as_markers(&serde_json::to_value(&event).unwrap_or_default())
                ));
            }
        }
    }
    traces::assert_all_match(checked, 1000, "events", &failures);
}

#[test]
fn a_message_update_writes_the_event_before_the_message() {
    // The reference emits `{type, assistantMessageEvent, message}`.
    let partial = tern_ai::PartialMessage::new(tern_ai::AssistantMessage::default());
    let event = AgentEvent::MessageUpdate {
        assistant_message_event: tern_ai::AssistantMessageEvent::Start { partial },
    };
    let text = serde_json::to_string(&event).unwrap();
    let keys: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(&text)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["type", "assistantMessageEvent", "message"]);
}
