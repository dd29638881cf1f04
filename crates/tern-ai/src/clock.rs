//! The one place tern reads wall-clock time, so tests and replays can reason about it.
//! Code that stamps journals and session files asks an
//! [`Environment`](crate::environment::Environment) instead, whose default clock is this one.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (the reference's `Date.now()`).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
