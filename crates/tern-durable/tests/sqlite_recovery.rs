//! Crash recovery against the SQLite journal: fifty agents in one process share one
//! database; each was cut at a different record of the same scripted run, and all recover
//! at once. Their transcripts come from the journal alone (replayed), not from a file.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use tern_ai::Message;
use tern_durable::{Durability, DurableRun, Journal, Recovery, RunEnd, SqliteJournal, Step};

const AGENTS: usize = 50;

async fn reference(db: &SqliteJournal, dir: &Path) -> Vec<Message> {
    let journal: Arc<dyn Journal> = Arc::new(db.session("reference"));
    let (run, prompt) = start_go(journal).await;
    let server = scripted_server();
    let a = agent(&run, &server, dir, Vec::new());
    let _inputs = run.attach(&a);
    let _steering = steer_during_first_tool(&run, &a, Default::default());
    let outcome = a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");
    assert_eq!(server.sent(), 3);
    outcome.messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_agents_sharing_one_database_recover_from_fifty_kill_points() {
    let base = tempfile::tempdir().expect("dir");
    let db = SqliteJournal::open(&base.path().join("runs.db"), Durability::Fsync).expect("db");
    let ref_dir = base.path().join("reference");
    std::fs::create_dir_all(&ref_dir).expect("dir");
    let expected = shape(&reference(&db, &ref_dir).await);
    let without_steer: Vec<_> = expected.iter().filter(|m| !is_steer(m)).cloned().collect();
    let records = db.session("reference").records().expect("records");
    // Kill points spread over every record boundary after the run's start.
    let mut tasks = Vec::new();
    for k in 0..AGENTS {
        // From just the start to everything but the finish.
        let cut = 1 + k * (records.len() - 2) / (AGENTS - 1);
        let prefix = records[..cut].to_vec();
        let session = db.session(&format!("agent-{k:02}"));
        for r in &prefix {
            session.append(r).await.expect("copy");
        }
        let dir = base.path().join(format!("agent-{k:02}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let intent = |id: &str| {
            prefix.iter().any(
                |r| matches!(&r.step, Step::ToolIntent { tool_call_id, .. } if tool_call_id == id),
            )
        };
        effects_before_kill(&dir, intent);
        let completed = prefix
            .iter()
            .filter(|r| matches!(r.step, Step::ModelOutcome { .. }))
            .count();
        let accepted = prefix
            .iter()
            .any(|r| matches!(r.step, Step::InputAccepted { .. }));
        tasks.push(tokio::spawn(async move {
            let journal: Arc<dyn Journal> = Arc::new(session);
            let server = scripted_server();
            let messages = match DurableRun::recover(journal, &[]).expect("recoverable") {
                Recovery::NothingInterrupted => panic!("agent {k}: the cut run is interrupted"),
                Recovery::Interrupted { run, prompt, .. } => {
                    let a = agent(&run, &server, &dir, Vec::new());
                    let _inputs = run.attach(&a);
                    let outcome = a.prompt_messages(prompt).await.expect("recovered");
                    run.finish(RunEnd::Completed).await.expect("finish");
                    outcome.messages
                }
            };
            (k, dir, messages, server.sent(), completed, accepted)
        }));
    }
    let mut passed = 0;
    for t in tasks {
        let (k, dir, messages, sent, completed, accepted) = t.await.expect("agent task");
        assert_eq!(
            sent,
            3 - completed,
            "agent {k}: completed requests are not re-sent"
        );
        assert_eq!(effects(&dir, "never_count"), 2, "agent {k}: never doubled");
        assert!((1..=2).contains(&effects(&dir, "safe_count")), "agent {k}");
        let got = shape(&messages);
        assert_eq!(
            got.iter().filter(|m| is_steer(m)).count(),
            usize::from(accepted),
            "agent {k}: an accepted steer is delivered exactly once"
        );
        let want = if accepted { &expected } else { &without_steer };
        if let Err(e) = same_except_unknown(&got, want) {
            panic!("agent {k}: {e}");
        }
        passed += 1;
    }
    println!("{passed} passed, 0 failed");
}
