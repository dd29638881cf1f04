//! Differential conformance against the Pi reference (`@earendil-works/pi-agent-core`
//! 1.6.0): every scenario in `tests/conformance/scenarios` runs through the same harness as
//! the `conformance` example, and its trace must equal the reference trace in
//! `tests/conformance/expected` (object key order ignored, numbers by value).
//!
//! Scenario sets (each a `scenarios/` + `expected/` pair under `tests/conformance`):
//! - `.`: the 55 public scenarios of the conformance suite (copied verbatim);
//! - `extra/`: further scenarios whose traces were generated with the reference runner in
//!   `tests/conformance/reference` (`node gen.mjs ../extra/scenarios ../extra/expected`, each
//!   run twice byte-identical); they use the grown format of `tests/conformance/FORMAT.md`;
//!
//! `CONFORMANCE_FILTER=substring` runs only the scenarios whose file name contains it.

#[path = "../examples/conformance/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

use serde_json::Value;

const MAX_DIFF_LINES: usize = 40;

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Runs one scenario; `Err` holds the report of a failure.
fn check(scenario_path: &Path, expected_dir: &Path) -> Result<(), String> {
    let name = scenario_path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?");
    let scenario = read_json(scenario_path)?;
    let expected = read_json(&expected_dir.join(format!("{name}.json")))?;
    let actual = harness::run_scenario(&scenario).map_err(|e| e.to_string())?;
    let diff = harness::compare::diff(&expected, &actual);
    if diff.is_empty() {
        return Ok(());
    }
    let mut report: Vec<String> = diff
        .iter()
        .take(MAX_DIFF_LINES)
        .map(|l| format!("    {l}"))
        .collect();
    if diff.len() > MAX_DIFF_LINES {
        report.push(format!(
            "    ... {} more differences",
            diff.len() - MAX_DIFF_LINES
        ));
    }
    Err(report.join("\n"))
}

#[test]
fn scenarios_match_reference_traces() {
    run_set("");
}

#[test]
fn extra_scenarios_match_reference_traces() {
    run_set("extra");
}

fn run_set(set: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(set);
    let filter = std::env::var("CONFORMANCE_FILTER").ok();
    let files: Vec<PathBuf> = scenario_files(&root.join("scenarios"))
        .into_iter()
        .filter(|p| {
            filter.as_deref().is_none_or(|f| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(f))
            })
        })
        .collect();
    assert!(
        !files.is_empty(),
        "no scenarios found under {}",
        root.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_string();
        match check(path, &root.join("expected")) {
            Ok(()) => println!("pass {name}"),
            Err(report) => {
                println!("FAIL {name}\n{report}");
                failures.push(format!("FAIL {name}\n{report}"));
            }
        }
    }
    let passed = files.len() - failures.len();
    println!("{passed} passed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {} conformance scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
