//! The SQLite journal: one database (WAL mode) holding the step records of many sessions.
//!
//! All appends of one [`SqliteJournal`] go to one writer thread, which commits whatever has
//! queued up as one transaction: with [`Durability::Fsync`] that is one fsync for the whole
//! group (group commit), so fifty agents cost about one agent's fsyncs. Other processes may
//! write the same database: SQLite's locking serializes them (a busy writer is waited for).
//!
//! With [`Durability::Buffered`], an **outcome** (a model's final message, a tool's result, an
//! input's placement) is acknowledged as soon as it is queued, and committed with the next
//! record that guards an effect (an intent, an accepted input, a run's start or end), or
//! after [`DEFER_WINDOW`]: one agent's turn is two transactions instead of four, and no
//! effect starts before its intent is committed. What a killed process may lose is the
//! outcomes after its last intent: the request is sent again, a `never` tool's result
//! becomes "outcome unknown", as if the process had died just before recording them.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use super::{Durability, Journal};
use crate::record::RecordRejection;
use crate::{JournalError, Record, Step, FORMAT_VERSION};

/// Most appends one transaction takes (bounds one commit's latency).
const MAX_GROUP: usize = 512;

/// The longest a buffered outcome waits for the record that commits it.
pub const DEFER_WINDOW: Duration = Duration::from_millis(5);

/// Who waits for an append's commit.
enum Done {
    /// An async caller (`append`).
    Task(oneshot::Sender<Result<(), String>>),
    /// A blocking caller (`records`, which first commits what is queued).
    Thread(mpsc::Sender<Result<(), String>>),
    /// Nobody: a buffered outcome, acknowledged when queued.
    Deferred,
}

struct Append {
    session: Arc<str>,
    /// `None`: only a flush (commit what is queued).
    record: Option<String>,
    done: Done,
}

struct Shared {
    path: String,
    durability: Durability,
    writer: Mutex<Option<mpsc::Sender<Append>>>,
    reader: Mutex<Connection>,
    /// The failure of a commit nobody waited for (deferred records only): the next append
    /// reports it.
    unreported: Arc<Mutex<Option<String>>>,
}

impl Drop for Shared {
    /// The last handle going away commits the deferred outcomes still queued, so a run that
    /// ends normally leaves all of them on disk.
    fn drop(&mut self) {
        if let Some(tx) = self.writer.lock().take() {
            let (done, wait) = mpsc::channel();
            let flush = Append {
                session: Arc::from(""),
                record: None,
                done: Done::Thread(done),
            };
            if tx.send(flush).is_ok() {
                let _ = wait.recv();
            }
        }
    }
}

/// A SQLite database of journals; cheap to clone, one per process is enough.
///
/// ```
/// use tern_durable::{Durability, Journal, Record, SqliteJournal, Step};
/// let dir = tempfile::tempdir()?;
/// let db = SqliteJournal::open(&dir.path().join("runs.db"), Durability::Fsync).expect("opens");
/// let a = db.session("session-a");
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// a.append(&Record::new(Step::InputCommitted { id: "i1".into(), before_request: 0 })).await.expect("committed");
/// # });
/// assert_eq!(a.records().expect("readable").len(), 1);
/// assert!(db.session("session-b").records().expect("readable").is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct SqliteJournal {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.shared.path)
            .finish()
    }
}

/// One session's journal in a [`SqliteJournal`].
#[derive(Clone, Debug)]
pub struct SqliteSession {
    db: SqliteJournal,
    session: Arc<str>,
}

fn connect(path: &std::path::Path, durability: Durability) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(30))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    // WAL with FULL syncs each commit; OFF leaves it to the OS (survives a killed process).
    let sync = match durability {
        Durability::Fsync => "FULL",
        Durability::Buffered => "OFF",
    };
    c.pragma_update(None, "synchronous", sync)?;
    // A plain rowid key (no AUTOINCREMENT): rows are never deleted, so ids only grow, and a
    // commit does not also rewrite `sqlite_sequence`. Databases made with AUTOINCREMENT keep it.
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS tern_steps (
             seq INTEGER PRIMARY KEY,
             session TEXT NOT NULL,
             record TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS tern_steps_by_session ON tern_steps (session, seq);",
    )?;
    Ok(c)
}

impl SqliteJournal {
    /// Opens (or creates) the database at `path` and starts its writer thread.
    pub fn open(path: &std::path::Path, durability: Durability) -> Result<Self, JournalError> {
        let name = path.display().to_string();
        let err = |source| JournalError::Sqlite {
            path: name.clone(),
            source,
        };
        let writer = connect(path, durability).map_err(err)?;
        let reader = connect(path, durability).map_err(err)?;
        let (tx, rx) = mpsc::channel::<Append>();
        let unreported = Arc::new(Mutex::new(None));
        let failures = unreported.clone();
        std::thread::Builder::new()
            .name("tern-sqlite-journal".into())
            .spawn(move || write_groups(writer, rx, &failures))
            .map_err(|e| JournalError::Commit {
                path: name.clone(),
                reason: format!("cannot start the writer thread: {e}"),
            })?;
        Ok(SqliteJournal {
            shared: Arc::new(Shared {
                path: name,
                durability,
                writer: Mutex::new(Some(tx)),
                reader: Mutex::new(reader),
                unreported,
            }),
        })
    }

    /// The journal of one session (created by its first append).
    pub fn session(&self, id: &str) -> SqliteSession {
        SqliteSession {
            db: self.clone(),
            session: Arc::from(id),
        }
    }

    /// The ids of the sessions that have records.
    pub fn sessions(&self) -> Result<Vec<String>, JournalError> {
        self.flush()?;
        let c = self.shared.reader.lock();
        let mut q = c
            .prepare("SELECT DISTINCT session FROM tern_steps ORDER BY session")
            .map_err(|e| self.sqlite_error(e))?;
        let rows = q
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.sqlite_error(e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.sqlite_error(e))
    }

    /// Commits what is queued (buffered outcomes included) and waits for it, so a read sees
    /// every acknowledged append.
    fn flush(&self) -> Result<(), JournalError> {
        let (done, wait) = mpsc::channel();
        self.send(Append {
            session: Arc::from(""),
            record: None,
            done: Done::Thread(done),
        })?;
        self.answer(wait.recv().ok())
    }

    fn send(&self, append: Append) -> Result<(), JournalError> {
        let sent = match self.shared.writer.lock().as_ref() {
            Some(tx) => tx.send(append).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.closed())
        }
    }

    /// A commit's answer as the caller's result; `None`: the writer went away.
    fn answer(&self, answer: Option<Result<(), String>>) -> Result<(), JournalError> {
        match answer {
            Some(Ok(())) => Ok(()),
            Some(Err(reason)) => Err(JournalError::Commit {
                path: self.shared.path.clone(),
                reason,
            }),
            None => Err(self.closed()),
        }
    }

    fn closed(&self) -> JournalError {
        JournalError::Closed {
            path: self.shared.path.clone(),
        }
    }

    fn sqlite_error(&self, source: rusqlite::Error) -> JournalError {
        JournalError::Sqlite {
            path: self.shared.path.clone(),
            source,
        }
    }
}

/// The writer thread: takes what has queued, commits it as one transaction, answers each.
/// A group of deferred records only waits up to [`DEFER_WINDOW`] for a record someone waits
/// for; the channel closing commits what is left.
fn write_groups(mut c: Connection, rx: mpsc::Receiver<Append>, unreported: &Mutex<Option<String>>) {
    let mut open = true;
    while open {
        let Ok(first) = rx.recv() else { break };
        let mut group = vec![first];
        let deadline = Instant::now() + DEFER_WINDOW;
        loop {
            while group.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(a) => group.push(a),
                    Err(_) => break,
                }
            }
            let awaited = group.iter().any(|a| !matches!(a.done, Done::Deferred));
            if awaited || group.len() >= MAX_GROUP {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(a) => group.push(a),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let result = commit(&mut c, &group).map_err(|e| e.to_string());
        let mut reported = false;
        for a in group {
            // A caller that stopped waiting does not care.
            match a.done {
                Done::Task(done) => reported |= done.send(result.clone()).is_ok(),
                Done::Thread(done) => reported |= done.send(result.clone()).is_ok(),
                Done::Deferred => {}
            }
        }
        if let (Err(reason), false) = (&result, reported) {
            unreported.lock().get_or_insert_with(|| reason.clone());
        }
    }
}

fn commit(c: &mut Connection, group: &[Append]) -> rusqlite::Result<()> {
    if group.iter().all(|a| a.record.is_none()) {
        return Ok(());
    }
    let tx = c.transaction()?;
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO tern_steps (session, record) VALUES (?1, ?2)")?;
        for a in group {
            if let Some(record) = &a.record {
                insert.execute(params![&*a.session, record])?;
            }
        }
    }
    tx.commit()
}

/// Whether a buffered journal may acknowledge `step` before committing it: an outcome, which
/// no effect waits for; the next intent's commit carries it (see the module's text).
fn may_defer(step: &Step) -> bool {
    matches!(
        step,
        Step::ModelOutcome { .. } | Step::ToolOutcome { .. } | Step::InputCommitted { .. }
    )
}

impl SqliteSession {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.session
    }
}

impl Journal for SqliteSession {
    fn append<'a>(&'a self, record: &'a Record) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let db = &self.db;
            if let Some(reason) = db.shared.unreported.lock().take() {
                return db.answer(Some(Err(reason)));
            }
            let text = serde_json::to_string(record).map_err(|e| JournalError::Commit {
                path: db.shared.path.clone(),
                reason: format!("record does not serialize: {e}"),
            })?;
            let append = |done| Append {
                session: self.session.clone(),
                record: Some(text),
                done,
            };
            if db.shared.durability == Durability::Buffered && may_defer(&record.step) {
                return db.send(append(Done::Deferred));
            }
            let (done, wait) = oneshot::channel();
            db.send(append(Done::Task(done)))?;
            db.answer(wait.await.ok())
        })
    }

    fn records(&self) -> Result<Vec<Record>, JournalError> {
        self.db.flush()?;
        let c = self.db.shared.reader.lock();
        let mut q = c
            .prepare_cached("SELECT record FROM tern_steps WHERE session = ?1 ORDER BY seq")
            .map_err(|e| self.db.sqlite_error(e))?;
        let rows = q
            .query_map([&*self.session], |r| r.get::<_, String>(0))
            .map_err(|e| self.db.sqlite_error(e))?;
        let mut out = Vec::new();
        for (index, row) in rows.enumerate() {
            let text = row.map_err(|e| self.db.sqlite_error(e))?;
            let corrupt = |reason: String| JournalError::Corrupt {
                where_: self.describe(),
                index,
                reason,
            };
            let value = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
            match Record::from_value(value) {
                Ok(r) => out.push(r),
                Err(RecordRejection::Version(found)) => {
                    return Err(JournalError::UnsupportedVersion {
                        found,
                        supported: FORMAT_VERSION,
                    })
                }
                Err(RecordRejection::Malformed(reason)) => return Err(corrupt(reason)),
            }
        }
        Ok(out)
    }

    fn describe(&self) -> String {
        format!("{} (session {})", self.db.shared.path, self.session)
    }
}
