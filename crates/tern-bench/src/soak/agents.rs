//! The soak's agents: each runs prompts in a loop against the server and tallies how
//! every prompt ended.

use super::server::*;
use super::*;
use crate::fixtures::bench_model_at;
use crate::util::{heap_in_use_bytes, mib, rss_bytes};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_agent::{Agent, RunEnding};
use tern_ai::providers::Providers;
use tern_ai::{Message, StreamOptions};

// ---------------------------------------------------------------------------------------
// The agents

#[derive(Default)]
pub(super) struct Tally {
    started: AtomicU64,
    completed: AtomicU64,
    aborted: AtomicU64,
    lost: AtomicU64,
    lost_answers: AtomicU64,
    mismatched: AtomicU64,
    cut_by_idle: AtomicU64,
    recover_runs: AtomicU64,
    recover_ok: AtomicU64,
    tool_checks: AtomicU64,
    tool_ok: AtomicU64,
    failed: Mutex<HashMap<&'static str, u64>>,
    problems: Mutex<Vec<String>>,
    hangs: Mutex<Vec<String>>,
    tool_problems: Mutex<Vec<String>>,
    /// When the runtime was last seen stalled (a 100 ms sleep late by a second or more).
    last_stall: Mutex<Option<Instant>>,
    max_lag_ms: AtomicU64,
    stalls: AtomicU64,
}

impl Tally {
    fn problem(&self, p: String) {
        let mut v = self.problems.lock();
        if v.len() < 20 {
            v.push(p);
        }
    }

    fn tool_problem(&self, p: String) {
        let mut v = self.tool_problems.lock();
        if v.len() < 5 {
            v.push(p);
        }
    }

    fn hang(&self, p: String) {
        let mut v = self.hangs.lock();
        if v.len() < 20 {
            v.push(p);
        }
    }
}

/// The cause of a failed prompt, from its error message.
pub(super) fn cause(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("idle timeout") {
        "idle_timeout"
    } else if m.contains("truncated at") {
        "error_body_capped"
    } else if m.contains("not an event stream") {
        "not_event_stream"
    } else if m.contains("malformed server-sent event") {
        "bad_event"
    } else if m.contains("connection") || m.contains("reset") || m.contains("error decoding") {
        "connection"
    } else if m.contains("429") || m.contains("rate limit") {
        "429"
    } else if m.contains("500")
        || m.contains("502")
        || m.contains("503")
        || m.contains("server had an error")
    {
        "5xx"
    } else {
        "other"
    }
}

/// The causes a fault of `kind` may end a prompt with.
pub(super) fn expected_causes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Reset => &["connection"],
        Kind::StallHead | Kind::StallBody => &["idle_timeout"],
        Kind::Html200 => &["not_event_stream"],
        Kind::Utf8Garbage => &["bad_event"],
        Kind::HugeErrorBody => &["error_body_capped"],
        _ => &[],
    }
}

/// Checks the tool results of a run against the fault each call carried (in its id); not
/// after an abort, which may cut any call.
pub(super) fn check_tools(messages: &[Message], aborted: bool, tally: &Tally) {
    if aborted {
        return;
    }
    for m in messages {
        let Message::ToolResult(t) = m else { continue };
        let Some(kind) = t
            .tool_call_id
            .strip_prefix("call_")
            .and_then(|rest| rest.rsplit_once('_'))
            .and_then(|(name, _)| Kind::from_name(name))
        else {
            continue;
        };
        let text: String = t
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("");
        let ok = match kind {
            Kind::ToolFifo => t.is_error && text.contains("FIFO"),
            Kind::ToolEditCap => t.is_error && text.contains("limit for edit"),
            Kind::ToolBashTimeout => t.is_error && text.contains("timed out"),
            Kind::ToolBashBackground => !t.is_error && text.contains("started"),
            Kind::ToolRead => !t.is_error && text.contains("soak notes"),
            Kind::ToolEdit => !t.is_error,
            Kind::ToolBash => !t.is_error && text.contains("soak"),
            Kind::ToolLs => !t.is_error && text.contains("notes.txt"),
            _ => true,
        };
        tally.tool_checks.fetch_add(1, Ordering::Relaxed);
        if ok {
            tally.tool_ok.fetch_add(1, Ordering::Relaxed);
        } else {
            tally.tool_problem(format!(
                "tool {} (error {}): {}",
                kind.name(),
                t.is_error,
                text.chars().take(300).collect::<String>()
            ));
        }
    }
}

/// Makes the agent's folder: `notes.txt`, `state.txt`, a sparse `big.txt` over the edit cap
/// and a FIFO `pipe`.
pub(super) fn make_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("notes.txt"), "soak notes\nline two\nline three\n")?;
    std::fs::write(dir.join("state.txt"), "state: alpha\n")?;
    let big = std::fs::File::create(dir.join("big.txt"))?;
    big.set_len(2 * EDIT_CAP)?;
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    Ok(())
}

/// The edit cap of the agents' tools.
pub(super) const EDIT_CAP: u64 = 256 * 1024;

pub(super) fn build_agent(model: &Arc<tern_ai::Model>, dir: &Path, p: &SoakParams) -> Agent {
    let config = tern_tools::ToolConfig::new(dir)
        .with_max_edit_bytes(EDIT_CAP)
        .with_bash_timeout(Some(Duration::from_secs(10)));
    Agent::builder(model.clone(), Providers)
        .system_prompt("You are a soak-test agent.")
        .tools([
            tern_tools::read_tool(&config),
            tern_tools::edit_tool(&config),
            tern_tools::bash_tool(&config),
            tern_tools::ls_tool(&config),
        ])
        .stream_options(StreamOptions {
            api_key: Some("soak-key".into()),
            idle_timeout_ms: Some(p.idle_timeout.as_millis() as u64),
            max_retries: Some(3),
            max_retry_delay_ms: Some(5_000),
            ..StreamOptions::default()
        })
        .build()
}

/// How one prompt ended.
pub(super) enum End {
    Completed,
    Failed,
    Aborted,
    Lost,
}

/// Runs one prompt with the deadline, aborting it after `abort_after` when given.
pub(super) async fn run_prompt(
    agent: &Agent,
    id: &str,
    abort_after: Option<Duration>,
    server: &SoakServer,
    tally: &Tally,
    p: &SoakParams,
) -> End {
    tally.started.fetch_add(1, Ordering::Relaxed);
    let t0 = Instant::now();
    let fut = agent.prompt(id);
    tokio::pin!(fut);
    let mut abort_sent = false;
    let result = loop {
        let abort_at = abort_after.filter(|_| !abort_sent);
        tokio::select! {
            r = &mut fut => break Some(r),
            _ = tokio::time::sleep(abort_at.unwrap_or(Duration::ZERO)), if abort_at.is_some() => {
                agent.abort();
                abort_sent = true;
                server.count(Kind::Abort);
            }
            _ = tokio::time::sleep(p.deadline.saturating_sub(t0.elapsed())) => break None,
        }
    };
    let served = server.take_served(id);
    let Some(result) = result else {
        tally.lost.fetch_add(1, Ordering::Relaxed);
        let st = agent.state();
        agent.abort();
        let after_abort = tokio::time::timeout(Duration::from_secs(10), &mut fut)
            .await
            .map(|r| match r {
                Ok(o) => format!("{:?}", o.ending),
                Err(e) => e.to_string(),
            });
        tally.hang(format!(
            "prompt {id:?} did not end in {:?}: last served {:?}, streaming {}, pending tools {:?}, {} messages; after an abort: {}",
            p.deadline,
            served,
            st.is_streaming,
            st.pending_tool_calls,
            st.messages.len(),
            after_abort.unwrap_or_else(|_| "still running 10 s later".into())
        ));
        return End::Lost;
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            tally.mismatched.fetch_add(1, Ordering::Relaxed);
            tally.problem(format!("prompt {id:?} refused: {e}"));
            return End::Failed;
        }
    };
    check_tools(&outcome.messages, abort_sent, tally);
    match &outcome.ending {
        RunEnding::Completed => {
            let text = outcome.final_text().unwrap_or_default();
            if text == answer_for(id) {
                tally.completed.fetch_add(1, Ordering::Relaxed);
                End::Completed
            } else {
                tally.lost_answers.fetch_add(1, Ordering::Relaxed);
                tally.problem(format!("prompt {id:?} completed with {text:?}"));
                End::Failed
            }
        }
        RunEnding::Aborted if abort_sent => {
            tally.aborted.fetch_add(1, Ordering::Relaxed);
            End::Aborted
        }
        RunEnding::Failed(msg) => {
            let c = cause(msg);
            *tally.failed.lock().entry(c).or_insert(0) += 1;
            if p.verbose {
                eprintln!(
                    "{id}: failed ({c}) after {:?}: {}",
                    served,
                    msg.chars().take(200).collect::<String>()
                );
            }
            match served {
                // An abort can land anywhere; whatever it cut is not checked.
                _ if abort_sent => {}
                Some((k, _)) if k.fails_prompt() => {
                    if !expected_causes(k).contains(&c) {
                        tally.mismatched.fetch_add(1, Ordering::Relaxed);
                        tally.problem(format!(
                            "prompt {id:?}: {} ended with cause {c}: {}",
                            k.name(),
                            msg.chars().take(300).collect::<String>()
                        ));
                    }
                    if k == Kind::HugeErrorBody && msg.len() > ERROR_BODY_CAP + 1024 {
                        tally.mismatched.fetch_add(1, Ordering::Relaxed);
                        tally.problem(format!("prompt {id:?}: error of {} bytes", msg.len()));
                    }
                }
                // A reply still being written when the idle timeout fired (a pause of the
                // server, or a starved process), or written while the runtime itself stood
                // still for a second or more during the prompt (its tasks, the connection's
                // among them, did not run): a timeout, not a lost answer.
                Some((k, done))
                    if c == "idle_timeout"
                        && (!done || tally.last_stall.lock().is_some_and(|t| t >= t0)) =>
                {
                    if tally.cut_by_idle.fetch_add(1, Ordering::Relaxed) < 3 {
                        tally.problem(format!(
                            "prompt {id:?}: {} cut by the idle timeout while being written",
                            k.name()
                        ));
                    }
                }
                other => {
                    tally.lost_answers.fetch_add(1, Ordering::Relaxed);
                    tally.problem(format!(
                        "prompt {id:?} failed after {:?} was served: {}",
                        other.map(|(k, done)| format!(
                            "{}{}",
                            k.name(),
                            if done { "" } else { " (partly)" }
                        )),
                        msg.chars().take(300).collect::<String>()
                    ));
                }
            }
            End::Failed
        }
        other => {
            tally.mismatched.fetch_add(1, Ordering::Relaxed);
            tally.problem(format!(
                "prompt {id:?} ended {other:?} (abort sent: {abort_sent}, served {:?})",
                served.map(|(k, _)| k.name())
            ));
            End::Failed
        }
    }
}

pub(super) async fn agent_loop(
    i: usize,
    dir: PathBuf,
    model: Arc<tern_ai::Model>,
    server: Arc<SoakServer>,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    p: SoakParams,
) {
    let mut rng = SplitMix64::new(p.seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut agent = build_agent(&model, &dir, &p);
    // Spread the starts over the first ten seconds (or the pause, when shorter).
    let spread = p.max_pause.min(Duration::from_secs(10)).as_millis() as u64;
    tokio::time::sleep(Duration::from_millis(rng.below(spread + 1))).await;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let id = format!("p {i} {n}");
        let abort_after = rng.chance(p.abort_share).then(|| {
            // Mostly early (in the stream, a retry wait, a tool), sometimes late.
            let upper = 1 + rng.below(800);
            Duration::from_millis(rng.below(upper))
        });
        let end = run_prompt(&agent, &id, abort_after, &server, &tally, &p).await;
        if let End::Lost = end {
            agent.abort();
            if tokio::time::timeout(Duration::from_secs(10), agent.wait_for_idle())
                .await
                .is_err()
            {
                tally.problem(format!(
                    "agent {i} still busy 10 s after the abort: replaced"
                ));
                agent = build_agent(&model, &dir, &p);
            }
        }
        if matches!(end, End::Failed | End::Aborted | End::Lost) {
            // The agent must still work: a plain prompt the server always answers.
            let check = format!("check {i} {n}");
            tally.recover_runs.fetch_add(1, Ordering::Relaxed);
            if let End::Completed = run_prompt(&agent, &check, None, &server, &tally, &p).await {
                tally.recover_ok.fetch_add(1, Ordering::Relaxed);
            } else {
                tally.problem(format!(
                    "agent {i}: the prompt after a failure did not complete"
                ));
            }
        }
        // Bounded transcripts: a fresh conversation for each prompt (the check after a
        // failure still runs on the failed transcript).
        let _ = agent.reset();
        let pause = rng.below(p.max_pause.as_millis() as u64 + 1);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// Runs the soak on a new runtime and returns what it counted.
pub fn run(p: &SoakParams) -> Result<SoakReport, String> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if p.threads > 0 {
        b.worker_threads(p.threads);
    }
    let rt = b.enable_all().build().map_err(|e| e.to_string())?;
    let root = std::env::temp_dir().join(format!("tern-soak-{}", std::process::id()));
    let out = rt.block_on(run_async(p, &root));
    drop(rt);
    let _ = std::fs::remove_dir_all(&root);
    out
}

pub(super) async fn run_async(p: &SoakParams, root: &Path) -> Result<SoakReport, String> {
    let wall = Instant::now();
    for i in 0..p.agents {
        make_dir(&agent_dir(root, i)).map_err(|e| format!("agent folder {i}: {e}"))?;
    }
    let server = Arc::new(
        SoakServer::start(root, p.seed, &p.skip)
            .await
            .map_err(|e| format!("server: {e}"))?,
    );
    let model = Arc::new(bench_model_at(&server.base_url));
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::with_capacity(p.agents);
    for i in 0..p.agents {
        handles.push(tokio::spawn(agent_loop(
            i,
            agent_dir(root, i),
            model.clone(),
            server.clone(),
            tally.clone(),
            stop.clone(),
            p.clone(),
        )));
    }
    // How late a 100 ms sleep wakes up: the runtime's own stalls (a busy machine).
    let lag_tally = tally.clone();
    let lag_stop = stop.clone();
    let lag = tokio::spawn(async move {
        while !lag_stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            tokio::time::sleep(Duration::from_millis(100)).await;
            let late = t.elapsed().saturating_sub(Duration::from_millis(100));
            lag_tally
                .max_lag_ms
                .fetch_max(late.as_millis() as u64, Ordering::Relaxed);
            if late >= Duration::from_secs(1) {
                lag_tally.stalls.fetch_add(1, Ordering::Relaxed);
                *lag_tally.last_stall.lock() = Some(Instant::now());
            }
        }
    });
    let seconds = p.duration.as_secs().max(1);
    let mut rss = Vec::with_capacity(seconds as usize);
    let mut heap = Vec::with_capacity(seconds as usize);
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for s in 1..=seconds {
        tick.tick().await;
        rss.push(rss_bytes());
        heap.push(heap_in_use_bytes().unwrap_or(0));
        if p.report_every > 0 && s % p.report_every == 0 {
            eprintln!(
                "t={s:>4}s rss={:.1}MiB heap={:.1}MiB fds={} prompts={} completed={} aborted={} lost={} requests={}",
                mib(rss_bytes()),
                mib(heap.last().copied().unwrap_or(0)),
                std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
                tally.started.load(Ordering::Relaxed),
                tally.completed.load(Ordering::Relaxed),
                tally.aborted.load(Ordering::Relaxed),
                tally.lost.load(Ordering::Relaxed),
                server.state.requests.load(Ordering::Relaxed),
            );
        }
    }
    let rss_end = rss.last().copied().unwrap_or_else(rss_bytes);
    stop.store(true, Ordering::Relaxed);
    // Every agent finishes its prompt (each bounded by the deadline, twice with the check).
    for h in handles {
        if let Err(e) = h.await {
            tally.problem(format!("agent task failed: {e}"));
            tally.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = lag.await;
    let base_second = if seconds >= 120 {
        60
    } else {
        (seconds as usize / 6).max(1)
    };
    let rss_base = rss.get(base_second - 1).copied().unwrap_or(0);
    let rss_max_after_base = rss
        .iter()
        .skip(base_second)
        .copied()
        .max()
        .unwrap_or(rss_base);
    let mut failed: Vec<(String, u64)> = tally
        .failed
        .lock()
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    failed.sort();
    let mut problems = tally.hangs.lock().clone();
    problems.extend(tally.problems.lock().iter().cloned());
    problems.extend(tally.tool_problems.lock().iter().cloned());
    Ok(SoakReport {
        agents: p.agents,
        seconds,
        started: tally.started.load(Ordering::Relaxed),
        completed: tally.completed.load(Ordering::Relaxed),
        failed,
        aborted: tally.aborted.load(Ordering::Relaxed),
        lost: tally.lost.load(Ordering::Relaxed),
        lost_answers: tally.lost_answers.load(Ordering::Relaxed),
        mismatched: tally.mismatched.load(Ordering::Relaxed),
        cut_by_idle: tally.cut_by_idle.load(Ordering::Relaxed),
        max_lag_ms: tally.max_lag_ms.load(Ordering::Relaxed),
        stalls: tally.stalls.load(Ordering::Relaxed),
        problems,
        recoveries: (
            tally.recover_runs.load(Ordering::Relaxed),
            tally.recover_ok.load(Ordering::Relaxed),
        ),
        requests: server.state.requests.load(Ordering::Relaxed),
        injected: server.injected(),
        tool_checks: (
            tally.tool_checks.load(Ordering::Relaxed),
            tally.tool_ok.load(Ordering::Relaxed),
        ),
        heap_base: heap.get(base_second - 1).copied().unwrap_or(0),
        heap_end: heap.last().copied().unwrap_or(0),
        rss,
        rss_base,
        base_second,
        rss_max_after_base,
        rss_end,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}
