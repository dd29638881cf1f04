//! Compaction (pi's `core/compaction` and the parts of `agent-session` that decide when):
//! the older part of the transcript is summarized by the model and replaced by the summary,
//! and a `compaction` entry records it in the session file.
//!
//! | module | holds |
//! |---|---|
//! | [`settings`] | [`Settings`]: enabled, reserve tokens, keep-recent tokens (pi's defaults) |
//! | [`estimate`] | pi's token estimates |
//! | [`prepare`](mod@prepare) | the cut point: what is summarized, what is kept |
//! | [`files`] | files read and modified, carried across compactions |
//! | [`prompts`] | pi's summarization prompts |
//! | [`summary`] | the summary request and its serialized conversation |
//! | [`compactor`] | a compaction itself (plan, summary, entry, new transcript), and the check between two turns |
//! | [`run`] | [`Runtime::compact`](crate::runtime::Runtime::compact) and the automatic checks around a run |

pub mod compactor;
pub mod estimate;
pub mod files;
pub mod prepare;
pub mod prompts;
pub mod run;
pub mod settings;
pub mod summary;

pub use prepare::{Nothing, Previous};
pub use settings::Settings;

use serde_json::{json, Value};

/// Why a compaction runs (pi's `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `/compact` or RPC `compact`.
    Manual,
    /// The context crossed the threshold.
    Threshold,
    /// The provider said the context overflowed.
    Overflow,
}

impl Reason {
    /// pi's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Manual => "manual",
            Reason::Threshold => "threshold",
            Reason::Overflow => "overflow",
        }
    }
}

/// What a compaction did (pi's `CompactionResult`).
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The summary written.
    pub summary: String,
    /// The first kept entry.
    pub first_kept_entry_id: String,
    /// The estimated context before.
    pub tokens_before: u64,
    /// The estimated context after.
    pub estimated_tokens_after: u64,
    /// The summary requests' usage.
    pub usage: tern_ai::Usage,
    /// The files read and modified.
    pub details: Value,
}

impl Outcome {
    /// pi's JSON (`compaction_end.result`, RPC `compact`'s `data`).
    pub fn to_json(&self) -> Value {
        json!({
            "summary": self.summary,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "estimatedTokensAfter": self.estimated_tokens_after,
            "usage": self.usage,
            "details": self.details,
        })
    }
}

/// Why a compaction did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactError {
    /// There is nothing to compact.
    Nothing(Nothing),
    /// The session's entries do not cover the transcript (a message could not be written),
    /// so no entry can be named as the first kept one.
    Untracked,
    /// The summary request failed (pi's message: "Summarization failed: ...").
    Failed(String),
}

impl std::fmt::Display for CompactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompactError::Nothing(n) => write!(f, "{n}"),
            CompactError::Untracked => f.write_str(
                "the session file does not hold every message of the transcript (a write \
                 failed); start a new session to compact",
            ),
            CompactError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CompactError {}

/// pi's `compaction_start` event.
pub fn start_event(reason: Reason) -> Value {
    json!({"type": "compaction_start", "reason": reason.as_str()})
}

/// pi's `compaction_end` event: the result, or the error message.
pub fn end_event(reason: Reason, result: Result<&Outcome, &str>, will_retry: bool) -> Value {
    match result {
        Ok(o) => json!({"type": "compaction_end", "reason": reason.as_str(),
                        "result": o.to_json(), "aborted": false, "willRetry": will_retry}),
        Err(m) => json!({"type": "compaction_end", "reason": reason.as_str(),
                         "aborted": false, "willRetry": false, "errorMessage": m}),
    }
}
