//! Conformance of `validate_tool_arguments` with the reference (pi-ai 1.6 `validateToolArguments`
//! on pi-schema 1.6): every case in `tests/data/validation_cases.json` holds a schema, the call's
//! arguments (and optionally its `argumentsError`) and what the reference returned for them,
//! either `{"ok": <validated arguments>}` or `{"err": <error message>}`.

use serde_json::Value;
use tern_ai::schema::{validate_tool_arguments, CompiledSchema};

/// The tool name every case was run with.
const TOOL: &str = "t";

/// JSON equality as JS sees it: numbers by value (`1` and `1.0` are one number), key order ignored.
fn js_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| js_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| js_equal(p, q)))
        }
        _ => a == b,
    }
}

fn recorded_cases() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/validation_cases.json"
    );
    let text = std::fs::read_to_string(path).expect("read the recorded cases");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("parse the recorded cases");
    assert!(
        cases.len() >= 60,
        "expected at least 60 recorded cases, found {}",
        cases.len()
    );
    cases
}

/// A case's name, its `argumentsError`, and what the one-shot function answers for it.
fn one_shot(case: &Value) -> (&str, Option<&str>, Result<Value, String>) {
    let name = case["name"].as_str().unwrap_or("<unnamed>");
    let arguments_error = case.get("argumentsError").and_then(Value::as_str);
    let answer =
        validate_tool_arguments(TOOL, &case["schema"], &case["arguments"], arguments_error);
    (name, arguments_error, answer)
}

#[test]
fn matches_the_reference_on_every_recorded_case() {
    let cases = recorded_cases();

    let mut failures = Vec::new();
    for case in &cases {
        let (name, _, actual) = one_shot(case);
        let expected = &case["expected"];
        let matched = match (
            &actual,
            expected.get("ok"),
            expected.get("err").and_then(Value::as_str),
        ) {
            (Ok(value), Some(ok), None) => js_equal(value, ok),
            (Err(message), None, Some(err)) => message == err,
            _ => false,
        };
        if !matched {
            failures.push(format!(
                "case {name}:\n  expected: {expected}\n  actual:   {actual:?}"
            ));
        }
    }
    println!(
        "{} passed, {} failed",
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from the reference:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A schema compiled once answers every call as the one-shot function does, and keeps no
/// state from one call to the next (each case is validated twice).
#[test]
fn a_compiled_schema_answers_like_the_one_shot_function() {
    let cases = recorded_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let (name, arguments_error, once) = one_shot(case);
        let compiled = CompiledSchema::new(case["schema"].clone());
        for round in 0..2 {
            let again = compiled.validate(TOOL, &case["arguments"], arguments_error);
            if again != once {
                failures.push(format!("case {name}, call {round}: {again:?} vs {once:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_compiled_schema_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<CompiledSchema>();
    let schema = std::sync::Arc::new(CompiledSchema::new(serde_json::json!({
        "type": "object",
        "properties": { "n": { "type": "integer", "minimum": 1 } },
        "required": ["n"]
    })));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let schema = schema.clone();
            std::thread::spawn(move || {
                schema.validate(TOOL, &serde_json::json!({ "n": i.to_string() }), None)
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("a validating thread"))
        .collect();
    assert!(
        results[0]
            .as_ref()
            .is_err_and(|e| e.contains("  - n: expected >= 1")),
        "{:?}",
        results[0]
    );
    for (i, r) in results.iter().enumerate().skip(1) {
        assert_eq!(r, &Ok(serde_json::json!({ "n": i })));
    }
}
