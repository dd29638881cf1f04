//! Run limits (`--max-turns`, `--timeout`, `--max-cost`, `--max-tokens`, `--max-tool-calls`)
//! and the flags that say how a run ended.
//!
//! The limits are a [`Budget`] of the run's durable run: when one is spent the next model
//! request is the wrap-up turn (no tools, a notice that the budget is spent), and the run
//! ends with that answer. `--timeout` is also a hard stop: a run still going a grace period
//! after the timeout (a hung request or tool never reaches its wrap-up turn) is aborted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tern_agent::Agent;
use tern_durable::{Budget, Limit};

/// Run limits and what happened to them.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// The budget each run gets.
    pub budget: Budget,
    /// `--max-turns` as given (the budget counts the requests before the wrap-up).
    pub max_turns: Option<u32>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// The limit whose wrap-up turn ended the last run.
    pub ended_by: Arc<Mutex<Option<Limit>>>,
    /// The timeout's hard stop aborted the run.
    pub timed_out: Arc<AtomicBool>,
    /// The user aborted the run.
    pub user_aborted: Arc<AtomicBool>,
}

/// How long after `--timeout` a run that did not wrap up is aborted: as long again, at
/// least 5 s and at most 60 s.
pub fn grace(timeout: Duration) -> Duration {
    timeout.clamp(Duration::from_secs(5), Duration::from_secs(60))
}

impl Limits {
    /// Clears the per-run state.
    pub fn reset_run(&self) {
        *self.ended_by.lock() = None;
        self.timed_out.store(false, Ordering::SeqCst);
        self.user_aborted.store(false, Ordering::SeqCst);
    }

    /// The run was ended from outside: aborted by the user or the timeout's hard stop.
    pub fn aborted(&self) -> bool {
        self.user_aborted.load(Ordering::SeqCst) || self.timed_out.load(Ordering::SeqCst)
    }

    /// Starts the timeout's hard stop for a run (abort the agent when it fires).
    pub fn start_timer(&self, agent: &Agent) -> Option<tokio::task::JoinHandle<()>> {
        let timeout = self.timeout?;
        let agent = agent.clone();
        let flag = self.timed_out.clone();
        Some(tokio::spawn(async move {
            tokio::time::sleep(timeout + grace(timeout)).await;
            flag.store(true, Ordering::SeqCst);
            agent.abort();
        }))
    }

    /// The stderr note for a run a budget ended: which limit, and its flag.
    pub fn limit_note(&self, limit: Limit) -> String {
        let b = &self.budget;
        let what = match limit {
            Limit::Turns => format!(
                "turn limit reached ({} turns, --max-turns)",
                self.max_turns.unwrap_or_default()
            ),
            Limit::Tokens => format!(
                "token limit reached ({} tokens, --max-tokens)",
                b.max_tokens.unwrap_or_default()
            ),
            Limit::Cost => format!(
                "cost limit reached (${}, --max-cost)",
                b.max_cost.unwrap_or_default()
            ),
            Limit::WallTime => format!(
                "timeout reached after {:.0} s (--timeout)",
                self.timeout.map(|d| d.as_secs_f64()).unwrap_or_default()
            ),
            Limit::ToolCalls => format!(
                "tool-call limit reached ({} calls, --max-tool-calls)",
                b.max_tool_calls.unwrap_or_default()
            ),
        };
        format!(
            "{what}; the run ended with a wrap-up answer without tools and the task was not \
             confirmed complete"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_is_the_timeout_within_5_and_60_seconds() {
        assert_eq!(grace(Duration::from_secs(1)), Duration::from_secs(5));
        assert_eq!(grace(Duration::from_secs(20)), Duration::from_secs(20));
        assert_eq!(grace(Duration::from_secs(600)), Duration::from_secs(60));
    }

    #[test]
    fn the_note_names_the_limit_and_its_flag() {
        let l = Limits {
            max_turns: Some(4),
            ..Default::default()
        };
        let note = l.limit_note(Limit::Turns);
        assert!(
            note.contains("--max-turns") && note.contains("4 turns"),
            "{note}"
        );
        assert!(l.limit_note(Limit::ToolCalls).contains("--max-tool-calls"));
    }
}
