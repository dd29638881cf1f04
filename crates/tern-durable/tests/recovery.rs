//! Crash recovery on real session files: a scripted run is cut at every record boundary
//! (and mid-line), as a kill at that moment would leave the file, then recovered; the
//! result must match the uninterrupted run.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use parking_lot::Mutex;
use tern_durable::{
    record_messages, Durability, DurableRun, Journal, Recovery, RunEnd, SessionFileJournal,
};
use tern_session::{Recorder, SessionFile};

async fn uninterrupted(dir: &Path) -> (PathBuf, usize) {
    let path = dir.join("s.jsonl");
    let recorder = Arc::new(Mutex::new(Recorder::new(SessionFile::create_at(
        &path,
        Path::new("/p"),
    ))));
    let journal: Arc<dyn Journal> =
        Arc::new(SessionFileJournal::new(recorder.clone(), Durability::Fsync));
    let (run, prompt) = start_go(journal).await;
    let server = scripted_server();
    let a = agent(&run, &server, dir, Vec::new());
    let _rec = record_messages(&recorder, &a, 0);
    let _inputs = run.attach(&a);
    // The host steers once, while the first tool runs.
    let _steering = steer_during_first_tool(&run, &a, Default::default());
    a.prompt_messages(prompt).await.expect("run");
    run.finish(RunEnd::Completed).await.expect("finish");
    (path, server.sent())
}

/// Recovers the session at `path`; returns the requests sent while recovering.
async fn recover(path: &Path, dir: &Path) -> usize {
    let loaded = tern_session::load(path).expect("load");
    let recorder = Arc::new(Mutex::new(Recorder::new(SessionFile::resume(
        path,
        &loaded,
        Path::new("/p"),
    ))));
    let journal: Arc<dyn Journal> =
        Arc::new(SessionFileJournal::new(recorder.clone(), Durability::Fsync));
    let server = scripted_server();
    match DurableRun::recover(journal, &loaded.messages).expect("recoverable") {
        Recovery::NothingInterrupted => {}
        Recovery::Interrupted {
            run,
            prompt,
            transcript_length,
            ..
        } => {
            let before = loaded.messages[..transcript_length].to_vec();
            let a = agent(&run, &server, dir, before);
            let _rec = record_messages(&recorder, &a, loaded.messages.len() - transcript_length);
            let _inputs = run.attach(&a);
            a.prompt_messages(prompt).await.expect("recovered run");
            run.finish(RunEnd::Completed).await.expect("finish");
        }
    }
    server.sent()
}

fn outcomes_in(text: &str) -> usize {
    text.matches(r#""type":"model_outcome""#).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_at_any_point_recovers_to_the_uninterrupted_transcript() {
    let base = tempfile::tempdir().expect("dir");
    let (path, requests) = uninterrupted(base.path()).await;
    assert_eq!(requests, 3);
    let reference = shape(&tern_session::load(&path).expect("load").messages);
    assert_eq!(
        reference.len(),
        8,
        "prompt, 3 answers, 3 results, the steer"
    );
    assert_eq!(reference.iter().filter(|m| is_steer(m)).count(), 1);
    let without_steer: Vec<_> = reference.iter().filter(|m| !is_steer(m)).cloned().collect();
    let full = std::fs::read_to_string(&path).expect("read");

    // Every line boundary, and a cut inside every line: at least 20 kill points.
    let mut cuts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in full.split_inclusive('\n') {
        cuts.push(at + line.len() / 2);
        at += line.len();
        cuts.push(at);
    }
    assert!(cuts.len() >= 20, "{} kill points", cuts.len());
    let mut passed = 0;
    for (k, cut) in cuts.iter().enumerate() {
        let dir = base.path().join(format!("kill-{k}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("s.jsonl");
        let prefix = &full[..*cut];
        std::fs::write(&p, prefix).expect("cut");
        let complete = &prefix[..prefix.rfind('\n').map_or(0, |i| i + 1)];
        effects_before_kill(&dir, |id| {
            complete.contains(&format!(r#""toolCallId":"{id}""#))
        });
        let completed = outcomes_in(prefix.rsplit_once('\n').map_or("", |(done, _)| done));
        let started = prefix.matches('\n').count() >= 2;
        let sent = if !started {
            // Not even the run's start reached the disk: there is nothing to recover.
            0
        } else {
            recover(&p, &dir).await
        };
        if started {
            assert_eq!(
                sent,
                3 - completed,
                "kill {k}: only requests without a recorded outcome are sent again"
            );
            // Each `never` call took effect exactly once: before the kill, or live after it.
            assert_eq!(effects(&dir, "never_count"), 2, "kill {k}");
            let safe = effects(&dir, "safe_count");
            assert!((1..=2).contains(&safe), "kill {k}: safe ran {safe} times");
            let got = tern_session::load(&p).expect("load");
            let got = shape(&got.messages);
            // A steer accepted before the kill is delivered exactly once; one not yet
            // accepted was never acknowledged to the host.
            let accepted =
                prefix[..prefix.rfind('\n').unwrap_or(0)].contains(r#""type":"input_accepted""#);
            let steers = got.iter().filter(|m| is_steer(m)).count();
            assert_eq!(steers, usize::from(accepted), "kill {k}: steers delivered");
            let expected = if accepted { &reference } else { &without_steer };
            if let Err(e) = same_except_unknown(&got, expected) {
                panic!("kill {k}: {e}");
            }
            let text = std::fs::read_to_string(&p).expect("read");
            assert!(text.contains(r#""type":"run_finished""#), "kill {k}");
        }
        passed += 1;
    }
    println!("{passed} passed, 0 failed");
}
