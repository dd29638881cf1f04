//! The crashing side: one process running (or, with `--recover`, recovering) scripted durable
//! agents against the scripted server, with the real openai-completions provider over HTTP.
//!
//! ```text
//! crash-<hash> agent --journal file|sqlite --dir DIR --url http://127.0.0.1:PORT
//!                    --life L [--agents N] [--stagger-ms M] [--seed S] [--recover]
//! ```
//!
//! Agent `i` keeps its files in `DIR/agent-i/`: `effects` (one line per tool effect, `tally
//! call_1 LIFE`), `progress` (`LIFE start call_1` when a call begins), and with the file journal its
//! session `session.jsonl`; with SQLite all agents share `DIR/runs.db` (session `agent-i`)
//! and each writes its final transcript to `transcript.json` before its run is finished.
//! Requests go to `URL/a/i/l/L/v1`, so the server knows the agent and the process life.
//!
//! The host sends three inputs, each once ([`INPUTS`]): a steer when the first tool call
//! starts, a steer while request 2 streams, a follow-up while the first final answer streams. Recovering, an agent whose run was never started
//! (killed before its first record) starts it: the host was never told the run was accepted.
//! Likewise the host sends again only input the journal has not accepted: input not
//! acknowledged is the host's to send again.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, Replay, Subscription, ToolResult};
use tern_ai::providers::Providers;
use tern_ai::{Message, Model, StopReason, StreamOptions};
use tern_durable::{
    record_messages, Durability, DurableRun, Journal, Queue, RecordedRun, Recovery, RunEnd,
    SessionFileJournal, SqliteJournal, Step,
};
use tern_session::{Recorder, SessionFile};

use tern_testkit::agent::chat_model;
use tern_testkit::SplitMix64;

/// The prompt every agent starts with.
pub const PROMPT: &str = "Count everything once.";
/// When the host sends input.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// When this tool call starts.
    ToolStart(&'static str),
    /// When the assistant message with this 0-based index starts streaming.
    Answer(usize),
}

/// The input the host sends, each once: (queue, text, when).
pub const INPUTS: [(Queue, &str, When); 3] = [
    // During the first tool batch: placed before request 1.
    (
        Queue::Steer,
        "Also stamp it a second time.",
        When::ToolStart("call_1"),
    ),
    // While request 2 streams: placed after its tool batch, before request 3.
    (
        Queue::Steer,
        "And tally once more at the end.",
        When::Answer(2),
    ),
    // While the first final answer streams: delivered when the model would stop.
    (
        Queue::FollowUp,
        "Then say that you are done.",
        When::Answer(3),
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    /// One database for all agents; `Buffered` appends go through the side log.
    Sqlite(Durability),
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Sqlite(Durability::Fsync) => "sqlite",
            Kind::Sqlite(Durability::Buffered) => "sqlite-buffered",
        }
    }

    /// A small number of its own, for seeds and server points.
    pub fn index(self) -> usize {
        match self {
            Kind::File => 0,
            Kind::Sqlite(Durability::Fsync) => 1,
            Kind::Sqlite(Durability::Buffered) => 2,
        }
    }
}

#[derive(Clone, Debug)]
struct Options {
    kind: Kind,
    dir: PathBuf,
    url: String,
    life: u32,
    agents: usize,
    stagger_ms: u64,
    seed: u64,
    recover: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            kind: Kind::File,
            dir: PathBuf::new(),
            url: String::new(),
            life: 1,
            agents: 1,
            stagger_ms: 0,
            seed: 0,
            recover: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            let number = |v: String| v.parse::<u64>().map_err(|e| format!("{a}: {e}"));
            match a.as_str() {
                "--journal" => {
                    o.kind = match value()?.as_str() {
                        "file" => Kind::File,
                        "sqlite" => Kind::Sqlite(Durability::Fsync),
                        "sqlite-buffered" => Kind::Sqlite(Durability::Buffered),
                        other => return Err(format!("unknown journal {other}")),
                    }
                }
                "--dir" => o.dir = PathBuf::from(value()?),
                "--url" => o.url = value()?,
                "--life" => o.life = number(value()?)? as u32,
                "--agents" => o.agents = number(value()?)? as usize,
                "--stagger-ms" => o.stagger_ms = number(value()?)?,
                "--seed" => o.seed = number(value()?)?,
                "--recover" => o.recover = true,
                other => return Err(format!("unknown option {other}")),
            }
        }
        if o.url.is_empty() || o.dir.as_os_str().is_empty() {
            return Err("--dir and --url are required".into());
        }
        Ok(o)
    }

    fn agent_dir(&self, i: usize) -> PathBuf {
        agent_dir(&self.dir, i)
    }
}

pub fn agent_dir(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("agent-{i}"))
}

pub fn session_id(i: usize) -> String {
    format!("agent-{i}")
}

pub fn main(args: &[String]) -> ExitCode {
    let o = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("crash agent: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match rt.block_on(run_all(o)) {
        Ok(()) => {
            println!("completed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crash agent: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_all(o: Options) -> Result<(), String> {
    let o = Arc::new(o);
    let db = match o.kind {
        Kind::Sqlite(durability) => Some(
            SqliteJournal::open(&o.dir.join("runs.db"), durability).map_err(|e| e.to_string())?,
        ),
        Kind::File => None,
    };
    let mut rng = SplitMix64::new(o.seed ^ (u64::from(o.life) << 32));
    let mut tasks = Vec::new();
    for i in 0..o.agents {
        let o = o.clone();
        let db = db.clone();
        let delay = if o.stagger_ms > 0 {
            rng.below(o.stagger_ms)
        } else {
            0
        };
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            std::fs::create_dir_all(o.agent_dir(i)).map_err(|e| e.to_string())?;
            let r = match &db {
                Some(db) => run_sqlite(&o, db, i).await,
                None => run_file(&o, i).await,
            };
            r.map_err(|e| format!("agent {i}: {e}"))
        }));
    }
    let mut errors = Vec::new();
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(format!("agent task: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One write: a kill leaves the line whole or absent.
    f.write_all(format!("{line}\n").as_bytes())
}

/// A tool that counts its effect as a line `NAME CALL_ID LIFE` in `effects`, slowly enough
/// that kills land inside it: `LIFE start CALL_ID` in `progress`, 3 ms, the effect, 3 ms,
/// the result.
fn counting_tool(dir: &Path, life: u32, name: &'static str, replay: Replay) -> AgentTool {
    let dir = dir.to_path_buf();
    AgentTool::dynamic(
        name,
        "Counts one effect.",
        json!({"type": "object", "properties": {"what": {"type": "string"}}}),
        move |call| {
            let dir = dir.clone();
            async move {
                let id = &call.tool_call_id;
                append_line(&dir.join("progress"), &format!("{life} start {id}"))?;
                tokio::time::sleep(Duration::from_millis(3)).await;
                append_line(&dir.join("effects"), &format!("{name} {id} {life}"))?;
                tokio::time::sleep(Duration::from_millis(3)).await;
                Ok(ToolResult::text(format!("{name}: {id} counted")))
            }
        },
    )
    .with_replay(replay)
}

fn model(o: &Options, i: usize) -> Model {
    let url = format!("{}/a/{i}/l/{}/v1", o.url, o.life);
    chat_model("crash-model", "crash", &url, 1024)
}

fn build(run: &DurableRun, o: &Options, i: usize, messages: Vec<Message>) -> Agent {
    let dir = o.agent_dir(i);
    Agent::new(AgentOptions {
        model: Some(Arc::new(model(o, i))),
        stream_fn: Some(run.model(Arc::new(Providers))),
        tools: vec![
            run.tool(counting_tool(&dir, o.life, "tally", Replay::Safe)),
            run.tool(counting_tool(&dir, o.life, "stamp", Replay::Never)),
        ],
        messages,
        stream_options: StreamOptions {
            api_key: Some("crash-key".into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// The host: sends each of `INPUTS` once, at its moment, through `DurableRun` (which
/// journals the acceptance before the agent gets the message). Input the journal has
/// accepted is not sent again (the host had its acknowledgement); input not acknowledged is
/// the host's to send again.
fn host(run: &DurableRun, agent: &Agent, accepted: &[String]) -> Subscription {
    let host = run.clone();
    let due: Vec<(Queue, &'static str, When)> = INPUTS
        .into_iter()
        .filter(|(_, text, _)| !accepted.iter().any(|a| a == text))
        .collect();
    let answers = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    agent.subscribe(move |event, _| {
        let host = host.clone();
        let now: Option<When> = match &*event {
            AgentEvent::ToolExecutionStart { tool_call } => {
                INPUTS.iter().find_map(|(_, _, w)| match w {
                    When::ToolStart(id) if *id == tool_call.id => Some(*w),
                    _ => None,
                })
            }
            AgentEvent::MessageStart { message } if message.role() == "assistant" => Some(
                When::Answer(answers.fetch_add(1, std::sync::atomic::Ordering::SeqCst)),
            ),
            _ => None,
        };
        let send: Vec<(Queue, &'static str)> = due
            .iter()
            .filter(|(_, _, w)| match (w, now) {
                (When::ToolStart(a), Some(When::ToolStart(b))) => *a == b,
                (When::Answer(a), Some(When::Answer(b))) => *a == b,
                _ => false,
            })
            .map(|(q, t, _)| (*q, *t))
            .collect();
        async move {
            for (queue, text) in send {
                let message = Message::user_text(text);
                let sent = match queue {
                    Queue::FollowUp => host.follow_up(message).await,
                    _ => host.steer(message).await,
                };
                if let Err(e) = sent {
                    eprintln!("the host's input was not accepted: {e}");
                }
            }
        }
    })
}

/// A message's text (its content as a string, or its text blocks joined).
pub fn text_of(message: &Message) -> String {
    match message.content_json() {
        serde_json::Value::String(s) => s,
        serde_json::Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b["text"].as_str()).collect()
        }
        _ => String::new(),
    }
}

/// The texts of the input the journal's last run accepted.
fn accepted(records: &[tern_durable::Record]) -> Vec<String> {
    let Some(start) = records
        .iter()
        .rposition(|r| matches!(r.step, Step::RunStarted { .. }))
    else {
        return Vec::new();
    };
    records[start..]
        .iter()
        .filter_map(|r| match &r.step {
            Step::InputAccepted { message, .. } => Some(text_of(message)),
            _ => None,
        })
        .collect()
}

fn ended(messages: &[Message]) -> Result<RunEnd, String> {
    match messages.iter().rev().find_map(Message::as_assistant) {
        Some(a) if a.stop_reason == StopReason::Stop => Ok(RunEnd::Completed),
        Some(a) => Err(format!(
            "the run ended with {:?}: {}",
            a.stop_reason,
            a.error_message.clone().unwrap_or_default()
        )),
        None => Err("the run has no answer".into()),
    }
}

async fn run_file(o: &Options, i: usize) -> Result<(), String> {
    let path = o.agent_dir(i).join("session.jsonl");
    let cwd = Path::new("/crash");
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let (recorder, transcript) = if path.exists() {
        let loaded = tern_session::load(&path).map_err(|x| e(&x))?;
        let session = SessionFile::resume(&path, &loaded, cwd);
        (
            Arc::new(Mutex::new(Recorder::new(session))),
            loaded.messages,
        )
    } else {
        let session = SessionFile::create_at(&path, cwd);
        (Arc::new(Mutex::new(Recorder::new(session))), Vec::new())
    };
    let journal: Arc<dyn Journal> =
        Arc::new(SessionFileJournal::new(recorder.clone(), Durability::Fsync));
    let records = journal.records().map_err(|x| e(&x))?;
    let recovery = if o.recover {
        DurableRun::recover(journal.clone(), &transcript).map_err(|x| e(&x))?
    } else {
        Recovery::NothingInterrupted
    };
    let (run, prompt, agent, written) = match recovery {
        Recovery::Interrupted {
            run,
            prompt,
            transcript_length,
            ..
        } => {
            let before = transcript[..transcript_length].to_vec();
            let agent = build(&run, o, i, before);
            (run, prompt, agent, transcript.len() - transcript_length)
        }
        Recovery::NothingInterrupted if RecordedRun::last(&records).is_some() => return Ok(()),
        Recovery::NothingInterrupted => {
            let prompt = vec![Message::user_text(PROMPT)];
            let run = DurableRun::start(journal.clone(), &transcript, &prompt)
                .await
                .map_err(|x| e(&x))?;
            let agent = build(&run, o, i, transcript.clone());
            (run, prompt, agent, 0)
        }
    };
    let _messages = record_messages(&recorder, &agent, written);
    let _inputs = run.attach(&agent);
    let _host = host(&run, &agent, &accepted(&records));
    let outcome = agent.prompt_messages(prompt).await.map_err(|x| e(&x))?;
    let end = ended(&outcome.messages)?;
    run.finish(end).await.map_err(|x| e(&x))
}

async fn run_sqlite(o: &Options, db: &SqliteJournal, i: usize) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let journal: Arc<dyn Journal> = Arc::new(db.session(&session_id(i)));
    let records = journal.records().map_err(|x| e(&x))?;
    let recovery = if o.recover {
        DurableRun::recover(journal.clone(), &[]).map_err(|x| e(&x))?
    } else {
        Recovery::NothingInterrupted
    };
    let (run, prompt) = match recovery {
        Recovery::Interrupted { run, prompt, .. } => (run, prompt),
        Recovery::NothingInterrupted if RecordedRun::last(&records).is_some() => return Ok(()),
        Recovery::NothingInterrupted => {
            let prompt = vec![Message::user_text(PROMPT)];
            let run = DurableRun::start(journal.clone(), &[], &prompt)
                .await
                .map_err(|x| e(&x))?;
            (run, prompt)
        }
    };
    let agent = build(&run, o, i, Vec::new());
    let _inputs = run.attach(&agent);
    let _host = host(&run, &agent, &accepted(&records));
    let outcome = agent.prompt_messages(prompt).await.map_err(|x| e(&x))?;
    let end = ended(&outcome.messages)?;
    // The transcript is kept before the run is finished: a kill in between replays the run
    // from its journal and writes it again.
    let dir = o.agent_dir(i);
    let text = serde_json::to_string(&outcome.messages).map_err(|x| e(&x))?;
    std::fs::write(dir.join("transcript.json.tmp"), text).map_err(|x| e(&x))?;
    std::fs::rename(dir.join("transcript.json.tmp"), dir.join("transcript.json"))
        .map_err(|x| e(&x))?;
    run.finish(end).await.map_err(|x| e(&x))
}
