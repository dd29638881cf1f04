//! A journal in memory: for replays (nothing they write needs to last) and tests.

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::Journal;
use crate::{JournalError, Record};

/// Records kept in a vector.
///
/// ```
/// use tern_durable::{Journal, MemoryJournal, Record, Step};
/// let j = MemoryJournal::new(vec![Record::new(Step::InputReturned { id: "i".into() })]);
/// assert_eq!(j.records().unwrap().len(), 1);
/// ```
#[derive(Debug, Default)]
pub struct MemoryJournal {
    records: Mutex<Vec<Record>>,
}

impl MemoryJournal {
    /// A journal holding `records`.
    pub fn new(records: Vec<Record>) -> Self {
        MemoryJournal {
            records: Mutex::new(records),
        }
    }
}

impl Journal for MemoryJournal {
    fn append<'a>(&'a self, record: &'a Record) -> BoxFuture<'a, Result<(), JournalError>> {
        self.records.lock().push(record.clone());
        Box::pin(async { Ok(()) })
    }

    fn records(&self) -> Result<Vec<Record>, JournalError> {
        Ok(self.records.lock().clone())
    }

    fn describe(&self) -> String {
        "in-memory journal".to_string()
    }
}
