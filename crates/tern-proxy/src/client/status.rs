//! The text of a non-2xx answer, as the reference words it: `Proxy error: <error>` when the
//! body is JSON with a truthy `error`, else `Proxy error: <status> <reason>`.

use serde_json::Value;
use tern_ai::providers::js_json::json_truthy;

/// The message for a failed response with this status, reason phrase and body.
pub(crate) fn status_message(status: u16, reason: &str, body: &[u8]) -> String {
    let error = serde_json::from_slice::<Value>(strip_bom(body))
        .ok()
        .and_then(|v| v.get("error").cloned())
        .filter(json_truthy);
    match error {
        Some(e) => format!("Proxy error: {}", js_string(&e)),
        None => format!("Proxy error: {status} {reason}"),
    }
}

fn strip_bom(body: &[u8]) -> &[u8] {
    body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)
}

/// `String(value)` in JavaScript, for the values JSON can hold.
fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            (_, _, Some(f)) => f.to_string(),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        // Array elements: `null` prints as nothing.
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_field_wins_when_truthy() {
        let m = |body: &str| status_message(500, "Internal Server Error", body.as_bytes());
        assert_eq!(m(r#"{"error":"quota"}"#), "Proxy error: quota");
        assert_eq!(m(r#"{"error":{"a":1}}"#), "Proxy error: [object Object]");
        assert_eq!(m(r#"{"error":[1,null,"b"]}"#), "Proxy error: 1,,b");
        assert_eq!(m(r#"{"error":2.0}"#), "Proxy error: 2");
        assert_eq!(m(r#"{"error":true}"#), "Proxy error: true");
        for falsy in [
            r#"{"error":""}"#,
            r#"{"error":0}"#,
            r#"{"error":null}"#,
            "null",
            "[]",
            "nope",
            "",
        ] {
            assert_eq!(
                m(falsy),
                "Proxy error: 500 Internal Server Error",
                "{falsy}"
            );
        }
    }
}
