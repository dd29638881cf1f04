//! What can go wrong with a journal, with the text that says what to do about it.

use std::path::PathBuf;

/// A journal could not be written or read, or holds records this version must not replay.
///
/// ```
/// let e = tern_durable::JournalError::UnsupportedVersion { found: 7, supported: 1 };
/// assert!(e.to_string().contains("version 7"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// A record was written by another format version.
    #[error(
        "journal record has format version {found}, this tern reads version {supported}; \
         recover it with the tern that wrote it, or start a new session"
    )]
    UnsupportedVersion {
        /// The record's `v`.
        found: u64,
        /// The version this build reads and writes.
        supported: u64,
    },
    /// The journal belongs to another transcript (its digest differs).
    #[error(
        "journal is for another transcript (digest {journal}, this transcript has {transcript}); \
         it was not replayed: open the session it was written for"
    )]
    OtherTranscript {
        /// The digest the journal recorded.
        journal: String,
        /// The digest of the transcript it was opened with.
        transcript: String,
    },
    /// A complete record (not the last one) could not be understood.
    #[error("journal {where_} record {index} is damaged ({reason}); the journal was not replayed")]
    Corrupt {
        /// The file or database and session.
        where_: String,
        /// 0-based position among the journal's records.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The session file could not be read or written.
    #[error(transparent)]
    Session(#[from] tern_session::SessionError),
    /// A file could not be read.
    #[error("cannot read journal {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The SQLite database failed.
    #[error(
        "SQLite journal {path}: {source}; check the file is writable and not on a network share"
    )]
    Sqlite {
        /// The database file.
        path: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// A batch of records could not be committed.
    #[error(
        "SQLite journal {path}: commit failed: {reason}; check the disk and the file's permissions"
    )]
    Commit {
        /// The database file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A session limit was already reached: the run was not started.
    #[error(
        "the session's {} budget is spent ({}); raise the limit or start a new session",
        limit.name(),
        spent_of(*limit, spent, budget)
    )]
    BudgetSpent {
        /// The limit.
        limit: crate::Limit,
        /// What the session's runs used.
        spent: crate::Spent,
        /// The session's limits.
        budget: crate::Budget,
    },
    /// The SQLite writer thread is gone (the journal was closed, or a write panicked).
    #[error("SQLite journal {path} is closed; open it again")]
    Closed {
        /// The database file.
        path: String,
    },
}

/// "used N of M" for the limit's quantity.
fn spent_of(limit: crate::Limit, spent: &crate::Spent, budget: &crate::Budget) -> String {
    use crate::Limit as L;
    let show = |used: String, max: Option<String>| {
        format!("used {used} of {}", max.unwrap_or_else(|| "?".into()))
    };
    match limit {
        L::Turns | L::SessionTurns => show(
            spent.turns.to_string(),
            budget.max_turns.map(|m| m.to_string()),
        ),
        L::Tokens | L::SessionTokens => show(
            spent.tokens.to_string(),
            budget.max_tokens.map(|m| m.to_string()),
        ),
        L::Cost | L::SessionCost => show(
            format!("${:.4}", spent.cost),
            budget.max_cost.map(|m| format!("${m}")),
        ),
        L::WallTime | L::SessionWallTime => show(
            format!("{:.1} s", spent.wall_time.as_secs_f64()),
            budget
                .max_wall_time
                .map(|m| format!("{:.1} s", m.as_secs_f64())),
        ),
        L::ToolCalls | L::SessionToolCalls => show(
            spent.tool_calls.to_string(),
            budget.max_tool_calls.map(|m| m.to_string()),
        ),
    }
}
