//! The recording sink: events as the oracle records them, at emission time.

use serde_json::{json, Map, Value};

use crate::event::{AssistantMessageEvent, PartialMessage};
use crate::message::ContentBlock;
use crate::providers::ProviderSink;

/// Records events as the oracle does: at emission time, with tool-call arguments as they are
/// in the partial message right then.
#[derive(Default)]
#[non_exhaustive]
pub struct RecordingSink {
    /// The recorded events.
    pub events: Vec<Value>,
    /// The final message, once `done`/`error` arrived.
    pub message: Option<crate::message::AssistantMessage>,
    api: String,
    /// Cancelled once this many events were recorded.
    abort: Option<(usize, tokio_util::sync::CancellationToken)>,
}

impl RecordingSink {
    /// A sink for a case of `api` (Gemini-generated tool-call ids are normalized).
    pub fn new(api: &str) -> Self {
        RecordingSink {
            api: api.to_string(),
            ..Self::default()
        }
    }
}

/// A tool call as the oracle compares it: Gemini-generated ids become `<name>_<generated>`.
pub(super) fn normalize_tool_call(api: &str, call: &Value) -> Value {
    let mut out = call.clone();
    if api == "google-generative-ai" || api == "google-vertex" {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some(id) = call.get("id").and_then(Value::as_str) {
            let prefix = format!("{name}_");
            if let Some(rest) = id.strip_prefix(&prefix) {
                let mut it = rest.split('_');
                let (a, b, c) = (it.next(), it.next(), it.next());
                let digits = |s: Option<&str>| {
                    s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                };
                if digits(a) && digits(b) && c.is_none() {
                    out["id"] = json!(format!("{name}_<generated>"));
                }
            }
        }
    }
    out
}

/// The arguments of the tool call at `index` as they are in the partial message now.
fn arguments_at(partial: &PartialMessage, index: usize) -> Value {
    partial.with(|m| match m.content.get(index) {
        Some(ContentBlock::ToolCall(c)) => c.arguments.clone(),
        _ => json!({}),
    })
}

impl RecordingSink {
    /// Cancels `signal` right after the `events`-th event, as a caller aborting then would.
    pub fn abort_after(&mut self, events: usize, signal: tokio_util::sync::CancellationToken) {
        self.abort = Some((events, signal));
    }
}

impl ProviderSink for RecordingSink {
    fn emit(&mut self, event: AssistantMessageEvent) {
        use AssistantMessageEvent::*;
        let mut rec = Map::new();
        rec.insert("type".into(), json!(event.kind()));
        let index = event.content_index();
        if let Some(i) = index {
            rec.insert("contentIndex".into(), json!(i));
        }
        if let Some(delta) = event.delta() {
            rec.insert("delta".into(), json!(delta));
        }
        match &event {
            TextEnd { content, .. } | ThinkingEnd { content, .. } => {
                rec.insert("content".into(), json!(content));
            }
            ToolcallStart { partial, .. } | ToolcallDelta { partial, .. } => {
                let args = arguments_at(partial, index.unwrap_or_default());
                rec.insert("arguments".into(), args);
            }
            ToolcallEnd { tool_call, .. } => {
                let tc = serde_json::to_value(ContentBlock::ToolCall(tool_call.clone()))
                    .unwrap_or(Value::Null);
                rec.insert("toolCall".into(), normalize_tool_call(&self.api, &tc));
            }
            Done { reason, message }
            | Error {
                reason,
                error: message,
            } => {
                rec.insert("reason".into(), json!(reason));
                self.message = Some((**message).clone());
            }
            _ => {}
        }
        self.events.push(Value::Object(rec));
        if let Some((n, signal)) = &self.abort {
            if self.events.len() == *n {
                signal.cancel();
            }
        }
    }
}
