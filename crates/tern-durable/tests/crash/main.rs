//! The crash test: real processes, real SIGKILLs. The harness starts a scripted
//! OpenAI-compatible server in this process, runs an uninterrupted reference, then for each
//! kill point runs this same binary as the agent process (`crash-<hash> agent …`), kills it
//! with SIGKILL at a chosen or random moment, recovers it (`--recover`) until it completes,
//! and checks every agent: the transcript is the reference's except for documented
//! "outcome unknown" results; no model request with a journaled outcome was sent again; no
//! `never` effect happened twice; the accepted steer was delivered exactly once.
//!
//! The agent process is this test binary itself: it is always built and up to date with the
//! test (an example is not built by `cargo test --test crash`, and a `[[bin]]` would ship a
//! test program with the library).
//!
//! `cargo test -p tern-durable --test crash` runs a short version; `scripts/crash-test.sh`
//! a long one (`CRASH_POINTS`, `CRASH_SQLITE_KILLS`, `CRASH_AGENTS`, `CRASH_SEED`).

mod agent;
mod harness;
mod rng;
mod server;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("agent") {
        return agent::main(&args[2..]);
    }
    harness::main()
}
