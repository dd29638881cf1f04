//! `tern-bench <w1|w2|w3|w4|w5|w6|w8> [--name value ...]`: runs one workload and prints one
//! JSON line with the Node reference's field names (see WORKLOADS.md; W8, journaled runs, is
//! tern's own). `tern-bench all` runs W1–W6.

use std::path::PathBuf;

use serde_json::Value;
use tern_bench::util::Args;
use tern_bench::w8::*;
use tern_bench::workloads::*;

fn run(which: &str, a: &Args) -> Result<Value, String> {
    match which {
        "w1" => {
            let d = W1Params::default();
            w1(&W1Params {
                turns: a.int("turns", d.turns),
                warmup: a.int("warmup", d.warmup),
                reps: a.int("reps", d.reps),
                async_listener: a.int("async_listener", 1) != 0,
                telemetry: a.int("telemetry", 1) != 0,
            })
        }
        "w2" => {
            let d = W2Params::default();
            w2(&W2Params {
                deltas: a.int("deltas", d.deltas),
                warmup: a.int("warmup", d.warmup),
                reps: a.int("reps", d.reps),
            })
        }
        "w3" => {
            let d = W3Params::default();
            w3(&W3Params {
                tools: a.int("tools", d.tools),
                sleep_ms: a.int("sleep", d.sleep_ms as usize) as u64,
                warmup: a.int("warmup", d.warmup),
                reps: a.int("reps", d.reps),
            })
        }
        "w4" => {
            let d = W4Params::default();
            let p = W4Params {
                agents: a.int("agents", d.agents),
                turns: a.int("turns", d.turns),
                threads: a.int("threads", 0),
            };
            let mut out = w4(&p)?;
            // Multi-thread figures come from a fresh process (peak RSS is per process).
            let mt = a.int("mt_threads", 2);
            if a.str("threads").is_none() && mt > 0 {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let child = std::process::Command::new(exe)
                    .args(["w4", "--agents", &p.agents.to_string()])
                    .args([
                        "--turns",
                        &p.turns.to_string(),
                        "--threads",
                        &mt.to_string(),
                    ])
                    .output()
                    .map_err(|e| e.to_string())?;
                if !child.status.success() {
                    return Err(String::from_utf8_lossy(&child.stderr).into_owned());
                }
                let v: Value = serde_json::from_slice(&child.stdout).map_err(|e| e.to_string())?;
                for k in [
                    "threads",
                    "run_wall_ms",
                    "construct_ms",
                    "us_per_agent_turn",
                    "peak_rss_per_agent_kb",
                    "retained_rss_per_agent_kb_after_gc",
                ] {
                    out[format!("mt_{k}")] = v[k].clone();
                }
            }
            Ok(out)
        }
        "w5" => w5(&W5Params {
            agents: a.int("agents", W5Params::default().agents),
        }),
        "w6" => {
            let d = W6Params::default();
            w6(&W6Params {
                chunks: a.int("chunks", d.chunks),
                warmup: a.int("warmup", d.warmup),
                reps: a.int("reps", d.reps),
                agent_reps: a.int("agent_reps", d.agent_reps),
                server: a.str("server").map(PathBuf::from).unwrap_or(d.server),
                mt_threads: a.int("mt_threads", d.mt_threads),
            })
        }
        "w8" => {
            let d = W8Params::default();
            w8(&W8Params {
                turns: a.int("turns", d.turns),
                fsync_turns: a.int("fsync_turns", d.fsync_turns),
                warmup: a.int("warmup", d.warmup),
                reps: a.int("reps", d.reps),
                fsync_reps: a.int("fsync_reps", d.fsync_reps),
                agents: a.int("agents", d.agents),
                agent_turns: a.int("agent_turns", d.agent_turns),
                agent_reps: a.int("agent_reps", d.agent_reps),
                dir: a.str("dir").map(PathBuf::from).unwrap_or(d.dir),
                count_fsyncs: a.int("count_fsyncs", 1) != 0,
                only: a.str("only").unwrap_or_default(),
            })
        }
        // The child W8 runs under strace to count its fsyncs.
        "w8-fsyncs" => {
            let name = a.str("config").unwrap_or_default();
            let config = Config::parse(&name).ok_or(format!("unknown configuration {name:?}"))?;
            fsync_child(&FsyncChild {
                config,
                turns: a.int("turns", 25),
                agents: a.int("agents", 1),
                dir: a.str("dir").map(PathBuf::from).unwrap_or_else(default_dir),
            })
        }
        "probe" => Ok(tern_bench::probe::probe()),
        other => Err(format!(
            "unknown workload {other:?} (w1..w6, w8, all, probe)"
        )),
    }
}

/// The flags a workload reads. Any other is refused, and so is a number that does not parse:
/// a misspelt flag or value would otherwise run with the default and report the wrong thing.
fn flags(which: &str) -> &'static [&'static str] {
    match which {
        "w1" => &["turns", "warmup", "reps", "async_listener", "telemetry"],
        "w2" => &["deltas", "warmup", "reps"],
        "w3" => &["tools", "sleep", "warmup", "reps"],
        "w4" => &["agents", "turns", "threads", "mt_threads"],
        "w5" => &["agents"],
        "w6" => &[
            "chunks",
            "warmup",
            "reps",
            "agent_reps",
            "server",
            "mt_threads",
        ],
        "w8" => &[
            "turns",
            "fsync_turns",
            "warmup",
            "reps",
            "fsync_reps",
            "agents",
            "agent_turns",
            "agent_reps",
            "dir",
            "count_fsyncs",
            "only",
        ],
        "w8-fsyncs" => &["config", "turns", "agents", "dir"],
        _ => &[],
    }
}

/// The flags whose value is text rather than a count.
const TEXT_FLAGS: &[&str] = &["server", "dir", "only", "config"];

/// Checks the flags of a run of `list` (an `all` run shares them).
fn check_flags(list: &[&str], args: &Args) -> Result<(), String> {
    let known: Vec<&str> = list.iter().flat_map(|w| flags(w).iter().copied()).collect();
    args.check(&known, TEXT_FLAGS)
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let which = argv.next().unwrap_or_else(|| "all".into()).to_lowercase();
    let args = Args::parse(argv);
    let list: Vec<&str> = if which == "all" {
        vec!["w1", "w2", "w3", "w4", "w5", "w6"]
    } else {
        vec![which.as_str()]
    };
    if let Err(e) = check_flags(&list, &args) {
        eprintln!("tern-bench {which}: {e}");
        std::process::exit(2);
    }
    for w in list {
        match run(w, &args) {
            Ok(v) => println!("{v}"),
            Err(e) => {
                eprintln!("{w}: check failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Args {
        Args::parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn a_misspelt_flag_is_refused_with_the_flags_the_run_reads() {
        let e = check_flags(&["w3"], &args(&["--sleep_ms", "1"])).unwrap_err();
        assert!(e.contains("--sleep_ms"), "{e}");
        assert!(e.contains("--sleep"), "{e}");
        assert!(check_flags(&["w3"], &args(&["--sleep", "1", "--tools", "8"])).is_ok());
    }

    #[test]
    fn a_count_that_does_not_parse_is_refused() {
        let e = check_flags(&["w1"], &args(&["--reps", "ten"])).unwrap_err();
        assert!(e.contains("--reps") && e.contains("ten"), "{e}");
        assert!(check_flags(&["w1"], &args(&["--reps", "-1"])).is_err());
        // Text flags take any value.
        assert!(check_flags(&["w6"], &args(&["--server", "/x/w6-server.mjs"])).is_ok());
    }

    #[test]
    fn an_all_run_reads_the_flags_of_every_workload() {
        let list = ["w1", "w2", "w3", "w4", "w5", "w6"];
        assert!(check_flags(&list, &args(&["--deltas", "10", "--tools", "2"])).is_ok());
        assert!(check_flags(&list, &args(&["--fsync_turns", "2"])).is_err());
    }
}
