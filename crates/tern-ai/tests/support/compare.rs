//! The field-by-field comparison of output documents the oracle's compare.py makes: the same
//! keys, arrays of the same length, numbers within a relative 1e-9, an `argumentsError`
//! compared from its "Received arguments:" on (the parser's own wording differs).

use serde_json::Value;

fn args_tail(s: &str) -> &str {
    s.find("Received arguments:\n")
        .map(|i| &s[i..])
        .unwrap_or(s)
}

/// Appends to `diffs` every difference between `a` and `b` under `path`.
pub fn compare(path: &str, a: &Value, b: &Value, diffs: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: std::collections::BTreeSet<_> = x.keys().collect();
            let ky: std::collections::BTreeSet<_> = y.keys().collect();
            if kx != ky {
                diffs.push(format!("{path}: keys {kx:?} != {ky:?}"));
                return;
            }
            for (k, v) in x {
                if k == "argumentsError" {
                    match (v.as_str(), y[k].as_str()) {
                        (Some(p), Some(q)) if args_tail(p) == args_tail(q) => {}
                        _ => diffs.push(format!("{path}.{k}: {v} != {}", y[k])),
                    }
                    continue;
                }
                compare(&format!("{path}.{k}"), v, &y[k], diffs);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                diffs.push(format!("{path}: length {} != {}", x.len(), y.len()));
                return;
            }
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                compare(&format!("{path}[{i}]"), p, q, diffs);
            }
        }
        (Value::Number(p), Value::Number(q)) => {
            let (p, q) = (
                p.as_f64().unwrap_or(f64::NAN),
                q.as_f64().unwrap_or(f64::NAN),
            );
            let tol = 1e-12f64.max(1e-9 * p.abs().max(q.abs()));
            if (p - q).abs() > tol {
                diffs.push(format!("{path}: {p} != {q}"));
            }
        }
        _ => {
            if a != b {
                diffs.push(format!("{path}: {a} != {b}"));
            }
        }
    }
}
