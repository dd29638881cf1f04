//! The [`Journal`] trait: where a run's step records go, and where recovery reads them.
//!
//! | backend | for | module |
//! |---|---|---|
//! | [`SessionFileJournal`] | the embedded default: records are `custom` entries (`customType: "tern.step"`) in pi's session file, so pi still reads it | [`session_file`] |
//! | [`MemoryJournal`] | replays and tests | [`memory`] |
//! | [`SqliteJournal`] | services holding many agents: one database, many sessions, group commit | [`sqlite`] |
//!
//! A journal is append-only. An append returns once the record is as durable as the
//! journal's [`Durability`] says, so a step's effect starts only after its intent is safe.
//! The trait is async so a backend may batch (SQLite's group commit) or call out (a
//! workflow engine's activity history) without blocking the runtime.

pub mod memory;
pub mod session_file;
pub mod sqlite;

use futures::future::BoxFuture;

use crate::{JournalError, Record};

pub use memory::MemoryJournal;
pub use session_file::SessionFileJournal;
pub use sqlite::{SqliteJournal, SqliteSession};

/// How durable an append is when it returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// On stable storage (an fsync, or a group commit's one fsync for many appends).
    #[default]
    Fsync,
    /// Handed to the operating system only: survives a killed process, not a power cut.
    Buffered,
}

/// An append-only log of one session's step records.
///
/// ```
/// use tern_durable::{Journal, Record, SessionFileJournal, Step, Durability};
/// let dir = tempfile::tempdir()?;
/// let journal = SessionFileJournal::create(&dir.path().join("s.jsonl"), std::path::Path::new("/p"), Durability::Fsync);
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// journal.append(&Record::new(Step::InputCommitted { id: "i1".into(), before_request: 0 })).await.expect("written");
/// # });
/// assert_eq!(journal.records().expect("readable").len(), 1);
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait Journal: Send + Sync {
    /// Appends a record; resolves when it is as durable as the journal promises.
    fn append<'a>(&'a self, record: &'a Record) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Every record of the session, oldest first. A torn last record is left out; a record
    /// of another format version, or a damaged one before the last, is an error.
    fn records(&self) -> Result<Vec<Record>, JournalError>;

    /// Where the records live, for messages.
    fn describe(&self) -> String;
}
