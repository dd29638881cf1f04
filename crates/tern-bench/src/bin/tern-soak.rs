//! The soak test (not in CI): `tern-soak [--agents N] [--seconds S] [--seed X] [--threads T]
//! [--pause-ms P] [--idle-ms I] [--deadline D] [--skip KIND,...] [--verbose]`
//! runs N agents (default 1,000) in this process for S seconds (default 600) against a local
//! scripted server that injects faults at random, samples RSS each second, prints the
//! figures and exits 1 unless nothing was lost and RSS grew at most 10 % after the first
//! minute. See `tern_bench::soak`.

use std::time::Duration;

use tern_bench::soak::{run, Kind, SoakParams};
use tern_bench::util::Args;

fn main() {
    let args = Args::parse(std::env::args().skip(1));
    let d = SoakParams::default();
    let p = SoakParams {
        agents: args.int("agents", d.agents),
        duration: Duration::from_secs(args.int("seconds", d.duration.as_secs() as usize) as u64),
        seed: args.int("seed", d.seed as usize) as u64,
        threads: args.int("threads", d.threads),
        deadline: Duration::from_secs(args.int("deadline", d.deadline.as_secs() as usize) as u64),
        report_every: args.int("report-every", d.report_every as usize) as u64,
        verbose: args.str("verbose").is_some(),
        skip: args
            .str("skip")
            .map(|s| s.split(',').filter_map(Kind::from_name).collect())
            .unwrap_or_default(),
        max_pause: Duration::from_millis(
            args.int("pause-ms", d.max_pause.as_millis() as usize) as u64
        ),
        idle_timeout: Duration::from_millis(
            args.int("idle-ms", d.idle_timeout.as_millis() as usize) as u64,
        ),
        ..d
    };
    eprintln!(
        "soak: {} agents for {} s (seed {}, deadline {} s, idle timeout {} ms, pauses up to {} ms)",
        p.agents,
        p.duration.as_secs(),
        p.seed,
        p.deadline.as_secs(),
        p.idle_timeout.as_millis(),
        p.max_pause.as_millis()
    );
    match run(&p) {
        Ok(report) => {
            println!("{}", report.summary());
            if !report.passed() {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    }
}
