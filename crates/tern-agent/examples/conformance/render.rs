//! The trace as text, laid out as the reference's runner prints it.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{json, Value};

/// A runner's last step: prints the trace on stdout and exits with `code`, or with 2 when
/// stdout does not take it.
pub fn print(out: &Value, code: u8) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(render(out).as_bytes())
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    ExitCode::from(code)
}

/// The trace as the reference prints it: one trace entry (and one final-state field or
/// message) per line.
pub fn render(out: &Value) -> String {
    let compact = |v: &Value| serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    let Some(obj) = out.as_object() else {
        return format!("{}\n", compact(out));
    };
    let mut lines = vec!["{".to_string()];
    let n = obj.len();
    for (i, (key, value)) in obj.iter().enumerate() {
        let comma = if i + 1 < n { "," } else { "" };
        match (key.as_str(), value) {
            ("trace", Value::Array(entries)) => {
                lines.push("  \"trace\": [".into());
                for (j, e) in entries.iter().enumerate() {
                    let c = if j + 1 < entries.len() { "," } else { "" };
                    lines.push(format!("    {}{c}", compact(e)));
                }
                lines.push(format!("  ]{comma}"));
            }
            ("final", Value::Object(fields)) => {
                lines.push("  \"final\": {".into());
                let m = fields.len();
                for (j, (f, v)) in fields.iter().enumerate() {
                    let c = if j + 1 < m { "," } else { "" };
                    match v {
                        Value::Array(msgs) if f == "messages" && !msgs.is_empty() => {
                            lines.push("    \"messages\": [".into());
                            for (k, msg) in msgs.iter().enumerate() {
                                let cc = if k + 1 < msgs.len() { "," } else { "" };
                                lines.push(format!("      {}{cc}", compact(msg)));
                            }
                            lines.push(format!("    ]{c}"));
                        }
                        _ => lines.push(format!("    {}: {}{c}", compact(&json!(f)), compact(v))),
                    }
                }
                lines.push(format!("  }}{comma}"));
            }
            _ => lines.push(format!(
                "  {}: {}{comma}",
                compact(&json!(key)),
                compact(value)
            )),
        }
    }
    lines.push("}".into());
    format!("{}\n", lines.join("\n"))
}
