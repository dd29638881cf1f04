//! tern-agent's loop run as a workflow on a real Temporal dev server gives the same events
//! and messages as the same script run in-process: a tool call, then a parallel batch of two
//! (the slower one ends last), then an answer.

mod support;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tern_agent::{
    run_agent_loop, AgentContext, AgentEvent, AgentLoopConfig, AgentTool, ToolResult,
};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::Message;
use tern_temporal::{AgentActivities, SessionHandle, SessionInput, Sessions, ToolSpec};
use tokio_util::sync::CancellationToken;

use support::dev_server::DevServer;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
    /// How long the call takes, in ms.
    delay_ms: u64,
}

fn tools() -> Vec<AgentTool> {
    vec![AgentTool::typed(
        "add",
        "Adds two numbers.",
        |a: AddArgs, _| async move {
            tokio::time::sleep(Duration::from_millis(a.delay_ms)).await;
            Ok(ToolResult::text(format!("{}", a.a + a.b)).with_details(json!({"sum": a.a + a.b})))
        },
    )]
}

fn script() -> FauxModel {
    FauxModel::new(vec![
        FauxResponse::tool_call("call_1", "add", json!({"a": 1, "b": 2, "delay_ms": 0})),
        FauxResponse::tool_calls(vec![
            ("call_2", "add", json!({"a": 3, "b": 4, "delay_ms": 800})),
            ("call_3", "add", json!({"a": 5, "b": 6, "delay_ms": 0})),
        ]),
        FauxResponse::text("3, 7 and 11."),
    ])
}

async fn in_process(prompt: Message) -> (Vec<Value>, Vec<Message>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let sink = move |e: AgentEvent| {
        seen.lock()
            .push(serde_json::to_value(&e).expect("events serialize"));
        async {}
    };
    let new = run_agent_loop(
        vec![prompt.clone()],
        AgentContext::new(Vec::new(), tools()),
        AgentLoopConfig::new(support::faux_model()),
        &sink,
        CancellationToken::new(),
        Arc::new(script()),
    )
    .await
    .expect("the local run");
    let events = events.lock().clone();
    (events, new)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_a_workflow_matches_the_same_run_in_process() {
    let prompt = Message::user_text("Add 1+2, then 3+4 and 5+6.");
    let (local_events, local_messages) = in_process(prompt.clone()).await;

    let server = DevServer::start();
    let queue = "loop-in-workflow";
    let sessions = support::sessions(&server.address, queue).await;
    let (_rt, worker) = support::worker(&server.address, queue, activities(script())).await;
    support::with_worker(worker, async move {
        let session = start(&sessions, "session-1").await;
        session.prompt(vec![prompt]).await.expect("prompt accepted");
        let events = tokio::time::timeout(Duration::from_secs(60), session.wait_idle(0))
            .await
            .expect("the run ends within 60 s")
            .expect("events");
        let state = session.state().await.expect("state");
        assert!(!state.is_streaming && state.pending_tool_calls.is_empty());
        let output = session.close().await.expect("closed");

        let kinds = |es: &[Value]| -> Vec<String> {
            es.iter()
                .map(|e| e["type"].as_str().unwrap_or("?").to_string())
                .collect()
        };
        let expected = support::comparable(&local_events);
        let got = support::comparable(&events);
        assert_eq!(kinds(&got), kinds(&expected), "the same event sequence");
        assert_eq!(got, expected, "the same events");
        // The slower call of the batch ends last, results stay in source order.
        let ends: Vec<_> = got
            .iter()
            .filter(|e| e["type"] == "tool_execution_end")
            .map(|e| e["toolCallId"].clone())
            .collect();
        assert_eq!(
            ends,
            vec![json!("call_1"), json!("call_3"), json!("call_2")]
        );

        // A new session: the transcript is what the run added (the tool declaration,
        // the prompt, the turns).
        let expected_messages = local_messages;
        assert_eq!(
            support::normalized(&output.messages),
            support::normalized(&expected_messages)
        );
        assert_eq!(
            support::normalized(&state.messages),
            support::normalized(&expected_messages)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_workflow_aborts_the_running_tool_and_ends_the_session() {
    let server = DevServer::start();
    let queue = "abort";
    let sessions = support::sessions(&server.address, queue).await;
    let script = FauxModel::new(vec![FauxResponse::tool_call(
        "call_1",
        "add",
        json!({"a": 1, "b": 2, "delay_ms": 60_000}),
    )]);
    let (_rt, worker) = support::worker(&server.address, queue, activities(script)).await;
    support::with_worker(worker, async move {
        let session = start(&sessions, "session-abort").await;
        prompt_until_a_tool_runs(&session).await;
        session.abort().await.expect("cancelled");
        let output = tokio::time::timeout(Duration::from_secs(30), session.result())
            .await
            .expect("the session ends within 30 s")
            .expect("a transcript");
        let json: Vec<Value> = output
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).expect("serializes"))
            .collect();
        let result = json
            .iter()
            .find(|m| m["role"] == "toolResult")
            .expect("the call's result");
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], "Operation aborted");
        // As in the core: the next request sees the abort and the run ends aborted.
        let last = json.last().expect("messages");
        assert_eq!(last["role"], "assistant");
        assert_eq!(last["stopReason"], "aborted");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_run_cancels_the_running_tool_and_keeps_the_session() {
    let server = DevServer::start();
    let queue = "abort-run";
    let sessions = support::sessions(&server.address, queue).await;
    let script = FauxModel::new(vec![
        FauxResponse::tool_call("call_1", "add", json!({"a": 1, "b": 2, "delay_ms": 60_000})),
        // Asked after the abort: the model answers it as aborted.
        FauxResponse::text("never streamed"),
        FauxResponse::text("Back again."),
    ]);
    // Every workflow task replays the history: the abort's commands must be the same each
    // time (a nondeterministic one fails the task, and the run never ends).
    let (_rt, worker) = support::replaying_worker(&server.address, queue, activities(script)).await;
    support::with_worker(worker, async move {
        let session = start(&sessions, "session-abort-run").await;
        // While idle an abort does nothing.
        session.abort_run().await.expect("abort while idle");
        prompt_until_a_tool_runs(&session).await;
        session.abort_run().await.expect("aborted");
        let events = tokio::time::timeout(Duration::from_secs(30), session.wait_idle(0))
            .await
            .expect("the run ends within 30 s")
            .expect("events");
        let end = events
            .iter()
            .find(|e| e["type"] == "tool_execution_end")
            .expect("the call ended");
        assert_eq!(end["isError"], true);
        assert_eq!(end["result"]["content"][0]["text"], "Operation aborted");
        let last = events.last().expect("events");
        assert_eq!(last["type"], "agent_end");
        let answer = last["messages"].as_array().and_then(|m| m.last());
        assert_eq!(answer.map(|m| &m["stopReason"]), Some(&json!("aborted")));

        // The session stays: the next prompt runs.
        let offset = session.state().await.expect("state").event_count;
        session
            .prompt(vec![Message::user_text("Again?")])
            .await
            .expect("the session takes the next prompt");
        let events = session.wait_idle(offset).await.expect("events");
        let last = events.last().expect("events");
        let answer = last["messages"].as_array().and_then(|m| m.last());
        assert_eq!(
            answer.map(|m| &m["content"][0]["text"]),
            Some(&json!("Back again."))
        );
        let output = session.close().await.expect("closed");
        assert_eq!(
            output
                .messages
                .iter()
                .filter(|m| matches!(m, Message::User(_)))
                .count(),
            2
        );
    })
    .await;
}

/// A worker's activities: `script` as the model, [`tools`] as the tools.
fn activities(script: FauxModel) -> AgentActivities {
    AgentActivities::new(Arc::new(script), tools())
}

/// Starts the session `id` on the faux model with [`tools`].
async fn start(sessions: &Sessions, id: &str) -> SessionHandle {
    let input = SessionInput {
        model: support::faux_model(),
        tools: tools().iter().map(ToolSpec::of).collect(),
        ..SessionInput::default()
    };
    sessions.start(id, input).await.expect("started")
}

/// Prompts `session` to add slowly and waits (30 s at most) until its tool call runs.
async fn prompt_until_a_tool_runs(session: &SessionHandle) {
    session
        .prompt(vec![Message::user_text("Add slowly.")])
        .await
        .expect("prompt accepted");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while session
        .state()
        .await
        .expect("state")
        .pending_tool_calls
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the tool never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
