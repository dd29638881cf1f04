//! JSON as the reference's JavaScript sees it: `JSON.stringify` text and truthiness.

use serde_json::Value;

/// Compact JSON text of a value (`JSON.stringify`).
///
/// ```
/// assert_eq!(tern_ai::providers::js_json::compact(&serde_json::json!({"a": 1})), r#"{"a":1}"#);
/// ```
pub fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Whether JavaScript would take the value as true (`if (value)`).
///
/// ```
/// use tern_ai::providers::js_json::json_truthy;
/// assert!(!json_truthy(&serde_json::json!("")));
/// assert!(json_truthy(&serde_json::json!([])));
/// ```
pub fn json_truthy(v: &Value) -> bool {
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

/// An element as `Array.prototype.join` writes it: absent and null as nothing, strings
/// bare, objects opaque, arrays joined with commas, other values as JSON text.
pub(crate) fn js_join_item(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(_)) => "[object Object]".to_string(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| js_join_item(Some(x)))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

/// The string members of a JSON object as name/value pairs (others are skipped); none for
/// anything but an object: how a JSON `headers` or `env` object is read.
pub(crate) fn string_members<C: FromIterator<(String, String)>>(v: Option<&Value>) -> C {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}
