//! # tern-durable
//!
//! Durable runs on top of the tern agent core, without changing its semantics. Everything
//! the loop gets from outside is a **step** recorded before its effect (intent) and after it
//! (outcome); between steps the loop is deterministic, so recovery re-runs it on the
//! recorded outcomes and goes live at the first step without one.
//!
//! | module | holds |
//! |---|---|
//! | [`record`] | [`Record`] and [`Step`]: the versioned record shapes (`{"v":1,…}`) |
//! | [`journal`] | the [`Journal`] trait, [`SessionFileJournal`] (pi's session file) and [`SqliteJournal`] |
//! | [`run`] | [`DurableRun`]: the model, the tools and decisions asked outside the program as journaled steps, and [`Recovery`] of a cut-off run |
//! | [`replay`](mod@replay) | [`replay()`](replay::replay): re-run a recording offline, report the first [`Divergence`] |
//! | [`budget`] | [`Budget`]: limits of a run and of a session that end a run with a wrap-up turn, the [`Limit`] that did, what runs [`Spent`] |
//! | [`digest`] | [`transcript_digest`], [`context_digest`]: what ties a journal to its transcript |
//! | [`error`] | [`JournalError`] |

#![warn(missing_docs)]

pub mod budget;
pub mod digest;
pub mod error;
pub mod journal;
pub mod record;
pub mod replay;
pub mod run;

pub use budget::{budget_notice, Budget, Budgets, Limit, Scope, Spent};
pub use digest::{context_digest, transcript_digest};
pub use error::JournalError;
pub use journal::{
    Durability, Journal, MemoryJournal, SessionFileJournal, SqliteJournal, SqliteSession,
};
pub use record::{Queue, Record, RunEnd, Step, ToolEnd, FORMAT_VERSION};
pub use replay::{replay, Divergence, ReplayReport};
pub use run::{
    interrupted_text, record_messages, DurableRun, InputProgress, InputStage, RecordedRun, Recovery,
};
