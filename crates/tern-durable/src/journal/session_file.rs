//! The session-file journal: step records are pi `custom` entries with
//! `customType: "tern.step"` and the record as `data`. Pi keeps custom entries in the tree
//! and out of the model's context, so pi still reads a durable tern session.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::Value;
use tern_session::{Recorder, SessionFile};

use super::{Durability, Journal};
use crate::record::RecordRejection;
use crate::{JournalError, Record, FORMAT_VERSION};

/// The `customType` of tern's step records.
pub const STEP_ENTRY_TYPE: &str = "tern.step";

/// A journal inside a session file, sharing the file (and its entry chain) with the
/// [`Recorder`] that writes the messages.
#[derive(Clone)]
pub struct SessionFileJournal {
    recorder: Arc<Mutex<Recorder>>,
    durability: Durability,
}

impl std::fmt::Debug for SessionFileJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFileJournal")
            .field("path", &self.path())
            .field("durability", &self.durability)
            .finish()
    }
}

impl SessionFileJournal {
    /// A journal writing through `recorder`'s session (the usual case: one file holds the
    /// messages and the steps).
    pub fn new(recorder: Arc<Mutex<Recorder>>, durability: Durability) -> Self {
        SessionFileJournal {
            recorder,
            durability,
        }
    }

    /// A journal in a new session file at `path` with its own recorder.
    pub fn create(path: &Path, cwd: &Path, durability: Durability) -> Self {
        let session = SessionFile::create_at(path, cwd);
        Self::new(Arc::new(Mutex::new(Recorder::new(session))), durability)
    }

    /// The recorder the journal writes through.
    pub fn recorder(&self) -> &Arc<Mutex<Recorder>> {
        &self.recorder
    }

    /// The session file, if the session is on disk.
    pub fn path(&self) -> Option<PathBuf> {
        self.recorder.lock().session().path().map(Path::to_path_buf)
    }

    fn append_now(&self, record: &Record) -> Result<(), JournalError> {
        // Serialized straight into the entry's line: a `Value` or a `String` of the record
        // first cost as much as the rest of the append.
        let sync = self.durability == Durability::Fsync;
        self.recorder
            .lock()
            .session_mut()
            .append_custom_serialized(STEP_ENTRY_TYPE, record, sync)?;
        Ok(())
    }
}

impl Journal for SessionFileJournal {
    fn append<'a>(&'a self, record: &'a Record) -> BoxFuture<'a, Result<(), JournalError>> {
        // A line and its fsync are a few microseconds to a millisecond: done in place, so the
        // intent is on disk before the caller's effect starts.
        let r = self.append_now(record);
        Box::pin(async move { r })
    }

    fn records(&self) -> Result<Vec<Record>, JournalError> {
        let Some(path) = self.path() else {
            return Ok(Vec::new());
        };
        read_step_records(&path)
    }

    fn describe(&self) -> String {
        match self.path() {
            Some(p) => p.display().to_string(),
            None => "in-memory session".to_string(),
        }
    }
}

/// The step records of a session file, oldest first (a missing file has none).
///
/// A torn last line (a crash mid-write: it does not parse) is ignored; a damaged line before
/// it is an error, because the writer cuts a torn tail before appending, so only the last
/// line can be torn. A last line that parses but lacks its newline is whole: the writer keeps
/// it and completes it before the next append.
pub fn read_step_records(path: &Path) -> Result<Vec<Record>, JournalError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(JournalError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let last_unfinished = i + 1 == lines.len() && !complete;
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            // The writer cuts a last line that does not parse before its next append.
            Err(_) if last_unfinished => break,
            Err(e) => {
                return Err(JournalError::Corrupt {
                    where_: path.display().to_string(),
                    index: out.len(),
                    reason: format!("line {} is not JSON: {e}", i + 1),
                })
            }
        };
        if value.get("type").and_then(Value::as_str) != Some("custom")
            || value.get("customType").and_then(Value::as_str) != Some(STEP_ENTRY_TYPE)
        {
            continue;
        }
        let data = value.get("data").cloned().unwrap_or(Value::Null);
        match Record::from_value(data) {
            Ok(r) => out.push(r),
            Err(RecordRejection::Version(found)) => {
                return Err(JournalError::UnsupportedVersion {
                    found,
                    supported: FORMAT_VERSION,
                })
            }
            Err(RecordRejection::Malformed(reason)) => {
                return Err(JournalError::Corrupt {
                    where_: path.display().to_string(),
                    index: out.len(),
                    reason: format!("line {}: {reason}", i + 1),
                })
            }
        }
    }
    Ok(out)
}
