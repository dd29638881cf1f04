//! Durable runs in the CLI: every run goes through a [`DurableRun`], so its model requests,
//! tool calls and accepted input are journaled steps. With a session file the journal is
//! that file ([`SessionFileJournal`]: step records are `custom` entries pi ignores); with
//! `--no-session` it is a [`MemoryJournal`] that lives as long as the session, so budgets work
//! the same and nothing is written.
//!
//! The agent is built once and runs many prompts (RPC, interactive), while a durable run is
//! one prompt: the agent's stream function and tools dispatch to the run that is current, and
//! straight to the real model and tools when none is.

use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::{AgentTool, ToolCallInput};
use tern_ai::{Context, Model, StreamFn, StreamOptions, StreamStart};
use tern_durable::{Budget, DurableRun, Journal, MemoryJournal, SessionFileJournal};
use tern_session::Recorder;

/// The run that is current, shared by the stream function and the tools.
#[derive(Clone, Default)]
pub struct Current(Arc<Mutex<Option<DurableRun>>>);

impl Current {
    /// The current run, if one is going.
    pub fn get(&self) -> Option<DurableRun> {
        self.0.lock().clone()
    }

    /// Makes `run` current (or none).
    pub fn set(&self, run: Option<DurableRun>) {
        *self.0.lock() = run;
    }
}

/// A stream function that sends through the current run's model step, or directly.
struct Dispatch {
    inner: Arc<dyn StreamFn>,
    current: Current,
}

impl StreamFn for Dispatch {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        match self.current.get() {
            Some(run) => run
                .model(self.inner.clone())
                .stream(model, context, options),
            None => self.inner.stream(model, context, options),
        }
    }
}

impl Current {
    /// `inner` as the agent's stream function: journaled while a run is current.
    pub fn stream_fn(&self, inner: Arc<dyn StreamFn>) -> Arc<dyn StreamFn> {
        Arc::new(Dispatch {
            inner,
            current: self.clone(),
        })
    }

    /// `tools` as the agent's tools: each call is a journaled step of the current run.
    pub fn tools(&self, tools: Vec<AgentTool>) -> Vec<AgentTool> {
        tools
            .into_iter()
            .map(|tool| {
                let original = tool.clone();
                let current = self.clone();
                tool.with_execute(move |input: ToolCallInput| match current.get() {
                    Some(run) => run.tool(original.clone()).execute(input),
                    None => original.execute(input),
                })
            })
            .collect()
    }
}

/// The journal for a run recorded by `recorder`: its session file when it has one, else
/// `memory`, the in-memory session's journal (so session limits count its runs too).
pub fn journal_for(
    recorder: &Arc<Mutex<Recorder>>,
    memory: &Arc<MemoryJournal>,
) -> Arc<dyn Journal> {
    if recorder.lock().session().path().is_some() {
        Arc::new(SessionFileJournal::new(
            recorder.clone(),
            tern_durable::Durability::Fsync,
        ))
    } else {
        memory.clone()
    }
}

/// The budget the flags and the config give a run.
///
/// `--max-turns N` allows N model requests in all: the N-th is the wrap-up turn (so the
/// budget's `max_turns`, the requests before the wrap-up, is N - 1).
pub fn budget(
    max_turns: Option<u32>,
    timeout: Option<std::time::Duration>,
    max_cost: Option<f64>,
    max_tokens: Option<u64>,
    max_tool_calls: Option<u32>,
) -> Budget {
    Budget {
        max_turns: max_turns.map(|n| n.saturating_sub(1)),
        max_tokens,
        max_cost,
        max_wall_time: timeout,
        max_tool_calls,
    }
}

/// Messages of a transcript before its first non-system message: the agent's system prompt
/// and tool declarations. A journal's transcript is what follows them, so a recovered or
/// replayed run whose system prompt changed shows as a divergence at its first request.
pub fn system_prefix_len(messages: &[tern_ai::Message]) -> usize {
    messages
        .iter()
        .take_while(|m| matches!(m, tern_ai::Message::System(_)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_ai::Message;

    #[test]
    fn max_turns_counts_the_wrap_up_turn() {
        let b = budget(Some(2), None, None, None, None);
        assert_eq!(b.max_turns, Some(1));
        assert_eq!(budget(Some(1), None, None, None, None).max_turns, Some(0));
        assert_eq!(budget(None, None, None, None, None), Budget::default());
    }

    #[test]
    fn the_system_prefix_is_the_leading_system_messages() {
        let sys: Message = serde_json::from_value(
            serde_json::json!({"role":"system","content":"s","timestamp":0}),
        )
        .expect("a system message");
        let ms = vec![sys.clone(), Message::user_text("a"), sys];
        assert_eq!(system_prefix_len(&ms), 1);
        assert_eq!(system_prefix_len(&ms[1..]), 0);
    }
}
