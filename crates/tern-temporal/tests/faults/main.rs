//! The fault test: two worker processes serve concurrent sessions on a real Temporal dev
//! server; the harness SIGKILLs one of them during a model stream, during a tool call and
//! between turns, restarts it (so there are always two), and checks every session: it
//! finished (on the other worker); the scripted model server (tern-durable's crash server,
//! real HTTP on 127.0.0.1) saw no completed request repeated; the `never` tool's effect
//! never happened twice; every accepted steer was delivered exactly once.
//!
//! The workers are this test binary itself (`faults-<hash> worker …`): always built and up
//! to date with the test.
//!
//! `cargo test -p tern-temporal --test faults` runs a short version (4 sessions, 3 kills);
//! `FAULTS_KILLS=30 FAULTS_SESSIONS=10 cargo test -p tern-temporal --test faults` the full
//! one: rounds of 10 concurrent sessions, at most `FAULTS_ROUND_KILLS` (6) kills each, until
//! 30 kills landed. It prints `N passed, 0 failed` (N sessions checked).

#[cfg(target_os = "linux")]
mod harness;
#[cfg(target_os = "linux")]
#[allow(dead_code)]
#[path = "../../../tern-durable/tests/crash/server.rs"]
mod server;
#[cfg(target_os = "linux")]
#[path = "../support/mod.rs"]
mod support;
#[cfg(target_os = "linux")]
mod worker;

/// The kill moments are read from `/proc` and files: elsewhere the test reports itself
/// skipped.
#[cfg(not(target_os = "linux"))]
fn main() {
    println!("faults: skipped (Linux only)");
}

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("worker") {
        return worker::main(&args[2..]);
    }
    // One test named `faults`, with libtest's arguments (`--list`, filters, `--skip`), so
    // `cargo test` and nextest list, filter and report it like any other.
    let trial = libtest_mimic::Trial::test("faults", || {
        if harness::main() == std::process::ExitCode::SUCCESS {
            Ok(())
        } else {
            Err("see the report above".into())
        }
    });
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), vec![trial]).exit_code()
}

/// The multi-thread runtime the harness and each worker process run on; `Err` after telling
/// stderr why there is none.
#[cfg(target_os = "linux")]
fn tokio_runtime(program: &str) -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("{program}: no tokio runtime: {e}");
            std::process::ExitCode::FAILURE
        })
}
