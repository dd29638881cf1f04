//! The OpenAI Responses stream: output items tracked by `output_index` (reasoning, message,
//! function and custom tool calls; other item types make no block), finished from their
//! `done` item; usage, service-tier pricing and input transformations from the terminal
//! response.

use crate::Name;
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::json_parse::ToolCallArgumentsStream;
use crate::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall,
    ToolCallExtra, Usage,
};
use crate::model::Model;
use crate::providers::constrained::GrammarInputs;
use crate::providers::cost;
use crate::providers::custom_input::{property_of, CustomInput};
use crate::providers::driver::{settle_stop_reason, Framing, SseRecord, WireStream};
use crate::providers::js_json::{compact, js_join_item, js_text, json_truthy};
use crate::providers::openai_sdk::{is_wrapped_event, parse_record, sdk_record_error};
use crate::providers::output::{append_diagnostic, has_tool_call, pick_keys, Output};

/// The error text of a failed Responses message: the message's own error.
pub(crate) fn error_text(m: &AssistantMessage) -> Option<String> {
    m.error_message.clone()
}

fn tier_factor(model: &Model, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") | Some("fast") => {
            if model.id == "gpt-5.5" {
                2.5
            } else {
                2.0
            }
        }
        _ => 1.0,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum SlotKind {
    Thinking,
    Text,
    Tool,
}

struct Slot {
    kind: SlotKind,
    index: usize,
    args: Option<ToolCallArgumentsStream>,
    /// The input of a freeform (`custom_tool_call`) tool call.
    custom: Option<CustomInput>,
}

/// The mapper state of one response.
#[derive(Default)]
pub(crate) struct State {
    slots: HashMap<i64, Slot>,
    pub(super) unfinished: Vec<usize>,
    reasoning_by_id: HashMap<String, usize>,
    pub(super) terminal: bool,
    /// The host bills every service tier alike (Azure): costs are not scaled by the tier.
    pub(crate) flat_tier_pricing: bool,
    /// The input property of each declared grammar tool (custom tool calls' argument key).
    pub(crate) grammar_inputs: GrammarInputs,
}

fn create_slot(out: &mut Output<'_>, st: &mut State, output_index: i64, item: &Value) {
    match item.get("type").and_then(Value::as_str).unwrap_or("") {
        "reasoning" => {
            let i = out.push_block(ContentBlock::Thinking(ThinkingContent::default()));
            st.slots.insert(
                output_index,
                Slot {
                    kind: SlotKind::Thinking,
                    index: i,
                    args: None,
                    custom: None,
                },
            );
        }
        "message" => {
            if item.get("phase").and_then(Value::as_str) == Some("final_answer") {
                out.update(|m| m.stop_reason = StopReason::Stop);
            }
            let i = out.push_block(ContentBlock::Text(TextContent::default()));
            st.slots.insert(
                output_index,
                Slot {
                    kind: SlotKind::Text,
                    index: i,
                    args: None,
                    custom: None,
                },
            );
        }
        "function_call" => {
            let mut args = ToolCallArgumentsStream::new();
            let initial = item
                .get("arguments")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty());
            let arguments = match initial {
                Some(a) => args.append(a).clone(),
                None => json!({}),
            };
            open_tool_call(out, st, output_index, item, arguments, Some(args), None);
        }
        "custom_tool_call" => {
            let initial = item.get("input").and_then(Value::as_str).unwrap_or("");
            let name = item.get("name").and_then(Value::as_str).unwrap_or("");
            let custom = CustomInput::new(property_of(&st.grammar_inputs, name), initial);
            let arguments = custom.arguments();
            open_tool_call(out, st, output_index, item, arguments, None, Some(custom));
        }
        _ => {}
    }
}

/// Starts the tool call of a `function_call` or `custom_tool_call` item: its block, and the
/// slot its argument deltas go to.
fn open_tool_call(
    out: &mut Output<'_>,
    st: &mut State,
    output_index: i64,
    item: &Value,
    arguments: Value,
    args: Option<ToolCallArgumentsStream>,
    custom: Option<CustomInput>,
) {
    let name = item.get("name").and_then(Value::as_str).unwrap_or("");
    let index = out.push_block(ContentBlock::tool_call(ToolCall {
        id: Name::unique(&format!(
            "{}|{}",
            id_part(item, "call_id"),
            id_part(item, "id")
        )),
        name: name.into(),
        arguments,
        extra: namespace_extra(item),
    }));
    st.unfinished.push(index);
    let kind = SlotKind::Tool;
    st.slots.insert(
        output_index,
        Slot {
            kind,
            index,
            args,
            custom,
        },
    );
}

/// One half of a tool call id (`call_id` or `id`) as the reference interpolates it.
fn id_part(item: &Value, k: &str) -> String {
    match item.get(k) {
        Some(Value::String(x)) => x.clone(),
        Some(Value::Null) | None => "undefined".to_string(),
        Some(other) => other.to_string(),
    }
}

/// The tool call extras of an item with a `namespace`.
fn namespace_extra(item: &Value) -> Option<Box<ToolCallExtra>> {
    ToolCallExtra {
        namespace: item
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..ToolCallExtra::default()
    }
    .into_option()
}

/// Sends a custom tool call's JSON piece (if any) after updating its arguments.
fn send_custom(out: &mut Output<'_>, index: usize, custom: &CustomInput, piece: Option<String>) {
    out.set_tool_arguments(index, custom.arguments());
    if let Some(p) = piece {
        out.tool_delta(index, &p);
    }
}

fn set_namespace(out: &Output<'_>, index: usize, ns: &str) {
    out.update(|m| {
        if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
            crate::cow::make_mut(c).extra_mut().namespace = Some(ns.to_string());
        }
    });
}

fn parse_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| {
        v.and_then(Value::as_f64)
            .map(|f| f.max(0.0) as u64)
            .unwrap_or(0)
    };
    let cached = n(u.pointer("/input_tokens_details/cached_tokens"));
    let write = n(u.pointer("/input_tokens_details/cache_write_tokens"));
    Usage {
        input: n(u.get("input_tokens")).saturating_sub(cached.saturating_add(write)),
        output: n(u.get("output_tokens")),
        cache_read: cached,
        cache_write: write,
        reasoning: Some(n(u.pointer("/output_tokens_details/reasoning_tokens"))),
        total_tokens: n(u.get("total_tokens")),
        ..Usage::default()
    }
}

/// Records the replayed reasoning items the API withheld, except `turn_boundary` removals
/// (models that keep only the current turn's reasoning report those on every request).
fn append_reasoning_removals(out: &Output<'_>, transformations: Option<&Value>) {
    let Some(list) = transformations.and_then(Value::as_array) else {
        return;
    };
    let removals: Vec<Value> = list
        .iter()
        .filter(|t| {
            t.get("type").and_then(Value::as_str) == Some("reasoning")
                && t.get("action").and_then(Value::as_str) == Some("removed")
                && t.get("reason").and_then(Value::as_str) != Some("turn_boundary")
        })
        .map(|t| pick_keys(t, &["type", "id", "action", "reason"], false))
        .collect();
    if removals.is_empty() {
        return;
    }
    out.update(|m| {
        append_diagnostic(
            m,
            "openai_input_transformations",
            json!({ "transformations": removals }),
        )
    });
}

fn finalize(resp: &Value, out: &mut Output<'_>, st: &mut State) -> Result<(), String> {
    let model = out.model;
    st.terminal = true;
    // Backfill encrypted reasoning content announced only in the final output.
    if let Some(items) = resp.get("output").and_then(Value::as_array) {
        for item in items {
            if item.get("type").and_then(Value::as_str) != Some("reasoning") {
                continue;
            }
            let Some(enc) = item.get("encrypted_content").filter(|e| json_truthy(e)) else {
                continue;
            };
            let Some(id) = item.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(&index) = st.reasoning_by_id.get(id) else {
                continue;
            };
            out.update(|m| {
                if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                    if let Some(Ok(Value::Object(mut stored))) = t
                        .thinking_signature
                        .as_deref()
                        .map(serde_json::from_str::<Value>)
                    {
                        if !stored.get("encrypted_content").is_some_and(json_truthy) {
                            stored.insert("encrypted_content".into(), enc.clone());
                            t.thinking_signature = Some(compact(&Value::Object(stored)));
                        }
                    }
                }
            });
        }
    }
    append_reasoning_removals(out, resp.get("input_transformations"));
    let status = resp
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string);
    let reason = resp
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    // An unknown status fails only after the response's id, usage and raw status are
    // kept, as the reference maps the status last.
    let mapped: Result<(StopReason, Option<String>), String> = match status.as_deref() {
        None | Some("") | Some("completed") | Some("in_progress") | Some("queued") => {
            Ok((StopReason::Stop, None))
        }
        Some("incomplete") => Ok(match reason.as_deref() {
            Some("max_output_tokens") => (StopReason::Length, None),
            Some(r) => (StopReason::Error, Some(format!("Response incomplete: {r}"))),
            None => (
                StopReason::Error,
                Some("Response incomplete without a provider reason".into()),
            ),
        }),
        Some("failed") | Some("cancelled") => Ok((StopReason::Error, None)),
        Some(other) => Err(format!("Unhandled stop reason: {other}")),
    };
    let tier = resp
        .get("service_tier")
        .and_then(Value::as_str)
        .map(str::to_string);
    out.update(|m: &mut AssistantMessage| {
        if let Some(id) = resp
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            m.response_id = Some(id.to_string());
        }
        if let Some(u) = resp.get("usage").filter(|u| u.is_object()) {
            m.usage = parse_usage(u).into();
        }
        cost::calculate_cost(model, &mut m.usage);
        if !st.flat_tier_pricing {
            cost::scale_cost(&mut m.usage, tier_factor(model, tier.as_deref()));
        }
        m.raw_stop_reason = match (&status, &reason) {
            (Some(s), Some(r)) => Some(format!("{s}.{r}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(r)) => Some(format!("undefined.{r}")),
            (None, None) => None,
        };
        if let Ok((reason, error)) = &mapped {
            m.stop_reason = *reason;
            m.error_message = error.clone();
            if has_tool_call(m) && m.stop_reason == StopReason::Stop {
                m.stop_reason = StopReason::ToolUse;
            }
        }
    });
    mapped.map(|_| ())
}

fn handle(ev: &Value, out: &mut Output<'_>, st: &mut State) -> Result<(), String> {
    let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
    let oi = ev.get("output_index").and_then(Value::as_i64).unwrap_or(-1);
    let delta = || {
        ev.get("delta")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let slot_of = |st: &State, kind: SlotKind| {
        st.slots
            .get(&oi)
            .filter(|s| s.kind == kind)
            .map(|s| s.index)
    };
    match ty {
        "response.created" => {
            if let Some(id) = ev.pointer("/response/id").and_then(Value::as_str) {
                out.update(|m| m.response_id = Some(id.to_string()));
            }
        }
        "response.output_item.added" => {
            if let Some(item) = ev.get("item") {
                create_slot(out, st, oi, item);
            }
        }
        "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
            if let Some(i) = slot_of(st, SlotKind::Thinking) {
                out.append_text(i, &delta());
            }
        }
        "response.reasoning_summary_part.done" => {
            if let Some(i) = slot_of(st, SlotKind::Thinking) {
                out.append_text(i, "\n\n");
            }
        }
        "response.output_text.delta" | "response.refusal.delta" => {
            if let Some(i) = slot_of(st, SlotKind::Text) {
                out.append_text(i, &delta());
            }
        }
        "response.function_call_arguments.delta" => {
            if let Some(slot) = st.slots.get_mut(&oi).filter(|s| s.kind == SlotKind::Tool) {
                if let Some(args) = slot.args.as_mut() {
                    let d = delta();
                    let a = args.append(&d).clone();
                    out.set_tool_arguments(slot.index, a);
                    out.tool_delta(slot.index, &d);
                }
            }
        }
        "response.function_call_arguments.done" => {
            if let Some(slot) = st.slots.get_mut(&oi).filter(|s| s.kind == SlotKind::Tool) {
                if let Some(args) = slot.args.as_mut() {
                    let full = ev.get("arguments").and_then(Value::as_str).unwrap_or("");
                    let d = args.replace(full);
                    out.set_tool_arguments(slot.index, args.partial().clone());
                    if let Some(d) = d.filter(|d| !d.is_empty()) {
                        out.tool_delta(slot.index, &d);
                    }
                }
            }
        }
        "response.custom_tool_call_input.delta" | "response.custom_tool_call_input.done" => {
            if let Some(slot) = st.slots.get_mut(&oi).filter(|s| s.kind == SlotKind::Tool) {
                if let Some(custom) = slot.custom.as_mut() {
                    let piece = if ty.ends_with(".delta") {
                        custom.append(ev.get("delta").and_then(Value::as_str).unwrap_or(""))?
                    } else {
                        custom.close(ev.get("input").and_then(Value::as_str))?
                    };
                    send_custom(out, slot.index, custom, piece);
                }
            }
        }
        "response.output_item.done" => {
            let item = ev.get("item").cloned().unwrap_or(Value::Null);
            let item_type = item
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if item_type == "message"
                && item.get("phase").and_then(Value::as_str) == Some("final_answer")
            {
                out.update(|m| m.stop_reason = StopReason::Stop);
            }
            if !st.slots.contains_key(&oi) {
                create_slot(out, st, oi, &item);
            }
            let Some(slot) = st.slots.get(&oi) else {
                return Ok(());
            };
            let index = slot.index;
            match (item_type.as_str(), slot.kind) {
                ("reasoning", SlotKind::Thinking) => {
                    let join = |k: &str| -> String {
                        item.get(k)
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .map(|s| js_join_item(s.get("text")))
                                    .collect::<Vec<_>>()
                                    .join("\n\n")
                            })
                            .unwrap_or_default()
                    };
                    let summary = join("summary");
                    let content = join("content");
                    let sig = compact(&item);
                    out.update(|m| {
                        if let Some(ContentBlock::Thinking(t)) = m.content.get_mut(index) {
                            if !summary.is_empty() {
                                t.thinking = summary;
                            } else if !content.is_empty() {
                                t.thinking = content;
                            }
                            t.thinking_signature = Some(sig);
                        }
                    });
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        st.reasoning_by_id.insert(id.to_string(), index);
                    }
                    out.end_block(index);
                    st.slots.remove(&oi);
                }
                ("message", SlotKind::Text) => {
                    let text: String = item
                        .get("content")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .map(|c| {
                                    let k = if c.get("type").and_then(Value::as_str)
                                        == Some("output_text")
                                    {
                                        "text"
                                    } else {
                                        "refusal"
                                    };
                                    js_join_item(c.get(k))
                                })
                                .collect::<String>()
                        })
                        .unwrap_or_default();
                    let mut sig = Map::new();
                    sig.insert("v".into(), json!(1));
                    if let Some(id) = item.get("id") {
                        sig.insert("id".into(), id.clone());
                    }
                    if let Some(p) = item.get("phase").filter(|p| json_truthy(p)) {
                        sig.insert("phase".into(), p.clone());
                    }
                    out.update(|m| {
                        if let Some(ContentBlock::Text(t)) = m.content.get_mut(index) {
                            t.text = text;
                            t.text_signature = Some(compact(&Value::Object(sig)));
                        }
                    });
                    out.end_block(index);
                    st.slots.remove(&oi);
                }
                ("custom_tool_call", SlotKind::Tool) => {
                    let Some(slot) = st.slots.get_mut(&oi) else {
                        return Ok(());
                    };
                    let Some(custom) = slot.custom.as_mut() else {
                        return Ok(());
                    };
                    let piece = custom.close(item.get("input").and_then(Value::as_str))?;
                    send_custom(out, index, custom, piece);
                    if let Some(ns) = item.get("namespace").and_then(Value::as_str) {
                        set_namespace(out, index, ns);
                    }
                    st.unfinished.retain(|i| *i != index);
                    out.end_block(index);
                    st.slots.remove(&oi);
                }
                ("function_call", SlotKind::Tool) if slot.args.is_some() => {
                    if let Some(mut slot) = st.slots.remove(&oi) {
                        if let Some(args) = slot.args.as_mut() {
                            if let Some(a) = item
                                .get("arguments")
                                .and_then(Value::as_str)
                                .filter(|a| !a.is_empty())
                            {
                                args.replace(a);
                            }
                            if let Some(ns) = item.get("namespace").and_then(Value::as_str) {
                                set_namespace(out, index, ns);
                            }
                            st.unfinished.retain(|i| *i != index);
                            out.finish_tool_call(index, args);
                        }
                    }
                }
                _ => {}
            }
        }
        "response.completed" | "response.incomplete" => {
            let resp = ev.get("response").cloned().unwrap_or(Value::Null);
            finalize(&resp, out, st)?;
        }
        "error" => {
            let code = js_text(ev.get("code"));
            let msg = ev
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("undefined");
            return Err(format!("Error Code {code}: {msg}"));
        }
        "response.failed" => {
            st.terminal = true;
            let resp = ev.get("response").cloned().unwrap_or(Value::Null);
            if let Some(s) = resp.get("status").and_then(Value::as_str) {
                out.update(|m| m.raw_stop_reason = Some(s.to_string()));
            }
            let err = resp.get("error").filter(|e| json_truthy(e));
            let text = |v: Option<&Value>, d: &str| {
                v.and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or(d)
                    .to_string()
            };
            let msg = if let Some(e) = err {
                format!(
                    "{}: {}",
                    text(e.get("code"), "unknown"),
                    text(e.get("message"), "no message")
                )
            } else if let Some(r) = resp
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                format!("incomplete: {r}")
            } else {
                "Unknown error (no error details in response)".to_string()
            };
            return Err(msg);
        }
        _ => {}
    }
    Ok(())
}

impl WireStream for State {
    const FRAMING: Framing = Framing::Sse;

    /// One record: an error (named `error`, or with a truthy `error` field) or an event.
    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        let value = parse_record(record.data)?;
        if let Some(message) = sdk_record_error(record.event, &value) {
            return Err(message);
        }
        if is_wrapped_event(record.event) {
            return Ok(());
        }
        handle(&value, out, self)?;
        Ok(())
    }

    /// The stream must have reached a terminal response, with every tool call finished.
    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        if !self.terminal {
            return Err("OpenAI Responses stream ended before a terminal response event".into());
        }
        if out.with(|m| m.stop_reason) != StopReason::ToolUse {
            return Ok(());
        }
        let Some(&i) = self.unfinished.first() else {
            return Ok(());
        };
        let (name, id) = out.with(|m| match m.content.get(i) {
            Some(ContentBlock::ToolCall(c)) => (c.name.clone(), c.id.clone()),
            _ => (Name::default(), Name::default()),
        });
        Err(format!(
            "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
        ))
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(
            out,
            "OpenAI Responses stream ended without a stop reason",
            error_text,
        )
    }
}
