//! Compaction on a [`Runtime`]: the manual command, the threshold check after a run, and
//! the compact-and-retry of a run whose context overflowed (pi's `AgentSession.compact`,
//! `_checkCompaction`, `_runAutoCompaction`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tern_agent::{AgentError, RunOutcome};
use tern_ai::{Message, StopReason};

use super::estimate::{context_tokens, estimate_context_tokens};
use super::summary::Summarizer;
use super::{end_event, CompactError, Outcome, Previous, Reason, Settings};
use crate::durable::system_prefix_len;
use crate::runtime::Runtime;

/// pi's message when a retried run overflowed again.
pub const OVERFLOW_RETRY_FAILED: &str = "Context overflow recovery failed after one \
     compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// pi's message when a retried answer was cut short again.
pub const LENGTH_RETRY_FAILED: &str =
    "Truncated response recovery failed after one compact-and-retry attempt.";

/// Why a run's last answer is compacted and retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recoverable {
    /// The context overflowed.
    Overflow,
    /// The answer stopped at a length below the model's output limit.
    Length,
}

/// Whether a `length` stop came before the output limit the model asked for (pi-ai's
/// `isRecoverableLength`; `max_tokens` is the model's own limit, before any clamping).
pub fn is_recoverable_length(answer: &tern_ai::AssistantMessage, max_tokens: u64) -> bool {
    answer.stop_reason == StopReason::Length && max_tokens > 0 && answer.usage.output < max_tokens
}

/// An answer that resets the recovery attempt (pi: any but `error` and `length`).
fn ended_well(m: &Message) -> bool {
    m.as_assistant()
        .is_some_and(|a| !matches!(a.stop_reason, StopReason::Error | StopReason::Length))
}

/// Who hears compaction events (pi's `compaction_start` / `compaction_end` JSON).
pub type Observer = Arc<dyn Fn(&Value) + Send + Sync>;

/// A runtime's compaction state.
pub struct State {
    /// The settings (`enabled` as given at start: [`State::settings`] has the current one).
    settings: Settings,
    /// Automatic compaction, as RPC `set_auto_compaction` last set it.
    auto: AtomicBool,
    /// Whether a compaction is running (RPC `get_state`'s `isCompacting`).
    pub(super) compacting: AtomicBool,
    /// Who writes summaries.
    pub summarizer: Summarizer,
    /// The compaction the transcript builds on.
    pub previous: Mutex<Option<Previous>>,
    /// Who hears the events.
    pub observer: Mutex<Option<Observer>>,
    /// Whether this prompt already compacted and retried after an overflow.
    overflow_retried: AtomicBool,
}

impl State {
    /// The state of a session that resumes after `previous` (if it was compacted).
    pub fn new(settings: Settings, summarizer: Summarizer, previous: Option<Previous>) -> Self {
        State {
            auto: AtomicBool::new(settings.enabled),
            compacting: AtomicBool::new(false),
            settings,
            summarizer,
            previous: Mutex::new(previous),
            observer: Mutex::new(None),
            overflow_retried: AtomicBool::new(false),
        }
    }

    /// The settings in force: automatic compaction as last turned on or off.
    pub fn settings(&self) -> Settings {
        Settings {
            enabled: self.auto.load(Ordering::SeqCst),
            ..self.settings
        }
    }

    /// Turns automatic compaction on or off for the following checks (pi's
    /// `setAutoCompactionEnabled`, RPC `set_auto_compaction`); `/compact` works either way.
    pub fn set_auto(&self, enabled: bool) {
        self.auto.store(enabled, Ordering::SeqCst);
    }

    /// Whether a compaction is running now.
    pub fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::SeqCst)
    }

    pub(super) fn emit(&self, event: Value) {
        let observer = self.observer.lock().clone();
        if let Some(o) = observer {
            o(&event);
        }
    }
}

/// The line that tells a person what a `compaction_end` event says (None for others).
pub fn note(event: &Value) -> Option<String> {
    if event["type"] != "compaction_end" {
        return None;
    }
    if let Some(m) = event["errorMessage"].as_str() {
        return Some(m.to_string());
    }
    let r = &event["result"];
    Some(format!(
        "compacted the conversation ({}): about {} tokens before, {} after",
        event["reason"].as_str().unwrap_or_default(),
        r["tokensBefore"],
        r["estimatedTokensAfter"]
    ))
}

/// How print and JSON modes report compaction and retries: JSON mode writes pi's events with `line`;
/// the others say on stderr what was compacted, or why it failed.
pub fn print_observer(json: bool, line: fn(&str)) -> Observer {
    Arc::new(move |event: &Value| {
        if json {
            return line(&event.to_string());
        }
        if let Some(n) = note(event).or_else(|| crate::auto_retry::note(event)) {
            crate::secrets::eprintln_redacted!("tern: {n}");
        }
    })
}

/// The compaction a loaded session's context starts with.
pub fn previous_of(loaded: &tern_session::LoadedSession) -> Option<Previous> {
    loaded.compaction.as_ref().map(|c| Previous {
        id: c.id.clone(),
        summary: c.summary.clone(),
        details: c.details.clone(),
        kept: c.kept_messages,
    })
}

/// Two requests' usage together (pi's `combineUsage`).
pub(super) fn combine(a: &tern_ai::Usage, b: &tern_ai::Usage) -> tern_ai::Usage {
    let mut u = a.clone();
    u.input += b.input;
    u.output += b.output;
    u.cache_read += b.cache_read;
    u.cache_write += b.cache_write;
    u.total_tokens += b.total_tokens;
    u.cost.input += b.cost.input;
    u.cost.output += b.cost.output;
    u.cost.cache_read += b.cost.cache_read;
    u.cost.cache_write += b.cost.cache_write;
    u.cost.total += b.cost.total;
    u
}

/// The last assistant message a run appended.
pub(crate) fn last_answer(
    result: &Result<RunOutcome, AgentError>,
) -> Option<Arc<tern_ai::AssistantMessage>> {
    let o = result.as_ref().ok()?;
    o.messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a.clone()),
        _ => None,
    })
}

impl Runtime {
    /// The handles a compaction works on.
    pub(crate) fn compactor(&self) -> super::compactor::Compactor {
        super::compactor::Compactor {
            agent: self.agent.clone(),
            recorder: self.recorder.clone(),
            state: self.compaction.clone(),
        }
    }

    /// Compacts the transcript now (`/compact [instructions]`, RPC `compact`), with pi's
    /// events; fails with pi's messages ("Nothing to compact (session too small)", ...).
    pub async fn compact(&self, instructions: Option<&str>) -> Result<Outcome, CompactError> {
        self.compactor()
            .compact_for(Reason::Manual, instructions, false)
            .await
    }

    /// After a run: compacts when the context crossed the threshold, or when a completed
    /// answer reports more input than the window (pi's cases 2 and 3, no retry).
    pub(crate) async fn compact_after_run(&self, result: &Result<RunOutcome, AgentError>) {
        if let Some(answer) = last_answer(result) {
            if answer.stop_reason != StopReason::Aborted {
                self.check(answer).await;
            }
        }
    }

    /// Before a prompt: the same check on the transcript's last answer (pi's pre-prompt
    /// check, aborted answers included), unless that answer predates the last compaction.
    pub(crate) async fn compact_before_prompt(&self) {
        let last = self.agent.with_messages(|m| {
            let n = system_prefix_len(m);
            m.iter().enumerate().rev().find_map(|(i, x)| match x {
                Message::Assistant(a) => Some((i.saturating_sub(n), a.clone())),
                _ => None,
            })
        });
        let Some((at, answer)) = last else {
            return;
        };
        let kept = self.compaction.previous.lock().as_ref().map(|p| p.kept);
        // The summary is at 0 and the kept messages follow: those answers are stale.
        if kept.is_some_and(|k| at <= k) {
            return;
        }
        self.check(answer).await;
    }

    /// Compacts after `answer` when it overflowed or the context crossed the threshold.
    async fn check(&self, answer: Arc<tern_ai::AssistantMessage>) {
        let settings = self.compaction.settings();
        if !settings.enabled {
            return;
        }
        // A cut-short answer had its compact-and-retry in the run (pi returns there).
        if self.recoverable(&answer) == Some(Recoverable::Length) {
            return;
        }
        let window = self.agent.state().model.context_window;
        if answer.stop_reason == StopReason::Stop
            && tern_ai::providers::is_context_overflow(&answer, window)
        {
            let _ = self
                .compactor()
                .compact_for(Reason::Overflow, None, false)
                .await;
            return;
        }
        let direct = context_tokens(&answer.usage);
        let tokens = if answer.stop_reason == StopReason::Error || direct == 0 {
            let messages = self.agent.with_messages(|m| m.to_vec());
            // Usage from before the last compaction describes the old, larger context.
            let kept = self.compaction.previous.lock().as_ref().map(|p| p.kept);
            let n = system_prefix_len(&messages);
            let last_usage = messages.iter().rposition(|m| {
                m.as_assistant().is_some_and(|a| {
                    !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                        && context_tokens(&a.usage) > 0
                })
            });
            if let (Some(kept), Some(at)) = (kept, last_usage) {
                if at <= n + kept {
                    return;
                }
            }
            estimate_context_tokens(&messages)
        } else {
            direct
        };
        if settings.should_compact(tokens, window) {
            let _ = self
                .compactor()
                .compact_for(Reason::Threshold, None, false)
                .await;
        }
    }

    /// Starts a prompt's overflow accounting: one compact-and-retry per prompt.
    pub(crate) fn reset_overflow_retry(&self) {
        self.compaction
            .overflow_retried
            .store(false, Ordering::SeqCst);
    }

    /// A run whose last answer overflowed the context, or stopped at a length below the
    /// model's output limit (pi's `isRecoverableLength`: the provider cut it short, often
    /// for want of room): the answer is omitted, the transcript compacted and the run
    /// continued, once; a second such answer stays, with pi's message as a compaction event.
    /// The attempt is counted again after an answer that ends well (pi resets it then).
    pub(crate) async fn recover_overflow(
        &self,
        mut result: Result<RunOutcome, AgentError>,
    ) -> Result<RunOutcome, AgentError> {
        let state = &self.compaction;
        if !state.settings().enabled || self.limits.aborted() {
            return result;
        }
        let Some(answer) = last_answer(&result) else {
            return result;
        };
        let Some(kind) = self.recoverable(&answer) else {
            return result;
        };
        if state.overflow_retried.swap(true, Ordering::SeqCst) {
            let message = match kind {
                Recoverable::Overflow => OVERFLOW_RETRY_FAILED,
                Recoverable::Length => LENGTH_RETRY_FAILED,
            };
            state.emit(end_event(Reason::Overflow, Err(message), false));
            return result;
        }
        // pi omits a cut answer before it knows whether anything can be compacted, and then
        // shows nothing; tern keeps it (and pi's truncation message) when there is nothing.
        if kind == Recoverable::Length && self.compactor().preparation().is_err() {
            return result;
        }
        self.omit_failed_answer(&answer);
        if self
            .compactor()
            .compact_for(Reason::Overflow, None, true)
            .await
            .is_err()
        {
            return result;
        }
        let retried = self.agent.continue_run().await;
        if retried
            .as_ref()
            .is_ok_and(|r| r.messages.iter().any(ended_well))
        {
            state.overflow_retried.store(false, Ordering::SeqCst);
        }
        result = match (result, retried) {
            (Ok(first), Ok(next)) => Ok(first.then(next)),
            (_, r) => r,
        };
        Box::pin(self.recover_overflow(result)).await
    }

    /// Whether `answer` is one pi compacts and retries after (`_checkCompaction`'s cases
    /// with a retry): an answer of the current model that overflowed, or was cut short.
    fn recoverable(&self, answer: &tern_ai::AssistantMessage) -> Option<Recoverable> {
        let model = self.agent.state().model;
        // An answer of another model says nothing of this one's window (pi's `sameModel`).
        if answer.provider.as_str() != model.provider || answer.model.as_str() != model.id {
            return None;
        }
        if answer.stop_reason != StopReason::Stop
            && tern_ai::providers::is_context_overflow(answer, model.context_window)
        {
            return Some(Recoverable::Overflow);
        }
        is_recoverable_length(answer, model.max_tokens).then_some(Recoverable::Length)
    }

    /// Takes a failed answer out of the transcript, and out of the session's context with
    /// pi's `context_edit` omission.
    pub(crate) fn omit_failed_answer(&self, answer: &Arc<tern_ai::AssistantMessage>) {
        let (removed, body_len) = self.agent.with_messages(|m| {
            // An idle agent keeps its transcript packed, so the answer read back after the
            // run is an equal message in a new allocation: compare by value too.
            let at = m.iter().rposition(
                |x| matches!(x, Message::Assistant(a) if Arc::ptr_eq(a, answer) || **a == **answer),
            );
            let n = system_prefix_len(m);
            (at.map(|at| (at, at - n.min(at))), m.len() - n)
        });
        let Some((at, body_at)) = removed else {
            return;
        };
        let mut rec = self.recorder.lock();
        let ids = rec.session().context_ids().to_vec();
        if ids.len() >= body_len {
            let target = ids[ids.len() - body_len + body_at].clone();
            if let Err(e) = rec.session_mut().append_context_omission(&target) {
                crate::secrets::eprintln_redacted!(
                    "tern: warning: the failed answer was not marked omitted in the session \
                     file ({e}); a resume would send it again"
                );
            }
        }
        drop(rec);
        let mut messages = self.agent.with_messages(|m| m.to_vec());
        messages.remove(at);
        self.agent.set_messages(messages);
    }
}
