//! The ConverseStream events as the AWS SDK hands them over and pi-ai maps them: blocks by
//! `contentBlockIndex` (text and reasoning open on their first delta, tool calls on
//! `contentBlockStart`), the stop reason from `messageStop`, usage from `metadata`, and the
//! exception messages as failures with the SDK's error names.

use crate::Name;
use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{json, Value};

use super::errors::{stream_failure, Failure};
use crate::json_parse::ToolCallArgumentsStream;
use crate::message::{ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall};
use crate::providers::cost;
use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::http::Body;
use crate::providers::output::{append_diagnostic, Output};

/// The placeholder text of redacted reasoning (as on the Anthropic path).
const REDACTED_THINKING: &str = "[Reasoning redacted]";

/// One block still receiving deltas.
struct OpenBlock {
    index: usize,
    args: Option<ToolCallArgumentsStream>,
    /// Encrypted reasoning, kept as bytes until the block ends.
    redacted: Option<Vec<u8>>,
}

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    open: HashMap<i64, OpenBlock>,
    /// `x-amzn-requestid` of the response, for the failure diagnostic.
    request_id: Option<String>,
    /// The failure that ended the stream, for its diagnostic.
    failure: Option<Failure>,
}

fn map_stop_reason(reason: Option<&str>) -> (StopReason, Option<String>) {
    match reason {
        Some("end_turn" | "stop_sequence") => (StopReason::Stop, None),
        Some("max_tokens" | "model_context_window_exceeded") => (StopReason::Length, None),
        Some("tool_use") => (StopReason::ToolUse, None),
        Some(other) if !other.is_empty() => (
            StopReason::Error,
            Some(format!("Provider stopped with: {other}")),
        ),
        _ => (StopReason::Error, None),
    }
}

/// A request id the diagnostic can carry: trimmed, not empty, at most 200 characters.
pub(super) fn diagnostic_value(v: Option<&str>) -> Option<String> {
    let v = v?.trim();
    (!v.is_empty() && v.chars().count() <= 200).then(|| v.to_string())
}

impl State {
    fn block_start(&mut self, out: &mut Output<'_>, ev: &Value) {
        let Some(tool) = ev.pointer("/start/toolUse") else {
            return;
        };
        let s = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or("");
        let index = out.push_block(ContentBlock::tool_call(ToolCall {
            id: Name::unique(s("toolUseId")),
            name: s("name").into(),
            arguments: json!({}),
            ..ToolCall::default()
        }));
        let key = ev
            .get("contentBlockIndex")
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        self.open.insert(
            key,
            OpenBlock {
                index,
                args: Some(ToolCallArgumentsStream::new()),
                redacted: None,
            },
        );
    }

    /// Opens a text or thinking block for `key` unless one is open.
    fn open_block(&mut self, out: &mut Output<'_>, key: i64, block: ContentBlock) -> usize {
        if let Some(open) = self.open.get(&key) {
            return open.index;
        }
        let index = out.push_block(block);
        self.open.insert(
            key,
            OpenBlock {
                index,
                args: None,
                redacted: None,
            },
        );
        index
    }

    fn block_delta(&mut self, out: &mut Output<'_>, ev: &Value) {
        let key = ev
            .get("contentBlockIndex")
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        let delta = ev.get("delta").unwrap_or(&Value::Null);
        let kind = |out: &Output<'_>, index: usize| {
            out.with(|m| match m.content.get(index) {
                Some(ContentBlock::Text(_)) => 0,
                Some(ContentBlock::Thinking(_)) => 1,
                Some(ContentBlock::ToolCall(_)) => 2,
                _ => 3,
            })
        };
        if let Some(text) = delta.get("text").filter(|t| !t.is_null()) {
            let text = text.as_str().unwrap_or("");
            let index = self.open_block(
                out,
                key,
                ContentBlock::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                    extra: None,
                }),
            );
            if kind(out, index) == 0 {
                out.append_text(index, text);
            }
        } else if let Some(tool) = delta.get("toolUse").filter(|t| t.is_object()) {
            let Some(open) = self.open.get_mut(&key) else {
                return;
            };
            if kind(out, open.index) != 2 {
                return;
            }
            if let Some(args) = open.args.as_mut() {
                let piece = tool.get("input").and_then(Value::as_str).unwrap_or("");
                let a = args.append(piece).clone();
                out.set_tool_arguments(open.index, a);
                out.tool_delta(open.index, piece);
            }
        } else if let Some(r) = delta.get("reasoningContent").filter(|r| r.is_object()) {
            let index = self.open_block(
                out,
                key,
                ContentBlock::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(String::new()),
                    redacted: None,
                    extra: None,
                }),
            );
            if kind(out, index) != 1 {
                return;
            }
            let text = |k: &str| r.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
            if let Some(t) = text("text") {
                out.append_text(index, t);
            }
            let redacted = out.with(|m| match m.content.get(index) {
                Some(ContentBlock::Thinking(t)) => t.redacted == Some(true),
                _ => false,
            });
            if let (Some(sig), false) = (text("signature"), redacted) {
                out.update(|m| {
                    if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                        t.thinking_signature
                            .get_or_insert_with(String::new)
                            .push_str(sig);
                    }
                });
            }
            // The SDK hands the blob over as bytes; on the wire it is base64.
            let payload = text("redactedContent")
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .filter(|b| !b.is_empty());
            if let Some(bytes) = payload {
                if !redacted {
                    out.update(|m| {
                        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                            t.redacted = Some(true);
                            t.thinking_signature = Some(String::new());
                            t.thinking.push_str(REDACTED_THINKING);
                        }
                    });
                    out.emit_delta(index, REDACTED_THINKING);
                }
                if let Some(open) = self.open.get_mut(&key) {
                    open.redacted.get_or_insert_with(Vec::new).extend(bytes);
                }
            }
        }
    }

    fn block_stop(&mut self, out: &mut Output<'_>, ev: &Value) {
        let key = ev
            .get("contentBlockIndex")
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        let Some(mut open) = self.open.remove(&key) else {
            return;
        };
        flush_redacted(out, &mut open);
        match &open.args {
            Some(args) => out.finish_tool_call(open.index, args),
            None => out.end_block(open.index),
        }
    }

    /// Ends the stream state of the blocks a stream settled without stopping.
    fn flush_open(&mut self, out: &mut Output<'_>) {
        for (_, mut open) in self.open.drain() {
            flush_redacted(out, &mut open);
        }
    }
}

/// Puts the buffered encrypted reasoning, base64, in the block's signature.
fn flush_redacted(out: &mut Output<'_>, open: &mut OpenBlock) {
    let Some(bytes) = open.redacted.take() else {
        return;
    };
    let index = open.index;
    out.update(|m| {
        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
            t.thinking_signature = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
    });
}

fn metadata(out: &mut Output<'_>, ev: &Value) {
    let Some(u) = ev.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    let n = |k: &str| {
        u.get(k)
            .and_then(Value::as_f64)
            .map_or(0, |f| f.max(0.0) as u64)
    };
    let one_hour = u.get("cacheDetails").and_then(Value::as_array).map(|d| {
        d.iter()
            .filter(|d| d.get("ttl").and_then(Value::as_str) == Some("1h"))
            .map(|d| d.get("inputTokens").and_then(Value::as_u64).unwrap_or(0))
            // Counts from the wire: saturate rather than overflow.
            .fold(0u64, u64::saturating_add)
    });
    let model = out.model;
    out.update(|m| {
        m.usage.input = n("inputTokens");
        m.usage.output = n("outputTokens");
        m.usage.cache_read = n("cacheReadInputTokens");
        m.usage.cache_write = n("cacheWriteInputTokens");
        m.usage.cache_write_1h = one_hour;
        m.usage.total_tokens = match n("totalTokens") {
            0 => m.usage.input.saturating_add(m.usage.output),
            t => t,
        };
        cost::calculate_cost(model, &mut m.usage);
    });
}

impl State {
    fn event(&mut self, out: &mut Output<'_>, kind: &str, ev: &Value) -> Result<(), Failure> {
        match kind {
            "messageStart" => {
                if ev.get("role").and_then(Value::as_str) != Some("assistant") {
                    return Err(Failure::plain(
                        "Unexpected assistant message start but got user message start instead",
                    ));
                }
                out.start();
            }
            "contentBlockStart" => self.block_start(out, ev),
            "contentBlockDelta" => self.block_delta(out, ev),
            "contentBlockStop" => self.block_stop(out, ev),
            "messageStop" => {
                let raw = ev.get("stopReason").and_then(Value::as_str);
                let (reason, message) = map_stop_reason(raw);
                out.update(|m| {
                    m.raw_stop_reason = raw.map(str::to_string);
                    m.stop_reason = reason;
                    if message.is_some() {
                        m.error_message = message;
                    }
                });
            }
            "metadata" => metadata(out, ev),
            // Events the SDK does not model are skipped.
            _ => {}
        }
        Ok(())
    }
}

impl WireStream for State {
    const FRAMING: Framing = Framing::EventStream;
    const STARTS_ON_BODY: bool = false;

    fn on_response(&mut self, body: &Body) {
        self.request_id = diagnostic_value(body.header("x-amzn-requestid").as_deref());
    }

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let failure = match stream_failure(record) {
            Ok(Some((kind, payload))) => {
                // The SDK's JSON deserializer: a payload that is not JSON fails the stream.
                match serde_json::from_str::<Value>(payload) {
                    Ok(ev) => self.event(out, kind, &ev).err(),
                    Err(_) => Some(Failure::plain(&format!(
                        "Unexpected token in JSON payload of {kind} event"
                    ))),
                }
            }
            Ok(None) => None,
            Err(failure) => Some(failure),
        };
        match failure {
            None => Ok(()),
            Some(f) => {
                let message = f.message.clone();
                self.failure = Some(f);
                Err(message)
            }
        }
    }

    fn on_abort(&mut self, out: &mut Output<'_>) {
        self.flush_open(out);
    }

    fn on_failure(&mut self, out: &mut Output<'_>) {
        self.flush_open(out);
        let failure = self.failure.take();
        let mut details = serde_json::Map::new();
        if let Some(code) = failure.and_then(|f| f.error_code) {
            details.insert("errorCode".into(), json!(code));
        }
        if let Some(id) = &self.request_id {
            details.insert("requestId".into(), json!(id));
        }
        if !details.is_empty() {
            out.update(|m| {
                append_diagnostic(m, "bedrock_response_failure", Value::Object(details))
            });
        }
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        let settled = settle_stop_reason(out, "Bedrock stream ended without a stop reason", |m| {
            m.error_message.clone()
        });
        match settled {
            Ok(()) => self.flush_open(out),
            Err(_) => self.on_failure(out),
        }
        settled
    }
}
