//! The crash test: real processes, real SIGKILLs. The harness starts a scripted
//! OpenAI-compatible server in this process, runs an uninterrupted reference, then for each
//! kill point runs this same binary as the agent process (`crash-<hash> agent …`), kills it
//! with SIGKILL at a chosen or random moment, recovers it (`--recover`) until it completes,
//! and checks every agent: the transcript is the reference's except for documented
//! "outcome unknown" results; no model request with a journaled outcome was sent again; no
//! `never` effect happened twice; every accepted steer and follow-up was delivered exactly
//! once.
//!
//! The agent process is this test binary itself: it is always built and up to date with the
//! test (an example is not built by `cargo test --test crash`, and a `[[bin]]` would ship a
//! test program with the library).
//!
//! `cargo test -p tern-durable --test crash` runs a short version; `scripts/crash-test.sh`
//! a long one (`CRASH_POINTS`, `CRASH_SQLITE_KILLS`, `CRASH_AGENTS`, `CRASH_SEED`).

#[cfg(target_os = "linux")]
mod agent;
#[cfg(target_os = "linux")]
mod harness;
#[cfg(target_os = "linux")]
mod server;

/// The kill moments are read from `/proc`: elsewhere the test reports itself skipped.
#[cfg(not(target_os = "linux"))]
fn main() {
    println!("crash: skipped (the crash test reads /proc: Linux only)");
}

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("agent") {
        return agent::main(&args[2..]);
    }
    // One test named `crash`, with libtest's arguments (`--list`, filters, `--skip`), so
    // `cargo test` and nextest list, filter and report it like any other.
    let trial = libtest_mimic::Trial::test("crash", || {
        if harness::main() == std::process::ExitCode::SUCCESS {
            Ok(())
        } else {
            Err("see the report above".into())
        }
    });
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), vec![trial]).exit_code()
}
