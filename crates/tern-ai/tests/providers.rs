//! Replays every recorded provider exchange (tests/providers/streams) over a real local HTTP
//! server and compares the output document with the reference's (tests/providers/expected)
//! the way the oracle's compare.py does; a property test replays each case with random chunk
//! boundaries and expects the same result.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;
use tern_ai::providers::replay::run_case;

#[path = "support/compare.rs"]
mod compare;
#[path = "support/runtime.rs"]
mod runtime;
use compare::compare;
use runtime::runtime;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/providers")
}

/// The paths in `dir`, sorted.
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

fn cases() -> Vec<(String, Value, Value)> {
    let mut out = Vec::new();
    let streams = root().join("streams");
    for api in sorted_entries(&streams) {
        for f in sorted_entries(&api) {
            let rel = f.strip_prefix(&streams).unwrap().to_path_buf();
            let case: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let expected: Value = serde_json::from_str(
                &std::fs::read_to_string(root().join("expected").join(&rel)).unwrap(),
            )
            .unwrap();
            out.push((rel.display().to_string(), case, expected));
        }
    }
    out
}

fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut keys = vec!["request", "requestCount", "events", "message", "overflow"];
    for optional in ["extraRequests", "laterCalls"] {
        if expected.get(optional).is_some() || actual.get(optional).is_some() {
            keys.push(optional);
        }
    }
    for k in keys {
        let mut e = expected.get(k).cloned().unwrap_or(Value::Null);
        let mut a = actual.get(k).cloned().unwrap_or(Value::Null);
        if k == "request" {
            for v in [&mut e, &mut a] {
                if let Some(o) = v.as_object_mut() {
                    o.remove("allHeaders");
                }
            }
        }
        compare(k, &e, &a, &mut diffs);
    }
    diffs
}

#[test]
fn every_recorded_case_matches_the_reference() {
    let rt = runtime();
    let mut failures = Vec::new();
    let all = cases();
    assert!(all.len() >= 62);
    for (name, case, expected) in &all {
        let actual = rt.block_on(run_case(case)).unwrap();
        let diffs = differences(expected, &actual);
        if !diffs.is_empty() {
            failures.push(format!(
                "{name}: {}",
                diffs[..diffs.len().min(5)].join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn body_bytes(response: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    for c in response["chunks"].as_array().into_iter().flatten() {
        out.extend(tern_ai::providers::replay::chunk_bytes(c));
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The case with its body cut at `cuts` (fractions of the body length) instead of its own
/// chunk boundaries, without delays.
fn rechunk(case: &Value, cuts: &[f64]) -> Value {
    let mut case = case.clone();
    let response = case["response"].clone();
    let body = body_bytes(&response);
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|f| ((body.len() as f64) * f) as usize)
        .collect();
    points.push(0);
    points.push(body.len());
    points.sort_unstable();
    points.dedup();
    let chunks: Vec<Value> = points
        .windows(2)
        .map(|w| serde_json::json!({"hex": hex(&body[w[0]..w[1]])}))
        .collect();
    case["response"]["chunks"] = Value::Array(chunks);
    case["response"]["chunkDelayMs"] = Value::from(0);
    case
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_chunk_boundaries_give_the_same_result(
        pick in 0usize..1000,
        cuts in proptest::collection::vec(0.0f64..1.0, 0..40),
    ) {
        let all = cases();
        let (name, case, expected) = &all[pick % all.len()];
        prop_assume!(case.get("response").is_some());
        // Where an abort lands depends on what had arrived: those cases keep their chunks.
        prop_assume!(case.get("abortAfterEvents").is_none());
        let rt = runtime();
        let actual = rt.block_on(run_case(&rechunk(case, &cuts))).unwrap();
        let diffs = differences(expected, &actual);
        prop_assert!(diffs.is_empty(), "{name}: {:?}", diffs);
    }
}

/// Replays every case with a body (aborts keep their own chunks) cut where `cuts` says, given
/// the body's length, and compares with the expected output.
fn assert_every_case_rechunked(cuts: impl Fn(usize) -> Vec<f64>) {
    let rt = runtime();
    for (name, case, expected) in cases() {
        if case.get("response").is_none() || case.get("abortAfterEvents").is_some() {
            continue;
        }
        let len = body_bytes(&case["response"]).len();
        let actual = rt.block_on(run_case(&rechunk(&case, &cuts(len)))).unwrap();
        let diffs = differences(&expected, &actual);
        assert!(diffs.is_empty(), "{name}: {diffs:?}");
    }
}

#[test]
fn every_case_survives_one_byte_chunks() {
    assert_every_case_rechunked(|len| (1..len).map(|i| i as f64 / len as f64).collect());
}

/// The whole body in one read: what a framing fails on (a Bedrock frame with a bad checksum)
/// comes after the events of the records before it in the same read, as the SDKs yield them.
#[test]
fn every_case_survives_its_body_in_one_read() {
    assert_every_case_rechunked(|_| Vec::new());
}

fn load(rel: &str) -> (Value, Value) {
    let case =
        serde_json::from_str(&std::fs::read_to_string(root().join("streams").join(rel)).unwrap())
            .unwrap();
    let expected =
        serde_json::from_str(&std::fs::read_to_string(root().join("expected").join(rel)).unwrap())
            .unwrap();
    (case, expected)
}

#[test]
fn a_429_before_the_first_byte_is_retried_honouring_retry_after() {
    let rt = runtime();
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
        "google-generative-ai",
    ] {
        let (mut case, expected) = load(&format!("{api}/plain-text.json"));
        let (limited, _) = load(&format!("{api}/http-429.json"));
        let mut first = limited["response"].clone();
        first["headers"]["retry-after-ms"] = Value::from("20");
        case["responses"] = Value::Array(vec![first, case["response"].clone()]);
        case.as_object_mut().unwrap().remove("response");
        case["request"]["options"]["maxRetries"] = Value::from(2);
        let started = std::time::Instant::now();
        let actual = rt.block_on(run_case(&case)).unwrap();
        assert_eq!(actual["requestCount"], 2, "{api}");
        assert!(started.elapsed() >= std::time::Duration::from_millis(20));
        let mut expected = expected.clone();
        expected["requestCount"] = Value::from(2);
        let mut actual_cmp = actual.clone();
        actual_cmp.as_object_mut().unwrap().remove("extraRequests");
        let diffs = differences(&expected, &actual_cmp);
        assert!(diffs.is_empty(), "{api}: {diffs:?}");
        assert_eq!(
            actual["extraRequests"][0]["body"],
            actual["request"]["body"]
        );
    }
}

#[test]
fn a_server_requested_delay_above_the_cap_fails_at_once() {
    let rt = runtime();
    let (mut case, _) = load("openai-completions/http-429.json");
    case["response"]["headers"]["retry-after"] = Value::from("120");
    case["response"]["headers"]
        .as_object_mut()
        .unwrap()
        .remove("retry-after-ms");
    case["request"]["options"]["maxRetries"] = Value::from(3);
    let actual = rt.block_on(run_case(&case)).unwrap();
    assert_eq!(actual["requestCount"], 1);
    let msg = actual["message"]["errorMessage"].as_str().unwrap();
    assert!(
        msg.starts_with("Server requested 120s retry delay (max: 60s). 429 Rate limit"),
        "{msg}"
    );
}

#[test]
fn no_retries_by_default() {
    let rt = runtime();
    let (case, expected) = load("anthropic-messages/http-500.json");
    let actual = rt.block_on(run_case(&case)).unwrap();
    assert_eq!(actual["requestCount"], 1);
    assert!(differences(&expected, &actual).is_empty());
}
