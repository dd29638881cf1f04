//! Automatic retry of a run whose answer ended with a transient provider error (pi's
//! `AgentSession` auto-retry, `settings.retry`): the failed answer is omitted from the
//! context, tern waits `base_delay_ms * 2^(attempt-1)` (capped), then continues the run, up
//! to `max_retries` times. Events are pi's `auto_retry_start` / `auto_retry_end`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_agent::{AgentError, AgentEvent, RunOutcome};
use tern_ai::{AssistantMessage, Message, StopReason};
use tokio_util::sync::CancellationToken;

use crate::compaction::run::Observer;
use crate::runtime::Runtime;

/// pi's `finalError` when a wait was cut short or the run aborted during a retry.
pub const CANCELLED: &str = "Retry cancelled";

/// When and how often to retry (pi's `retry.enabled`, `retry.maxRetries`,
/// `retry.baseDelayMs`, `retry.maxAgentDelayMs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Whether failed answers are retried.
    pub enabled: bool,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first wait, ms; each next one doubles.
    pub base_delay_ms: u64,
    /// The longest wait, ms.
    pub max_delay_ms: u64,
}

impl Default for Settings {
    /// pi's defaults: on, 3 retries, 2 s doubling, at most 60 s.
    fn default() -> Self {
        Settings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2_000,
            max_delay_ms: 60_000,
        }
    }
}

impl Settings {
    /// The wait before retry number `attempt` (1-based), pi's `retryDelayMs`.
    pub fn delay_ms(&self, attempt: u32) -> u64 {
        let factor = 1u64
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u64::MAX);
        self.base_delay_ms
            .saturating_mul(factor)
            .min(self.max_delay_ms)
    }
}

/// A runtime's retry state.
pub struct AutoRetry {
    settings: Settings,
    /// RPC `set_auto_retry` (starts as `settings.enabled`).
    enabled: AtomicBool,
    /// The current retry number, 0 when not retrying.
    attempt: AtomicU32,
    /// Cuts the current wait short (RPC `abort_retry`, or an abort of the run).
    wait: Mutex<Option<CancellationToken>>,
    /// Who hears the events.
    pub observer: Mutex<Option<Observer>>,
}

impl AutoRetry {
    /// The state under `settings`.
    pub fn new(settings: Settings) -> Self {
        AutoRetry {
            settings,
            enabled: AtomicBool::new(settings.enabled),
            attempt: AtomicU32::new(0),
            wait: Mutex::new(None),
            observer: Mutex::new(None),
        }
    }

    /// Turns retries on or off (RPC `set_auto_retry`).
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::SeqCst);
    }

    /// Whether retries are on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::SeqCst)
    }

    /// Cuts the current wait short: the run ends with the error (RPC `abort_retry`, and an
    /// abort of the run).
    pub fn abort(&self) {
        if let Some(t) = self.wait.lock().as_ref() {
            t.cancel();
        }
    }

    fn emit(&self, event: Value) {
        let observer = self.observer.lock().clone();
        if let Some(o) = observer {
            o(&event);
        }
    }

    /// pi's `willRetry` of an `agent_end`: whether its last answer will be retried.
    pub fn will_retry(&self, event: &AgentEvent) -> bool {
        let AgentEvent::AgentEnd { messages } = event else {
            return false;
        };
        if !self.enabled() || self.attempt.load(Ordering::SeqCst) >= self.settings.max_retries {
            return false;
        }
        messages
            .iter()
            .rev()
            .find_map(Message::as_assistant)
            .is_some_and(is_retryable)
    }

    /// After an answer: a successful one ends a retry sequence (`auto_retry_end`, success).
    pub fn on_message_end(&self, event: &AgentEvent) {
        let AgentEvent::MessageEnd {
            message: Message::Assistant(a),
        } = event
        else {
            return;
        };
        if a.stop_reason != StopReason::Error {
            let attempt = self.attempt.swap(0, Ordering::SeqCst);
            if attempt > 0 {
                self.emit(json!({"type": "auto_retry_end", "success": true, "attempt": attempt}));
            }
        }
    }

    /// Schedules a retry of `answer`: announces it and waits. `Some(true)`: retry now;
    /// `Some(false)`: the wait was cut short (the sequence is ended); `None`: no retry
    /// (disabled, or the retries are used up).
    pub async fn wait_before_retry(
        &self,
        answer: &AssistantMessage,
        omit: impl FnOnce(),
    ) -> Option<bool> {
        if !self.enabled() {
            return None;
        }
        let attempt = self.attempt.load(Ordering::SeqCst) + 1;
        if attempt > self.settings.max_retries {
            return None;
        }
        self.attempt.store(attempt, Ordering::SeqCst);
        let delay_ms = self.settings.delay_ms(attempt);
        let error = answer
            .error_message
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "Unknown error".into());
        self.emit(json!({"type": "auto_retry_start", "attempt": attempt,
                         "maxAttempts": self.settings.max_retries, "delayMs": delay_ms,
                         "errorMessage": error}));
        omit();
        let token = CancellationToken::new();
        *self.wait.lock() = Some(token.clone());
        let slept = tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => true,
            () = token.cancelled() => false,
        };
        *self.wait.lock() = None;
        if !slept {
            self.finish_cancelled();
        }
        Some(slept)
    }

    /// Ends a retry sequence that was cut off (pi's `_finishCancelledRetry`).
    pub fn finish_cancelled(&self) {
        let attempt = self.attempt.swap(0, Ordering::SeqCst);
        if attempt > 0 {
            self.emit(
                json!({"type": "auto_retry_end", "success": false, "attempt": attempt,
                             "finalError": CANCELLED}),
            );
        }
    }

    /// Ends a retry sequence whose last attempt failed too (`auto_retry_end`, `finalError`).
    pub fn finish_failed(&self, answer: &AssistantMessage) {
        if answer.stop_reason != StopReason::Error {
            return;
        }
        let attempt = self.attempt.swap(0, Ordering::SeqCst);
        if attempt > 0 {
            self.emit(
                json!({"type": "auto_retry_end", "success": false, "attempt": attempt,
                             "finalError": answer.error_message}),
            );
        }
    }
}

impl Runtime {
    /// After a run: whether its last answer failed with a transient error and is to be
    /// retried now (the failed answer omitted and the wait over). Ends the retry sequence
    /// otherwise.
    pub(crate) async fn retry_after(&self, result: &Result<RunOutcome, AgentError>) -> bool {
        let Some(answer) = crate::compaction::run::last_answer(result) else {
            return false;
        };
        if self.limits.aborted() {
            self.retry.finish_cancelled();
            return false;
        }
        if is_retryable(&answer) {
            let omit = || self.omit_failed_answer(&answer);
            match self.retry.wait_before_retry(&answer, omit).await {
                Some(true) if !self.limits.aborted() => return true,
                Some(true) => {
                    self.retry.finish_cancelled();
                    return false;
                }
                Some(false) => return false,
                None => {}
            }
        }
        self.retry.finish_failed(&answer);
        false
    }
}

/// The line that tells a person what a retry event says (None for other events).
pub fn note(event: &Value) -> Option<String> {
    match event["type"].as_str()? {
        "auto_retry_start" => Some(format!(
            "the model request failed ({}); retry {} of {} in {:.1} s",
            event["errorMessage"].as_str().unwrap_or_default(),
            event["attempt"],
            event["maxAttempts"],
            event["delayMs"].as_f64().unwrap_or_default() / 1000.0
        )),
        "auto_retry_end" if event["success"] == false => Some(format!(
            "gave up retrying after {} attempts: {}",
            event["attempt"],
            event["finalError"].as_str().unwrap_or_default()
        )),
        _ => None,
    }
}

/// Whether `answer` failed in a way a retry may fix: pi-ai's `isRetryableAssistantError`
/// ([`is_retryable_assistant_error`](tern_ai::providers::is_retryable_assistant_error)), with
/// context overflows left to compaction, as pi's session checks them first.
pub fn is_retryable(answer: &AssistantMessage) -> bool {
    // The window only matters for answers that did not fail.
    !tern_ai::providers::is_context_overflow(answer, 0)
        && tern_ai::providers::is_retryable_assistant_error(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(text: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(text.into()),
            ..Default::default()
        }
    }

    #[test]
    fn transient_failures_are_retried_and_limits_are_not() {
        for t in [
            "529 overloaded_error: Overloaded",
            "HTTP 429: slow down",
            "Rate limit reached for requests",
            "503 Service Unavailable",
            "The service is temporarily unavailable",
            "read ECONNRESET",
            "request timed out",
            "Provider returned error",
        ] {
            assert!(is_retryable(&failed(t)), "{t}");
        }
        for t in [
            "You exceeded your current quota: insufficient_quota (429)",
            "request id req_4290001 failed: bad input",
            "invalid_request_error: messages: field required",
            "Connection failed: ECONNRESETX",
        ] {
            assert!(!is_retryable(&failed(t)), "{t}");
        }
        let mut ok = failed("overloaded");
        ok.stop_reason = StopReason::Stop;
        assert!(!is_retryable(&ok), "only failed answers");
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        let s = Settings {
            base_delay_ms: 2_000,
            max_delay_ms: 10_000,
            ..Settings::default()
        };
        let delays: Vec<u64> = (1..=5).map(|a| s.delay_ms(a)).collect();
        assert_eq!(delays, [2_000, 4_000, 8_000, 10_000, 10_000]);
        assert_eq!(s.delay_ms(200), 10_000, "no overflow");
    }
}
