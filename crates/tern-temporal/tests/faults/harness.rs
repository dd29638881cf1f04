//! The harness: a dev server, the scripted model server, two worker processes, rounds of
//! concurrent sessions with kills among them, and the checks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tern_ai::{Message, Model};
use tern_temporal::{SessionHandle, SessionInput, Sessions, ToolSpec};

use crate::server::Server;
use crate::support::{self, dev_server::DevServer};
use crate::worker::UNROUTED;

const QUEUE: &str = "faults";
/// How long a tool call takes: long enough for a kill to land inside it.
const TOOL_MS: u64 = 1200;
/// Between two chunks of a model answer (an answer is about ten chunks).
const CHUNK_DELAY: Duration = Duration::from_millis(120);
/// The least time between two kills, so the restarted worker takes work again.
const KILL_GAP: Duration = Duration::from_millis(1500);
/// How long to wait for a moment of the wanted kind before trying the next kind.
const MOMENT_PATIENCE: Duration = Duration::from_secs(12);
/// A worker is between turns this long after its last step ended, with nothing in flight.
const BETWEEN_FROM: Duration = Duration::from_millis(60);
const BETWEEN_TO: Duration = Duration::from_millis(400);
const SETTLE: Duration = Duration::from_secs(180);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Moment {
    MidStream,
    MidTool,
    BetweenTurns,
}

const MOMENTS: [Moment; 3] = [Moment::MidStream, Moment::MidTool, Moment::BetweenTurns];

struct Worker {
    slot: usize,
    life: u32,
    child: Child,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Pool {
    address: String,
    dir: PathBuf,
    workers: Vec<Worker>,
}

impl Pool {
    fn spawn(&self, slot: usize, life: u32) -> Result<Worker, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
        let child = Command::new(exe)
            .arg("worker")
            .args([&self.address, QUEUE, &slot.to_string(), &life.to_string()])
            .arg(&self.dir)
            .arg(TOOL_MS.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawn worker {slot}: {e}"))?;
        Ok(Worker { slot, life, child })
    }

    /// SIGKILLs the worker in `slot` and starts its next life.
    fn kill_and_restart(&mut self, slot: usize) -> Result<(), String> {
        let i = self
            .workers
            .iter()
            .position(|w| w.slot == slot)
            .ok_or("no such worker")?;
        let mut dead = self.workers.remove(i);
        dead.child.kill().map_err(|e| format!("SIGKILL: {e}"))?;
        let _ = dead.child.wait();
        let next = self.spawn(slot, dead.life + 1)?;
        self.workers.push(next);
        Ok(())
    }

    fn live(&self) -> Vec<(usize, u32)> {
        self.workers.iter().map(|w| (w.slot, w.life)).collect()
    }
}

fn model(origin: &str, point: usize) -> Model {
    let mut m = Model::new(
        "crash-model",
        "openai-completions",
        "crash",
        &format!("{origin}/p/{point}{UNROUTED}v1"),
    );
    m.input = vec!["text".into()];
    m.context_window = 128_000;
    m.max_tokens = 1024;
    m
}

fn tool_specs() -> Vec<ToolSpec> {
    ["tally", "stamp"]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.into(),
            description: "Counts one effect.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"what": {"type": "string"}}}),
            constrained_sampling: None,
            execution_mode: None,
            replay: if name == "tally" {
                tern_agent::Replay::Safe
            } else {
                tern_agent::Replay::Never
            },
        })
        .collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Tool calls running now, by worker: a `start` without its `end`.
fn running_tools(dir: &Path) -> PerWorker {
    let mut open: HashMap<(usize, u32, String), i64> = HashMap::new();
    for l in lines(&dir.join("progress")) {
        let p: Vec<&str> = l.split(' ').collect();
        let [slot, life, what, session, id] = p.as_slice() else {
            continue;
        };
        let (Ok(slot), Ok(life)) = (slot.parse(), life.parse()) else {
            continue;
        };
        let key = (slot, life, format!("{session} {id}"));
        *open.entry(key).or_default() += if *what == "start" { 1 } else { -1 };
    }
    let mut by_worker = HashMap::new();
    for ((slot, life, _), n) in open {
        if n > 0 {
            *by_worker.entry((slot, life)).or_default() += 1;
        }
    }
    by_worker
}

/// A count per worker (slot, life).
type PerWorker = HashMap<(usize, u32), usize>;

/// Streams in progress (some chunks written, not all), and completed answers, by worker.
fn streams(server: &Server, points: &[usize]) -> (PerWorker, PerWorker) {
    let mut open = HashMap::new();
    let mut done = HashMap::new();
    for &p in points {
        for r in server.log(p) {
            if r.done {
                *done.entry((r.agent, r.life)).or_default() += 1;
            } else if r.chunks > 0 {
                *open.entry((r.agent, r.life)).or_default() += 1;
            }
        }
    }
    (open, done)
}

/// Every session has its last scripted answer (request 3).
fn round_answered(server: &Server, points: &[usize]) -> bool {
    points
        .iter()
        .all(|&p| server.log(p).iter().any(|r| r.n >= 3 && r.done))
}

struct Kills {
    by_moment: BTreeMap<Moment, usize>,
    /// Requests a killed worker had been answered in full without the session having sent
    /// its next request: their result may not have reached the workflow (activities are
    /// at least once), so they may be sent again. Any other completed request sent again
    /// is a failure.
    /// Keyed by session, request and the worker's slot and life.
    unreported: HashSet<(usize, usize, usize, u32)>,
    last: Option<Instant>,
    last_slot: usize,
}

/// Waits for a moment of kind `want` on a live worker and kills that worker; `false` when
/// none came (or the round's work ended first).
fn kill_at(
    pool: &mut Pool,
    server: &Server,
    points: &[usize],
    want: Moment,
    kills: &mut Kills,
) -> Result<bool, String> {
    if let Some(last) = kills.last {
        std::thread::sleep(KILL_GAP.saturating_sub(last.elapsed()));
    }
    let deadline = Instant::now() + MOMENT_PATIENCE;
    let mut last_done = streams(server, points).1;
    let mut step_at: HashMap<(usize, u32), Instant> = HashMap::new();
    let mut prev_tools = running_tools(&pool.dir);
    while Instant::now() < deadline && !round_answered(server, points) {
        let (open, done) = streams(server, points);
        let tools = running_tools(&pool.dir);
        // A worker whose answer or tool call just completed is between turns of that
        // session until its next activity starts.
        for w in pool.live() {
            let fewer_tools =
                prev_tools.get(&w).copied().unwrap_or(0) > tools.get(&w).copied().unwrap_or(0);
            let more_done =
                done.get(&w).copied().unwrap_or(0) > last_done.get(&w).copied().unwrap_or(0);
            if fewer_tools || more_done {
                step_at.insert(w, Instant::now());
            }
        }
        last_done = done;
        prev_tools = tools.clone();
        let mut live = pool.live();
        // Alternate: try the slot not killed last first.
        live.sort_by_key(|(slot, _)| *slot == kills.last_slot);
        let pick = live.into_iter().find(|w| {
            let streaming = open.get(w).copied().unwrap_or(0) > 0;
            let tooling = tools.get(w).copied().unwrap_or(0) > 0;
            match want {
                Moment::MidStream => streaming,
                Moment::MidTool => tooling,
                Moment::BetweenTurns => {
                    !streaming
                        && !tooling
                        && step_at.get(w).is_some_and(|t| {
                            // Not at once: the worker first reports the activity's result
                            // (a kill before that repeats the activity, as Temporal's
                            // activities are at least once).
                            (BETWEEN_FROM..BETWEEN_TO).contains(&t.elapsed())
                        })
                }
            }
        });
        if let Some((slot, life)) = pick {
            pool.kill_and_restart(slot)?;
            // After the kill, and after the server's next write (which a dead peer's socket
            // may still take), so that an answer it finished that way counts too.
            std::thread::sleep(CHUNK_DELAY * 3);
            for &p in points {
                let log = server.log(p);
                for r in &log {
                    let next_sent = log.iter().any(|later| later.n > r.n);
                    if r.done && (r.agent, r.life) == (slot, life) && !next_sent {
                        kills.unreported.insert((p, r.n, slot, life));
                    }
                }
            }
            *kills.by_moment.entry(want).or_default() += 1;
            kills.last = Some(Instant::now());
            kills.last_slot = slot;
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(false)
}

struct Started {
    point: usize,
    handle: SessionHandle,
    steer: tokio::task::JoinHandle<bool>,
}

fn steer_text(point: usize) -> String {
    format!("Steer {point}: count carefully.")
}

async fn start_round(
    sessions: &Sessions,
    origin: &str,
    points: &[usize],
) -> Result<Vec<Started>, String> {
    let mut started = Vec::new();
    for &point in points {
        let input = SessionInput {
            model: model(origin, point),
            tools: tool_specs(),
            ..SessionInput::default()
        };
        let id = format!("faults-{point}");
        let handle = sessions
            .start(&id, input)
            .await
            .map_err(|e| e.to_string())?;
        handle
            .prompt(vec![Message::user_text(server_prompt())])
            .await
            .map_err(|e| e.to_string())?;
        let steerer = sessions.attach(&id);
        // Accepted = the update returned: it is then in the transcript, once.
        let steer = tokio::spawn(async move {
            steerer
                .steer(vec![Message::user_text(steer_text(point))])
                .await
                .is_ok()
        });
        started.push(Started {
            point,
            handle,
            steer,
        });
    }
    Ok(started)
}

fn server_prompt() -> &'static str {
    "Count everything once."
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    }
}

/// What the kills did to the sessions checked (so a run shows they landed).
#[derive(Default)]
struct Effects {
    /// Model requests cut mid-answer (and sent again).
    cut_requests: usize,
    /// `stamp` calls whose outcome was reported unknown.
    unknown_stamps: usize,
    /// `tally` calls that ran more than once.
    repeated_tallies: usize,
    /// Requests answered in full to a worker killed before it reported them, sent again.
    unreported_repeats: usize,
}

/// Checks one finished session; the errors found.
fn check(
    unreported: &HashSet<(usize, usize, usize, u32)>,
    point: usize,
    messages: &[Value],
    steered: bool,
    server: &Server,
    dir: &Path,
    seen: &mut Effects,
) -> Vec<String> {
    let mut errors = Vec::new();
    let session = format!("faults-{point}");
    // The run finished with the script's last answer.
    match messages.last() {
        Some(m) if m["role"] == "assistant" && m["stopReason"] == "stop" => {}
        other => errors.push(format!("{session}: the run did not finish: {other:?}")),
    }
    // No completed request was sent again; every request of the script completed once.
    let log = server.log(point);
    let mut done: BTreeMap<usize, usize> = BTreeMap::new();
    for r in &log {
        if r.done {
            *done.entry(r.n).or_default() += 1;
        }
    }
    for n in 0..=3 {
        let times = done.get(&n).copied().unwrap_or(0);
        // Each answer a killed worker got in full but may not have reported may be sent
        // once more.
        let unreported = unreported
            .iter()
            .filter(|(p, m, _, _)| (*p, *m) == (point, n))
            .count();
        match times {
            1 => {}
            t if t > 1 && t <= 1 + unreported => seen.unreported_repeats += t - 1,
            _ => errors.push(format!(
                "{session}: request {n} completed {times} times (answered in full to a \
                 killed worker before its next request: {unreported} times); all: {done:?}"
            )),
        }
    }
    seen.cut_requests += log.iter().filter(|r| !r.done).count();
    // Tool calls: one result each; `stamp` (never) took effect at most once, and exactly
    // once when its result says it counted; `tally` (safe) always ends counted.
    let effects = lines(&dir.join("effects"));
    let calls: Vec<(String, String)> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| {
            (
                b["id"].as_str().unwrap_or_default().to_string(),
                b["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for (id, name) in &calls {
        let results: Vec<&Value> = messages
            .iter()
            .filter(|m| m["role"] == "toolResult" && m["toolCallId"] == id.as_str())
            .collect();
        if results.len() != 1 {
            errors.push(format!("{session}: {id} has {} results", results.len()));
            continue;
        }
        let text = text_of(results[0]);
        let times = effects
            .iter()
            .filter(|l| l.starts_with(&format!("{name} {session} {id} ")))
            .count();
        let counted = text == format!("{name}: {id} counted");
        seen.unknown_stamps += usize::from(name == "stamp" && !counted);
        seen.repeated_tallies += usize::from(name == "tally" && times > 1);
        match name.as_str() {
            "stamp" if times > 1 => errors.push(format!(
                "{session}: never-replayed {id} took effect {times} times"
            )),
            "stamp" if counted && times != 1 => errors.push(format!(
                "{session}: {id} counted but took effect {times} times"
            )),
            "stamp" if !counted && !text.contains("unknown") => {
                errors.push(format!("{session}: {id} ended with {text:?}"))
            }
            "tally" if !counted || times == 0 => errors.push(format!(
                "{session}: safe {id} ended with {text:?} ({times} effects)"
            )),
            _ => {}
        }
    }
    // The steer: delivered exactly once when accepted, at most once otherwise.
    let steers = messages
        .iter()
        .filter(|m| m["role"] == "user" && text_of(m) == steer_text(point))
        .count();
    if (steered && steers != 1) || steers > 1 {
        errors.push(format!(
            "{session}: steer (accepted: {steered}) delivered {steers} times"
        ));
    }
    errors
}

pub fn main() -> ExitCode {
    let target = env_usize("FAULTS_KILLS", 3);
    let per_round = env_usize("FAULTS_SESSIONS", 4);
    let rt = match crate::tokio_runtime("faults") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let began = Instant::now();
    let per_round_kills = env_usize("FAULTS_ROUND_KILLS", 6);
    match rt.block_on(run(target, per_round, per_round_kills)) {
        Ok((passed, failed, kills, seen)) => {
            let by: Vec<String> = kills
                .by_moment
                .iter()
                .map(|(m, n)| format!("{n} {m:?}"))
                .collect();
            let total: usize = kills.by_moment.values().sum();
            println!(
                "faults: {total} kills ({}), {} s",
                by.join(", "),
                began.elapsed().as_secs()
            );
            println!(
                "faults: {} model requests cut mid-answer and sent again, {} answered in full \
                 to a worker killed before it reported them and sent again, {} `never` calls \
                 with an unknown outcome, {} `safe` calls run again",
                seen.cut_requests,
                seen.unreported_repeats,
                seen.unknown_stamps,
                seen.repeated_tallies
            );
            println!("{passed} passed, {} failed", failed.len());
            for f in &failed {
                println!("  {f}");
            }
            if failed.is_empty() && total >= target {
                ExitCode::SUCCESS
            } else {
                if total < target {
                    println!("only {total} of {target} kills landed");
                }
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            println!("faults: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    target: usize,
    per_round: usize,
    per_round_kills: usize,
) -> Result<(usize, Vec<String>, Kills, Effects), String> {
    let temporal = DevServer::start();
    let server = Server::start(CHUNK_DELAY);
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let sessions = support::sessions(&temporal.address, QUEUE).await;
    let mut pool = Pool {
        address: temporal.address.clone(),
        dir: dir.path().to_path_buf(),
        workers: Vec::new(),
    };
    for slot in 0..2 {
        let w = pool.spawn(slot, 0)?;
        pool.workers.push(w);
    }
    let mut kills = Kills {
        by_moment: BTreeMap::new(),
        unreported: HashSet::new(),
        last: None,
        last_slot: 1,
    };
    let (mut passed, mut failed) = (0, Vec::new());
    let mut seen = Effects::default();
    let mut next_point = 0;
    let mut moment = 0;
    let mut rounds_without_kill = 0;
    while kills.by_moment.values().sum::<usize>() < target && rounds_without_kill < 2 {
        let points: Vec<usize> = (next_point..next_point + per_round).collect();
        next_point += per_round;
        let started = start_round(&sessions, &server.origin, &points).await?;
        // Kills while the round runs (the pool and server are read from this thread).
        let (p, s, ks) = (points.clone(), &server, &mut kills);
        let mut landed = 0;
        let mut tries = 0;
        // A few kills per round: more would keep hitting the round's last session (each
        // kill delays what it hits by a failover) instead of spreading over sessions.
        let wanted = (target - ks.by_moment.values().sum::<usize>()).min(per_round_kills);
        tokio::task::block_in_place(|| -> Result<(), String> {
            while landed < wanted && !round_answered(s, &p) && tries < 3 * wanted + 3 {
                let want = MOMENTS[moment % MOMENTS.len()];
                moment += 1;
                tries += 1;
                if kill_at(&mut pool, s, &p, want, ks)? {
                    landed += 1;
                }
            }
            Ok(())
        })?;
        rounds_without_kill = if landed == 0 {
            rounds_without_kill + 1
        } else {
            0
        };
        for st in started {
            let settled = tokio::time::timeout(SETTLE, st.handle.wait_idle(0)).await;
            let messages = match settled {
                Ok(Ok(_)) => tokio::time::timeout(SETTLE, st.handle.close()).await,
                Ok(Err(e)) => {
                    failed.push(format!("faults-{}: {e}", st.point));
                    continue;
                }
                Err(_) => {
                    failed.push(format!("faults-{}: not idle within {SETTLE:?}", st.point));
                    continue;
                }
            };
            let messages: Vec<Value> = match messages {
                Ok(Ok(out)) => out
                    .messages
                    .iter()
                    .filter_map(|m| serde_json::to_value(m).ok())
                    .collect(),
                Ok(Err(e)) => {
                    failed.push(format!("faults-{}: {e}", st.point));
                    continue;
                }
                Err(_) => {
                    failed.push(format!("faults-{}: not closed within {SETTLE:?}", st.point));
                    continue;
                }
            };
            let steered = st.steer.await.unwrap_or(false);
            let errors = check(
                &kills.unreported,
                st.point,
                &messages,
                steered,
                &server,
                &pool.dir,
                &mut seen,
            );
            if errors.is_empty() {
                passed += 1;
            } else {
                failed.extend(errors);
            }
        }
    }
    Ok((passed, failed, kills, seen))
}
