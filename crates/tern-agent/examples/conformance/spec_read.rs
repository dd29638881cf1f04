//! The small readers of scenario JSON: typed lookups of optional keys, each failing with the
//! key's path and what it expected.

use serde_json::{Map, Value};
use tern_agent::hooks::AfterToolCallResult;
use tern_agent::{QueueMode, ToolExecutionMode, ToolResult};
use tern_ai::{ContentBlock, Message, ThinkingLevel, Usage};

use super::R;

pub(super) fn object<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| format!("{path}: expected an object, got {v}"))
}

/// A key that is present and not `null` (JavaScript `!== undefined` after JSON parsing;
/// `null` is treated as absent where the reference would use `??`).
pub(super) fn get<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

pub(super) fn opt_string(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<String>> {
    match get(o, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!("{path}.{key}: expected a string, got {v}")),
    }
}

pub(super) fn opt_number(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<f64>> {
    match get(o, key) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(v) => Err(format!("{path}.{key}: expected a number, got {v}")),
    }
}

pub(super) fn opt_array<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> R<Option<&'a Vec<Value>>> {
    match get(o, key) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(v) => Err(format!("{path}.{key}: expected an array, got {v}")),
    }
}

/// The optional array `key` of `o`, each element parsed by `parse` with its own path
/// (`{path}.{key}[i]`); `None` without the array.
pub(super) fn opt_list<T>(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    parse: impl FnMut(&Value, &str) -> R<T>,
) -> R<Option<Vec<T>>> {
    list_at(opt_array(o, key, path)?, &format!("{path}.{key}"), parse)
}

/// `items`, the optional array at `at`, each element parsed by `parse` with its own path
/// (`{at}[i]`).
pub(super) fn list_at<T>(
    items: Option<&Vec<Value>>,
    at: &str,
    mut parse: impl FnMut(&Value, &str) -> R<T>,
) -> R<Option<Vec<T>>> {
    items
        .map(|items| {
            items
                .iter()
                .enumerate()
                .map(|(i, v)| parse(v, &format!("{at}[{i}]")))
                .collect()
        })
        .transpose()
}

pub(super) fn string_list(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<Vec<String>>> {
    opt_list(o, key, path, |v, at| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{at}: expected a string, got {v}"))
    })
}

pub fn parse_thinking_level(s: &str, path: &str) -> R<ThinkingLevel> {
    ThinkingLevel::parse(s).ok_or_else(|| format!("{path}: unknown thinking level {s:?}"))
}

pub(super) fn opt_thinking_level(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
) -> R<Option<ThinkingLevel>> {
    match opt_string(o, key, path)? {
        None => Ok(None),
        Some(s) => parse_thinking_level(&s, &format!("{path}.{key}")).map(Some),
    }
}

pub(super) fn opt_tool_execution(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
) -> R<Option<ToolExecutionMode>> {
    match opt_string(o, key, path)?.as_deref() {
        None => Ok(None),
        Some("parallel") => Ok(Some(ToolExecutionMode::Parallel)),
        Some("sequential") => Ok(Some(ToolExecutionMode::Sequential)),
        Some(s) => Err(format!("{path}.{key}: unknown tool execution mode {s:?}")),
    }
}

pub(super) fn opt_queue_mode(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
) -> R<Option<QueueMode>> {
    match opt_string(o, key, path)?.as_deref() {
        None => Ok(None),
        Some("all") => Ok(Some(QueueMode::All)),
        Some("one-at-a-time") => Ok(Some(QueueMode::OneAtATime)),
        Some(s) => Err(format!("{path}.{key}: unknown queue mode {s:?}")),
    }
}

/// A scenario message as a runtime message: `timestamp: 0` added when missing (1.1).
pub fn message(v: &Value, path: &str) -> R<Message> {
    let mut m = object(v, path)?.clone();
    if !m.contains_key("timestamp") {
        m.insert("timestamp".into(), Value::from(0));
    }
    serde_json::from_value(Value::Object(m)).map_err(|e| format!("{path}: invalid message: {e}"))
}

pub(super) fn messages(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<Vec<Message>>> {
    opt_list(o, key, path, message)
}

/// `result(R)` (1.2): a copy of `R` with `text` turned into a text content block.
pub fn result_value(v: &Value, path: &str) -> R<Value> {
    let mut m = object(v, path)?.clone();
    if let Some(text) = m.shift_remove("text") {
        // `text` keeps its place as `content` (key order is irrelevant for comparison).
        m.insert(
            "content".into(),
            serde_json::json!([{"type": "text", "text": text}]),
        );
    }
    Ok(Value::Object(m))
}

pub(super) fn tool_result(v: &Value, path: &str) -> R<ToolResult> {
    let value = result_value(v, path)?;
    serde_json::from_value(value).map_err(|e| format!("{path}: invalid tool result: {e}"))
}

pub(super) fn after_result(value: &Value, path: &str) -> R<AfterToolCallResult> {
    let m = object(value, path)?;
    let field = |k: &str| get(m, k).cloned();
    let parse = |k: &str| -> R<Option<Value>> { Ok(field(k)) };
    let content = match parse("content")? {
        None => None,
        Some(c) => Some(
            serde_json::from_value::<Vec<ContentBlock>>(c)
                .map_err(|e| format!("{path}.content: {e}"))?,
        ),
    };
    let usage = match parse("usage")? {
        None => None,
        Some(u) => {
            Some(serde_json::from_value::<Usage>(u).map_err(|e| format!("{path}.usage: {e}"))?)
        }
    };
    let flag = |k: &str| -> R<Option<bool>> {
        match field(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(format!("{path}.{k}: expected a boolean, got {v}")),
        }
    };
    Ok(AfterToolCallResult {
        content,
        details: field("details"),
        structured_content: field("structuredContent"),
        is_error: flag("isError")?,
        usage,
        terminate: flag("terminate")?,
    })
}

pub(super) fn duration_value(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<Value>> {
    match get(o, key) {
        None => Ok(None),
        Some(v @ Value::Number(_)) => Ok(Some(v.clone())),
        Some(v) => Err(format!("{path}.{key}: expected a number, got {v}")),
    }
}
