//! The scripted agent the recovery tests share: a scripted server that answers by position
//! and counts requests, tools that count their effects in files, and transcript shapes.

#![allow(dead_code)] // each test binary uses its own part

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, Replay, Subscription, ToolResult};
use tern_ai::faux::FauxResponse;
use tern_ai::{Message, Model};
use tern_durable::{interrupted_text, DurableRun, Journal, MemoryJournal, Record, Recovery, Step};
use tern_testkit::agent::{assistant_turns, ScriptFn};

pub const STEER: &str = "also count once more";

/// A model that answers request n with the n-th scripted response (n = assistant messages
/// so far), as a scripted server would; `sent()` counts the requests.
pub fn scripted_server() -> ScriptFn {
    ScriptFn::new(|_, messages| script(assistant_turns(messages)))
}

pub fn script(n: usize) -> FauxResponse {
    match n {
        0 => FauxResponse::tool_calls(vec![
            ("c1", "safe_count", json!({})),
            ("c2", "never_count", json!({})),
        ]),
        1 => FauxResponse::tool_calls(vec![("c3", "never_count", json!({}))]),
        _ => FauxResponse::text("done"),
    }
}

/// Starts a run of the prompt "go" with an empty transcript on `journal`: the run and the
/// prompt to give the agent.
pub async fn start_go(journal: Arc<dyn Journal>) -> (DurableRun, Vec<Message>) {
    let prompt = vec![Message::user_text("go")];
    let run = DurableRun::start(journal, &[], &prompt)
        .await
        .expect("start");
    (run, prompt)
}

/// A kill right after the first record that `at` matches: the run recovered from the journal
/// cut there, and the prompt it continues with.
pub fn cut_and_recover(
    records: &[Record],
    at: impl Fn(&Step) -> bool,
) -> (DurableRun, Vec<Message>) {
    let cut = records
        .iter()
        .position(|r| at(&r.step))
        .expect("a record to cut after");
    let journal = Arc::new(MemoryJournal::new(records[..=cut].to_vec()));
    let Recovery::Interrupted { run, prompt, .. } =
        DurableRun::recover(journal, &[]).expect("recover")
    else {
        panic!("the run was cut off");
    };
    (run, prompt)
}

/// A tool that counts its effects as lines of a file.
pub fn counting_tool(dir: &Path, name: &str, replay: Replay) -> AgentTool {
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

pub fn effects(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join(name))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

pub fn agent(run: &DurableRun, server: &ScriptFn, dir: &Path, messages: Vec<Message>) -> Agent {
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

pub fn shape(messages: &[Message]) -> Vec<(String, Value)> {
    messages
        .iter()
        .map(|m| (m.role().to_string(), m.content_json()))
        .collect()
}

pub fn is_steer(m: &(String, Value)) -> bool {
    m.1 == json!(STEER) || m.1 == json!([{"type": "text", "text": STEER}])
}

/// Whether `got` is `expected` except for `never` results whose outcome is unknown.
pub fn same_except_unknown(
    got: &[(String, Value)],
    expected: &[(String, Value)],
) -> Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!(
            "{} messages, expected {}",
            got.len(),
            expected.len()
        ));
    }
    for (i, (g, r)) in got.iter().zip(expected).enumerate() {
        let unknown = g.0 == "toolResult"
            && g.1 == json!([{"type": "text", "text": interrupted_text("never_count")}]);
        if g != r && !unknown {
            return Err(format!("message {i}: {g:?} != {r:?}"));
        }
    }
    Ok(())
}

/// Counts, in `dir`, the effects a kill after `intents_on_disk` may have left: a call whose
/// intent was written may have run (assume it did: the worst case for doubling).
pub fn effects_before_kill(dir: &Path, has_intent: impl Fn(&str) -> bool) {
    use std::io::Write;
    for (name, id) in [
        ("safe_count", "c1"),
        ("never_count", "c2"),
        ("never_count", "c3"),
    ] {
        if has_intent(id) {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(name))
                .expect("effects file");
            f.write_all(b"x\n").expect("effect");
        }
    }
}

/// The host steers once ([`STEER`]) while tool call `c1` runs; the id the run gave the input
/// is kept in `id`.
pub fn steer_during_first_tool(
    run: &DurableRun,
    a: &Agent,
    id: Arc<std::sync::Mutex<Option<String>>>,
) -> Subscription {
    let host = run.clone();
    a.subscribe(move |event, _| {
        let (host, id) = (host.clone(), id.clone());
        async move {
            if let AgentEvent::ToolExecutionStart { tool_call } = &*event {
                if tool_call.id == "c1" {
                    let got = host
                        .steer(Message::user_text(STEER))
                        .await
                        .expect("accepted");
                    *id.lock().expect("not poisoned") = Some(got);
                }
            }
        }
    })
}
