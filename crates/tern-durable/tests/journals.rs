//! The journals on real files: session files pi can still read, SQLite shared by many writers.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::json;
use tern_ai::Message;
use tern_durable::{
    Durability, Journal, JournalError, Queue, Record, SessionFileJournal, SqliteJournal, Step,
};
use tern_session::{Recorder, SessionFile};

fn committed(id: &str) -> Record {
    Record::new(Step::InputCommitted {
        id: id.into(),
        before_request: 0,
    })
}

#[tokio::test]
async fn step_records_share_the_session_file_and_pi_still_reads_its_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.jsonl");
    let recorder = Arc::new(Mutex::new(Recorder::new(SessionFile::create_at(
        &path,
        Path::new("/p"),
    ))));
    let journal = SessionFileJournal::new(recorder.clone(), Durability::Fsync);
    journal
        .append(&Record::new(Step::InputAccepted {
            id: "i1".into(),
            queue: Queue::Prompt,
            message: Message::user_text("hello"),
        }))
        .await
        .expect("intent");
    recorder.lock().record_message(&Message::user_text("hello"));
    journal.append(&committed("i1")).await.expect("outcome");

    let records = journal.records().expect("records");
    assert_eq!(records.len(), 2);
    assert_eq!(records[1], committed("i1"));

    let text = std::fs::read_to_string(&path).expect("file");
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            v["type"].as_str().unwrap_or("?").to_string()
        })
        .collect();
    assert_eq!(kinds, ["session", "custom", "message", "custom"]);
    assert!(text.contains(r#""customType":"tern.step""#));
    // The last entry is a step record; the active branch still holds the message.
    let loaded = tern_session::load(&path).expect("loads");
    assert_eq!(loaded.messages.len(), 1);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[tokio::test]
async fn a_torn_last_record_is_ignored_and_a_whole_one_without_its_newline_is_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.jsonl");
    let journal = SessionFileJournal::create(&path, Path::new("/p"), Durability::Fsync);
    journal.append(&committed("a")).await.expect("a");
    journal.append(&committed("b")).await.expect("b");
    // Cut the last line in half, as a crash during the write would.
    let text = std::fs::read_to_string(&path).expect("read");
    let cut = text.len() - 20;
    std::fs::write(&path, &text[..cut]).expect("cut");
    assert_eq!(journal.records().expect("records"), vec![committed("a")]);

    // A last line that parses but lacks its newline is whole (the session writer keeps it).
    let whole = text.trim_end_matches('\n');
    std::fs::write(&path, whole).expect("no newline");
    assert_eq!(
        journal.records().expect("records"),
        vec![committed("a"), committed("b")]
    );
    // The session file is locked while its writer lives.
    drop(journal);

    let again = SessionFileJournal::new(
        Arc::new(Mutex::new(Recorder::new(SessionFile::resume(
            &path,
            &tern_session::load(&path).expect("load"),
            Path::new("/p"),
        )))),
        Durability::Fsync,
    );
    again.append(&committed("c")).await.expect("c");
    assert_eq!(
        again.records().expect("records"),
        vec![committed("a"), committed("b"), committed("c")]
    );
}

#[tokio::test]
async fn another_version_or_a_damaged_record_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.jsonl");
    let journal = SessionFileJournal::create(&path, Path::new("/p"), Durability::Buffered);
    journal.append(&committed("a")).await.expect("a");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    let future = json!({"type":"custom","id":"x","parentId":null,"customType":"tern.step",
                        "data":{"v":2,"type":"model_intent"}});
    writeln!(f, "{future}").expect("write");
    writeln!(
        f,
        "{}",
        json!({"type":"custom","customType":"other","data":{}})
    )
    .expect("w");
    let err = journal.records().expect_err("refused");
    assert!(
        matches!(
            err,
            JournalError::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("version 2"), "{err}");

    let damaged = dir.path().join("d.jsonl");
    let bad =
        json!({"type":"custom","customType":"tern.step","data":{"v":1,"type":"model_intent"}});
    std::fs::write(&damaged, format!("{{\"type\":\"session\"}}\n{bad}\n")).expect("w");
    let err =
        tern_durable::journal::session_file::read_step_records(&damaged).expect_err("damaged");
    assert!(
        matches!(err, JournalError::Corrupt { index: 0, .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_sessions_write_one_database_concurrently() {
    let dir = tempfile::tempdir().expect("dir");
    let db_path = dir.path().join("runs.db");
    let db = SqliteJournal::open(&db_path, Durability::Fsync).expect("open");
    let mut tasks = Vec::new();
    for a in 0..50 {
        let s = db.session(&format!("agent-{a:02}"));
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                s.append(&committed(&format!("{a}-{i}")))
                    .await
                    .expect("append");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(db.sessions().expect("sessions").len(), 50);
    let seven = db.session("agent-07").records().expect("records");
    let expected: Vec<Record> = (0..20).map(|i| committed(&format!("7-{i}"))).collect();
    assert_eq!(
        seven, expected,
        "each session reads its own records in order"
    );

    // A second handle (as another process would open it) sees the same and can write.
    let other = SqliteJournal::open(&db_path, Durability::Fsync).expect("reopen");
    other
        .session("agent-07")
        .append(&committed("late"))
        .await
        .expect("append");
    assert_eq!(db.session("agent-07").records().expect("r").len(), 21);
}

#[tokio::test]
async fn the_sqlite_journal_refuses_another_version() {
    let dir = tempfile::tempdir().expect("dir");
    let db_path = dir.path().join("runs.db");
    let db = SqliteJournal::open(&db_path, Durability::Buffered).expect("open");
    db.session("s").append(&committed("a")).await.expect("a");
    let c = rusqlite::Connection::open(&db_path).expect("raw");
    c.execute(
        "INSERT INTO tern_steps (session, record) VALUES ('s', '{\"v\":9,\"type\":\"x\"}')",
        [],
    )
    .expect("insert");
    let err = db.session("s").records().expect_err("refused");
    assert!(
        matches!(err, JournalError::UnsupportedVersion { found: 9, .. }),
        "{err}"
    );
}
