//! Trace normalization (FORMAT.md 2.1) and JavaScript-compatible JSON text.
//!
//! Values reach the trace by serializing library types to `serde_json::Value` and passing
//! them through [`norm`]. Numbers that hold an integral value are stored as integers, so a
//! trace never prints `0.0` where the reference prints `0`.

use serde::Serialize;
use serde_json::{json, Map, Number, Value};

/// Serializes a library value and normalizes it. Serialization of the library's types
/// cannot fail (no maps with non-string keys), so a failure yields `null`.
pub fn norm_of<T: Serialize + ?Sized>(v: &T) -> Value {
    match serde_json::to_value(v) {
        Ok(v) => norm(&v),
        Err(_) => Value::Null,
    }
}

/// FORMAT.md 2.1: drop `timestamp`, mark `durationMs`, drop all-zero `usage`, drop
/// `api`/`provider` on assistant messages; integral numbers become integers.
pub fn norm(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(norm).collect()),
        Value::Object(map) => {
            let is_assistant = map.get("role").and_then(Value::as_str) == Some("assistant");
            let mut out = Map::new();
            for (k, x) in map {
                match k.as_str() {
                    "timestamp" => continue,
                    "durationMs" => {
                        out.insert(k.clone(), Value::Bool(true));
                        continue;
                    }
                    "usage" if is_zero_usage(x) => continue,
                    "api" | "provider" if is_assistant => continue,
                    _ => {}
                }
                out.insert(k.clone(), norm(x));
            }
            Value::Object(out)
        }
        Value::Number(n) => Value::Number(int_number(n)),
        other => other.clone(),
    }
}

/// The reference's `normEvent` of a serialized event: `message_update` reduced to its
/// provider event type and delta, any other event normalized whole.
pub fn norm_event(event: &Value) -> Value {
    if event.get("type").and_then(Value::as_str) != Some("message_update") {
        return norm(event);
    }
    let inner = &event["assistantMessageEvent"];
    let mut m = Map::new();
    m.insert("type".into(), Value::from("message_update"));
    m.insert("event".into(), inner["type"].clone());
    if let Some(d) = inner.get("delta") {
        m.insert("delta".into(), d.clone());
    }
    Value::Object(m)
}

/// An integral float as an integer number; everything else unchanged.
pub fn int_number(n: &Number) -> Number {
    if n.is_f64() {
        if let Some(f) = n.as_f64() {
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                return Number::from(f as i64);
            }
        }
    }
    n.clone()
}

/// The reference's `isZeroUsage`: an object whose values are all 0/false (recursively).
pub fn is_zero_usage(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().all(|x| match x {
            Value::Object(_) | Value::Array(_) => is_zero_usage(x),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            _ => false,
        }),
        Value::Array(a) => a.iter().all(|x| match x {
            Value::Object(_) | Value::Array(_) => is_zero_usage(x),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            _ => false,
        }),
        _ => false,
    }
}

/// A number as JavaScript's `String(n)` / `JSON.stringify(n)` prints it.
pub fn js_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f == 0.0 {
        return "0".to_string();
    }
    let a = f.abs();
    if (1e-6..1e21).contains(&a) {
        // Rust's Display is the shortest round-trip decimal without exponent, as JS here.
        return format!("{f}");
    }
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mant, exp)) if !exp.starts_with('-') => format!("{mant}e+{exp}"),
        _ => s,
    }
}

/// `JSON.stringify(v)`: compact, keys in stored order, JavaScript number text.
pub fn js_stringify(v: &Value) -> String {
    let mut out = String::new();
    write_js(v, &mut out, false);
    out
}

/// The reference's `canonical`: like `JSON.stringify` with object keys sorted.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_js(v, &mut out, true);
    out
}

fn write_js(v: &Value, out: &mut String, sorted: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js(x, out, sorted);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            if sorted {
                keys.sort();
            }
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                write_js(&map[k], out, sorted);
            }
            out.push('}');
        }
    }
}

/// A value as a JavaScript template literal shows it (`${v}`): strings raw, others as JSON.
pub fn js_template(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => js_number(n),
        other => js_stringify(other),
    }
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Strict equality (`===`) of two JSON values as the reference's rule matcher sees them:
/// primitives by value, objects and arrays never equal.
pub fn strict_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

/// The roles of `messages`, in order.
pub fn roles(messages: &[tern_ai::Message]) -> Value {
    Value::Array(messages.iter().map(|m| json!(m.role())).collect())
}

/// A trace entry from its fields, in order.
pub fn entry(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// `v`, or `null`.
pub fn or_null(v: Option<Value>) -> Value {
    v.unwrap_or(Value::Null)
}

/// A `runToolCall` entry of the trace.
pub fn outcome_entry(parent: Value, o: &tern_agent::ToolCallOutcome) -> Value {
    let mut e = Map::new();
    e.insert("kind".into(), json!("runToolCall"));
    e.insert("parent".into(), parent);
    e.insert("toolCallId".into(), json!(o.tool_call.id));
    e.insert("result".into(), norm_of(&o.result));
    e.insert("isError".into(), json!(o.is_error));
    if o.duration_ms.is_some() {
        e.insert("durationMs".into(), json!(true));
    }
    Value::Object(e)
}
