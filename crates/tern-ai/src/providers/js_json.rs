//! JSON as the reference's JavaScript sees it: `JSON.stringify` text and truthiness.

use serde_json::Value;

/// Compact JSON text of a value (`JSON.stringify`).
pub(crate) fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Whether JavaScript would take the value as true (`if (value)`).
pub(crate) fn json_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// A value as the reference interpolates it into a message: strings bare, other values as
/// JSON text, an absent value as `undefined`.
pub(crate) fn js_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "undefined".to_string(),
    }
}
