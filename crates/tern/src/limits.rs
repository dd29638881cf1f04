//! Run limits (`--max-turns`, `--timeout`, `--max-cost`, `--max-tokens`, `--max-tool-calls`),
//! the session's (`--session-max-turns`, … over all runs of a session), and the flags that
//! say how a run ended.
//!
//! The limits are the [`Budgets`] of the run's durable run, journaled in its first record: when
//! one is spent the next model request is the wrap-up turn (no tools, a notice that the budget
//! is spent), and the run ends with that answer; a session limit already reached refuses the
//! next run. `--recover` and `--replay` run under the recorded limits; a flag given to them
//! replaces a recorded value, with a note ([`overridden`]). `--timeout` is also a hard stop:
//! a run still going a grace period after the timeout (a hung request or tool never reaches
//! its wrap-up turn) is aborted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tern_agent::Agent;
use tern_durable::{Budget, Budgets, Limit, Spent};

/// Run limits and what happened to them.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// The limits a new run gets (flags and config): its own and the session's.
    pub budgets: Budgets,
    /// The limits given on the command line: what replaces a recovered or replayed run's
    /// recorded limits.
    pub flags: Budgets,
    /// The limits the last run went under (a recovered run's are the recorded ones).
    pub ran_under: Arc<Mutex<Budgets>>,
    /// The limit whose wrap-up turn ended the last run.
    pub ended_by: Arc<Mutex<Option<Limit>>>,
    /// Why the last run was refused (a session limit was already reached).
    pub refused: Arc<Mutex<Option<(Limit, String)>>>,
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

/// `recorded` with each limit `now` sets put in its place, and a note per limit that
/// changed: a flag given to `--recover` or `--replay` wins over the budget the run was
/// started with (the config does not: it is there every time).
pub fn overridden(recorded: &Budgets, now: &Budgets) -> (Budgets, Vec<String>) {
    let mut notes = Vec::new();
    let run = merge(&recorded.run, &now.run, "", &mut notes);
    let session = merge(&recorded.session, &now.session, "session-", &mut notes);
    (Budgets { run, session }, notes)
}

fn merge(recorded: &Budget, now: &Budget, prefix: &str, notes: &mut Vec<String>) -> Budget {
    fn pick<T: PartialEq + Copy + std::fmt::Debug>(
        flag: &str,
        recorded: Option<T>,
        now: Option<T>,
        show: impl Fn(T) -> String,
        notes: &mut Vec<String>,
    ) -> Option<T> {
        match now {
            Some(v) if Some(v) != recorded => {
                let was = recorded.map_or("none".to_string(), &show);
                notes.push(format!("{flag} {} replaces the recorded {was}", show(v)));
                Some(v)
            }
            Some(v) => Some(v),
            None => recorded,
        }
    }
    let turns = |n: u32| (n + 1).to_string();
    let secs = |d: Duration| format!("{:.0}", d.as_secs_f64());
    let timeout = if prefix.is_empty() {
        "--timeout".to_string()
    } else {
        "--session-timeout".to_string()
    };
    Budget {
        max_turns: pick(
            &format!("--{prefix}max-turns"),
            recorded.max_turns,
            now.max_turns,
            turns,
            notes,
        ),
        max_tokens: pick(
            &format!("--{prefix}max-tokens"),
            recorded.max_tokens,
            now.max_tokens,
            |n| n.to_string(),
            notes,
        ),
        max_cost: pick(
            &format!("--{prefix}max-cost"),
            recorded.max_cost,
            now.max_cost,
            |c| c.to_string(),
            notes,
        ),
        max_wall_time: pick(
            &timeout,
            recorded.max_wall_time,
            now.max_wall_time,
            secs,
            notes,
        ),
        max_tool_calls: pick(
            &format!("--{prefix}max-tool-calls"),
            recorded.max_tool_calls,
            now.max_tool_calls,
            |n| n.to_string(),
            notes,
        ),
    }
}

impl Limits {
    /// Clears the per-run state.
    pub fn reset_run(&self) {
        *self.ended_by.lock() = None;
        *self.refused.lock() = None;
        self.timed_out.store(false, Ordering::SeqCst);
        self.user_aborted.store(false, Ordering::SeqCst);
    }

    /// The run was ended from outside: aborted by the user or the timeout's hard stop.
    pub fn aborted(&self) -> bool {
        self.user_aborted.load(Ordering::SeqCst) || self.timed_out.load(Ordering::SeqCst)
    }

    /// The limit that ended the last run: a budget's wrap-up, the timeout's hard stop, or a
    /// session limit that refused it.
    pub fn ended_by(&self) -> Option<Limit> {
        if let Some(limit) = *self.ended_by.lock() {
            return Some(limit);
        }
        if let Some((limit, _)) = &*self.refused.lock() {
            return Some(*limit);
        }
        self.timed_out
            .load(Ordering::SeqCst)
            .then_some(Limit::WallTime)
    }

    /// The `--timeout` of the last run.
    pub fn timeout(&self) -> Option<Duration> {
        self.ran_under.lock().run.max_wall_time
    }

    /// Starts the timeout's hard stop for a run under `budgets` (abort the agent when it
    /// fires).
    pub fn start_timer(
        &self,
        agent: &Agent,
        budgets: &Budgets,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let timeout = budgets.run.max_wall_time?;
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
        let what = spent_limit(limit, &self.ran_under.lock());
        format!(
            "{what}; the run ended with a wrap-up answer without tools and the task was not \
             confirmed complete"
        )
    }

    /// Why a new run is refused: a session limit is already reached by `spent`.
    pub fn refusal(&self, spent: &Spent) -> Option<(Limit, String)> {
        let limit = spent.reaches(&self.budgets.session, tern_durable::Scope::Session)?;
        let what = spent_limit(limit, &self.budgets);
        let flag = flag_of(limit);
        let key = flag.trim_start_matches("--").replace('-', "_");
        Some((
            limit,
            format!(
                "{what}: the session's runs have used it up, so no new run starts; raise it \
                 with {flag} (or `{key}` in the config), or start a new session"
            ),
        ))
    }
}

/// The flag that sets `limit`.
pub fn flag_of(limit: Limit) -> &'static str {
    match limit {
        Limit::Turns => "--max-turns",
        Limit::Tokens => "--max-tokens",
        Limit::Cost => "--max-cost",
        Limit::WallTime => "--timeout",
        Limit::ToolCalls => "--max-tool-calls",
        Limit::SessionTurns => "--session-max-turns",
        Limit::SessionTokens => "--session-max-tokens",
        Limit::SessionCost => "--session-max-cost",
        Limit::SessionWallTime => "--session-timeout",
        Limit::SessionToolCalls => "--session-max-tool-calls",
    }
}

/// "turn limit reached (4 turns, --max-turns)", from the limits in `budgets`.
fn spent_limit(limit: Limit, budgets: &Budgets) -> String {
    let (b, of) = match limit.scope() {
        tern_durable::Scope::Run => (&budgets.run, ""),
        tern_durable::Scope::Session => (&budgets.session, "session "),
    };
    let flag = flag_of(limit);
    match limit {
        Limit::Turns | Limit::SessionTurns => format!(
            "{of}turn limit reached ({} turns, {flag})",
            b.max_turns.map_or(0, |n| n + 1)
        ),
        Limit::Tokens | Limit::SessionTokens => format!(
            "{of}token limit reached ({} tokens, {flag})",
            b.max_tokens.unwrap_or_default()
        ),
        Limit::Cost | Limit::SessionCost => format!(
            "{of}cost limit reached (${}, {flag})",
            b.max_cost.unwrap_or_default()
        ),
        Limit::WallTime => format!(
            "timeout reached after {:.0} s ({flag})",
            b.max_wall_time.map(|d| d.as_secs_f64()).unwrap_or_default()
        ),
        Limit::SessionWallTime => format!(
            "session time limit reached ({:.0} s, {flag})",
            b.max_wall_time.map(|d| d.as_secs_f64()).unwrap_or_default()
        ),
        Limit::ToolCalls | Limit::SessionToolCalls => format!(
            "{of}tool-call limit reached ({} calls, {flag})",
            b.max_tool_calls.unwrap_or_default()
        ),
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
        let l = Limits::default();
        *l.ran_under.lock() = Budgets {
            run: Budget {
                max_turns: Some(3),
                ..Default::default()
            },
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

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_limit_given_now_replaces_the_recorded_one_with_a_note() {
        let recorded = Budgets {
            run: Budget {
                max_turns: Some(1),
                max_tokens: Some(500),
                ..Default::default()
            },
            ..Default::default()
        };
        let (same, notes) = overridden(&recorded, &Budgets::default());
        assert_eq!((same, notes.len()), (recorded.clone(), 0));
        let now = Budgets {
            run: Budget {
                max_turns: Some(4),
                max_tokens: Some(500),
                ..Default::default()
            },
            ..Default::default()
        };
        let (merged, notes) = overridden(&recorded, &now);
        assert_eq!(merged.run.max_turns, Some(4));
        assert_eq!(merged.run.max_tokens, Some(500));
        assert_eq!(notes, ["--max-turns 5 replaces the recorded 2"]);
    }

    #[test]
    fn a_refusal_says_how_to_raise_the_limit() {
        let l = Limits {
            budgets: Budgets {
                session: Budget {
                    max_tool_calls: Some(2),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let used = Spent {
            tool_calls: 2,
            ..Default::default()
        };
        let (limit, why) = l.refusal(&used).expect("refused");
        assert_eq!(limit, Limit::SessionToolCalls);
        assert!(
            why.contains("--session-max-tool-calls") && why.contains("session_max_tool_calls"),
            "{why}"
        );
        assert!(l.refusal(&Spent::default()).is_none());
    }
}
