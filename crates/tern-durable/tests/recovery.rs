//! Crash recovery on real session files: a scripted run is cut at every record boundary
//! (and mid-line), as a kill at that moment would leave the file, then recovered; the
//! result must match the uninterrupted run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, Replay, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{Context, Message, Model, StreamFn, StreamOptions};
use tern_durable::{
    interrupted_text, record_messages, Durability, DurableRun, Journal, Recovery, RunEnd,
    SessionFileJournal,
};
use tern_session::{Recorder, SessionFile};

const STEER: &str = "also count once more";

/// Answers request n with the n-th scripted response (n = assistant messages so far), as a
/// scripted server would, and counts the requests it was sent.
#[derive(Clone, Default)]
struct ScriptedServer {
    sent: Arc<AtomicUsize>,
}

fn script(n: usize) -> FauxResponse {
    match n {
        0 => FauxResponse::tool_calls(vec![
            ("c1", "safe_count", json!({})),
            ("c2", "never_count", json!({})),
        ]),
        1 => FauxResponse::tool_calls(vec![("c3", "never_count", json!({}))]),
        _ => FauxResponse::text("done"),
    }
}

impl StreamFn for ScriptedServer {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: StreamOptions,
    ) -> Result<tern_ai::AssistantMessageEventStream, tern_ai::BoxError> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let n = context
            .messages
            .iter()
            .filter(|m| m.role() == "assistant")
            .count();
        FauxModel::new(vec![script(n)]).stream(model, context, options)
    }
}

/// A tool that counts its effects as lines of a file.
fn counting_tool(dir: &Path, name: &str, replay: Replay) -> AgentTool {
    let file = dir.join(name);
    AgentTool::dynamic(name, "Count.", json!({"type": "object"}), move |_call| {
        let file = file.clone();
        async move {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)?;
            f.write_all(b"x\n")?;
            Ok(ToolResult::text("counted"))
        }
    })
    .with_replay(replay)
}

fn effects(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join(name))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn agent(run: &DurableRun, server: &ScriptedServer, dir: &Path, messages: Vec<Message>) -> Agent {
    Agent::new(AgentOptions {
        model: Some(Arc::new(Model::default())),
        stream_fn: Some(run.model(Arc::new(server.clone()))),
        tools: vec![
            run.tool(counting_tool(dir, "safe_count", Replay::Safe)),
            run.tool(counting_tool(dir, "never_count", Replay::Never)),
        ],
        messages,
        ..Default::default()
    })
}

fn shape(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .map(|m| (m.role().to_string(), m.content_json()))
        .collect()
}

fn is_steer(m: &(String, Value)) -> bool {
    m.1 == json!(STEER) || m.1 == json!([{"type": "text", "text": STEER}])
}

async fn uninterrupted(dir: &Path) -> (PathBuf, usize) {
    let path = dir.join("s.jsonl");
    let recorder = Arc::new(Mutex::new(Recorder::new(SessionFile::create_at(
        &path,
        Path::new("/p"),
    ))));
    let journal: Arc<dyn Journal> =
        Arc::new(SessionFileJournal::new(recorder.clone(), Durability::Fsync));
    let prompt = vec![Message::user_text("go")];
    let run = DurableRun::start(journal, &[], &prompt)
        .await
        .expect("start");
    let server = ScriptedServer::default();
    let a = agent(&run, &server, dir, Vec::new());
    let _rec = record_messages(&recorder, &a, 0);
    let _inputs = run.attach(&a);
    // The host steers once, while the first tool runs.
    let host = run.clone();
    let _steering = a.subscribe(move |event, _| {
        let host = host.clone();
        async move {
            if let AgentEvent::ToolExecutionStart { tool_call } = &*event {
                if tool_call.id == "c1" {
                    host.steer(Message::user_text(STEER))
                        .await
                        .expect("accepted");
                }
            }
        }
    });
    a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");
    (path, server.sent.load(Ordering::SeqCst))
}

/// Recovers the session at `path`; returns the requests sent while recovering.
async fn recover(path: &Path, dir: &Path) -> usize {
    let loaded = tern_session::load(path).expect("load");
    let recorder = Arc::new(Mutex::new(Recorder::new(SessionFile::resume(
        path,
        &loaded,
        Path::new("/p"),
    ))));
    let journal: Arc<dyn Journal> =
        Arc::new(SessionFileJournal::new(recorder.clone(), Durability::Fsync));
    let server = ScriptedServer::default();
    match DurableRun::recover(journal, &loaded.messages).expect("recoverable") {
        Recovery::NothingInterrupted => {}
        Recovery::Interrupted {
            run,
            prompt,
            transcript_length,
            ..
        } => {
            let before = loaded.messages[..transcript_length].to_vec();
            let a = agent(&run, &server, dir, before);
            let _rec = record_messages(&recorder, &a, loaded.messages.len() - transcript_length);
            let _inputs = run.attach(&a);
            a.prompt_messages(prompt).await.expect("recovered run");
            run.finish(RunEnd::Completed).await.expect("finish");
        }
    }
    server.sent.load(Ordering::SeqCst)
}

fn outcomes_in(text: &str) -> usize {
    text.matches(r#""type":"model_outcome""#).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_at_any_point_recovers_to_the_uninterrupted_transcript() {
    let base = tempfile::tempdir().expect("dir");
    let (path, requests) = uninterrupted(base.path()).await;
    assert_eq!(requests, 3);
    let reference = shape(&tern_session::load(&path).expect("load").messages);
    assert_eq!(
        reference.len(),
        8,
        "prompt, 3 answers, 3 results, the steer"
    );
    assert_eq!(reference.iter().filter(|m| is_steer(m)).count(), 1);
    let without_steer: Vec<_> = reference.iter().filter(|m| !is_steer(m)).cloned().collect();
    let full = std::fs::read_to_string(&path).expect("read");

    // Every line boundary, and a cut inside every line: at least 20 kill points.
    let mut cuts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in full.split_inclusive('\n') {
        cuts.push(at + line.len() / 2);
        at += line.len();
        cuts.push(at);
    }
    assert!(cuts.len() >= 20, "{} kill points", cuts.len());
    let mut passed = 0;
    for (k, cut) in cuts.iter().enumerate() {
        let dir = base.path().join(format!("kill-{k}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("s.jsonl");
        let prefix = &full[..*cut];
        std::fs::write(&p, prefix).expect("cut");
        // Effects that happened before the kill: a call whose intent is on disk may have
        // run (assume it did: the worst case for doubling).
        for (name, id) in [
            ("safe_count", "c1"),
            ("never_count", "c2"),
            ("never_count", "c3"),
        ] {
            if prefix.contains(&format!(r#""toolCallId":"{id}""#)) {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(name))
                    .expect("effects");
                f.write_all(b"x\n").expect("effect");
            }
        }
        let completed = outcomes_in(prefix.rsplit_once('\n').map_or("", |(done, _)| done));
        let started = prefix.matches('\n').count() >= 2;
        let sent = if !started {
            // Not even the run's start reached the disk: there is nothing to recover.
            0
        } else {
            recover(&p, &dir).await
        };
        if started {
            assert_eq!(
                sent,
                3 - completed,
                "kill {k}: only requests without a recorded outcome are sent again"
            );
            // Each `never` call took effect exactly once: before the kill, or live after it.
            assert_eq!(effects(&dir, "never_count"), 2, "kill {k}");
            let safe = effects(&dir, "safe_count");
            assert!((1..=2).contains(&safe), "kill {k}: safe ran {safe} times");
            let got = tern_session::load(&p).expect("load");
            let got = shape(&got.messages);
            // A steer accepted before the kill is delivered exactly once; one not yet
            // accepted was never acknowledged to the host.
            let accepted =
                prefix[..prefix.rfind('\n').unwrap_or(0)].contains(r#""type":"input_accepted""#);
            let steers = got.iter().filter(|m| is_steer(m)).count();
            assert_eq!(steers, usize::from(accepted), "kill {k}: steers delivered");
            let expected = if accepted { &reference } else { &without_steer };
            assert_eq!(got.len(), expected.len(), "kill {k}");
            for (i, (g, r)) in got.iter().zip(expected).enumerate() {
                let unknown = g.0 == "toolResult"
                    && g.1 == json!([{"type": "text", "text": interrupted_text("never_count")}]);
                assert!(g == r || unknown, "kill {k}, message {i}: {g:?} != {r:?}");
            }
            let text = std::fs::read_to_string(&p).expect("read");
            assert!(text.contains(r#""type":"run_finished""#), "kill {k}");
        }
        passed += 1;
    }
    println!("{passed} passed, 0 failed");
}
