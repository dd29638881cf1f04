//! The SQLite journal: one database (WAL mode) holding the step records of many sessions.
//!
//! - **[`Durability::Fsync`]**: all appends of one [`SqliteJournal`] go to one writer thread,
//!   which commits whatever has queued up as one transaction, one fsync for the whole group
//!   (group commit), so fifty agents cost about one agent's fsyncs.
//! - **[`Durability::Buffered`]**: an append is one `write` to this process's side log, folded
//!   into the database in large transactions by a background thread (`side_log.rs`): a SQLite
//!   commit per record would cost several times the step it records.
//!
//! Other processes may write the same database: SQLite's locking serializes them (a busy
//! writer is waited for), and each process folds the side logs of processes that died.

mod side_log;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use self::side_log::SideLog;
use super::{Durability, Journal};
use crate::record::RecordRejection;
use crate::{JournalError, Record, FORMAT_VERSION};

/// Most appends one transaction takes (bounds one commit's latency).
const MAX_GROUP: usize = 512;

struct Append {
    session: Arc<str>,
    record: String,
    done: oneshot::Sender<Result<(), String>>,
}

/// Where appends go.
enum Writer {
    /// The group-commit thread ([`Durability::Fsync`]).
    Group(Mutex<mpsc::Sender<Append>>),
    /// This process's side log ([`Durability::Buffered`]).
    SideLog(Arc<SideLog>),
}

struct Shared {
    path: String,
    file: std::path::PathBuf,
    writer: Writer,
    /// Reads, and folds the side logs of dead processes.
    reader: Mutex<Connection>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Writer::SideLog(log) = &self.writer {
            log.close();
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
         CREATE INDEX IF NOT EXISTS tern_steps_by_session ON tern_steps (session, seq);
         CREATE TABLE IF NOT EXISTS tern_side_logs (
             name TEXT PRIMARY KEY,
             folded INTEGER NOT NULL
         );",
    )?;
    Ok(c)
}

impl SqliteJournal {
    /// Opens (or creates) the database at `path`, folds the side logs of processes that died
    /// (see [`Durability::Buffered`]), and starts its writer.
    pub fn open(path: &std::path::Path, durability: Durability) -> Result<Self, JournalError> {
        let name = path.display().to_string();
        let err = |source| JournalError::Sqlite {
            path: name.clone(),
            source,
        };
        let commit_error = |reason: String| JournalError::Commit {
            path: name.clone(),
            reason,
        };
        let mut reader = connect(path, durability).map_err(err)?;
        side_log::fold_orphans(path, &mut reader).map_err(commit_error)?;
        let writer = connect(path, durability).map_err(err)?;
        let writer = match durability {
            Durability::Fsync => {
                let (tx, rx) = mpsc::channel::<Append>();
                std::thread::Builder::new()
                    .name("tern-sqlite-journal".into())
                    .spawn(move || write_groups(writer, rx))
                    .map_err(|e| commit_error(format!("cannot start the writer thread: {e}")))?;
                Writer::Group(Mutex::new(tx))
            }
            Durability::Buffered => {
                Writer::SideLog(SideLog::open(path, writer).map_err(commit_error)?)
            }
        };
        Ok(SqliteJournal {
            shared: Arc::new(Shared {
                path: name,
                file: path.to_path_buf(),
                writer,
                reader: Mutex::new(reader),
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
        let c = self.caught_up()?;
        let mut q = c
            .prepare("SELECT DISTINCT session FROM tern_steps ORDER BY session")
            .map_err(|e| self.sqlite_error(e))?;
        let rows = q
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.sqlite_error(e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| self.sqlite_error(e))
    }

    /// The reading connection, once every record appended so far is in the database: this
    /// journal's side log and those of dead processes folded.
    fn caught_up(&self) -> Result<parking_lot::MutexGuard<'_, Connection>, JournalError> {
        let commit_error = |reason: String| JournalError::Commit {
            path: self.shared.path.clone(),
            reason,
        };
        if let Writer::SideLog(log) = &self.shared.writer {
            log.fold().map_err(commit_error)?;
        }
        let mut c = self.shared.reader.lock();
        side_log::fold_orphans(&self.shared.file, &mut c).map_err(commit_error)?;
        Ok(c)
    }

    fn sqlite_error(&self, source: rusqlite::Error) -> JournalError {
        JournalError::Sqlite {
            path: self.shared.path.clone(),
            source,
        }
    }
}

/// The writer thread: takes what has queued, commits it as one transaction, answers each.
fn write_groups(mut c: Connection, rx: mpsc::Receiver<Append>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(a) => group.push(a),
                Err(_) => break,
            }
        }
        let result = commit(&mut c, &group).map_err(|e| e.to_string());
        for a in group {
            // A caller that stopped waiting does not care.
            let _ = a.done.send(result.clone());
        }
    }
}

fn commit(c: &mut Connection, group: &[Append]) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO tern_steps (session, record) VALUES (?1, ?2)")?;
        for a in group {
            insert.execute(params![&*a.session, a.record])?;
        }
    }
    tx.commit()
}

impl SqliteSession {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.session
    }

    fn closed(&self) -> JournalError {
        JournalError::Closed {
            path: self.db.shared.path.clone(),
        }
    }
}

impl Journal for SqliteSession {
    fn append<'a>(&'a self, record: &'a Record) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let commit_error = |reason| JournalError::Commit {
                path: self.db.shared.path.clone(),
                reason,
            };
            let tx = match &self.db.shared.writer {
                Writer::SideLog(log) => {
                    return log.append(&self.session, record).map_err(commit_error)
                }
                Writer::Group(tx) => tx,
            };
            let text = serde_json::to_string(record)
                .map_err(|e| commit_error(format!("record does not serialize: {e}")))?;
            let (done, wait) = oneshot::channel();
            let sent = tx
                .lock()
                .send(Append {
                    session: self.session.clone(),
                    record: text,
                    done,
                })
                .is_ok();
            if !sent {
                return Err(self.closed());
            }
            match wait.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(reason)) => Err(commit_error(reason)),
                Err(_) => Err(self.closed()),
            }
        })
    }

    fn records(&self) -> Result<Vec<Record>, JournalError> {
        let c = self.db.caught_up()?;
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
