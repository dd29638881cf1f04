//! The Gemini stream: parts appended to the open text or thinking block, function calls
//! as whole tool calls (ids generated when missing or repeated), usage from
//! `usageMetadata`.

use crate::Name;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use crate::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall,
    ToolCallExtra, Usage,
};
use crate::providers::cost;
use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::js_json::{compact, js_text};
use crate::providers::output::{has_tool_call, Output};

static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The error text of a failed Gemini message: the finish reason the provider gave.
pub(crate) fn error_text(m: &AssistantMessage) -> Option<String> {
    m.raw_stop_reason
        .as_ref()
        .map(|r| format!("Provider stopped with: {r}"))
}

fn map_stop_reason(reason: &str) -> Result<StopReason, String> {
    Ok(match reason {
        "STOP" => StopReason::Stop,
        "MAX_TOKENS" | "CONTINUATION" => StopReason::Length,
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => StopReason::Error,
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

/// The mapper state of one response: the open text or thinking block.
#[derive(Default)]
pub(crate) struct State {
    current: Option<(usize, bool)>,
}

/// Ends the open text or thinking block, if any.
pub(super) fn close_current(out: &mut Output<'_>, st: &mut State) {
    if let Some((i, _)) = st.current.take() {
        out.end_block(i);
    }
}

fn handle_chunk(chunk: &Value, out: &mut Output<'_>, st: &mut State) -> Result<(), String> {
    let model = out.model;
    if let Some(id) = chunk
        .get("responseId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        out.update(|m| {
            if m.response_id.as_deref().is_none_or(str::is_empty) {
                m.response_id = Some(id.to_string());
            }
        });
    }
    let candidate = chunk
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    if let Some(parts) = candidate
        .and_then(|c| c.pointer("/content/parts"))
        .and_then(Value::as_array)
    {
        for part in parts {
            if let Some(text) = part.get("text").filter(|t| !t.is_null()) {
                let text = text
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| text.to_string());
                let thinking = part.get("thought") == Some(&Value::Bool(true));
                if st.current.is_none_or(|(_, t)| t != thinking) {
                    close_current(out, st);
                    let i = if thinking {
                        out.push_block(ContentBlock::Thinking(ThinkingContent::default()))
                    } else {
                        out.push_block(ContentBlock::Text(TextContent::default()))
                    };
                    st.current = Some((i, thinking));
                }
                let Some((i, _)) = st.current else { continue };
                let sig = part
                    .get("thoughtSignature")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string);
                out.update(|m| match m.content.get_mut(i) {
                    Some(ContentBlock::Thinking(t)) => {
                        t.thinking.push_str(&text);
                        if sig.is_some() {
                            t.thinking_signature = sig;
                        }
                    }
                    Some(ContentBlock::Text(t)) => {
                        t.text.push_str(&text);
                        if sig.is_some() {
                            t.text_signature = sig;
                        }
                    }
                    _ => {}
                });
                out.emit_delta(i, &text);
            }
            if let Some(fc) = part.get("functionCall").filter(|f| f.is_object()) {
                close_current(out, st);
                let name = fc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let provided = fc
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let taken =
                    provided.is_some_and(|p| out.with(|m| m.tool_calls().any(|c| c.id == p)));
                let id = match provided {
                    Some(p) if !taken => p.to_string(),
                    _ => {
                        let n = TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
                        format!("{name}_{}_{n}", crate::clock::now_ms())
                    }
                };
                let args = fc
                    .get("args")
                    .filter(|a| !a.is_null())
                    .cloned()
                    .unwrap_or(json!({}));
                let delta = compact(&args);
                let i = out.push_block(ContentBlock::tool_call(ToolCall {
                    id: Name::unique(&id),
                    name: name.into(),
                    arguments: args,
                    extra: ToolCallExtra {
                        thought_signature: part
                            .get("thoughtSignature")
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                            .map(str::to_string),
                        ..ToolCallExtra::default()
                    }
                    .into_option(),
                }));
                out.tool_delta(i, &delta);
                out.end_block(i);
            }
        }
    }
    if let Some(fr) = candidate
        .and_then(|c| c.get("finishReason"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        // The raw value is kept even when it is unknown and fails the stream.
        out.update(|m| m.raw_stop_reason = Some(fr.to_string()));
        let reason = map_stop_reason(fr)?;
        out.update(|m| {
            m.stop_reason = reason;
            if has_tool_call(m) && m.stop_reason == StopReason::Stop {
                m.stop_reason = StopReason::ToolUse;
            }
        });
    }
    if let Some(u) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
        let n = |k: &str| {
            u.get(k)
                .and_then(Value::as_f64)
                .map(|f| f.max(0.0) as u64)
                .unwrap_or(0)
        };
        let cached = n("cachedContentTokenCount");
        let thoughts = n("thoughtsTokenCount");
        let mut usage = Usage {
            input: n("promptTokenCount").saturating_sub(cached),
            output: n("candidatesTokenCount") + thoughts,
            cache_read: cached,
            cache_write: 0,
            reasoning: Some(thoughts),
            total_tokens: n("totalTokenCount"),
            ..Usage::default()
        };
        cost::calculate_cost(model, &mut usage);
        out.set_usage(usage);
    }
    Ok(())
}

impl WireStream for State {
    const FRAMING: Framing = Framing::Gemini;

    /// One `data:` record: a chunk, or an error object with an HTTP status code.
    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let data = record.data;
        let value: Value = serde_json::from_str(data).map_err(|e| format!("{e}"))?;
        if let Some(err) = value.get("error").filter(|e| e.is_object()) {
            // Any number in [400, 600) counts, fractions included; other codes are data.
            let code = err.get("code").and_then(Value::as_f64).unwrap_or(0.0);
            if (400.0..600.0).contains(&code) {
                let status = js_text(err.get("status"));
                return Err(format!("got status: {status}. {}", compact(&value)));
            }
        }
        handle_chunk(&value, out, self)
    }

    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        close_current(out, self);
        Ok(())
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(
            out,
            "Google stream ended without a finish reason",
            error_text,
        )
    }
}
