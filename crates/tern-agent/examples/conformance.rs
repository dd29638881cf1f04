//! Conformance runner: `conformance SCENARIO.json` prints the scenario's normalized trace
//! (see `/work/shared/conformance/FORMAT.md`) on stdout.
//!
//! Exit status: 0 with a trace, 2 when the scenario cannot be read or is invalid, 3 when it
//! did not finish within 30 s (the partial trace is printed with `"incomplete": true`).

#[path = "conformance/harness.rs"]
mod harness;

use std::process::ExitCode;

use tern_testkit::cli::json_file_arg;

fn main() -> ExitCode {
    let (path, scenario) = match json_file_arg("conformance", "conformance SCENARIO.json") {
        Ok(arg) => arg,
        Err(code) => return code,
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
    harness::render::print(&out, code)
}
