//! The Chat Completions stream: text, reasoning fields and `reasoning_details` into one
//! text and one thinking block, tool calls matched by stream index or id, usage and finish
//! reason; blocks are finished only after the stream, in content order.

use crate::Name;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::chunk::Chunk;
use super::chunk_scan;
use super::chunk_template::Template;
use super::compat::{get_compat, Compat};
use super::reasoning::{append_reasoning_detail, is_reasoning_detail};
use crate::json_parse::ToolCallArgumentsStream;
use crate::message::{ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage};
use crate::model::Model;
use crate::providers::constrained::GrammarInputs;
use crate::providers::cost;
use crate::providers::custom_input::{property_of, CustomInput};
use crate::providers::driver::{Framing, SseRecord, WireStream};
use crate::providers::js_json::compact;
use crate::providers::openai_sdk::{
    is_wrapped_event, parse_record, record_error, stream_error_message, with_raw_metadata,
};
use crate::providers::output::{has_tool_call, Output};

/// Usage of a chunk's `usage` object, with cost (`parseChunkUsage`).
pub(crate) fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_f64).map(|f| f.max(0.0) as u64);
    let prompt = n(raw.get("prompt_tokens")).unwrap_or(0);
    let details = raw.get("prompt_tokens_details");
    let cache_read = n(details.and_then(|d| d.get("cached_tokens")))
        .or_else(|| n(raw.get("prompt_cache_hit_tokens")))
        .or_else(|| n(raw.get("cached_tokens")))
        .unwrap_or(0);
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens"))).unwrap_or(0);
    // Counts come from the wire: saturate instead of overflowing on absurd values.
    let input = prompt.saturating_sub(cache_read.saturating_add(cache_write));
    let output = n(raw.get("completion_tokens")).unwrap_or(0);
    let reasoning = n(raw
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")))
    .filter(|r| *r > 0)
    .or_else(|| n(raw.get("reasoning_tokens")))
    .unwrap_or(0);
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning),
        ..Usage::default()
    };
    usage.total_tokens = usage.token_sum();
    cost::calculate_cost(model, &mut usage);
    if model.provider == "openrouter" || model.base_url.contains("openrouter.ai") {
        cost::apply_openrouter_cost(&mut usage, raw);
    }
    usage
}

pub(crate) fn map_stop_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

struct ToolState {
    index: usize,
    /// The call's tool name (its first non-empty one).
    name: String,
    args: ToolCallArgumentsStream,
    /// The input of a freeform (`custom`) tool call; `args` is unused then.
    custom: Option<CustomInput>,
}

/// The `function` or `custom` part of a tool-call delta: its name and its text (arguments
/// or input).
pub(crate) type CallPart<'a> = (Option<&'a str>, Option<&'a str>);

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    text: Option<usize>,
    thinking: Option<usize>,
    has_finish: bool,
    by_index: HashMap<i64, usize>,
    by_id: HashMap<String, usize>,
    tools: Vec<ToolState>,
    details: Option<Vec<Value>>,
    /// `responseId` / `responseModel` are set and can no longer change.
    has_response_id: bool,
    has_response_model: bool,
    /// The input property of each declared grammar tool (custom tool calls' argument key).
    pub(crate) grammar_inputs: GrammarInputs,
    /// The bytes around the delta text of the last chunk scanned.
    template: Template,
}

/// Maps one chunk's fields, in the reference's order.
pub(crate) fn handle_chunk(chunk: &Chunk<'_>, model: &Model, out: &mut Output<'_>, st: &mut State) {
    // Both are taken from the first chunk that has them; once set, no lock is needed.
    let id = chunk.id.as_deref().filter(|_| !st.has_response_id);
    let cm = chunk
        .model
        .as_deref()
        .filter(|cm| !st.has_response_model && !cm.is_empty() && *cm != model.id);
    if id.is_some() || cm.is_some() {
        out.update(|m| {
            if m.response_id.as_deref().is_none_or(str::is_empty) {
                if let Some(id) = id {
                    m.response_id = Some(id.to_string());
                }
            }
            if let Some(cm) = cm {
                if m.extra()
                    .response_model
                    .as_deref()
                    .is_none_or(str::is_empty)
                {
                    m.extra_mut().response_model = Some(cm.to_string());
                }
            }
            st.has_response_id = m.response_id.as_deref().is_some_and(|s| !s.is_empty());
            st.has_response_model = m
                .extra()
                .response_model
                .as_deref()
                .is_some_and(|s| !s.is_empty());
        });
    }
    let usage = chunk.usage.as_deref().filter(|u| u.is_object());
    if let Some(u) = usage {
        out.set_usage(parse_usage(u, model));
    }
    let Some(choice) = &chunk.choice else {
        return;
    };
    if usage.is_none() {
        if let Some(u) = choice.usage.as_deref().filter(|u| u.is_object()) {
            out.set_usage(parse_usage(u, model));
        }
    }
    if let Some(fr) = choice.finish_reason.as_deref().filter(|s| !s.is_empty()) {
        finish_reason(out, st, fr);
    }
    let Some(delta) = &choice.delta else {
        return;
    };
    let found = [
        ("reasoning_content", &delta.reasoning_content),
        ("reasoning", &delta.reasoning),
        ("reasoning_text", &delta.reasoning_text),
    ]
    .into_iter()
    .find_map(|(f, v)| Some((f, v.as_deref().filter(|s| !s.is_empty())?)));
    if let Some((field, text)) = found {
        reasoning_text(model, out, st, field, text);
    }
    if let Some(details) = delta.reasoning_details.as_deref().and_then(Value::as_array) {
        for d in details {
            reasoning_detail(out, st, d);
        }
    }
    if let Some(text) = delta.content.as_deref().filter(|s| !s.is_empty()) {
        content(out, st, text);
    }
    for call in delta.tool_calls.iter().flatten() {
        let function = call
            .function
            .as_ref()
            .map(|f| (f.name.as_deref(), f.arguments.as_deref()));
        let custom = call
            .custom
            .as_ref()
            .map(|c| (c.name.as_deref(), c.input.as_deref()));
        tool_call_delta(out, st, call.index, call.id.as_deref(), function, custom);
    }
}

/// A non-empty `finish_reason`.
pub(crate) fn finish_reason(out: &mut Output<'_>, st: &mut State, fr: &str) {
    let (reason, err) = map_stop_reason(fr);
    out.update(|m| {
        m.raw_stop_reason = Some(fr.to_string());
        m.stop_reason = reason;
        if err.is_some() {
            m.error_message = err;
        }
    });
    st.has_finish = true;
}

/// The non-empty text of the first reasoning field present (`field` names it).
pub(crate) fn reasoning_text(
    model: &Model,
    out: &mut Output<'_>,
    st: &mut State,
    field: &str,
    text: &str,
) {
    let sig = if model.provider == "opencode-go" && field == "reasoning" {
        "reasoning_content"
    } else {
        field
    };
    let idx = ensure_thinking(out, st, sig);
    out.append_text(idx, text);
}

/// One entry of `reasoning_details` (invalid entries are skipped).
pub(crate) fn reasoning_detail(out: &mut Output<'_>, st: &mut State, detail: &Value) {
    if !is_reasoning_detail(detail) {
        return;
    }
    ensure_thinking(out, st, "");
    append_reasoning_detail(st.details.get_or_insert_with(Vec::new), detail);
}

/// Non-empty `content` text.
pub(crate) fn content(out: &mut Output<'_>, st: &mut State, text: &str) {
    let idx = match st.text {
        Some(i) => i,
        None => {
            let i = out.push_block(ContentBlock::Text(TextContent::default()));
            st.text = Some(i);
            i
        }
    };
    out.append_text(idx, text);
}

/// One entry of `tool_calls`: found by stream index, else by id, else a new tool call. A
/// `custom` part without a `function` part makes it a freeform call.
pub(crate) fn tool_call_delta(
    out: &mut Output<'_>,
    st: &mut State,
    stream_index: Option<i64>,
    id: Option<&str>,
    function: Option<CallPart<'_>>,
    custom: Option<CallPart<'_>>,
) {
    let name = function
        .and_then(|f| f.0)
        .or_else(|| custom.and_then(|c| c.0));
    let is_custom = custom.is_some() && function.is_none();
    let arguments = function.and_then(|f| f.1);
    let id = id.filter(|s| !s.is_empty());
    let mut slot = stream_index.and_then(|i| st.by_index.get(&i).copied());
    if slot.is_none() {
        slot = id.and_then(|i| st.by_id.get(i).copied());
    }
    let slot = match slot {
        Some(s) => s,
        None => {
            let custom_input = is_custom
                .then(|| CustomInput::new(property_of(&st.grammar_inputs, name.unwrap_or("")), ""));
            let index = out.push_block(ContentBlock::tool_call(ToolCall {
                id: Name::unique(id.unwrap_or("")),
                name: name.unwrap_or("").into(),
                arguments: custom_input
                    .as_ref()
                    .map_or_else(|| Value::Object(Map::new()), CustomInput::arguments),
                ..ToolCall::default()
            }));
            st.tools.push(ToolState {
                index,
                name: name.unwrap_or("").to_string(),
                args: ToolCallArgumentsStream::new(),
                custom: custom_input,
            });
            st.tools.len() - 1
        }
    };
    if st.tools[slot].name.is_empty() {
        if let Some(n) = name {
            st.tools[slot].name = n.to_string();
        }
    }
    // A call that turns freeform later starts its input over.
    if is_custom && st.tools[slot].custom.is_none() {
        let c = CustomInput::new(property_of(&st.grammar_inputs, &st.tools[slot].name), "");
        out.set_tool_arguments(st.tools[slot].index, c.arguments());
        st.tools[slot].custom = Some(c);
    }
    if let Some(i) = stream_index {
        st.by_index.entry(i).or_insert(slot);
    }
    if let Some(i) = id {
        st.by_id.insert(i.to_string(), slot);
    }
    let index = st.tools[slot].index;
    out.update(|m| {
        if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
            let c = crate::cow::make_mut(c);
            if c.id.is_empty() {
                if let Some(i) = id {
                    c.id = Name::unique(i);
                }
            }
            if c.name.is_empty() {
                if let Some(n) = name {
                    c.name = n.into();
                }
            }
        }
    });
    let mut piece = String::new();
    let tool = &mut st.tools[slot];
    match tool.custom.as_mut() {
        None => {
            if let Some(a) = arguments.filter(|s| !s.is_empty()) {
                piece = a.to_string();
                let args = tool.args.append(a).clone();
                out.set_tool_arguments(index, args);
            }
        }
        Some(c) => {
            if let Some(input) = custom.and_then(|c| c.1).filter(|s| !s.is_empty()) {
                // The input cannot be closed before the stream ends, so appending succeeds.
                piece = c.append(input).ok().flatten().unwrap_or_default();
                out.set_tool_arguments(index, c.arguments());
            }
        }
    }
    out.tool_delta(index, &piece);
}

/// The thinking block, created with signature `sig` when there is none yet.
fn ensure_thinking(out: &mut Output<'_>, st: &mut State, sig: &str) -> usize {
    if let Some(i) = st.thinking {
        return i;
    }
    let i = out.push_block(ContentBlock::Thinking(ThinkingContent {
        thinking: String::new(),
        thinking_signature: Some(sig.to_string()),
        redacted: None,
        extra: None,
    }));
    st.thinking = Some(i);
    i
}

/// Stores the merged `reasoning_details` as the signature of every thinking block.
fn apply_details(out: &Output<'_>, st: &State) {
    if let Some(d) = &st.details {
        let sig = compact(&Value::Array(d.clone()));
        out.update(|m| {
            for b in &mut m.content {
                if let ContentBlock::Thinking(t) = b {
                    t.thinking_signature = Some(sig.clone());
                }
            }
        });
    }
}

/// Maps one SSE record (`event` is its event name).
pub(crate) fn process_event(
    data: &str,
    event: Option<&str>,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<(), String> {
    process_event_by(ChunkRead::Typed, data, event, out, st)
}

/// How a record's text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkRead {
    /// Typed fields borrowing from the text, `Value` when the typed read refuses it.
    Typed,
    /// Always through `Value`.
    #[cfg(feature = "testing")]
    Value,
}

/// [`process_event`] with the read chosen.
pub(crate) fn process_event_by(
    read: ChunkRead,
    data: &str,
    event: Option<&str>,
    out: &mut Output<'_>,
    st: &mut State,
) -> Result<(), String> {
    let model = out.model;
    // Ordinary chunks are read into typed fields that borrow from `data`, several times
    // faster than a `Value`. An error event, an `error` field, or anything the typed read
    // rejects (a field of another type, a non-object, bad JSON) takes the `Value` path below,
    // which handles every chunk as the provider always did.
    if read == ChunkRead::Typed && event != Some("error") && !is_wrapped_event(event) {
        // Only the scan's reads are templates: the template stands for the scan.
        let chunk = match st.template.read(data) {
            Some(chunk) => Some(chunk),
            None => match chunk_scan::read(data) {
                Some(chunk) => {
                    st.template.learn(data, &chunk);
                    Some(chunk)
                }
                None => Chunk::typed_read(data),
            },
        };
        if let Some(chunk) = chunk {
            handle_chunk(&chunk, model, out, st);
            return Ok(());
        }
    }
    let value = parse_record(data)?;
    if let Some(err) = record_error(event, &value) {
        return Err(with_raw_metadata(stream_error_message(&err), Some(&err)));
    }
    if value.is_object() && !is_wrapped_event(event) {
        handle_chunk(&Chunk::from_value(&value), model, out, st);
    }
    Ok(())
}

impl WireStream for State {
    const FRAMING: Framing = Framing::Sse;

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        process_event(record.data, record.event, out, self)
    }

    /// Finishes every block after the stream, in content order.
    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        end_blocks(out, self);
        Ok(())
    }

    fn on_failure(&mut self, out: &mut Output<'_>) {
        apply_details(out, self);
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle(out, self, &get_compat(out.model))
    }
}

fn end_blocks(out: &mut Output<'_>, st: &mut State) {
    for idx in 0..out.len() {
        if st.thinking == Some(idx) {
            apply_details(out, st);
            out.end_block(idx);
        } else if let Some(t) = st.tools.iter_mut().find(|t| t.index == idx) {
            match t.custom.as_mut() {
                // A freeform input is closed, never parsed.
                Some(c) => {
                    if let Ok(Some(piece)) = c.close(None) {
                        out.tool_delta(idx, &piece);
                    }
                    out.end_block(idx);
                }
                None => out.finish_tool_call(idx, &t.args),
            }
        } else {
            out.end_block(idx);
        }
    }
}

/// How a clean stream ends: hosts without finish reasons stop (or use tools) by
/// themselves; otherwise a missing finish reason is an error.
fn settle(out: &mut Output<'_>, st: &State, c: &Compat) -> Result<(), String> {
    if !st.has_finish && !c.supports_finish_reason {
        let tool = out.with(has_tool_call);
        out.update(|m| {
            m.stop_reason = if tool {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            }
        });
    }
    let (reason, err) = out.with(|m| (m.stop_reason, m.error_message.clone()));
    if reason == StopReason::Error {
        return Err(err.unwrap_or_else(|| "Provider returned an error stop reason".into()));
    }
    if (c.supports_finish_reason && !st.has_finish) || reason == StopReason::Pending {
        return Err("Stream ended without finish_reason".into());
    }
    Ok(())
}
