//! Structural comparison of traces, after `compare.py`: object key order is ignored,
//! numbers compare by value, booleans never equal numbers. The `trace` list and the
//! `events` lists of `stream` entries are aligned with a longest common subsequence, so one
//! missing or extra entry is reported once.

use serde_json::Value;

/// Whether two JSON values are equal under the comparison rules.
pub fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| equal(v, w))
        }
        _ => a == b,
    }
}

/// The differences between an expected and an actual trace, one line each (empty when
/// they are equal).
pub fn diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                match a.get(k) {
                    None => out.push(format!("{k}: missing (expected {})", show(v))),
                    Some(w) => diff_at(v, w, k, &mut out),
                }
            }
            for (k, w) in a {
                if !e.contains_key(k) {
                    out.push(format!("{k}: unexpected field {}", show(w)));
                }
            }
        }
        _ => diff_at(expected, actual, "$", &mut out),
    }
    out
}

fn show(v: &Value) -> String {
    let s = sorted(v).to_string();
    if s.chars().count() <= 160 {
        s
    } else {
        format!("{}...", s.chars().take(157).collect::<String>())
    }
}

/// A copy with object keys sorted (for stable display and alignment keys).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        Value::Number(n) => Value::Number(super::norm::int_number(n)),
        other => other.clone(),
    }
}

fn summary(entry: &Value) -> String {
    let Some(m) = entry.as_object() else {
        return show(entry);
    };
    let mut parts = vec![m
        .get("kind")
        .map(|k| {
            k.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| k.to_string())
        })
        .unwrap_or_else(|| "?".into())];
    for key in ["type", "hook", "do", "event", "n", "toolCallId", "at"] {
        if let Some(v) = m.get(key) {
            if !v.is_object() && !v.is_array() {
                let text = v
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string());
                parts.push(format!("{key}={text}"));
            }
        }
    }
    if let Some(role) = m.get("message").and_then(|msg| msg.get("role")) {
        parts.push(format!("role={}", role.as_str().unwrap_or("?")));
    }
    parts.join(" ")
}

fn diff_at(e: &Value, a: &Value, path: &str, out: &mut Vec<String>) {
    if equal(e, a) {
        return;
    }
    match (e, a) {
        (Value::Object(em), Value::Object(am)) => {
            for (k, v) in em {
                match am.get(k) {
                    None => out.push(format!("{path}.{k}: missing (expected {})", show(v))),
                    Some(w) => diff_at(v, w, &format!("{path}.{k}"), out),
                }
            }
            for (k, w) in am {
                if !em.contains_key(k) {
                    out.push(format!("{path}.{k}: unexpected field {}", show(w)));
                }
            }
        }
        (Value::Array(ea), Value::Array(aa)) => {
            if path == "trace" || path.ends_with(".events") {
                diff_sequence(ea, aa, path, out);
                return;
            }
            for (i, (v, w)) in ea.iter().zip(aa).enumerate() {
                diff_at(v, w, &format!("{path}[{i}]"), out);
            }
            for (i, v) in ea.iter().enumerate().skip(aa.len()) {
                out.push(format!("{path}[{i}]: missing (expected {})", show(v)));
            }
            for (i, w) in aa.iter().enumerate().skip(ea.len()) {
                out.push(format!("{path}[{i}]: unexpected element {}", show(w)));
            }
        }
        _ => out.push(format!("{path}: expected {}, got {}", show(e), show(a))),
    }
}

/// Aligns two entry lists with a longest common subsequence of equal entries; unmatched
/// runs are compared pairwise, leftovers reported as missing or unexpected.
fn diff_sequence(exp: &[Value], act: &[Value], path: &str, out: &mut Vec<String>) {
    let (n, m) = (exp.len(), act.len());
    // lcs[i][j]: LCS length of exp[i..] and act[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if equal(&exp[i], &act[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut pending_e: Vec<usize> = Vec::new();
    let mut pending_a: Vec<usize> = Vec::new();
    let flush = |pe: &mut Vec<usize>, pa: &mut Vec<usize>, out: &mut Vec<String>| {
        let k = pe.len().min(pa.len());
        for d in 0..k {
            let (ei, ai) = (pe[d], pa[d]);
            let label = if ei == ai {
                format!("{path}[{ei}]")
            } else {
                format!("{path}[{ei}] (actual [{ai}])")
            };
            let (se, sa) = (summary(&exp[ei]), summary(&act[ai]));
            if se != sa {
                out.push(format!("{label}: expected entry <{se}>, got <{sa}>"));
            }
            diff_at(&exp[ei], &act[ai], &label, out);
        }
        for &ei in &pe[k..] {
            out.push(format!(
                "{path}[{ei}]: missing entry <{}> {}",
                summary(&exp[ei]),
                show(&exp[ei])
            ));
        }
        for &ai in &pa[k..] {
            out.push(format!(
                "{path} (actual [{ai}]): unexpected entry <{}> {}",
                summary(&act[ai]),
                show(&act[ai])
            ));
        }
        pe.clear();
        pa.clear();
    };
    while i < n || j < m {
        if i < n && j < m && equal(&exp[i], &act[j]) {
            flush(&mut pending_e, &mut pending_a, out);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            pending_a.push(j);
            j += 1;
        } else {
            pending_e.push(i);
            i += 1;
        }
    }
    flush(&mut pending_e, &mut pending_a, out);
}
