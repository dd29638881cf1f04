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
