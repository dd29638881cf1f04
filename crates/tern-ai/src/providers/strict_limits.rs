//! Claude's strict-tool limits (pi-ai's `strict-tool-limits.js`), shared by the Anthropic and
//! Bedrock APIs, which run the same limits: a request whose strict tools exceed them is
//! rejected with one of [`LIMIT_MESSAGES`]; the run then sends its `prefer` strict tools
//! non-strict and tries once more, and remembers the session so that its later requests send
//! them non-strict at once (the tool set rarely changes between turns: trying strict again
//! would only repeat the rejection, and going back to strict later would rewrite the tool
//! definitions and miss the prompt cache).
//!
//! The memory holds at most [`MAX_SESSIONS`] sessions, the oldest dropped first (a dropped
//! session pays one more rejection); [`cleanup_session_resources`] frees a session's entry
//! when the session ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use serde_json::json;

use crate::message::AssistantMessage;

/// The messages Claude rejects too many or too complex strict tools with (observed limits:
/// 20 strict tools, and 16 optional or union-typed parameters across all strict tools).
pub(crate) const LIMIT_MESSAGES: [&str; 3] = [
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];

/// The most sessions remembered.
pub const MAX_SESSIONS: usize = 10_000;

/// Whether a provider error message says the request's strict tools exceed Claude's limits.
pub(crate) fn is_limit_message(message: &str) -> bool {
    LIMIT_MESSAGES.iter().any(|m| message.contains(m))
}

/// The sessions over the limits, in the order they were first recorded.
#[derive(Default)]
struct Sessions {
    order: BTreeMap<u64, String>,
    by_id: HashMap<String, u64>,
    next: u64,
}

impl Sessions {
    /// Adds `id` (a known one keeps its place), then drops the oldest beyond `cap`.
    fn mark(&mut self, id: &str, cap: usize) {
        if self.by_id.contains_key(id) {
            return;
        }
        let n = self.next;
        self.next += 1;
        self.order.insert(n, id.to_string());
        self.by_id.insert(id.to_string(), n);
        if self.by_id.len() > cap {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.by_id.remove(&oldest);
            }
        }
    }

    fn remove(&mut self, id: &str) {
        if let Some(n) = self.by_id.remove(id) {
            self.order.remove(&n);
        }
    }
}

static SESSIONS: Mutex<Option<Sessions>> = Mutex::new(None);

fn sessions() -> MutexGuard<'static, Option<Sessions>> {
    // The set is valid whatever a panicking holder left: every change is one insert/remove.
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records that `session`'s strict tools exceeded Claude's limits; nothing without a session.
pub(crate) fn mark_exceeded(session: Option<&str>) {
    let Some(id) = session else { return };
    sessions()
        .get_or_insert_with(Sessions::default)
        .mark(id, MAX_SESSIONS);
}

/// Whether an earlier request of `session` had its strict tools rejected for Claude's limits.
pub(crate) fn exceeded(session: Option<&str>) -> bool {
    session.is_some_and(|id| {
        sessions()
            .as_ref()
            .is_some_and(|s| s.by_id.contains_key(id))
    })
}

/// Records on the message that its request was sent again without `prefer` strict tools:
/// a `<kind>` diagnostic with the rejection's message.
pub(crate) fn append_fallback(m: &mut AssistantMessage, kind: &str, message: &str) {
    super::output::append_diagnostic(m, kind, json!({"reason": "strict_tool_limits_exceeded"}));
    if let Some(serde_json::Value::Array(list)) = m.extra_mut().diagnostics.as_mut() {
        if let Some(serde_json::Value::Object(d)) = list.last_mut() {
            // The reference's key order: type, timestamp, error, details.
            let details = d.remove("details");
            d.insert("error".into(), json!({ "message": message }));
            if let Some(details) = details {
                d.insert("details".into(), details);
            }
        }
    }
}

/// Frees what the providers keep for `session` (pi-ai's `cleanupSessionResources`): call it
/// when a session ends. `None` frees what they keep for every session. Today that is the
/// memory of sessions whose strict tools went over Claude's limits, and the session's cached
/// Codex WebSockets (closed; the memory of a fallback to SSE stays, as in the reference).
///
/// ```
/// tern_ai::providers::cleanup_session_resources(Some("session-1"));
/// ```
pub fn cleanup_session_resources(session: Option<&str>) {
    super::close_codex_websocket_sessions(session.filter(|s| !s.is_empty()));
    let mut guard = sessions();
    let Some(s) = guard.as_mut() else { return };
    match session {
        Some(id) if !id.is_empty() => s.remove(id),
        _ => *guard = None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_remembered_until_cleaned_up() {
        let id = "strict-limits-unit-test-session";
        assert!(!exceeded(Some(id)));
        mark_exceeded(None);
        assert!(!exceeded(None));
        mark_exceeded(Some(id));
        mark_exceeded(Some(id));
        assert!(exceeded(Some(id)));
        cleanup_session_resources(Some(id));
        assert!(!exceeded(Some(id)));
        assert!(is_limit_message(
            "400 {\"message\":\"Too many strict tools (21)\"}"
        ));
        assert!(!is_limit_message("Too many tools"));
    }

    #[test]
    fn the_oldest_session_goes_beyond_the_cap() {
        let mut s = Sessions::default();
        for id in ["a", "b", "a", "c"] {
            s.mark(id, 2);
        }
        assert!(!s.by_id.contains_key("a"));
        assert!(s.by_id.contains_key("b") && s.by_id.contains_key("c"));
        s.remove("b");
        assert_eq!(s.order.values().collect::<Vec<_>>(), ["c"]);
    }
}
