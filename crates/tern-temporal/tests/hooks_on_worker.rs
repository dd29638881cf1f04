//! A session's hooks run on the worker, once per call of the loop, even when every
//! workflow task replays the session's history from its start (a worker that caches no
//! workflow): the hooks' answers come back from the history, and the run ends as the same
//! run with the same hooks in process.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_agent::hooks::{AfterToolCallResult, BeforeToolCallResult};
use tern_agent::{
    run_agent_loop, AgentContext, AgentLoopConfig, AgentTool, Hooks, ToolCallInput, ToolResult,
};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{ContentBlock, Message};
use tern_temporal::hooks::HookName;
use tern_temporal::{AgentActivities, SessionInput, ToolSpec};
use tokio_util::sync::CancellationToken;

use support::dev_server::DevServer;

type Calls = Arc<Mutex<BTreeMap<&'static str, u32>>>;

fn echo() -> AgentTool {
    AgentTool::dynamic(
        "echo",
        "Echoes its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |input: ToolCallInput| async move {
            Ok(ToolResult::text(
                input.args["text"].as_str().unwrap_or_default(),
            ))
        },
    )
}

fn script() -> FauxModel {
    FauxModel::new(vec![
        FauxResponse::tool_calls(vec![
            ("c1", "echo", json!({"text": "hi"})),
            ("c2", "echo", json!({"text": "rm"})),
        ]),
        FauxResponse::text("done"),
    ])
}

/// Hooks that count their calls: `before_tool_call` blocks `rm`, `after_tool_call` shouts
/// the echo, the others look only.
fn hooks(calls: &Calls) -> Hooks {
    let count = |calls: &Calls, hook: &'static str| *calls.lock().entry(hook).or_default() += 1;
    let (c1, c2, c3, c4, c5) = (
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
        calls.clone(),
    );
    Hooks::default()
        .before_tool_call(move |ctx, _signal| {
            count(&c1, "before_tool_call");
            let blocked = ctx.args["text"] == "rm";
            async move { Ok(blocked.then(|| BeforeToolCallResult::block("not allowed"))) }
        })
        .after_tool_call(move |ctx, _signal| {
            count(&c2, "after_tool_call");
            let text = ctx.args["text"].as_str().unwrap_or_default().to_uppercase();
            async move {
                Ok(Some(AfterToolCallResult {
                    content: Some(vec![ContentBlock::text(text)]),
                    ..AfterToolCallResult::default()
                }))
            }
        })
        .finish_turn(move |_ctx, _signal| {
            count(&c3, "finish_turn");
            async { Ok(None) }
        })
        .prepare_request(move |_ctx, _signal| {
            count(&c4, "prepare_request");
            async { Ok(None) }
        })
        .transform_context(move |messages, _signal| {
            count(&c5, "transform_context");
            async move { Ok(messages) }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_run_on_the_worker_once_per_call_across_replays() {
    let prompt = Message::user_text("Echo hi, then rm.");
    let local_calls = Calls::default();
    let mut config = AgentLoopConfig::new(support::faux_model());
    config.hooks = hooks(&local_calls);
    let sink = |_e| async {};
    let local_messages = run_agent_loop(
        vec![prompt.clone()],
        AgentContext::new(Vec::new(), vec![echo()]),
        config,
        &sink,
        CancellationToken::new(),
        Arc::new(script()),
    )
    .await
    .expect("the local run");

    let server = DevServer::start();
    let queue = "hooks-on-worker";
    let sessions = support::sessions(&server.address, queue).await;
    let worker_calls = Calls::default();
    let worker_hooks = hooks(&worker_calls);
    let names = HookName::set_in(&worker_hooks);
    let activities =
        AgentActivities::new(Arc::new(script()), vec![echo()]).with_hooks(worker_hooks);
    // No workflow cache: every workflow task replays the history from the start.
    let (_rt, worker) = support::replaying_worker(&server.address, queue, activities).await;
    support::with_worker(worker, async move {
        let input = SessionInput {
            model: support::faux_model(),
            tools: vec![ToolSpec::of(&echo())],
            hooks: names,
            ..SessionInput::default()
        };
        let session = sessions.start("hooked", input).await.expect("started");
        session.prompt(vec![prompt]).await.expect("prompt accepted");
        tokio::time::timeout(Duration::from_secs(60), session.wait_idle(0))
            .await
            .expect("the run ends within 60 s")
            .expect("events");
        let output = session.close().await.expect("closed");
        assert_eq!(
            support::normalized(&output.messages),
            support::normalized(&local_messages)
        );
        let results: Vec<Value> = output
            .messages
            .iter()
            .filter(|m| matches!(m, Message::ToolResult(_)))
            .map(|m| serde_json::to_value(m).expect("serializes"))
            .collect();
        assert_eq!(results[0]["content"][0]["text"], "HI");
        assert_eq!(results[1]["content"][0]["text"], "not allowed");
        assert_eq!(results[1]["isError"], true);
    })
    .await;
    let want: BTreeMap<&str, u32> = [
        ("after_tool_call", 1),
        ("before_tool_call", 2),
        ("finish_turn", 2),
        ("prepare_request", 2),
        ("transform_context", 2),
    ]
    .into_iter()
    .collect();
    assert_eq!(*local_calls.lock(), want, "the local run's hook calls");
    assert_eq!(*worker_calls.lock(), want, "the worker's hook calls");
}
