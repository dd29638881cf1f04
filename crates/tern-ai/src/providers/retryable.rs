//! Transient provider failures: pi-ai's `isRetryableAssistantError`, which callers use to
//! decide whether a failed answer is worth asking for again.

use std::sync::OnceLock;

use regex::Regex;

use crate::message::{AssistantMessage, StopReason};
use crate::schema::ecma_regex::js_regex_ignore_case;

/// Limits a retry cannot lift (quota, budget, billing, plan limits): ECMAScript sources with
/// the `i` flag, as pi-ai's. Its `(?![0-9])` after `1308` is written `([^0-9]|$)`, the same
/// test without a lookahead.
const NOT_RETRYABLE: [&str; 11] = [
    "GoUsageLimitError",
    "FreeUsageLimitError",
    "Monthly usage limit reached",
    "available balance",
    "insufficient_quota",
    "out of budget",
    "quota exceeded",
    "billing",
    "subscription_sharing_usage_limit_exceeded",
    "subscription_sharing_workplace_individual_usage_limit_exceeded",
    r#""code"\s*:\s*"?1308([^0-9]|$)"#,
];

/// Transient failures: load, rate limits, server errors, transport failures, explicit retry
/// wording. pi-ai's look-behind patterns (status and socket codes standing alone) are
/// [`has_code`], as the `regex` crate has no look-behind.
const RETRYABLE: [&str; 53] = [
    "overloaded",
    "server_busy",
    "servers are currently busy",
    "currently experiencing high demand",
    "model is at capacity",
    "rate.?limit",
    "too many requests",
    "service.?(?:is.?)?(?:temporarily.?)?unavailable",
    "server.?error",
    "internal.?error",
    "provider.?returned.?(?:an.?)?error",
    "exceeded request buffer limit while retrying upstream",
    "unable to forward upstream",
    "upstream.?request.?failed",
    "upstream_stream_read_error",
    "stream was interrupted",
    "http/?2 stream failed",
    "network.?error",
    "connection.?error",
    "connection.?refused",
    "connection.?lost",
    "connection.?closed",
    "other side closed",
    "fetch failed",
    r"request to \S+ failed, reason:",
    "getaddrinfo",
    "connection reset by peer",
    "ENOTFOUND",
    "EAI_AGAIN",
    "upstream.?connect",
    "reset before headers",
    "socket hang up",
    "socket connection was closed",
    "timed? out",
    "timeout",
    "terminated",
    "websocket.?closed",
    "websocket.?error",
    "websocket.?connection.?limit.?reached",
    "ended without",
    "stream ended before message_stop",
    "stream ended before a terminal response event",
    "http2 request did not get a response",
    "stream disconnected before completion",
    "cut short after the reply had begun",
    "pending stream has been canceled",
    "retry delay",
    "you can retry your request",
    "try your request again",
    "please retry your request",
    "ResourceExhausted",
    "subscription_sharing_usage_unavailable",
    "subscription_sharing_user_unavailable",
];

/// Whether a failed answer looks like a transient provider or transport failure (pi-ai's
/// `isRetryableAssistantError`): only an answer that ended in an error, whose message names
/// no quota or billing limit. Context overflows are the caller's to handle first (see
/// [`is_context_overflow`](crate::providers::is_context_overflow)); this is no retry policy.
///
/// ```
/// use tern_ai::providers::is_retryable_assistant_error;
/// use tern_ai::{AssistantMessage, StopReason};
///
/// let failed = |text: &str| AssistantMessage {
///     stop_reason: StopReason::Error,
///     error_message: Some(text.into()),
///     ..AssistantMessage::default()
/// };
/// assert!(is_retryable_assistant_error(&failed("503 Service Unavailable")));
/// assert!(!is_retryable_assistant_error(&failed("insufficient_quota (429)")));
/// ```
pub fn is_retryable_assistant_error(message: &AssistantMessage) -> bool {
    if message.stop_reason != StopReason::Error {
        return false;
    }
    let Some(text) = message.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    let (retryable, not_retryable) = patterns();
    if not_retryable.as_ref().is_some_and(|p| p.is_match(text)) {
        return false;
    }
    retryable.as_ref().is_some_and(|p| p.is_match(text)) || has_code(text)
}

fn patterns() -> &'static (Option<Regex>, Option<Regex>) {
    static P: OnceLock<(Option<Regex>, Option<Regex>)> = OnceLock::new();
    P.get_or_init(|| {
        let build = |v: &[&str]| js_regex_ignore_case(&v.join("|"));
        (build(&RETRYABLE), build(&NOT_RETRYABLE))
    })
}

/// Status codes and socket error codes standing alone (not inside a longer word or number:
/// pi's look-behind patterns, which `regex` cannot express).
fn has_code(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let alone = |word: &str, inner: fn(u8) -> bool| {
        lower.match_indices(word).any(|(at, _)| {
            let before = at.checked_sub(1).map(|i| lower.as_bytes()[i]);
            let after = lower.as_bytes().get(at + word.len()).copied();
            !before.is_some_and(inner) && !after.is_some_and(inner)
        })
    };
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    ["429", "500", "502", "503", "504", "520", "524"]
        .iter()
        .any(|c| alone(c, alnum))
        || [
            "econnreset",
            "econnaborted",
            "econnrefused",
            "etimedout",
            "epipe",
        ]
        .iter()
        .any(|c| alone(c, ident))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_translates() {
        let (retryable, not_retryable) = patterns();
        assert!(retryable.is_some() && not_retryable.is_some());
    }

    #[test]
    fn classifies_as_the_reference() {
        // (error message, pi-ai's `isRetryableAssistantError`), computed by the reference:
        // ECMAScript's `.` stops at line terminators, its `\S` counts U+FEFF as space, and
        // its `i` flag without `u` folds no `ſ` to `s` nor Kelvin sign to `k`.
        let cases = [
            ("529 overloaded_error: Overloaded", true),
            ("HTTP 429: slow down", true),
            ("Rate limit reached for requests", true),
            ("rate\rlimit reached", false),
            ("rate\u{2028}limit", false),
            ("rate-limit", true),
            ("\u{17F}ervice unavailable", false),
            ("\u{17F}ocket hang up", false),
            ("request to \u{FEFF} failed, reason:", false),
            ("request to https://x failed, reason: ", true),
            ("Service\nunavailable", false),
            ("SERVICE IS TEMPORARILY UNAVAILABLE", true),
            ("read ECONNRESET", true),
            ("Connection failed: ECONNRESETX", false),
            (
                "You exceeded your current quota: insufficient_quota (429)",
                false,
            ),
            ("request id req_4290001 failed: bad input", false),
            ("{\"code\": \"1308\", \"message\": \"limit\"}", false),
            ("{\"code\":13080} server error", true),
            ("Provider returned error", true),
            ("Internal\u{2029}Error", false),
            ("network\terror", true),
            ("HTTP/2 stream failed", true),
            ("tImEOUT", true),
            ("\u{212A}aboom ResourceExhausted", true),
            ("soc\u{212A}et hang up", false),
            ("networ\u{212A} error", false),
            ("socket hang up", true),
        ];
        for (error, expected) in cases {
            let message = AssistantMessage {
                stop_reason: StopReason::Error,
                error_message: Some(error.into()),
                ..AssistantMessage::default()
            };
            assert_eq!(
                is_retryable_assistant_error(&message),
                expected,
                "{error:?}"
            );
        }
        let answered = AssistantMessage {
            error_message: Some("overloaded".into()),
            ..AssistantMessage::default()
        };
        assert!(
            !is_retryable_assistant_error(&answered),
            "only failed answers"
        );
    }
}
