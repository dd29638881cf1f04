//! A prompt whose future is dropped mid-run (a timeout, a `select!` that went the other way)
//! cancels the run and leaves the agent idle and usable.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::{Agent, AgentOptions, AgentTool, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_dropped_prompt_cancels_its_run_and_releases_the_agent() {
    // One for the test, one for a waiter: each keeps its permit until it is awaited.
    let started = Arc::new(Notify::new());
    let waiting = Arc::new(Notify::new());
    let seen: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let (s, w, k) = (started.clone(), waiting.clone(), seen.clone());
    // Waits for its signal: only the run's end can finish it.
    let wait = AgentTool::dynamic("wait", "Waits.", json!({"type": "object"}), move |input| {
        *k.lock() = Some(input.signal.clone());
        s.notify_one();
        w.notify_one();
        async move {
            input.signal.cancelled().await;
            Ok(ToolResult::text("cancelled"))
        }
    });
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![
            FauxResponse::tool_call("c1", "wait", json!({})),
            FauxResponse::text("second answer"),
        ]))),
        tools: vec![wait],
        ..Default::default()
    });

    let waiter = {
        let agent = agent.clone();
        tokio::spawn(async move {
            waiting.notified().await;
            agent.wait_for_idle().await;
        })
    };
    let mut prompt = Box::pin(agent.prompt("first"));
    tokio::select! {
        _ = &mut prompt => panic!("the tool never returns on its own"),
        _ = started.notified() => {}
    }
    // The waiter runs and waits for this run.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiter.is_finished(), "the run is still active");
    assert!(agent.is_streaming());
    drop(prompt);
    // The prompt's future is gone: the run is over.
    let signal = seen.lock().clone().expect("the tool ran");
    assert!(signal.is_cancelled(), "the run's signal is cancelled");
    assert!(!agent.is_streaming());
    assert!(agent.signal().is_none(), "no run is active");
    tokio::time::timeout(Duration::from_secs(5), agent.wait_for_idle())
        .await
        .expect("an idle agent has nothing to wait for");

    let outcome = agent.prompt("again").await.expect("the agent is not busy");
    assert_eq!(outcome.messages.len(), 2, "{:?}", outcome.messages);
    let last = agent.state().messages.last().cloned().unwrap();
    assert_eq!(last.as_assistant().unwrap().text(), "second answer");
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("a waiter of the dropped run is woken")
        .unwrap();
}
