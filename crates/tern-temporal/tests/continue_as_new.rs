//! A long session continues as new (here after a few runs: the dev server is told to suggest
//! it early) and keeps its transcript, its event offsets and its subscribers' view: every
//! run's events reach a follower once, in order, across the new runs of the workflow.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::Message;
use tern_temporal::{AgentActivities, SessionInput};

use support::dev_server::DevServer;

const RUNS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_continues_as_new_with_its_transcript_and_event_offsets() {
    let server = DevServer::start_with_config(&["limit.historyCount.suggestContinueAsNew=30"]);
    let queue = "continue-as-new";
    let sessions = support::sessions(&server.address, queue).await;
    let answers = (0..RUNS)
        .map(|i| FauxResponse::text(&format!("answer {i}")))
        .collect();
    let model = Arc::new(FauxModel::new(answers));
    let (_rt, worker) = support::worker(
        &server.address,
        queue,
        AgentActivities::new(model, Vec::new()),
    )
    .await;
    support::with_worker(worker, async move {
        let input = SessionInput {
            model: support::faux_model(),
            ..SessionInput::default()
        };
        let session = sessions.start("long", input).await.expect("started");
        let mut offset = 0;
        let mut seen: Vec<Value> = Vec::new();
        for i in 0..RUNS {
            let prompt = Message::user_text(format!("question {i}"));
            session.prompt(vec![prompt]).await.expect("prompt accepted");
            let follow = session.follow(offset, |e| seen.push(e.clone()));
            offset = tokio::time::timeout(Duration::from_secs(60), follow)
                .await
                .expect("the run ends within 60 s")
                .expect("events");
        }
        let state = session.state().await.expect("state");
        // The whole transcript, in order, though the workflow started anew.
        let texts: Vec<String> = state
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).expect("serializes").to_string())
            .collect();
        assert_eq!(texts.len(), 2 * RUNS, "{texts:#?}");
        for i in 0..RUNS {
            assert!(
                texts[2 * i].contains(&format!("question {i}")),
                "{texts:#?}"
            );
            assert!(
                texts[2 * i + 1].contains(&format!("answer {i}")),
                "{texts:#?}"
            );
        }
        // The offsets run on: the follower saw every event once.
        assert_eq!(state.event_count, offset);
        assert_eq!(seen.len(), offset);
        let ends = seen.iter().filter(|e| e["type"] == "agent_end").count();
        assert_eq!(ends, RUNS);
        // The log the workflow keeps now starts after what earlier runs of it published:
        // it continued as new.
        let kept = session.events(0).await.expect("events");
        assert!(
            kept.len() < state.event_count,
            "{} of {} events kept: no continue-as-new happened",
            kept.len(),
            state.event_count
        );
        session.close().await.expect("closed");
    })
    .await;
}
