//! One clock and one id source: a run with a fixed clock and a deterministic id source writes
//! the same journal, byte for byte, every time, on both journals; and recovering such a run
//! from the same cut gives the same file again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::{Agent, AgentOptions, AgentTool, Replay, ToolResult};
use tern_ai::environment::Environment;
use tern_ai::{
    assistant_stream, AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Message,
    Model, PartialMessage, StopReason, StreamFn, StreamOptions, ToolCall, UserMessage,
};
use tern_durable::{
    Budgets, Durability, DurableRun, Journal, Recovery, SessionFileJournal, SqliteJournal,
    SqliteSession,
};
use tern_session::{Recorder, SessionFile};
use tern_testkit::agent::assistant_turns;

const NOW: u64 = 1_733_234_400_000;

fn env() -> Environment {
    Environment::fixed(NOW, 42)
}

/// Two tool calls, then "done"; every message stamped with the fixed time and already timed,
/// so nothing in them depends on the clock of the machine.
struct Script;

impl StreamFn for Script {
    fn stream(&self, model: &Model, context: Context, _: &StreamOptions) -> tern_ai::StreamStart {
        let n = assistant_turns(&context.messages);
        let (content, stop_reason) = match n {
            0 | 1 => (
                vec![ContentBlock::tool_call(ToolCall {
                    id: tern_ai::Name::unique(&format!("c{n}")),
                    name: "count".into(),
                    arguments: json!({"n": n}),
                    ..Default::default()
                })],
                StopReason::ToolUse,
            ),
            _ => (vec![ContentBlock::text("done")], StopReason::Stop),
        };
        let message = AssistantMessage {
            content,
            stop_reason,
            api: model.api.as_str().into(),
            provider: model.provider.as_str().into(),
            model: model.id.as_str().into(),
            timestamp: NOW,
            duration_ms: Some(0),
            ..Default::default()
        };
        let (tx, rx) = assistant_stream();
        tx.push(AssistantMessageEvent::Start {
            partial: PartialMessage::new(message.clone()),
        });
        tx.push(AssistantMessageEvent::Done {
            reason: stop_reason,
            message: Arc::new(message),
        });
        Ok(rx)
    }
}

fn prompt() -> Vec<Message> {
    vec![Message::from(UserMessage {
        content: tern_ai::Content::Text("go".into()),
        timestamp: NOW,
        extra: None,
    })]
}

fn agent(run: &DurableRun) -> Agent {
    let count = AgentTool::dynamic("count", "Count.", json!({"type": "object"}), |_| async {
        Ok(ToolResult::text("counted"))
    })
    .with_replay(Replay::Safe);
    Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        stream_fn: Some(run.model(Arc::new(Script))),
        tools: vec![run.tool(count)],
        ..Default::default()
    })
}

/// The scripted run on `journal`, from start to finish.
async fn whole_run(journal: Arc<dyn Journal>) {
    let run = DurableRun::start_in(env(), journal, &[], &prompt(), Budgets::default())
        .await
        .expect("start");
    let a = agent(&run);
    let _inputs = run.attach(&a);
    a.prompt_messages(prompt()).await.expect("run");
    run.finish(run.end()).await.expect("finish");
}

/// A session-file journal at `path` stamped by the fixed environment.
fn session_journal(path: &Path) -> Arc<SessionFileJournal> {
    let session = SessionFile::create_at(path, Path::new("/p")).with_environment(env());
    Arc::new(SessionFileJournal::new(
        Arc::new(Mutex::new(Recorder::new(session))),
        Durability::Buffered,
    ))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn session_file_of_one_run(dir: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let path = dir.join(name);
    rt().block_on(whole_run(session_journal(&path)));
    let bytes = std::fs::read(&path).expect("written");
    (path, bytes)
}

#[test]
fn a_fixed_environment_writes_the_same_session_file_twice() {
    let dir = tempfile::tempdir().expect("dir");
    let (_, a) = session_file_of_one_run(dir.path(), "a.jsonl");
    let (_, b) = session_file_of_one_run(dir.path(), "b.jsonl");
    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    let text = String::from_utf8_lossy(&a);
    // The header and eleven steps (start, 3 requests, 2 tool calls, finish).
    assert_eq!(text.lines().count(), 1 + 2 + 3 * 2 + 2 * 2);
    assert!(
        text.contains(r#""timestamp":"2024-12-03T14:00:00.000Z""#),
        "{text}"
    );
    // A system environment draws new ids: the same run, another file.
    let path = dir.path().join("c.jsonl");
    let session = SessionFile::create_at(&path, Path::new("/p"));
    let journal = Arc::new(SessionFileJournal::new(
        Arc::new(Mutex::new(Recorder::new(session))),
        Durability::Buffered,
    ));
    rt().block_on(whole_run(journal));
    assert_ne!(std::fs::read(&path).expect("written"), a);
}

#[test]
fn a_fixed_environment_writes_the_same_sqlite_records_twice() {
    let dir = tempfile::tempdir().expect("dir");
    let texts = |name: &str| {
        let db = SqliteJournal::open(&dir.path().join(name), Durability::Buffered).expect("db");
        let session: SqliteSession = db.session("s");
        rt().block_on(whole_run(Arc::new(session.clone())));
        let records = session.records().expect("readable");
        serde_json::to_string(&records).expect("json")
    };
    let (a, b) = (texts("a.db"), texts("b.db"));
    assert_eq!(a, b);
    assert!(a.contains(&format!("run-{NOW}-")), "{a}");
}

/// Cuts the file after `lines` lines (a kill there), recovers it with the fixed environment,
/// and returns the file after the recovered run finished.
fn recovered(dir: &Path, whole: &[u8], lines: usize, name: &str) -> Vec<u8> {
    let path = dir.join(name);
    let keep: usize = whole
        .split_inclusive(|b| *b == b'\n')
        .take(lines)
        .map(<[u8]>::len)
        .sum();
    std::fs::write(&path, &whole[..keep]).expect("cut");
    let loaded = tern_session::load(&path).expect("load");
    // Another seed than the first process's: a resumed file must not draw the entry ids it
    // already holds. The same seed in both recoveries, so they are comparable.
    let env = Environment::fixed(NOW, 43);
    let session =
        SessionFile::resume(&path, &loaded, Path::new("/p")).with_environment(env.clone());
    let journal: Arc<dyn Journal> = Arc::new(SessionFileJournal::new(
        Arc::new(Mutex::new(Recorder::new(session))),
        Durability::Buffered,
    ));
    rt().block_on(async {
        match DurableRun::recover_in(env, journal, &[]).expect("readable") {
            Recovery::Interrupted { run, prompt, .. } => {
                let a = agent(&run);
                let _inputs = run.attach(&a);
                a.prompt_messages(prompt).await.expect("run");
                run.finish(run.end()).await.expect("finish");
            }
            Recovery::NothingInterrupted => panic!("the cut run did not finish"),
        }
    });
    std::fs::read(&path).expect("written")
}

#[test]
fn recovering_a_fixed_run_from_the_same_cut_gives_the_same_file() {
    let dir = tempfile::tempdir().expect("dir");
    let (_, whole) = session_file_of_one_run(dir.path(), "whole.jsonl");
    let total = whole
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    // Cut after the header and the first few steps, and just before the finish.
    for lines in [2, 4, 7, total - 1] {
        let a = recovered(dir.path(), &whole, lines, &format!("a{lines}.jsonl"));
        let b = recovered(dir.path(), &whole, lines, &format!("b{lines}.jsonl"));
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "cut after {lines} lines"
        );
        // The recovered run re-records nothing it had: it only adds what was missing.
        let text = String::from_utf8_lossy(&a);
        assert!(text.starts_with(&*String::from_utf8_lossy(&whole[..64])));
        assert!(text.contains(r#""outcome":"completed""#), "{text}");
    }
}
