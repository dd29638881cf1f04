//! Conformance runner: `conformance SCENARIO.json` prints the scenario's normalized trace
//! (see `/work/shared/conformance/FORMAT.md`) on stdout.
//!
//! Exit status: 0 with a trace, 2 when the scenario cannot be read or is invalid, 3 when it
//! did not finish within 30 s (the partial trace is printed with `"incomplete": true`).

#[path = "conformance/harness.rs"]
mod harness;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: conformance SCENARIO.json");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("conformance: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let scenario: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("conformance: {path} is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let (out, code) = match harness::run_scenario(&scenario) {
        Ok(out) => (out, 0),
        Err(harness::RunError::Invalid(message)) => {
            eprintln!("conformance: {path}: {message}");
            return ExitCode::from(2);
        }
        Err(e @ harness::RunError::Incomplete { .. }) => {
            eprintln!("conformance: {path}: {e}");
            let harness::RunError::Incomplete { partial } = e else {
                unreachable!()
            };
            (partial, 3)
        }
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(harness::render::render(&out).as_bytes())
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    ExitCode::from(code)
}
