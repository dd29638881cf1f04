//! Run limits (`--max-turns`, `--timeout`) and the flags that say how a run ended.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tern_agent::Agent;

/// Run limits and what happened to them.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// Turns of the current run.
    pub turns: Arc<AtomicU32>,
    /// The turn limit ended the run.
    pub turn_limit_hit: Arc<AtomicBool>,
    /// The timeout aborted the run.
    pub timed_out: Arc<AtomicBool>,
    /// The user aborted the run.
    pub user_aborted: Arc<AtomicBool>,
}

impl Limits {
    /// Clears the per-run state.
    pub fn reset_run(&self) {
        self.turns.store(0, Ordering::SeqCst);
        self.turn_limit_hit.store(false, Ordering::SeqCst);
        self.timed_out.store(false, Ordering::SeqCst);
        self.user_aborted.store(false, Ordering::SeqCst);
    }

    /// The run was ended from outside: aborted by the user or the timeout.
    pub fn aborted(&self) -> bool {
        self.user_aborted.load(Ordering::SeqCst) || self.timed_out.load(Ordering::SeqCst)
    }

    /// The run must not go on: aborted, or the turn limit was reached.
    pub fn stopped(&self) -> bool {
        self.aborted() || self.turn_limit_hit.load(Ordering::SeqCst)
    }

    /// Starts the timeout timer for a run (abort the agent when it fires).
    pub fn start_timer(&self, agent: &Agent) -> Option<tokio::task::JoinHandle<()>> {
        let timeout = self.timeout?;
        let agent = agent.clone();
        let flag = self.timed_out.clone();
        Some(tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            flag.store(true, Ordering::SeqCst);
            agent.abort();
        }))
    }
}
