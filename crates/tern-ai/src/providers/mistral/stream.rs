//! The Mistral stream: `data:` records of completion chunks until `[DONE]`; text and thinking
//! blocks in arrival order (a change of kind ends the open block), tool calls by index (ended
//! after the stream, in order), usage with cached prompt tokens, the finish reason.

use crate::Name;
use serde_json::{Map, Value};

use super::request::derive_tool_call_id;
use crate::json_parse::ToolCallArgumentsStream;
use crate::message::{ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall};
use crate::providers::cost;
use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::js_json::compact;
use crate::providers::output::Output;

/// What keys a streamed tool call: its `index`, else its id.
#[derive(PartialEq)]
enum CallKey {
    Index(String),
    Id(String),
}

struct OpenCall {
    key: CallKey,
    index: usize,
    args: ToolCallArgumentsStream,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
}

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    /// `[DONE]` arrived: the rest of the body is not read.
    done: bool,
    /// The open text or thinking block.
    current: Option<(usize, Kind)>,
    calls: Vec<OpenCall>,
}

/// A number as JavaScript's `||` keeps it: missing, `0` and non-numbers are 0.
fn number(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

/// Cached prompt tokens from whichever field the host uses, within `[0, prompt]`.
fn cached_prompt_tokens(usage: &Value, prompt: f64) -> f64 {
    let paths = [
        "/promptTokensDetails/cachedTokens",
        "/prompt_tokens_details/cached_tokens",
        "/promptTokenDetails/cachedTokens",
        "/prompt_token_details/cached_tokens",
        "/numCachedTokens",
        "/num_cached_tokens",
    ];
    // `??`: the first field that is present and not null, whatever its type.
    let raw = paths
        .iter()
        .find_map(|p| usage.pointer(p).filter(|v| !v.is_null()));
    let cached = raw.and_then(Value::as_f64).unwrap_or(0.0);
    prompt.min(cached.max(0.0))
}

fn map_stop_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" => (StopReason::Stop, None),
        "length" | "model_length" => (StopReason::Length, None),
        "tool_calls" => (StopReason::ToolUse, None),
        // Mistral reports transient server failures this way; the wording makes it retryable.
        "error" => (
            StopReason::Error,
            Some("Provider stopped with: error (server error)".into()),
        ),
        other => (
            StopReason::Error,
            Some(format!("Provider stopped with: {other}")),
        ),
    }
}

/// A JavaScript value's truthiness, for the reference's `||` and `if` on wire fields.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        _ => true,
    }
}

impl State {
    fn finish_current(&mut self, out: &mut Output<'_>) {
        if let Some((index, _)) = self.current.take() {
            out.end_block(index);
        }
    }

    /// Appends to the open block of `kind`, opening one (and ending another) first.
    fn append(&mut self, out: &mut Output<'_>, kind: Kind, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let index = match self.current {
            Some((index, k)) if k == kind => index,
            _ => {
                self.finish_current(out);
                let block = match kind {
                    Kind::Text => ContentBlock::Text(TextContent::default()),
                    Kind::Thinking => ContentBlock::Thinking(ThinkingContent::default()),
                };
                let index = out.push_block(block);
                self.current = Some((index, kind));
                index
            }
        };
        out.append_text(index, delta);
    }

    fn usage(out: &mut Output<'_>, usage: &Value) {
        let prompt = number(usage.get("prompt_tokens"));
        let cached = cached_prompt_tokens(usage, prompt);
        let model = out.model;
        out.update(|m| {
            let u = &mut m.usage;
            u.input = (prompt - cached).max(0.0) as u64;
            u.output = number(usage.get("completion_tokens")).max(0.0) as u64;
            u.cache_read = cached as u64;
            u.cache_write = 0;
            let total = number(usage.get("total_tokens"));
            u.total_tokens = if total != 0.0 {
                total.max(0.0) as u64
            } else {
                u.token_sum()
            };
            cost::calculate_cost(model, u);
        });
    }

    fn content(&mut self, out: &mut Output<'_>, content: &Value) {
        let items: Vec<&Value> = match content {
            Value::Array(items) => items.iter().collect(),
            Value::Null => Vec::new(),
            other => vec![other],
        };
        for item in items {
            match item {
                Value::String(s) => self.append(out, Kind::Text, s),
                Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                    Some("thinking") => {
                        let parts = o.get("thinking").and_then(Value::as_array);
                        let text: String = parts
                            .into_iter()
                            .flatten()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect();
                        self.append(out, Kind::Thinking, &text);
                    }
                    Some("text") => {
                        let text = o.get("text").and_then(Value::as_str).unwrap_or("");
                        self.append(out, Kind::Text, text);
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }

    fn tool_call(&mut self, out: &mut Output<'_>, call: &Value) {
        self.finish_current(out);
        let index = call.get("index").filter(|v| !v.is_null());
        let index_text = match index {
            Some(Value::String(s)) => s.clone(),
            Some(other) => compact(other),
            None => "0".into(),
        };
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() && id != "null" => id.to_string(),
            _ => derive_tool_call_id(&format!("toolcall:{index_text}"), 0),
        };
        let key = match index {
            Some(i) => CallKey::Index(compact(i)),
            None => CallKey::Id(id.clone()),
        };
        let function = call.get("function");
        let slot = match self.calls.iter().position(|c| c.key == key) {
            Some(slot) => slot,
            None => {
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let index = out.push_block(ContentBlock::tool_call(ToolCall {
                    id: Name::unique(&id),
                    name: name.into(),
                    arguments: Value::Object(Map::new()),
                    ..ToolCall::default()
                }));
                self.calls.push(OpenCall {
                    key,
                    index,
                    args: ToolCallArgumentsStream::new(),
                });
                self.calls.len() - 1
            }
        };
        let arguments = function.and_then(|f| f.get("arguments"));
        let delta = match arguments {
            Some(Value::String(s)) => s.clone(),
            Some(v) if truthy(v) => compact(v),
            _ => "{}".to_string(),
        };
        let open = &mut self.calls[slot];
        let partial = open.args.append(&delta).clone();
        let index = open.index;
        out.set_tool_arguments(index, partial);
        out.tool_delta(index, &delta);
    }
}

impl WireStream for State {
    const FRAMING: Framing = Framing::SseFlushAtEnd;

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let data = record.data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| e.to_string())?;
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Err("Invalid Mistral streaming event".into());
        };
        if let Some(id) = chunk.get("id").and_then(Value::as_str) {
            out.update(|m| {
                if m.response_id.as_deref().unwrap_or("").is_empty() && !id.is_empty() {
                    m.response_id = Some(id.to_string());
                }
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| truthy(u)) {
            Self::usage(out, usage);
        }
        let Some(choice) = choices.first() else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").filter(|r| truthy(r)) {
            let raw = match reason {
                Value::String(s) => s.clone(),
                other => compact(other),
            };
            let (stop, message) = map_stop_reason(&raw);
            out.update(|m| {
                m.raw_stop_reason = Some(raw);
                m.stop_reason = stop;
                if message.is_some() {
                    m.error_message = message;
                }
            });
        }
        let delta = match choice.get("delta") {
            Some(d) if !d.is_null() => d,
            Some(_) => return Err("Cannot read properties of null (reading 'content')".into()),
            None => return Err("Cannot read properties of undefined (reading 'content')".into()),
        };
        if let Some(content) = delta.get("content") {
            self.content(out, content);
        }
        if let Some(Value::Array(calls)) = delta.get("tool_calls") {
            for call in calls {
                self.tool_call(out, call);
            }
        }
        Ok(())
    }

    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        self.finish_current(out);
        for open in std::mem::take(&mut self.calls) {
            out.finish_tool_call(open.index, &open.args);
        }
        Ok(())
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(out, "Mistral stream ended without a finish reason", |m| {
            m.error_message.clone().filter(|e| !e.is_empty())
        })
    }
}
