//! The killing side: runs the agent process, SIGKILLs it at chosen or random moments,
//! recovers it until it completes, and checks every agent against the uninterrupted run.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use tern_ai::Message;
use tern_durable::journal::session_file::read_step_records;
use tern_durable::{
    interrupted_text, Durability, Journal, Record, RecordedRun, RunEnd, SqliteJournal, Step,
};

use crate::agent::{agent_dir, session_id, text_of, Kind, INPUTS};
use crate::server::{answer, Server, Trigger, REQUESTS};
use tern_testkit::SplitMix64;

/// The tool calls of the script: (call id, tool).
const CALLS: [(&str, &str); 4] = [
    ("call_1", "tally"),
    ("call_2", "stamp"),
    ("call_3", "stamp"),
    ("call_4", "tally"),
];

/// How long one process life may take before it counts as hung.
const LIFE_LIMIT: Duration = Duration::from_secs(60);

/// Where a kill is aimed.
#[derive(Clone, Debug)]
enum Aim {
    /// After a delay from the spawn.
    Delay(Duration),
    /// After chunk `chunk` of answer `n` to `agent` was written (the answer is unfinished).
    Stream {
        agent: usize,
        n: usize,
        chunk: usize,
    },
    /// When `call` of `agent` has started (its intent is journaled), before its effect.
    ToolStarted { agent: usize, call: &'static str },
    /// When `call`'s effect is in the effects file, before its result is journaled.
    ToolEffect { agent: usize, call: &'static str },
    /// At the `skip + 1`-th write or fdatasync on the journal seen in `/proc`.
    Write { skip: usize },
}

/// What the journal and the server said of one agent when its process was killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// The process was inside a write or fdatasync on the journal file.
    InWrite,
    /// The server was streaming the agent's answer.
    MidStream,
    /// A model request journaled without outcome, not streaming (before it was sent, or
    /// after the server's last chunk and before the outcome record).
    ModelInFlight,
    /// A tool call journaled without outcome (between tool start and end).
    InTool,
    /// Between steps.
    BetweenSteps,
    /// Before the run's first record.
    NotStarted,
    /// After the run's last record.
    Finished,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Category::InWrite => "in a journal write (write/fdatasync)",
            Category::MidStream => "mid-stream",
            Category::ModelInFlight => "model request in flight, not streaming",
            Category::InTool => "between tool start and end",
            Category::BetweenSteps => "between steps",
            Category::NotStarted => "before the run's first record",
            Category::Finished => "after the run's last record",
        }
    }
}

/// One agent's state after a kill.
#[derive(Clone, Debug)]
struct Snapshot {
    life: u32,
    /// Model requests (0-based) with a journaled outcome.
    completed: BTreeSet<usize>,
    /// Tool calls journaled without outcome.
    open_tools: BTreeSet<String>,
    category: Category,
}

/// One variant's setup.
struct Setup<'a> {
    /// Tells this setup's requests apart at the server.
    point: usize,
    kind: Kind,
    server: &'a Server,
    dir: PathBuf,
    agents: usize,
    stagger_ms: u64,
    seed: u64,
}

struct Life {
    killed: bool,
    in_write: bool,
    /// Journal writes seen (with a `Write` aim).
    writes: usize,
}

/// What a recovered agent showed, beyond passing.
#[derive(Default)]
struct Stats {
    unknown: usize,
    resent: usize,
    safe_reruns: usize,
}

impl Setup<'_> {
    fn spawn(&self, life: u32, recover: bool) -> Result<Child, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let log = std::fs::File::create(self.dir.join(format!("life-{life}.log")))
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut c = Command::new(exe);
        c.arg("agent")
            .args(["--journal", self.kind.name()])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--url")
            .arg(format!("{}/p/{}", self.server.origin, self.point))
            .args(["--life", &life.to_string()])
            .args(["--agents", &self.agents.to_string()])
            .args(["--stagger-ms", &self.stagger_ms.to_string()])
            .args(["--seed", &self.seed.to_string()])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        if recover {
            c.arg("--recover");
        }
        c.spawn()
            .map_err(|e| format!("spawn the agent process: {e}"))
    }

    fn journal_files(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::File => &["/session.jsonl"],
            Kind::Sqlite(Durability::Fsync) => &["/runs.db", "/runs.db-wal"],
            Kind::Sqlite(Durability::Buffered) => &[".log"],
        }
    }

    /// Runs one process life, killing it as `aim` says.
    fn live(&self, life: u32, recover: bool, aim: Option<&Aim>) -> Result<Life, String> {
        let child = self.spawn(life, recover)?;
        let pid = child.id();
        let victim = Arc::new(Mutex::new(child));
        if let Some(Aim::Stream { agent, n, chunk }) = aim {
            self.server.arm(Trigger {
                point: self.point,
                agent: *agent,
                life,
                n: *n,
                chunk: *chunk,
                victim: victim.clone(),
            });
        }
        let started = Instant::now();
        let mut in_write = false;
        let mut writes = 0usize;
        let mut writing = false;
        let kill = |v: &Mutex<Child>| {
            let _ = v.lock().kill();
        };
        let status = loop {
            if let Some(s) = victim.lock().try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            if started.elapsed() > LIFE_LIMIT {
                kill(&victim);
                self.server.disarm();
                return Err(format!("life {life} hung (killed after {LIFE_LIMIT:?})"));
            }
            let poll = match aim {
                Some(Aim::Delay(d)) => {
                    if started.elapsed() >= *d {
                        kill(&victim);
                    }
                    Duration::from_micros(200)
                }
                Some(Aim::ToolStarted { agent, call }) => {
                    let dir = agent_dir(&self.dir, *agent);
                    if has_line(&dir.join("progress"), &format!("{life} start {call}"))
                        && !has_effect(&dir, call, life)
                    {
                        kill(&victim);
                    }
                    Duration::from_micros(100)
                }
                Some(Aim::ToolEffect { agent, call }) => {
                    if has_effect(&agent_dir(&self.dir, *agent), call, life) {
                        kill(&victim);
                    }
                    Duration::from_micros(100)
                }
                Some(Aim::Write { skip }) => {
                    let now = in_journal_write(pid, self.journal_files());
                    if now && !writing {
                        writes += 1;
                        if writes > *skip {
                            kill(&victim);
                            in_write = true;
                        }
                    }
                    writing = now;
                    Duration::from_micros(30)
                }
                Some(Aim::Stream { .. }) | None => Duration::from_millis(2),
            };
            std::thread::sleep(poll);
        };
        self.server.disarm();
        let killed = status.signal() == Some(9);
        if !killed && !status.success() {
            let log = std::fs::read_to_string(self.dir.join(format!("life-{life}.log")))
                .unwrap_or_default();
            return Err(format!("life {life} failed ({status}): {}", log.trim()));
        }
        Ok(Life {
            killed,
            in_write: in_write && killed,
            writes,
        })
    }

    fn records(&self, db: Option<&SqliteJournal>, i: usize) -> Result<Vec<Record>, String> {
        match db {
            Some(db) => db.session(&session_id(i)).records(),
            None => read_step_records(&agent_dir(&self.dir, i).join("session.jsonl")),
        }
        .map_err(|e| format!("agent {i}: the journal does not read: {e}"))
    }

    fn open_db(&self) -> Result<Option<SqliteJournal>, String> {
        match self.kind {
            Kind::File => Ok(None),
            Kind::Sqlite(durability) => SqliteJournal::open(&self.dir.join("runs.db"), durability)
                .map(Some)
                .map_err(|e| e.to_string()),
        }
    }

    /// Every agent's state after the kill of `life`.
    fn snapshot(&self, life: u32, in_write: bool) -> Result<Vec<Snapshot>, String> {
        let db = self.open_db()?;
        let log = self.server.log(self.point);
        (0..self.agents)
            .map(|i| {
                let records = self.records(db.as_ref(), i)?;
                let run = RecordedRun::last(&records);
                let completed: BTreeSet<usize> = run
                    .iter()
                    .flat_map(|r| r.models.iter().enumerate())
                    .filter(|(_, m)| m.outcome.is_some())
                    .map(|(n, _)| n)
                    .collect();
                let open_tools: BTreeSet<String> = run
                    .iter()
                    .flat_map(|r| r.tools.iter())
                    .filter(|(_, t)| t.outcome.is_none())
                    .map(|(id, _)| id.clone())
                    .collect();
                let streaming = log
                    .iter()
                    .any(|r| r.agent == i && r.life == life && r.chunks > 0 && !r.done);
                let model_open = run
                    .as_ref()
                    .and_then(|r| r.models.last())
                    .is_some_and(|m| m.outcome.is_none());
                let category = if in_write && self.agents == 1 {
                    Category::InWrite
                } else if streaming {
                    Category::MidStream
                } else if !open_tools.is_empty() {
                    Category::InTool
                } else if model_open {
                    Category::ModelInFlight
                } else if run.is_none() {
                    Category::NotStarted
                } else if run.as_ref().is_some_and(|r| r.finished.is_some()) {
                    Category::Finished
                } else {
                    Category::BetweenSteps
                };
                Ok(Snapshot {
                    life,
                    completed,
                    open_tools,
                    category,
                })
            })
            .collect()
    }

    /// The final transcript of agent `i`.
    fn transcript(&self, i: usize) -> Result<Vec<Message>, String> {
        let dir = agent_dir(&self.dir, i);
        match self.kind {
            Kind::File => {
                let loaded = tern_session::load(&dir.join("session.jsonl"))
                    .map_err(|e| format!("the session does not load: {e}"))?;
                if !loaded.warnings.is_empty() {
                    return Err(format!("the session has warnings: {:?}", loaded.warnings));
                }
                Ok(loaded.messages)
            }
            Kind::Sqlite(_) => {
                let text = std::fs::read_to_string(dir.join("transcript.json"))
                    .map_err(|e| format!("no transcript: {e}"))?;
                serde_json::from_str(&text).map_err(|e| format!("the transcript: {e}"))
            }
        }
    }

    /// Checks agent `i` after its last life: the four properties, and a finished journal.
    fn check(
        &self,
        db: Option<&SqliteJournal>,
        i: usize,
        snapshots: &[Snapshot],
        reference: &[Value],
    ) -> Result<Stats, String> {
        let mut stats = Stats::default();
        let got = self.transcript(i)?;
        let records = self.records(db, i)?;
        // 4. Every accepted input is delivered exactly once (and accepted once: the host
        //    sends again only input it had no acknowledgement for).
        for (queue, text, _) in INPUTS {
            let delivered = got
                .iter()
                .filter(|m| m.role() == "user" && text_of(m) == text)
                .count();
            if delivered != 1 {
                return Err(format!(
                    "{queue:?} {text:?} is in the transcript {delivered} times"
                ));
            }
            let accepted = records
                .iter()
                .filter(|r| {
                    matches!(&r.step, Step::InputAccepted { queue: q, message, .. }
                        if *q == queue && text_of(message) == text)
                })
                .count();
            if accepted != 1 {
                return Err(format!("{queue:?} {text:?} was accepted {accepted} times"));
            }
        }
        let starts = records
            .iter()
            .filter(|r| matches!(r.step, Step::RunStarted { .. }))
            .count();
        let last = RecordedRun::last(&records).ok_or("the journal has no run")?;
        if starts != 1 || last.finished != Some(RunEnd::Completed) {
            return Err(format!(
                "{starts} runs started, the last ended {:?}",
                last.finished
            ));
        }
        if last.inputs.iter().any(|i| i.committed_before.is_none()) {
            return Err("an accepted input was never placed".into());
        }
        // 1. The transcript is the uninterrupted run's, except for `never` results whose
        //    outcome is unknown (a kill between that call's start and end).
        let got: Vec<Value> = got.iter().map(normalize).collect();
        if got.len() != reference.len() {
            return Err(format!(
                "{} messages, the uninterrupted run has {}: {}",
                got.len(),
                reference.len(),
                Value::Array(got)
            ));
        }
        let unknown_text = interrupted_text("stamp");
        let mut unknown = BTreeSet::new();
        for (k, (g, r)) in got.iter().zip(reference).enumerate() {
            if g == r {
                continue;
            }
            let call = g["toolCallId"].as_str().unwrap_or_default();
            let is_unknown = g["role"] == "toolResult"
                && g["toolName"] == "stamp"
                && g["content"][0]["text"] == unknown_text.as_str()
                && g["isError"] == true
                && r["toolCallId"] == call;
            if !is_unknown {
                return Err(format!(
                    "message {k} is {g}, the uninterrupted run's is {r}"
                ));
            }
            if !snapshots.iter().any(|s| s.open_tools.contains(call)) {
                return Err(format!(
                    "{call} has an unknown outcome but no kill cut it (message {k})"
                ));
            }
            unknown.insert(call.to_string());
        }
        stats.unknown = unknown.len();
        // 2. No model request with a journaled outcome is sent again: in each life, the
        //    server sees no request that the journal had finished when the life began.
        let log = self.server.log(self.point);
        let lives = snapshots.last().map_or(1, |s| s.life + 1);
        for life in 1..=lives {
            let sent: Vec<usize> = log
                .iter()
                .filter(|r| r.agent == i && r.life == life)
                .map(|r| r.n)
                .collect();
            let mut seen = BTreeSet::new();
            for n in &sent {
                if !seen.insert(*n) {
                    return Err(format!("life {life} sent request {n} twice"));
                }
            }
            if let Some(before) = snapshots.iter().find(|s| s.life + 1 == life) {
                if let Some(n) = sent.iter().find(|n| before.completed.contains(n)) {
                    return Err(format!(
                        "life {life} re-sent request {n}, finished in the journal before: {:?}",
                        before.completed
                    ));
                }
                stats.resent += sent
                    .iter()
                    .filter(|n| log_has(&log, i, life - 1, **n))
                    .count();
            }
        }
        for n in 0..REQUESTS {
            if !log.iter().any(|r| r.agent == i && r.n == n) {
                return Err(format!("request {n} was never sent"));
            }
        }
        // 3. No `never` effect is doubled; a result the model saw had its effect.
        let effects = effects(&agent_dir(&self.dir, i));
        for (call, tool) in CALLS {
            let count = effects.get(call).copied().unwrap_or(0);
            match tool {
                "stamp" if count > 1 => {
                    return Err(format!("the never tool's {call} took effect {count} times"))
                }
                "stamp" if count == 0 && !unknown.contains(call) => {
                    return Err(format!("{call}'s result was recorded but it had no effect"))
                }
                "tally" if count == 0 => return Err(format!("{call} never took effect")),
                "tally" => stats.safe_reruns += count - 1,
                _ => {}
            }
        }
        Ok(stats)
    }
}

fn log_has(log: &[crate::server::Request], agent: usize, life: u32, n: usize) -> bool {
    log.iter()
        .any(|r| r.agent == agent && r.life == life && r.n == n)
}

/// Effects per call id.
fn effects(dir: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("effects"))
        .unwrap_or_default()
        .lines()
    {
        if let Some(call) = line.split_whitespace().nth(1) {
            *out.entry(call.to_string()).or_insert(0) += 1;
        }
    }
    out
}

fn has_line(path: &Path, line: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.lines().any(|l| l == line))
}

fn has_effect(dir: &Path, call: &str, life: u32) -> bool {
    std::fs::read_to_string(dir.join("effects")).is_ok_and(|t| {
        t.lines()
            .any(|l| l.split_whitespace().skip(1).eq([call, &life.to_string()]))
    })
}

/// A message as JSON without its clock readings (`timestamp`, `durationMs`: the only fields
/// two runs of the script may differ in).
fn normalize(m: &Message) -> Value {
    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("timestamp");
        o.remove("durationMs");
    }
    v
}

#[cfg(target_arch = "x86_64")]
const WRITE_CALLS: [u64; 5] = [1, 18, 20, 74, 75]; // write pwrite64 writev fsync fdatasync
#[cfg(target_arch = "aarch64")]
const WRITE_CALLS: [u64; 5] = [64, 68, 66, 82, 83];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WRITE_CALLS: [u64; 0] = [];

/// Whether a thread of `pid` is inside a write or sync of one of `files` right now.
fn in_journal_write(pid: u32, files: &[&str]) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    for task in tasks.flatten() {
        let Ok(line) = std::fs::read_to_string(task.path().join("syscall")) else {
            continue;
        };
        let mut fields = line.split_whitespace();
        let Some(nr) = fields.next().and_then(|f| f.parse::<u64>().ok()) else {
            continue;
        };
        if !WRITE_CALLS.contains(&nr) {
            continue;
        }
        let Some(fd) = fields
            .next()
            .and_then(|f| u64::from_str_radix(f.trim_start_matches("0x"), 16).ok())
        else {
            continue;
        };
        if let Ok(target) = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")) {
            let target = target.to_string_lossy();
            if files.iter().any(|f| target.ends_with(f)) {
                return true;
            }
        }
    }
    false
}

/// The outcome of one variant.
struct Tally {
    passed: usize,
    failed: Vec<String>,
    categories: BTreeMap<Category, usize>,
    aims: BTreeMap<&'static str, usize>,
    unknown: usize,
    resent: usize,
    safe_reruns: usize,
    second_kills: usize,
    write_kills: usize,
    /// Kills that left the session file's last line without its newline.
    open_tails: usize,
    /// First lives that finished before their aim came (retried with another aim), by aim.
    missed: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            passed: 0,
            failed: Vec::new(),
            categories: BTreeMap::new(),
            aims: BTreeMap::new(),
            unknown: 0,
            resent: 0,
            safe_reruns: 0,
            second_kills: 0,
            write_kills: 0,
            open_tails: 0,
            missed: BTreeMap::new(),
        }
    }

    fn print(&self, what: &str) {
        println!(
            "{what}: kills aimed: {:?} (missed, the run finished first: {:?})",
            self.aims, self.missed
        );
        for (c, n) in &self.categories {
            println!("  {:>5}  {}", n, c.name());
        }
        println!(
            "  {} process kills inside a journal write ({} left a last line without its \
             newline); {} outcome-unknown results, {} requests re-sent after a kill cut them, \
             {} safe re-runs, {} recoveries killed again",
            self.write_kills,
            self.open_tails,
            self.unknown,
            self.resent,
            self.safe_reruns,
            self.second_kills
        );
        for f in self.failed.iter().take(20) {
            println!("  FAILED {f}");
        }
        println!(
            "{what}: {} passed, {} failed",
            self.passed,
            self.failed.len()
        );
    }
}

fn aim_name(aim: &Aim) -> &'static str {
    match aim {
        Aim::Delay(_) => "random delay",
        Aim::Stream { .. } => "mid-stream",
        Aim::ToolStarted { .. } => "tool started",
        Aim::ToolEffect { .. } => "tool effect done",
        Aim::Write { .. } => "journal write",
    }
}

fn choose(
    rng: &mut SplitMix64,
    which: u64,
    agents: usize,
    duration: Duration,
    writes: usize,
) -> Aim {
    let agent = rng.below(agents as u64) as usize;
    let call = CALLS[rng.below(CALLS.len() as u64) as usize].0;
    // No write aims when the reference run showed none (a side log's writes are too short
    // for the poll to see).
    let kinds = if writes == 0 { 4 } else { 5 };
    match which % kinds {
        0 => Aim::Delay(Duration::from_micros(
            rng.below(duration.as_micros() as u64).max(1),
        )),
        1 => {
            let n = rng.below(REQUESTS as u64) as usize;
            let chunks = answer(n).map_or(2, |a| a.len());
            // Chunk `chunks` is `[DONE]`: stop before it.
            let chunk = 1 + rng.below(chunks as u64 - 1) as usize;
            Aim::Stream { agent, n, chunk }
        }
        2 => Aim::ToolStarted { agent, call },
        3 => Aim::ToolEffect { agent, call },
        // Within the first half of the writes the reference showed: a loaded machine shows
        // fewer (the poll misses short ones), and a missed aim costs a whole run.
        _ => Aim::Write {
            skip: rng.below(writes as u64 / 2) as usize,
        },
    }
}

/// Runs one kill point: a first life killed as `aim` says, then recoveries (one in four
/// killed again at a random moment) until the agents complete. `None` when the first life
/// finished before the aim was reached (no kill).
fn kill_point(
    setup: &Setup,
    rng: &mut SplitMix64,
    aim: &Aim,
    duration: Duration,
    writes: usize,
    tally: &mut Tally,
) -> Result<Option<Vec<Vec<Snapshot>>>, String> {
    std::fs::create_dir_all(&setup.dir).map_err(|e| e.to_string())?;
    let first = setup.live(1, false, Some(aim))?;
    if !first.killed {
        return Ok(None);
    }
    let mut snapshots: Vec<Vec<Snapshot>> = vec![Vec::new(); setup.agents];
    let mut record = |life: u32, in_write: bool, tally: &mut Tally| -> Result<(), String> {
        tally.write_kills += usize::from(in_write);
        if setup.kind == Kind::File {
            for i in 0..setup.agents {
                let path = agent_dir(&setup.dir, i).join("session.jsonl");
                let text = std::fs::read(&path).unwrap_or_default();
                tally.open_tails += usize::from(text.last().is_some_and(|b| *b != b'\n'));
            }
        }
        for (i, s) in setup.snapshot(life, in_write)?.into_iter().enumerate() {
            *tally.categories.entry(s.category).or_insert(0) += 1;
            snapshots[i].push(s);
        }
        Ok(())
    };
    record(1, first.in_write, tally)?;
    let mut life = 2;
    loop {
        if life > 6 {
            return Err("not completed after 5 recoveries".into());
        }
        let again = if rng.one_in(4) {
            let which = rng.below(5);
            Some(choose(rng, which, setup.agents, duration, writes))
        } else {
            None
        };
        let l = setup.live(life, true, again.as_ref())?;
        if !l.killed {
            break;
        }
        tally.second_kills += 1;
        record(life, l.in_write, tally)?;
        life += 1;
    }
    Ok(Some(snapshots))
}

/// The uninterrupted run: every agent's transcript (all must be the same), its duration,
/// and the journal writes seen.
fn reference(setup: &Setup) -> Result<(Vec<Value>, Duration, usize), String> {
    std::fs::create_dir_all(&setup.dir).map_err(|e| e.to_string())?;
    let started = Instant::now();
    // Counts the journal writes, kills at none.
    let l = setup.live(1, false, Some(&Aim::Write { skip: usize::MAX }))?;
    let duration = started.elapsed();
    if l.killed {
        return Err("the reference run was killed".into());
    }
    let log = setup.server.log(setup.point);
    let mut first: Option<Vec<Value>> = None;
    for i in 0..setup.agents {
        let sent: Vec<usize> = log
            .iter()
            .filter(|r| r.agent == i && r.life == 1)
            .map(|r| r.n)
            .collect();
        if sent != (0..REQUESTS).collect::<Vec<_>>() {
            return Err(format!("reference agent {i} sent {sent:?}"));
        }
        let t: Vec<Value> = setup.transcript(i)?.iter().map(normalize).collect();
        match &first {
            None => first = Some(t),
            Some(f) if *f != t => return Err(format!("reference agent {i} differs")),
            Some(_) => {}
        }
    }
    let t = first.ok_or("no agents")?;
    Ok((t, duration, l.writes))
}

struct Variant {
    kind: Kind,
    /// Kill points (process kills).
    kills: usize,
    agents: usize,
}

/// Runs a variant's kill points; `single` is how long one agent's uninterrupted run took.
fn run_variant(
    v: &Variant,
    server: &Server,
    base: &Path,
    seed: u64,
    expect: &[Value],
    single: Duration,
) -> Tally {
    let mut tally = Tally::new();
    let mut rng = SplitMix64::new(seed ^ v.kind.index() as u64);
    let name = v.kind.name();
    // Many agents start spread over one agent's run, so a kill finds them at different steps.
    let stagger = if v.agents > 1 {
        single.as_millis() as u64
    } else {
        0
    };
    let ref_setup = Setup {
        point: 1000 * (v.kind.index() + 1),
        kind: v.kind,
        server,
        dir: base.join(format!("{name}-reference")),
        agents: v.agents,
        stagger_ms: stagger,
        seed,
    };
    let (reference, duration, writes) = match reference(&ref_setup) {
        Ok(r) => r,
        Err(e) => {
            tally.failed.push(format!("{name} reference: {e}"));
            return tally;
        }
    };
    println!(
        "{name}: the uninterrupted run of {} agent(s) took {} ms, {writes} journal writes seen",
        v.agents,
        duration.as_millis()
    );
    if reference != expect {
        tally
            .failed
            .push(format!("{name} reference differs from the single agent's"));
        return tally;
    }
    // Random delays within the run (as long as the reference took, less a margin).
    let span = duration.mul_f64(0.9);
    let mut attempts = 0;
    let mut k = 0;
    while k < v.kills && attempts < v.kills * 3 {
        attempts += 1;
        let setup = Setup {
            point: 1000 * (v.kind.index() + 1) + attempts,
            kind: v.kind,
            server,
            dir: base.join(format!("{name}-{attempts:03}")),
            agents: v.agents,
            stagger_ms: stagger,
            seed: rng.next_u64(),
        };
        // A few SQLite kills cover different aims from seed to seed.
        let offset = if matches!(v.kind, Kind::Sqlite(_)) {
            seed % 5
        } else {
            0
        };
        let aim = choose(&mut rng, k as u64 + offset, v.agents, span, writes);
        match kill_point(&setup, &mut rng, &aim, span, writes, &mut tally) {
            Ok(None) => *tally.missed.entry(aim_name(&aim)).or_insert(0) += 1,
            Ok(Some(snapshots)) => {
                k += 1;
                *tally.aims.entry(aim_name(&aim)).or_insert(0) += 1;
                let db = match setup.open_db() {
                    Ok(db) => db,
                    Err(e) => {
                        tally.failed.push(format!("{name} kill {k}: {e}"));
                        continue;
                    }
                };
                for (i, snaps) in snapshots.iter().enumerate() {
                    match setup.check(db.as_ref(), i, snaps, &reference) {
                        Ok(s) => {
                            tally.passed += 1;
                            tally.unknown += s.unknown;
                            tally.resent += s.resent;
                            tally.safe_reruns += s.safe_reruns;
                        }
                        Err(e) => tally.failed.push(format!(
                            "{name} kill {k} ({aim:?}, {}) agent {i}: {e}",
                            setup.dir.display()
                        )),
                    }
                }
            }
            Err(e) => {
                k += 1;
                tally.failed.push(format!(
                    "{name} kill {k} ({aim:?}, {}): {e}",
                    setup.dir.display()
                ));
            }
        }
    }
    if k < v.kills {
        tally
            .failed
            .push(format!("{name}: only {k} of {} aims killed", v.kills));
    }
    tally
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn main() -> std::process::ExitCode {
    let started = Instant::now();
    let points = env_number("CRASH_POINTS", 24) as usize;
    let sqlite_kills = env_number("CRASH_SQLITE_KILLS", 3) as usize;
    let agents = env_number("CRASH_AGENTS", 50) as usize;
    let seed = env_number("CRASH_SEED", tern_ai::clock::now_ms() as u64);
    println!(
        "crash test: seed {seed} (CRASH_SEED), {points} kill points on the session file \
         (CRASH_POINTS), {sqlite_kills} kills of {agents} agents on one SQLite database \
         (CRASH_SQLITE_KILLS, CRASH_AGENTS)"
    );
    let base = tempfile::tempdir().expect("a temporary directory");
    let server = Server::start(Duration::from_millis(2));
    // The single-agent file run is the reference every variant is compared with.
    let single = Setup {
        point: 0,
        kind: Kind::File,
        server: &server,
        dir: base.path().join("single"),
        agents: 1,
        stagger_ms: 0,
        seed,
    };
    let (expect, single) = match reference(&single) {
        Ok((t, d, _)) => (t, d),
        Err(e) => {
            println!("the uninterrupted run failed: {e}");
            println!("0 passed, 1 failed");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut total = 0;
    let mut failed = 0;
    let variants = [
        Variant {
            kind: Kind::File,
            kills: points,
            agents: 1,
        },
        Variant {
            kind: Kind::Sqlite(Durability::Fsync),
            kills: sqlite_kills,
            agents,
        },
        Variant {
            kind: Kind::Sqlite(Durability::Buffered),
            kills: sqlite_kills,
            agents,
        },
    ];
    let mut missing = Vec::new();
    for v in &variants {
        let t0 = Instant::now();
        let tally = run_variant(v, &server, base.path(), seed, &expect, single);
        let what = match v.kind {
            Kind::File => format!("session file, {} kill points", v.kills),
            Kind::Sqlite(durability) => format!(
                "{}, {} kills x {} agents in one process",
                match durability {
                    Durability::Fsync => "sqlite",
                    Durability::Buffered => "sqlite with the side log (buffered)",
                },
                v.kills,
                v.agents
            ),
        };
        tally.print(&format!("{what} ({:.1} s)", t0.elapsed().as_secs_f64()));
        if v.kind == Kind::File && v.kills >= 5 {
            for c in [Category::MidStream, Category::InTool, Category::InWrite] {
                if !tally.categories.contains_key(&c) {
                    missing.push(c.name());
                }
            }
        }
        total += tally.passed;
        failed += tally.failed.len();
    }
    if !missing.is_empty() {
        println!("kill categories never hit: {missing:?}");
        failed += missing.len();
    }
    println!("time {:.1} s", started.elapsed().as_secs_f64());
    println!("{total} passed, {failed} failed");
    if failed > 0 || std::env::var_os("CRASH_KEEP").is_some() {
        let kept = base.keep();
        println!("the runs are kept in {}", kept.display());
    }
    if failed > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
