//! The soak test (not in CI): `tern-soak [--agents N] [--seconds S] [--seed X] [--threads T]
//! [--pause-ms P] [--idle-ms I] [--deadline D] [--skip KIND,...] [--verbose]`
//! runs N agents (default 1,000) in this process for S seconds (default 600) against a local
//! scripted server that injects faults at random, samples RSS each second, prints the
//! figures and exits 1 unless nothing was lost and RSS grew at most 10 % after the first
//! minute. See `tern_bench::soak`.

use std::time::Duration;

use tern_bench::soak::{run, Kind, SoakParams};
use tern_bench::util::Args;

const USAGE: &str = "usage: tern-soak [--agents N] [--seconds S] [--seed X] [--threads T] \
[--pause-ms P] [--idle-ms I] [--deadline D] [--report-every S] [--skip KIND,...] [--verbose]";

const FLAGS: &[&str] = &[
    "agents",
    "seconds",
    "seed",
    "threads",
    "deadline",
    "report-every",
    "verbose",
    "skip",
    "pause-ms",
    "idle-ms",
];

fn main() {
    let args = Args::parse(std::env::args().skip(1));
    if args.str("help").is_some() {
        println!("{USAGE}\nkinds for --skip: {}", kind_names());
        return;
    }
    if let Err(e) = args.check(FLAGS, &["skip", "verbose"]) {
        eprintln!("tern-soak: {e}\n{USAGE}");
        std::process::exit(2);
    }
    let mut skip = Vec::new();
    for name in args
        .str("skip")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
    {
        match Kind::from_name(name) {
            Some(k) => skip.push(k),
            None => {
                eprintln!(
                    "tern-soak: no fault kind {name:?} for --skip; kinds: {}",
                    kind_names()
                );
                std::process::exit(2);
            }
        }
    }
    let d = SoakParams::default();
    let p = SoakParams {
        agents: args.int("agents", d.agents),
        duration: Duration::from_secs(args.int("seconds", d.duration.as_secs() as usize) as u64),
        seed: args.int("seed", d.seed as usize) as u64,
        threads: args.int("threads", d.threads),
        deadline: Duration::from_secs(args.int("deadline", d.deadline.as_secs() as usize) as u64),
        report_every: args.int("report-every", d.report_every as usize) as u64,
        verbose: args.str("verbose").is_some(),
        skip,
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

fn kind_names() -> String {
    Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}
