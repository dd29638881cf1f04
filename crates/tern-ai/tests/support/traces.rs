//! The reference's conformance traces, for tests that compare tern's JSON with them.
//!
//! The traces are normalized (FORMAT.md section 2.1): `timestamp` keys are removed, all-zero
//! `usage` is removed, `api`/`provider` are removed from assistant messages, and `durationMs`
//! is replaced by `true`. Removed keys are simply absent, which tern must keep absent; for
//! `durationMs` the tests put a number back before parsing ([`with_durations`]) and turn it
//! into `true` again after serializing ([`durations_as_markers`]).

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Every trace file: the public scenarios' and the project's extra ones.
pub fn trace_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tern-agent/tests/conformance");
    let mut files = Vec::new();
    for dir in [root.join("expected"), root.join("extra/expected")] {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|x| x == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 55,
        "expected at least 55 traces, found {}",
        files.len()
    );
    files
}

/// A trace file parsed with its key order kept.
pub fn read_trace(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value with every `durationMs: true` marker replaced by a duration, so that it parses.
pub fn with_durations(v: &Value) -> Value {
    map_durations(v, &|d| {
        if d == &Value::Bool(true) {
            Value::from(1)
        } else {
            d.clone()
        }
    })
}

/// The value with every numeric `durationMs` replaced by the trace's `true` marker.
pub fn durations_as_markers(v: &Value) -> Value {
    map_durations(v, &|d| {
        if d.is_number() {
            Value::Bool(true)
        } else {
            d.clone()
        }
    })
}

fn map_durations(v: &Value, f: &dyn Fn(&Value) -> Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| {
                    let x = if k == "durationMs" {
                        f(x)
                    } else {
                        map_durations(x, f)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| map_durations(x, f)).collect()),
        _ => v.clone(),
    }
}

/// Every object with a string `role` in `v` (messages), outermost first.
pub fn messages_in(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(o) => {
            if o.get("role").is_some_and(Value::is_string) {
                out.push(v.clone());
                return;
            }
            o.values().for_each(|x| messages_in(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| messages_in(x, out)),
        _ => {}
    }
}

/// Fails unless more than `at_least` `what`s were checked and none of them differ from the
/// reference; shows the first ten differences.
pub fn assert_all_match(checked: usize, at_least: usize, what: &str, failures: &[String]) {
    assert!(checked > at_least, "only {checked} {what} found");
    assert!(
        failures.is_empty(),
        "{} of {checked} {what} differ:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}
