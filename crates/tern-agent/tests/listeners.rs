//! Listeners added or removed while a run emits: a new listener hears the events after the
//! one that added it, a removed one hears none after the one that removed it.

use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::{Agent, AgentEvent, AgentOptions, Subscription};
use tern_ai::faux::{FauxModel, FauxResponse};

fn agent() -> Agent {
    Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![FauxResponse::text("hi")]))),
        ..Default::default()
    })
}

fn kinds(events: &Mutex<Vec<&'static str>>) -> Vec<&'static str> {
    events.lock().clone()
}

#[tokio::test]
async fn a_listener_added_during_a_run_hears_the_events_after_the_one_that_added_it() {
    let agent = agent();
    let late: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let added = Arc::new(Mutex::new(false));
    let (a, l, handle) = (added.clone(), late.clone(), agent.clone());
    agent.subscribe_sync(move |e| {
        if matches!(e, AgentEvent::TurnStart) && !std::mem::replace(&mut *a.lock(), true) {
            let l = l.clone();
            handle.subscribe_sync(move |e| l.lock().push(e.kind()));
        }
    });
    agent.prompt("go").await.unwrap();
    let heard = kinds(&late);
    assert_eq!(heard.first(), Some(&"message_start"), "{heard:?}");
    assert_eq!(heard.last(), Some(&"agent_end"), "{heard:?}");
    assert!(!heard.contains(&"turn_start"), "{heard:?}");
}

#[tokio::test]
async fn a_listener_removed_during_a_run_hears_nothing_after() {
    let agent = agent();
    let heard: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let subscription: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let (h, s) = (heard.clone(), subscription.clone());
    *subscription.lock() = Some(agent.subscribe_sync(move |e| {
        h.lock().push(e.kind());
        if matches!(e, AgentEvent::TurnStart) {
            if let Some(s) = s.lock().take() {
                s.unsubscribe();
            }
        }
    }));
    // A second listener keeps hearing everything.
    let all: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let a = all.clone();
    agent.subscribe_sync(move |e| a.lock().push(e.kind()));
    agent.prompt("go").await.unwrap();
    assert_eq!(kinds(&heard), ["agent_start", "turn_start"]);
    assert_eq!(kinds(&all).last(), Some(&"agent_end"));
    assert!(kinds(&all).len() > 4);
}

/// An agent answering "hello world" one character a delta, and a listener that records the
/// deltas it hears as the text each one carries.
fn streaming_agent() -> Agent {
    let model = FauxModel::new(vec![FauxResponse::text("hello world")])
        .streaming(1, std::time::Duration::ZERO);
    Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(model)),
        ..Default::default()
    })
}

fn delta_text(e: &AgentEvent) -> Option<String> {
    match e {
        AgentEvent::MessageUpdate {
            assistant_message_event: tern_ai::AssistantMessageEvent::TextDelta { delta, .. },
        } => Some(delta.to_string()),
        _ => None,
    }
}

#[tokio::test]
async fn listeners_added_and_removed_between_two_deltas_hear_exactly_the_deltas_after() {
    let agent = streaming_agent();
    let late: Arc<Mutex<Vec<String>>> = Arc::default();
    let early: Arc<Mutex<Vec<String>>> = Arc::default();
    let subscription: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let (e, s) = (early.clone(), subscription.clone());
    *subscription.lock() = Some(agent.subscribe_sync(move |ev| {
        if let Some(d) = delta_text(ev) {
            e.lock().push(d);
        }
    }));
    let (l, handle, seen) = (late.clone(), agent.clone(), Arc::new(Mutex::new(0)));
    agent.subscribe_sync(move |ev| {
        if delta_text(ev).is_none() {
            return;
        }
        let mut n = seen.lock();
        *n += 1;
        // At the third delta: the first listener goes, a new one comes.
        if *n == 3 {
            if let Some(s) = s.lock().take() {
                s.unsubscribe();
            }
            let l = l.clone();
            handle.subscribe_sync(move |ev| {
                if let Some(d) = delta_text(ev) {
                    l.lock().push(d);
                }
            });
        }
    });
    agent.prompt("go").await.unwrap();
    // The first listener is called before the one that removes it, so it hears the third.
    assert_eq!(early.lock().concat(), "hel");
    assert_eq!(late.lock().concat(), "lo world");
}

#[tokio::test]
async fn the_state_streams_the_partial_text_at_every_delta() {
    let agent = streaming_agent();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s, handle) = (seen.clone(), agent.clone());
    agent.subscribe_sync(move |ev| {
        if delta_text(ev).is_some() {
            let streaming = handle.state().streaming_message;
            let text = match streaming {
                Some(tern_ai::Message::Assistant(a)) => a.text(),
                other => format!("not an assistant message: {other:?}"),
            };
            s.lock().push(text);
        }
    });
    agent.prompt("go").await.unwrap();
    let seen = seen.lock();
    assert_eq!(seen.len(), "hello world".len());
    // Pre-filled: every delta's partial is the whole text already.
    assert!(seen.iter().all(|t| t == "hello world"), "{seen:?}");
    assert!(agent.state().streaming_message.is_none());
}

/// An agent whose model calls `echo` once, then answers: two turns, so a `turn_end` and a
/// `turn_start` follow each other between the turns.
fn two_turn_agent() -> Agent {
    let echo = tern_agent::AgentTool::dynamic(
        "echo",
        "Echo.",
        serde_json::json!({"type": "object", "properties": {}}),
        |_| async { Ok(tern_agent::ToolResult::text("echoed")) },
    );
    Agent::builder(
        tern_ai::Model::default(),
        FauxModel::new(vec![
            FauxResponse::tool_call("c1", "echo", serde_json::json!({})),
            FauxResponse::text("done"),
        ]),
    )
    .tool(echo)
    .build()
}

// `turn_start`, `turn_end` and `agent_start` change nothing in the state: the listeners they
// reach must still be the ones subscribed when each is emitted.
#[tokio::test]
async fn listeners_changed_at_a_turn_boundary_hear_exactly_the_events_after() {
    let agent = two_turn_agent();
    let late: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let early: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let subscription: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let e = early.clone();
    *subscription.lock() = Some(agent.subscribe_sync(move |ev| e.lock().push(ev.kind())));
    let (l, s, handle) = (late.clone(), subscription.clone(), agent.clone());
    let turn_ends = Arc::new(Mutex::new(0));
    agent.subscribe_sync(move |ev| {
        if matches!(ev, AgentEvent::TurnEnd { .. }) {
            let mut n = turn_ends.lock();
            *n += 1;
            if *n == 1 {
                // At the first turn's end: one listener in, the other out.
                let l = l.clone();
                handle.subscribe_sync(move |ev| l.lock().push(ev.kind()));
                if let Some(s) = s.lock().take() {
                    s.unsubscribe();
                }
            }
        }
    });
    agent.prompt("go").await.unwrap();
    let (early, late) = (kinds(&early), kinds(&late));
    assert_eq!(early.last(), Some(&"turn_end"), "{early:?}");
    assert_eq!(early.iter().filter(|k| **k == "turn_start").count(), 1);
    assert_eq!(late.first(), Some(&"turn_start"), "{late:?}");
    assert_eq!(late.last(), Some(&"agent_end"), "{late:?}");
    assert_eq!(late.iter().filter(|k| **k == "turn_end").count(), 1);
}
