//! W8 — journaled runs: W1's loop `L(T)` run through [`DurableRun`] on each journal in each
//! durability ({session file, SQLite} × {buffered, fsync}), beside the plain W1 loop in the
//! same process, and 50 agents sharing one SQLite database with fsync.
//!
//! - **Steps** are the records appended, counted from the journal after each run: `L(T)`
//!   makes `4T` (the run's start and finish, an intent and an outcome per model request and
//!   per tool call).
//! - **Overhead** is journaled − plain, paired rep by rep (a plain prompt right before each
//!   journaled one), per turn and per step.
//! - **Fsyncs** are counted, not assumed: the same run is repeated in a child process under
//!   `strace -f`, and the `fsync`/`fdatasync` calls between two markers (an `fsync(-1)`,
//!   which fails at once) are counted. Without `strace` the fsync fields are `null`.
//! - The journal files live in `--dir` (default `target/w8-journals`, beside the binary), on
//!   the repository's disk; the output names that directory's file system, so a tmpfs
//!   (where fsync is free) shows.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde_json::{json, Map, Value};
use tern_agent::{Agent, AgentEvent};
use tern_ai::{Message, StreamFn};
use tern_durable::{Durability, DurableRun, Journal, SessionFileJournal, SqliteJournal};

use crate::fixtures::*;
use crate::util::*;

type Res = Result<Value, String>;

/// Where the journal records go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// pi's session file (`SessionFileJournal`), one file for the whole run of W8.
    SessionFile,
    /// One SQLite database (`SqliteJournal`), one session per prompt.
    Sqlite,
}

/// One journal configuration of W8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The journal.
    pub backend: Backend,
    /// Its durability.
    pub durability: Durability,
}

impl Config {
    /// The four configurations, in the order W8 measures them.
    pub const ALL: [Config; 4] = [
        Config {
            backend: Backend::SessionFile,
            durability: Durability::Buffered,
        },
        Config {
            backend: Backend::Sqlite,
            durability: Durability::Buffered,
        },
        Config {
            backend: Backend::SessionFile,
            durability: Durability::Fsync,
        },
        Config {
            backend: Backend::Sqlite,
            durability: Durability::Fsync,
        },
    ];

    /// The prefix of its JSON fields: `session_buffered`, `sqlite_fsync`, …
    pub fn name(&self) -> &'static str {
        match (self.backend, self.durability) {
            (Backend::SessionFile, Durability::Buffered) => "session_buffered",
            (Backend::SessionFile, Durability::Fsync) => "session_fsync",
            (Backend::Sqlite, Durability::Buffered) => "sqlite_buffered",
            (Backend::Sqlite, Durability::Fsync) => "sqlite_fsync",
        }
    }

    /// The configuration named `name` (see [`name`](Self::name)).
    pub fn parse(name: &str) -> Option<Config> {
        Config::ALL.into_iter().find(|c| c.name() == name)
    }

    fn fsync(&self) -> bool {
        self.durability == Durability::Fsync
    }
}

/// W8 parameters.
#[derive(Clone, Debug)]
pub struct W8Params {
    /// Turns per prompt without fsync (T, as W1).
    pub turns: usize,
    /// Turns per prompt with fsync (fewer, so a run takes seconds).
    pub fsync_turns: usize,
    /// Warm-up prompts per configuration.
    pub warmup: usize,
    /// Measured prompts per configuration without fsync.
    pub reps: usize,
    /// Measured prompts per configuration with fsync.
    pub fsync_reps: usize,
    /// Agents sharing one SQLite database (with fsync).
    pub agents: usize,
    /// Turns per prompt of each of those agents.
    pub agent_turns: usize,
    /// Measured rounds of the many-agent run.
    pub agent_reps: usize,
    /// Where the journal files go (created; emptied before and after).
    pub dir: PathBuf,
    /// Count fsyncs with `strace` in a child process (`false`: the fsync fields are `null`).
    pub count_fsyncs: bool,
    /// Only these parts (configuration names and `many`, comma-separated); empty: all.
    pub only: String,
}

impl W8Params {
    fn runs(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.split(',').any(|p| p.trim() == part)
    }
}

/// `target/w8-journals` when the binary is in `target/<profile>/`, else `./w8-journals`.
pub fn default_dir() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let target = exe
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("w8-journals"),
        None => target
            .unwrap_or_else(|| PathBuf::from("."))
            .join("w8-journals"),
    }
}

impl Default for W8Params {
    fn default() -> Self {
        W8Params {
            turns: 1000,
            fsync_turns: 25,
            warmup: 2,
            reps: 7,
            fsync_reps: 3,
            agents: 50,
            agent_turns: 25,
            agent_reps: 3,
            dir: default_dir(),
            count_fsyncs: true,
            only: String::new(),
        }
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The records `L(T)` appends: the run's start and finish, intent and outcome of each of the
/// `T` model requests and of the `T − 1` tool calls.
pub fn loop_steps(turns: usize) -> usize {
    2 + 2 * turns + 2 * (turns - 1)
}

/// A journal store of one configuration: one session file, or one database.
pub enum Store {
    /// The session file's journal (every prompt appends to it).
    Session(Arc<SessionFileJournal>),
    /// The database; each prompt gets a session of its own.
    Sqlite(SqliteJournal),
}

impl Store {
    /// Opens the store of `config` in `dir` (file `<name>.jsonl` or `<name>.db`).
    pub fn open(config: Config, dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(err)?;
        Ok(match config.backend {
            Backend::SessionFile => {
                let path = dir.join(format!("{}.jsonl", config.name()));
                let _ = std::fs::remove_file(&path);
                Store::Session(Arc::new(SessionFileJournal::create(
                    &path,
                    dir,
                    config.durability,
                )))
            }
            Backend::Sqlite => {
                let path = dir.join(format!("{}.db", config.name()));
                for ext in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
                }
                Store::Sqlite(SqliteJournal::open(&path, config.durability).map_err(err)?)
            }
        })
    }

    /// The journal prompt `key` writes to.
    pub fn journal(&self, key: &str) -> Arc<dyn Journal> {
        match self {
            Store::Session(j) => j.clone(),
            Store::Sqlite(db) => Arc::new(db.session(key)),
        }
    }
}

/// Counts `turn_start` events.
fn turn_counter(agent: &Agent) -> (Arc<AtomicUsize>, tern_agent::Subscription) {
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    let sub = agent.subscribe_sync(move |e| {
        if matches!(e, AgentEvent::TurnStart) {
            n2.fetch_add(1, Ordering::Relaxed);
        }
    });
    (n, sub)
}

fn check_agent(agent: &Agent, turns_seen: usize, t: usize) -> Result<(), String> {
    check(turns_seen == t, || {
        format!("expected {t} turns, got {turns_seen}")
    })?;
    let n = agent.message_count();
    check(n == 2 * t + 1, || {
        format!("transcript length {n}, expected {}", 2 * t + 1)
    })?;
    let text = last_text(agent);
    check(text == "done", || format!("last text {text:?}"))
}

/// One timed prompt: wall and process CPU (all threads, so SQLite's writer is in it).
#[derive(Clone, Copy, Debug)]
struct Timed {
    ms: f64,
    cpu_ms: f64,
}

/// The plain W1 prompt `L(t)`, agent built inside the timed window as the journaled one is.
async fn plain_prompt(t: usize) -> Result<Timed, String> {
    let c0 = cpu_ms();
    let t0 = Instant::now();
    let script: Arc<dyn StreamFn> = Arc::new(LoopScript::new(t));
    let agent = bench_agent(vec![noop_tool()], script);
    let (turns, _sub) = turn_counter(&agent);
    agent
        .prompt_messages(vec![Message::user_text("go")])
        .await
        .map_err(err)?;
    let timed = Timed {
        ms: ms(t0.elapsed()),
        cpu_ms: cpu_ms() - c0,
    };
    check_agent(&agent, turns.load(Ordering::Relaxed), t)?;
    Ok(timed)
}

/// `L(t)` as a durable run on `journal`: started (the prompt journaled), the model and the
/// tool wrapped as steps, input attached, finished.
pub async fn journaled_prompt(journal: Arc<dyn Journal>, t: usize) -> Result<(), String> {
    let prompt = vec![Message::user_text("go")];
    let run = DurableRun::start(journal, &[], &prompt)
        .await
        .map_err(err)?;
    let script: Arc<dyn StreamFn> = Arc::new(LoopScript::new(t));
    let agent = bench_agent(vec![run.tool(noop_tool())], run.model(script));
    let (turns, _sub) = turn_counter(&agent);
    let _inputs = run.attach(&agent);
    agent.prompt_messages(prompt).await.map_err(err)?;
    run.finish(run.end()).await.map_err(err)?;
    check_agent(&agent, turns.load(Ordering::Relaxed), t)
}

/// Records in `journal` now.
fn records(journal: &dyn Journal) -> Result<usize, String> {
    journal.records().map(|r| r.len()).map_err(err)
}

/// `journaled_prompt` timed, with the steps it appended counted from the journal.
async fn timed_journaled(journal: Arc<dyn Journal>, t: usize) -> Result<(Timed, usize), String> {
    let before = records(&*journal)?;
    let c0 = cpu_ms();
    let t0 = Instant::now();
    journaled_prompt(journal.clone(), t).await?;
    let timed = Timed {
        ms: ms(t0.elapsed()),
        cpu_ms: cpu_ms() - c0,
    };
    let steps = records(&*journal)? - before;
    Ok((timed, steps))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The file system `dir` is on: (mount point, type, device), from `/proc/self/mounts`.
pub fn file_system_of(dir: &Path) -> (String, String, String) {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut best = ("?".to_string(), "?".to_string(), "?".to_string());
    let mut best_len = 0;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        // Mount points escape spaces as \040.
        let point = f[1].replace("\\040", " ");
        if dir.starts_with(&point) && point.len() >= best_len {
            best_len = point.len();
            best = (point, f[2].to_string(), f[0].to_string());
        }
    }
    best
}

/// The disk's own price: median µs of a 300-byte append and `fdatasync` on a file in `dir`
/// (20 times), to read the fsync figures against.
pub fn fdatasync_us(dir: &Path) -> Result<f64, String> {
    use std::io::Write;
    let path = dir.join("fdatasync-probe");
    let mut f = std::fs::File::create(&path).map_err(err)?;
    let mut us = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        f.write_all(&[b'x'; 300]).map_err(err)?;
        f.sync_data().map_err(err)?;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
    Ok(median(&us))
}

/// The figures of one configuration.
fn measure(config: Config, p: &W8Params, out: &mut Map<String, Value>) -> Result<(), String> {
    let (t, reps) = if config.fsync() {
        (p.fsync_turns, p.fsync_reps)
    } else {
        (p.turns, p.reps)
    };
    check(reps > 0, || {
        format!("{}: no measured prompts", config.name())
    })?;
    let store = Store::open(config, &p.dir)?;
    let mut plain = Vec::new();
    let mut journaled = Vec::new();
    let mut steps = Vec::new();
    rt().block_on(async {
        for r in 0..p.warmup + reps {
            // Paired: the plain prompt right before the journaled one.
            let a = plain_prompt(t).await?;
            let (b, s) = timed_journaled(store.journal(&format!("prompt-{r}")), t).await?;
            check(s == loop_steps(t), || {
                format!(
                    "{}: {s} records appended, expected {}",
                    config.name(),
                    loop_steps(t)
                )
            })?;
            if r >= p.warmup {
                plain.push(a);
                journaled.push(b);
                steps.push(s);
            }
        }
        Ok::<(), String>(())
    })?;
    let n = config.name();
    let steps_per_prompt = steps[0];
    let plain_ms: Vec<f64> = plain.iter().map(|x| x.ms).collect();
    let jour_ms: Vec<f64> = journaled.iter().map(|x| x.ms).collect();
    let over_ms: Vec<f64> = journaled
        .iter()
        .zip(&plain)
        .map(|(j, p)| j.ms - p.ms)
        .collect();
    let over_cpu: Vec<f64> = journaled
        .iter()
        .zip(&plain)
        .map(|(j, p)| j.cpu_ms - p.cpu_ms)
        .collect();
    let per_turn = |x_ms: f64| x_ms * 1e3 / t as f64;
    let per_step = |x_ms: f64| x_ms * 1e3 / steps_per_prompt as f64;
    let mut put = |k: &str, v: Value| {
        out.insert(format!("{n}_{k}"), v);
    };
    put("turns", json!(t));
    put("reps", json!(reps));
    put("steps_per_prompt", json!(steps_per_prompt));
    put("steps_per_turn", json!(steps_per_prompt as f64 / t as f64));
    put("plain_us_per_turn", json!(per_turn(median(&plain_ms))));
    put("us_per_turn", json!(per_turn(median(&jour_ms))));
    put("us_per_turn_best", json!(per_turn(min(&jour_ms))));
    put("overhead_us_per_turn", json!(per_turn(median(&over_ms))));
    put("overhead_us_per_step", json!(per_step(median(&over_ms))));
    put(
        "overhead_us_per_step_best",
        json!(per_step(min(&jour_ms) - min(&plain_ms))),
    );
    put(
        "overhead_cpu_us_per_step",
        json!(per_step(median(&over_cpu))),
    );
    put(
        "steps_per_s",
        json!(steps_per_prompt as f64 / (median(&jour_ms) / 1e3)),
    );
    put(
        "prompt_ms_all",
        json!(jour_ms.iter().map(|x| round(*x, 3)).collect::<Vec<_>>()),
    );
    drop(store);
    Ok(())
}

/// `agents` prompts of `L(t)` at once on one database, each its own session; returns the
/// wall time and the steps counted from the sessions.
pub async fn many_agents(
    db: &SqliteJournal,
    agents: usize,
    t: usize,
    tag: &str,
) -> Result<(Duration, usize), String> {
    let journals: Vec<Arc<dyn Journal>> = (0..agents)
        .map(|i| Arc::new(db.session(&format!("{tag}-agent-{i}"))) as Arc<dyn Journal>)
        .collect();
    let t0 = Instant::now();
    let results = join_all(journals.iter().map(|j| journaled_prompt(j.clone(), t))).await;
    let wall = t0.elapsed();
    for r in results {
        r?;
    }
    let mut steps = 0;
    for j in &journals {
        let s = records(&**j)?;
        check(s == loop_steps(t), || {
            format!("{}: {s} records, expected {}", j.describe(), loop_steps(t))
        })?;
        steps += s;
    }
    Ok((wall, steps))
}

fn measure_many(p: &W8Params, out: &mut Map<String, Value>) -> Result<(), String> {
    check(p.agent_reps > 0, || "many: no measured rounds".into())?;
    let config = Config::parse("sqlite_fsync").expect("a configuration");
    let path = p.dir.join("sqlite_fsync_many.db");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let db = SqliteJournal::open(&path, config.durability).map_err(err)?;
    let mut rates = Vec::new();
    let mut walls = Vec::new();
    let mut total = 0;
    rt().block_on(async {
        for r in 0..1 + p.agent_reps {
            let (wall, steps) =
                many_agents(&db, p.agents, p.agent_turns, &format!("round-{r}")).await?;
            if r >= 1 {
                rates.push(steps as f64 / wall.as_secs_f64());
                walls.push(ms(wall));
                total = steps;
            }
        }
        Ok::<(), String>(())
    })?;
    out.insert("many_agents".into(), json!(p.agents));
    out.insert("many_turns".into(), json!(p.agent_turns));
    out.insert("many_steps_per_round".into(), json!(total));
    out.insert(
        "many_wall_ms_all".into(),
        json!(walls.iter().map(|x| round(*x, 2)).collect::<Vec<_>>()),
    );
    out.insert("many_steps_per_s".into(), json!(median(&rates)));
    let one = out
        .get("sqlite_fsync_steps_per_s")
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN);
    out.insert(
        "many_vs_one_steps_per_s".into(),
        json!(median(&rates) / one),
    );
    Ok(())
}

/// Parameters of the child process whose fsyncs `strace` counts.
#[derive(Clone, Debug)]
pub struct FsyncChild {
    /// The configuration (`session_buffered`, …, or `sqlite_fsync` with `agents > 1`).
    pub config: Config,
    /// Turns per prompt.
    pub turns: usize,
    /// Prompts at once (SQLite only when > 1).
    pub agents: usize,
    /// Where the files go.
    pub dir: PathBuf,
}

/// The marker `strace` sees: `fsync(-1)` fails at once with `EBADF` and syncs nothing.
fn marker() {
    // SAFETY: fsync on an invalid descriptor only returns EBADF.
    unsafe {
        libc::fsync(-1);
    }
}

/// The child: opens the store, runs one short prompt (the file's header, the tables), then
/// between two markers the measured prompts; prints `{"steps": n}`.
pub fn fsync_child(c: &FsyncChild) -> Res {
    let dir = c
        .dir
        .join(format!("fsync-{}-{}", c.config.name(), c.agents));
    let store = Store::open(c.config, &dir)?;
    let steps = rt().block_on(async {
        journaled_prompt(store.journal("setup"), 2).await?;
        marker();
        let steps = match (&store, c.agents) {
            (Store::Sqlite(db), n) if n > 1 => many_agents(db, n, c.turns, "counted").await?.1,
            _ => {
                let j = store.journal("counted");
                let before = records(&*j)?;
                journaled_prompt(j.clone(), c.turns).await?;
                records(&*j)? - before
            }
        };
        marker();
        Ok::<usize, String>(steps)
    })?;
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({ "steps": steps }))
}

/// Counts the fsync-family calls between the two `fsync(-1)` markers of an `strace -f` log.
pub fn count_fsyncs(log: &str) -> Option<usize> {
    let mut inside = false;
    let mut marks = 0;
    let mut n = 0;
    for line in log.lines() {
        let call = ["fsync(", "fdatasync(", "sync_file_range(", "syncfs("]
            .iter()
            .any(|c| line.contains(c));
        if !call || line.contains("resumed>") {
            continue;
        }
        if line.contains("fsync(-1") {
            marks += 1;
            inside = !inside;
            continue;
        }
        if inside {
            n += 1;
        }
    }
    (marks == 2).then_some(n)
}

/// Runs [`fsync_child`] under `strace -f` and returns (fsyncs, steps).
fn strace_fsyncs(c: &FsyncChild) -> Result<(usize, usize), String> {
    let exe = std::env::current_exe().map_err(err)?;
    let log = c
        .dir
        .join(format!("strace-{}-{}.txt", c.config.name(), c.agents));
    let child = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "signal=none", "-e"])
        .arg("trace=fsync,fdatasync,sync_file_range,syncfs")
        .arg("-o")
        .arg(&log)
        .arg(exe)
        .arg("w8-fsyncs")
        .args(["--config", c.config.name()])
        .args(["--turns", &c.turns.to_string()])
        .args(["--agents", &c.agents.to_string()])
        .arg("--dir")
        .arg(&c.dir)
        .output()
        .map_err(|e| format!("strace: {e}"))?;
    if !child.status.success() {
        return Err(format!(
            "strace child failed: {}",
            String::from_utf8_lossy(&child.stderr)
        ));
    }
    let v: Value = serde_json::from_slice(&child.stdout).map_err(err)?;
    let steps = v["steps"].as_u64().ok_or("no steps from the child")? as usize;
    let text = std::fs::read_to_string(&log).map_err(err)?;
    let _ = std::fs::remove_file(&log);
    let n = count_fsyncs(&text).ok_or("no markers in the strace log")?;
    Ok((n, steps))
}

fn fsync_figures(p: &W8Params, out: &mut Map<String, Value>) {
    let mut runs: Vec<(String, FsyncChild)> = Config::ALL
        .into_iter()
        .map(|config| {
            let turns = if config.fsync() {
                p.fsync_turns
            } else {
                p.turns
            };
            (
                config.name().to_string(),
                FsyncChild {
                    config,
                    turns,
                    agents: 1,
                    dir: p.dir.clone(),
                },
            )
        })
        .collect();
    runs.retain(|(name, _)| p.runs(name));
    if p.runs("many") {
        runs.push((
            "many".into(),
            FsyncChild {
                config: Config::parse("sqlite_fsync").expect("a configuration"),
                turns: p.agent_turns,
                agents: p.agents,
                dir: p.dir.clone(),
            },
        ));
    }
    let mut source = "strace -f, fsync/fdatasync calls between markers".to_string();
    for (name, c) in runs {
        let (count, per_step) = if p.count_fsyncs {
            match strace_fsyncs(&c) {
                Ok((n, steps)) => (json!(n), json!(n as f64 / steps as f64)),
                Err(e) => {
                    source = format!("not counted: {e}");
                    (Value::Null, Value::Null)
                }
            }
        } else {
            source = "not counted (--count_fsyncs 0)".into();
            (Value::Null, Value::Null)
        };
        out.insert(format!("{name}_fsyncs_counted"), count);
        out.insert(format!("{name}_fsyncs_per_step"), per_step);
    }
    out.insert("fsync_count_source".into(), json!(source));
}

/// W8 — journaled runs.
pub fn w8(p: &W8Params) -> Res {
    std::fs::create_dir_all(&p.dir).map_err(err)?;
    let (mount, fs, device) = file_system_of(&p.dir);
    if fs == "tmpfs" || fs == "ramfs" {
        eprintln!(
            "w8: {} is on {fs}: fsync costs nothing there, the fsync figures are not a disk's",
            p.dir.display()
        );
    }
    let mut out = Map::new();
    out.insert("workload".into(), json!("W8"));
    out.insert("impl".into(), json!("tern"));
    out.insert("dir".into(), json!(p.dir.display().to_string()));
    out.insert("dir_fs".into(), json!(fs));
    out.insert("dir_mount".into(), json!(mount));
    out.insert("dir_device".into(), json!(device));
    out.insert(
        "disk_fdatasync_us_median".into(),
        json!(fdatasync_us(&p.dir)?),
    );
    for config in Config::ALL {
        if p.runs(config.name()) {
            measure(config, p, &mut out)?;
        }
    }
    if p.runs("many") {
        measure_many(p, &mut out)?;
    }
    fsync_figures(p, &mut out);
    // The journal files are only for the measurement.
    for entry in std::fs::read_dir(&p.dir).map_err(err)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".jsonl")
            || name.contains(".db")
            || name.starts_with("fsync-")
            || name.starts_with("strace-")
        {
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
    Ok(Value::Object(out))
}
