//! A panic in a hook or a listener fails the run with a message; the agent stays usable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tern_agent::{Agent, AgentEvent, AgentOptions, Hooks};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::StopReason;

#[tokio::test]
async fn a_panicking_hook_fails_the_run_and_the_agent_recovers() {
    let armed = Arc::new(AtomicBool::new(true));
    let a = armed.clone();
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![
            FauxResponse::text("one"),
            FauxResponse::text("two"),
        ]))),
        hooks: Hooks::default().finish_turn(move |_turn, _signal| {
            let a = a.clone();
            async move {
                if a.swap(false, Ordering::SeqCst) {
                    panic!("hook exploded");
                }
                Ok(None)
            }
        }),
        ..Default::default()
    });
    let ends = Arc::new(std::sync::Mutex::new(0));
    let e = ends.clone();
    agent.subscribe_sync(move |ev| {
        if matches!(ev, AgentEvent::AgentEnd { .. }) {
            *e.lock().unwrap() += 1;
        }
    });

    agent.prompt("first").await.unwrap();
    assert!(!agent.is_streaming());
    let error = agent.error_message().unwrap_or_default();
    assert!(error.contains("Run panicked: hook exploded"), "{error}");
    let last = agent.state().messages.last().cloned().unwrap();
    assert_eq!(last.as_assistant().unwrap().stop_reason, StopReason::Error);
    assert_eq!(
        *ends.lock().unwrap(),
        1,
        "the failure still ends with agent_end"
    );

    agent.prompt("second").await.unwrap();
    assert_eq!(agent.error_message(), None);
    let last = agent.state().messages.last().cloned().unwrap();
    assert_eq!(last.as_assistant().unwrap().text(), "two");
}

#[tokio::test]
async fn a_panicking_listener_fails_the_run() {
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![FauxResponse::text("hi")]))),
        ..Default::default()
    });
    let armed = Arc::new(AtomicBool::new(true));
    agent.subscribe_sync(move |ev| {
        if matches!(ev, AgentEvent::TurnStart) && armed.swap(false, Ordering::SeqCst) {
            panic!("listener exploded");
        }
    });
    agent.prompt("x").await.unwrap();
    assert!(!agent.is_streaming());
    assert!(agent
        .error_message()
        .unwrap_or_default()
        .contains("listener exploded"));
}
