//! The Anthropic Messages stream, read by pi-ai's own SSE reader: records dispatched by
//! event name, content blocks tracked by index, usage and stop reason from `message_delta`.

use crate::Name;
use std::collections::HashMap;

use serde_json::{json, Value};

use crate::json_parse::{parse_json_with_repair, ToolCallArgumentsStream};
use crate::message::{ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall};
use crate::providers::cost;
use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::output::{append_diagnostic, pick_keys, Output};

fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_string(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".into()),
        ),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

struct OpenBlock {
    index: usize,
    args: Option<ToolCallArgumentsStream>,
}

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    open: HashMap<i64, OpenBlock>,
    pub(super) saw_start: bool,
    pub(super) saw_stop: bool,
    /// The last `input_transformations` list the message reported.
    transformations: Option<Vec<Value>>,
}

fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64).map(|f| f.max(0.0) as u64)
}

fn handle_event(ev: &Value, out: &mut Output<'_>, st: &mut State) -> Result<(), String> {
    let model = out.model;
    let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "message_start" => {
            st.saw_start = true;
            let msg = ev.get("message").cloned().unwrap_or(Value::Null);
            if let Some(t) = msg.get("input_transformations").and_then(Value::as_array) {
                st.transformations = Some(t.clone());
            }
            let u = msg.get("usage").cloned().unwrap_or(Value::Null);
            out.update(|m| {
                if let Some(id) = msg.get("id").and_then(Value::as_str) {
                    m.response_id = Some(id.to_string());
                }
                if let Some(rm) = msg.get("model").and_then(Value::as_str) {
                    if rm != model.id {
                        m.extra_mut().response_model = Some(rm.to_string());
                    }
                }
                m.usage.input = count(u.get("input_tokens")).unwrap_or(0);
                m.usage.output = count(u.get("output_tokens")).unwrap_or(0);
                m.usage.cache_read = count(u.get("cache_read_input_tokens")).unwrap_or(0);
                m.usage.cache_write = count(u.get("cache_creation_input_tokens")).unwrap_or(0);
                m.usage.cache_write_1h = Some(
                    count(u.pointer("/cache_creation/ephemeral_1h_input_tokens")).unwrap_or(0),
                );
                m.usage.total_tokens = m.usage.token_sum();
                cost::calculate_cost(model, &mut m.usage);
            });
        }
        "content_block_start" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            let cb = ev.get("content_block").cloned().unwrap_or(Value::Null);
            let text = |k: &str| cb.get(k).and_then(Value::as_str).unwrap_or("");
            let s = |k: &str| text(k).to_string();
            // Every block kind opens the same way; only the block and whether it
            // streams tool arguments differ.
            let (block, args) = match cb.get("type").and_then(Value::as_str).unwrap_or("") {
                "fallback" if out.len() > 0 => {
                    return Err(
                        "Anthropic performed an unsupported mid-output model fallback".into(),
                    );
                }
                "text" => (
                    ContentBlock::Text(TextContent {
                        text: s("text"),
                        text_signature: None,
                        extra: None,
                    }),
                    None,
                ),
                "thinking" => (
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: s("thinking"),
                        thinking_signature: Some(s("signature")),
                        redacted: None,
                        extra: None,
                    }),
                    None,
                ),
                "redacted_thinking" => (
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: "[Reasoning redacted]".into(),
                        thinking_signature: cb
                            .get("data")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        redacted: Some(true),
                        extra: None,
                    }),
                    None,
                ),
                "tool_use" => (
                    ContentBlock::tool_call(ToolCall {
                        id: Name::unique(text("id")),
                        name: text("name").into(),
                        arguments: cb
                            .get("input")
                            .filter(|v| !v.is_null())
                            .cloned()
                            .unwrap_or(json!({})),
                        ..ToolCall::default()
                    }),
                    Some(ToolCallArgumentsStream::new()),
                ),
                _ => return Ok(()),
            };
            let index = out.push_block(block);
            st.open.insert(idx, OpenBlock { index, args });
        }
        "content_block_delta" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            let Some(open) = st.open.get_mut(&idx) else {
                return Ok(());
            };
            let d = ev.get("delta").cloned().unwrap_or(Value::Null);
            let kind = out.with(|m| match m.content.get(open.index) {
                Some(ContentBlock::Text(_)) => 0,
                Some(ContentBlock::Thinking(_)) => 1,
                Some(ContentBlock::ToolCall(_)) => 2,
                _ => 3,
            });
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match d.get("type").and_then(Value::as_str).unwrap_or("") {
                "text_delta" if kind == 0 => out.append_text(open.index, &text("text")),
                "thinking_delta" if kind == 1 => out.append_text(open.index, &text("thinking")),
                "input_json_delta" if kind == 2 => {
                    if let Some(args) = open.args.as_mut() {
                        let piece = text("partial_json");
                        let a = args.append(&piece).clone();
                        out.set_tool_arguments(open.index, a);
                        out.tool_delta(open.index, &piece);
                    }
                }
                "signature_delta" if kind == 1 => {
                    let piece = text("signature");
                    let index = open.index;
                    out.update(|m| {
                        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                            t.thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&piece);
                        }
                    });
                }
                _ => {}
            }
        }
        "content_block_stop" => {
            let idx = ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
            if let Some(open) = st.open.remove(&idx) {
                match &open.args {
                    Some(args) => out.finish_tool_call(open.index, args),
                    None => {
                        let is_tool = out.with(|m| {
                            matches!(m.content.get(open.index), Some(ContentBlock::ToolCall(_)))
                        });
                        if !is_tool {
                            out.end_block(open.index);
                        }
                    }
                }
            }
        }
        "message_delta" => {
            if let Some(t) = ev.get("input_transformations").and_then(Value::as_array) {
                st.transformations = Some(t.clone());
            }
            let d = ev.get("delta").cloned().unwrap_or(Value::Null);
            if let Some(r) = d
                .get("stop_reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                // The raw value is kept even when it is unknown and fails the stream.
                out.update(|m| m.raw_stop_reason = Some(r.to_string()));
                let (reason, err) = map_stop_reason(r, d.get("stop_details"))?;
                out.update(|m| {
                    m.stop_reason = reason;
                    if err.is_some() {
                        m.error_message = err;
                    }
                });
            }
            let u = ev.get("usage").filter(|u| u.is_object()).cloned();
            out.update(|m| {
                if let Some(u) = &u {
                    if let Some(v) = count(u.get("input_tokens")) {
                        m.usage.input = v;
                    }
                    if let Some(v) = count(u.get("output_tokens")) {
                        m.usage.output = v;
                    }
                    if let Some(v) = count(u.get("cache_read_input_tokens")) {
                        m.usage.cache_read = v;
                    }
                    if let Some(v) = count(u.get("cache_creation_input_tokens")) {
                        m.usage.cache_write = v;
                    }
                    if let Some(v) = count(u.pointer("/cache_creation/ephemeral_1h_input_tokens")) {
                        m.usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = count(u.pointer("/output_tokens_details/thinking_tokens")) {
                        m.usage.reasoning = Some(v);
                    }
                }
                m.usage.total_tokens = m.usage.token_sum();
                cost::calculate_cost(model, &mut m.usage);
                if let Some(u) = &u {
                    if model.provider == "openrouter" || model.base_url.contains("openrouter.ai") {
                        cost::apply_openrouter_cost(&mut m.usage, u);
                    }
                }
            });
        }
        "message_stop" => st.saw_stop = true,
        _ => {}
    }
    Ok(())
}

const EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

impl WireStream for State {
    const FRAMING: Framing = Framing::SseFlushAtEnd;

    /// Dispatches by event name: `error` fails with its data, unknown names are skipped.
    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let data = record.data;
        if record.event == Some("error") {
            return Err(data.to_string());
        }
        let Some(name) = record.event.filter(|e| EVENTS.contains(e)) else {
            return Ok(());
        };
        let value = parse_json_with_repair(data)
            .map_err(|e| format!("Could not parse Anthropic SSE event {name}: {e}; data={data}"))?;
        match value.get("type").and_then(Value::as_str) {
            Some("message_start") => self.saw_start = true,
            Some("message_stop") => self.saw_stop = true,
            _ => {}
        }
        handle_event(&value, out, self)
    }

    fn end_of_stream(&mut self, _out: &mut Output<'_>) -> Result<(), String> {
        if self.saw_start && !self.saw_stop {
            return Err("Anthropic stream ended before message_stop".into());
        }
        Ok(())
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(out, "Anthropic stream ended without a stop reason", |m| {
            m.error_message.clone()
        })?;
        // A successful message records what the API changed in its input.
        let Some(list) = self.transformations.as_ref().filter(|l| !l.is_empty()) else {
            return Ok(());
        };
        let mut entries = Vec::with_capacity(list.len());
        for t in list {
            if t.is_null() {
                return Err("Cannot read properties of null (reading 'type')".into());
            }
            entries.push(pick_keys(t, &["type", "path", "reason"], true));
        }
        out.update(|m| {
            append_diagnostic(
                m,
                "anthropic_input_transformations",
                json!({ "transformations": entries }),
            )
        });
        Ok(())
    }
}
