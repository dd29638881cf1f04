//! A command line to a typed command, or the failure response to send instead (pi's shape:
//! `{"type":"response","command":"parse","success":false,"error":...}`). Kept apart from
//! the stdin loop so the parser can be fuzzed on its own.

use serde_json::{json, Value};

use super::command::Command;

/// A failed response.
pub fn failure(command: &str, error: String) -> Value {
    json!({"type": "response", "command": command, "success": false, "error": error})
}

/// Reads a command line: `Err` is the response to send instead (a `parse` failure, a
/// missing or unknown `type`, a malformed field).
pub fn read_command(line: &str) -> Result<(Command, String, Option<Value>), Value> {
    let value: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return Err(failure(
                "parse",
                "Failed to parse command: a command is a JSON object".into(),
            ))
        }
        Err(e) => return Err(failure("parse", format!("Failed to parse command: {e}"))),
    };
    let id = value.get("id").cloned();
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let with_id = |mut resp: Value| {
        if let Some(id) = &id {
            resp["id"] = id.clone();
        }
        resp
    };
    if kind.is_empty() {
        return Err(with_id(failure("", "missing field `type`".into())));
    }
    match serde_json::from_value::<Command>(value) {
        Ok(command) => Ok((command, kind, id)),
        Err(e) => Err(with_id(failure(&kind, e.to_string()))),
    }
}

/// A command line's bytes: not UTF-8 is a `parse` failure like bad JSON.
pub fn read_command_bytes(line: &[u8]) -> Result<(Command, String, Option<Value>), Value> {
    match std::str::from_utf8(line) {
        Ok(text) => read_command(text),
        Err(e) => Err(failure(
            "parse",
            format!(
                "Failed to parse command: invalid UTF-8 at byte {}",
                e.valid_up_to()
            ),
        )),
    }
}
