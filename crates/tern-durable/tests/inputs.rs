//! Acknowledged input: a steering message accepted while a tool runs is heard as accepted,
//! then committed (placed into the transcript), then seen (sent in the next request), in
//! that order and once each; the stages agree with the journal and with what the model got.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use tern_durable::{InputStage, Journal, MemoryJournal, RunEnd, Step};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_is_accepted_then_committed_then_seen() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(MemoryJournal::default());
    let (run, prompt) = start_go(journal.clone()).await;
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sent_at_seen = Arc::new(Mutex::new(Vec::new()));
    let server = scripted_server();
    {
        let (heard, at, sent) = (heard.clone(), sent_at_seen.clone(), server.clone());
        run.on_input(move |p| {
            heard.lock().unwrap().push((p.id.clone(), p.stage));
            if p.stage == InputStage::Seen {
                at.lock().unwrap().push(sent.sent());
            }
        });
    }
    let a = agent(&run, &server, dir.path(), Vec::new());
    let _inputs = run.attach(&a);
    let id = Arc::new(Mutex::new(None));
    let _steering = steer_during_first_tool(&run, &a, id.clone());
    a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");

    let id = id.lock().unwrap().clone().expect("the steer was accepted");
    let stages: Vec<InputStage> = heard
        .lock()
        .unwrap()
        .iter()
        .filter(|(i, _)| *i == id)
        .map(|(_, s)| *s)
        .collect();
    assert_eq!(
        stages,
        [
            InputStage::Accepted,
            InputStage::Committed,
            InputStage::Seen
        ]
    );
    // Seen when the second request was about to go: one request had been sent before.
    assert_eq!(*sent_at_seen.lock().unwrap(), [1]);
    // The journal holds the acceptance and the placement before request 2 (index 1).
    let steps: Vec<Step> = journal
        .records()
        .expect("records")
        .into_iter()
        .map(|r| r.step)
        .collect();
    assert!(steps
        .iter()
        .any(|s| matches!(s, Step::InputAccepted { id: i, .. } if *i == id)));
    assert!(steps.iter().any(
        |s| matches!(s, Step::InputCommitted { id: i, before_request } if *i == id && *before_request == 1)
    ));
}
