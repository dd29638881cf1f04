//! A compaction itself, on the handles it needs (the agent, the session recorder, the
//! compaction state): the plan, the summary requests, the `compaction` entry and the
//! transcript that replaces the old one. Also the check between two turns of a run (pi's
//! `prepareNextTurn` hook `_compactBeforeNextAssistantResponse`), which only these handles
//! can reach, since the agent's hooks are set before the runtime exists.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::hooks::{TurnContext, TurnUpdate};
use tern_agent::{Agent, AgentContext};
use tern_ai::Message;
use tern_session::writer::Compaction;
use tern_session::Recorder;

use super::estimate::{estimate_context_tokens, estimate_tokens};
use super::prepare::Preparation;
use super::run::{combine, State};
use super::summary::{history_prompt, turn_prefix_prompt};
use super::{end_event, start_event, CompactError, Outcome, Previous, Reason};
use crate::durable::system_prefix_len;

/// What a compaction works on. Cloning gives other handles to the same ones.
#[derive(Clone)]
pub struct Compactor {
    /// The agent whose transcript is compacted.
    pub agent: Agent,
    /// The session the `compaction` entry goes in.
    pub recorder: Arc<Mutex<Recorder>>,
    /// Settings, summarizer, the previous compaction, the observer.
    pub state: Arc<State>,
}

/// The compactor the between-turns check uses, set only while a run of tern's own goes
/// (so a `--replay`, which drives the agent itself, never compacts), and cleared after it
/// (the compactor holds the agent, whose hook holds this).
pub type Slot = Arc<Mutex<Option<Compactor>>>;

/// pi's between-turns check as an agent hook: when the transcript crossed the threshold,
/// it is compacted and the next request goes out from the compacted one.
pub fn next_turn_hook(
    slot: Slot,
) -> impl Fn(
    TurnContext,
    tokio_util::sync::CancellationToken,
) -> futures::future::BoxFuture<'static, Result<Option<TurnUpdate>, tern_ai::BoxError>>
       + Send
       + Sync
       + 'static {
    move |turn, _signal| {
        let compactor = slot.lock().clone();
        Box::pin(async move {
            let Some(c) = compactor else {
                return Ok(None);
            };
            Ok(c.before_next_turn(turn).await)
        })
    }
}

/// The system messages a compacted transcript starts with: `system`, or, when the
/// summarized part held system messages too (a prompt patch, a tool declaration), the one
/// system message they all amount to, as pi's compaction snapshots the current system
/// message; otherwise the prompt or tools they changed would be lost with the summarized
/// messages (and the loop would declare the tools again).
fn system_after(system: Vec<Message>, summarized: &[Message]) -> Vec<Message> {
    let patches: Vec<&Message> = summarized
        .iter()
        .filter(|m| matches!(m, Message::System(_)))
        .collect();
    if patches.is_empty() {
        return system;
    }
    let mut all = system.clone();
    all.extend(patches.into_iter().cloned());
    match tern_ai::transcript::get_current_system_message(&all) {
        Some(current) => vec![Message::from(current)],
        None => system,
    }
}

/// What every system message of the context amounts to (pi's `getCurrentSystemMessage` of
/// the session's context), for the compaction entry: a resume starts from it.
fn current_system(system: &[Message], body: &[Message]) -> Option<tern_ai::SystemMessage> {
    let all: Vec<Message> = system
        .iter()
        .chain(body.iter().filter(|m| matches!(m, Message::System(_))))
        .cloned()
        .collect();
    tern_ai::transcript::get_current_system_message(&all)
}

impl Compactor {
    /// Compacts when the transcript crossed the threshold, before the next request of a
    /// run; the update carries the compacted transcript for the rest of the run.
    pub async fn before_next_turn(&self, turn: TurnContext) -> Option<TurnUpdate> {
        let settings = self.state.settings();
        let window = self.agent.state().model.context_window;
        if window == 0 || !settings.should_compact(self.projected_tokens(), window) {
            return None;
        }
        self.compact_for(Reason::Threshold, None, false)
            .await
            .ok()?;
        let messages = self.agent.with_messages(|m| m.to_vec());
        let tools = turn.context.tools.as_ref().clone();
        Some(TurnUpdate {
            context: Some(AgentContext::new(messages, tools)),
            ..TurnUpdate::default()
        })
    }

    /// The context's size as pi's `estimateProjectedContextTokens` counts it: the last
    /// answer's usage and an estimate of what followed, unless that answer was kept from
    /// before the last compaction (its usage describes the old context): then an estimate
    /// of every message.
    fn projected_tokens(&self) -> u64 {
        let messages = self.agent.with_messages(|m| m.to_vec());
        let n = system_prefix_len(&messages);
        let kept = self.state.previous.lock().as_ref().map(|p| p.kept);
        let last_usage = messages.iter().rposition(|m| {
            m.as_assistant().is_some_and(|a| {
                !matches!(
                    a.stop_reason,
                    tern_ai::StopReason::Error | tern_ai::StopReason::Aborted
                ) && super::estimate::context_tokens(&a.usage) > 0
            })
        });
        match (kept, last_usage) {
            (Some(kept), Some(at)) if at <= n + kept => messages.iter().map(estimate_tokens).sum(),
            _ => estimate_context_tokens(&messages),
        }
    }

    pub(crate) async fn compact_for(
        &self,
        reason: Reason,
        instructions: Option<&str>,
        will_retry: bool,
    ) -> Result<Outcome, CompactError> {
        // Cleared on drop too, so a compaction whose future is dropped does not stay "running".
        struct Running<'a>(&'a AtomicBool);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        self.state.compacting.store(true, Ordering::SeqCst);
        let _running = Running(&self.state.compacting);
        self.compact_now(reason, instructions, will_retry).await
    }

    /// What a compaction now would summarize and keep: the transcript's system prefix, the
    /// rest, and the plan (pi's `prepareCompaction`); no side effects.
    pub(crate) fn preparation(
        &self,
    ) -> Result<(Vec<Message>, Vec<Message>, Preparation), CompactError> {
        let (system, body) = self.agent.with_messages(|m| {
            let n = system_prefix_len(m);
            (m[..n].to_vec(), m[n..].to_vec())
        });
        let ids: Vec<String> = self.recorder.lock().session().context_ids().to_vec();
        if ids.len() < body.len() {
            return Err(CompactError::Untracked);
        }
        let ids = &ids[ids.len() - body.len()..];
        let previous = self.state.previous.lock().clone();
        let prep = super::prepare::prepare(
            &system,
            &body,
            ids,
            previous.as_ref(),
            self.state.settings().keep_recent_tokens,
        )
        .map_err(CompactError::Nothing)?;
        Ok((system, body, prep))
    }

    async fn compact_now(
        &self,
        reason: Reason,
        instructions: Option<&str>,
        will_retry: bool,
    ) -> Result<Outcome, CompactError> {
        let state = &self.state;
        let fail = |e: CompactError, started: bool| {
            if started {
                let m = match reason {
                    Reason::Manual => format!("Compaction failed: {e}"),
                    Reason::Overflow => format!("Context overflow recovery failed: {e}"),
                    Reason::Threshold => format!("Auto-compaction failed: {e}"),
                };
                state.emit(end_event(reason, Err(&m), false));
            }
            Err(e)
        };
        // pi announces a manual compaction before it knows there is anything to compact.
        if reason == Reason::Manual {
            state.emit(start_event(reason));
        }
        let manual = reason == Reason::Manual;
        let (system, body, prep) = match self.preparation() {
            Ok(p) => p,
            Err(e) => return fail(e, manual),
        };
        if !manual {
            state.emit(start_event(reason));
        }
        let st = self.agent.state();
        let (model, thinking) = (st.model, st.thinking_level);
        let ask = |prompt: String, label: &'static str| {
            let s = state.summarizer.clone();
            let model = model.clone();
            async move { s.ask(&model, thinking, prompt, label).await }
        };
        let previous_summary = prep.previous_summary.as_deref();
        let summarized = if !prep.turn_prefix.is_empty() {
            let mut history = (
                previous_summary.unwrap_or("No prior history.").to_string(),
                None,
            );
            if !prep.to_summarize.is_empty() {
                let p = history_prompt(&prep.to_summarize, previous_summary, instructions);
                match ask(p, "Summarization").await {
                    Ok((text, usage)) => history = (text, Some(usage)),
                    Err(e) => return fail(e, true),
                }
            }
            let p = turn_prefix_prompt(&prep.turn_prefix, instructions);
            match ask(p, "Turn prefix summarization").await {
                Ok((text, usage)) => {
                    let merged = format!(
                        "{}\n\n---\n\n**Turn Context (split turn):**\n\n{text}",
                        history.0
                    );
                    let usage = match history.1 {
                        Some(h) => combine(&h, &usage),
                        None => usage,
                    };
                    Ok((merged, usage))
                }
                Err(e) => Err(e),
            }
        } else {
            let p = history_prompt(&prep.to_summarize, previous_summary, instructions);
            ask(p, "Summarization").await
        };
        let (mut summary, usage) = match summarized {
            Ok(s) => s,
            Err(e) => return fail(e, true),
        };
        summary.push_str(&prep.files.tags());
        let details = prep.files.details();
        let entry = Compaction {
            summary: summary.clone(),
            first_kept_entry_id: prep.first_kept_entry_id.clone(),
            tokens_before: prep.tokens_before,
            details: Some(details.clone()),
            usage: serde_json::to_value(&usage).ok(),
            system_message: current_system(&system, &body),
        };
        let written = self.recorder.lock().session_mut().append_compaction(&entry);
        let (id, stamp) = match written {
            Ok(w) => w,
            Err(e) => return fail(CompactError::Failed(e.to_string()), true),
        };
        let kept = body[prep.first_kept..].to_vec();
        let summary_message = tern_session::compaction_summary_message(&summary, stamp as i64);
        let mut messages = system_after(system, &body[..prep.first_kept]);
        messages.push(summary_message);
        messages.extend(kept.iter().cloned());
        let estimated_tokens_after = messages
            .iter()
            .filter(|m| !matches!(m, Message::System(_)))
            .map(estimate_tokens)
            .sum();
        self.agent.set_messages(messages);
        *state.previous.lock() = Some(Previous {
            id,
            summary: summary.clone(),
            details: Some(details.clone()),
            kept: kept.len(),
        });
        let outcome = Outcome {
            summary,
            first_kept_entry_id: prep.first_kept_entry_id,
            tokens_before: prep.tokens_before,
            estimated_tokens_after,
            usage,
            details,
        };
        state.emit(end_event(reason, Ok(&outcome), will_retry));
        Ok(outcome)
    }
}
