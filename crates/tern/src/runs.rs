//! A run through a durable run: a prompt (and what gets queued meanwhile), the recovery of a
//! run that was cut off, and steering that is journaled when accepted.

use std::sync::Arc;

use tern_agent::{AgentError, RunEnding, RunOutcome};
use tern_ai::Message;
use tern_durable::{
    DurableRun, Journal, JournalError, MemoryJournal, Queue, RecordedRun, Recovery, RunEnd, Spent,
};

use crate::durable::system_prefix_len;
use crate::runtime::Runtime;
use crate::secrets::eprintln_redacted;

/// An interrupted run, ready to be finished by [`Runtime::run_recovered`].
pub struct Prepared {
    run: DurableRun,
    prompt: Vec<Message>,
    /// The transcript the run started from (system prefix included).
    start: Vec<Message>,
    /// Messages of the run the session file already holds.
    already_written: usize,
}

/// Why a session's interrupted run cannot be recovered.
#[derive(Debug)]
pub enum RecoverError {
    /// The session is in memory (`--no-session`).
    NoSession,
    /// The journal cannot be read, or is not this transcript's or this format's.
    Journal(JournalError),
}

impl std::fmt::Display for RecoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecoverError::NoSession => {
                f.write_str("there is no session file to recover from; name it with --session FILE")
            }
            RecoverError::Journal(e) => write!(f, "{e}"),
        }
    }
}

/// How a run ended, as its journal's last record says.
fn run_end(run: &DurableRun, result: &Result<RunOutcome, AgentError>) -> RunEnd {
    if run.ended_by().is_some() {
        return run.end();
    }
    match result {
        Ok(o) => match &o.ending {
            RunEnding::Aborted => RunEnd::Aborted,
            RunEnding::Failed(_) => RunEnd::Failed,
            _ => RunEnd::Completed,
        },
        Err(_) => RunEnd::Failed,
    }
}

/// Whether `journal`'s last run started and never ended (false when it cannot be read:
/// `--recover` says why).
pub fn last_run_interrupted(journal: &dyn Journal) -> bool {
    journal
        .records()
        .ok()
        .and_then(|r| RecordedRun::last(&r))
        .is_some_and(|r| r.interrupted())
}

impl Runtime {
    /// The transcript split into its system prefix and the rest (what a journal ties to).
    fn split_transcript(&self) -> (Vec<Message>, Vec<Message>) {
        self.agent.with_messages(|m| {
            let n = system_prefix_len(m);
            (m[..n].to_vec(), m[n..].to_vec())
        })
    }

    /// Runs `prompt` and then whatever was queued meanwhile (steering that arrived after
    /// the last turn still gets its run), as one durable run, until the agent would stop or
    /// a limit stops it. The outcome is the last agent run's.
    ///
    /// When a session limit is already reached the run is refused: nothing is sent, the
    /// refusal is in [`Limits::refused`](crate::limits::Limits::refused), and the error says
    /// how to raise the limit.
    pub async fn run_prompt(&self, prompt: Vec<Message>) -> Result<RunOutcome, AgentError> {
        self.compact_before_prompt().await;
        let result = self.run_prompt_once(prompt).await;
        self.compact_after_run(&result).await;
        result
    }

    async fn run_prompt_once(&self, prompt: Vec<Message>) -> Result<RunOutcome, AgentError> {
        self.limits.reset_run();
        self.reset_overflow_retry();
        if let Some((limit, why)) = self.session_refusal() {
            *self.limits.refused.lock() = Some((limit, why.clone()));
            return Err(AgentError::Failed(why));
        }
        let (_, body) = self.split_transcript();
        let budgets = self.limits.budgets.clone();
        let started =
            DurableRun::start_with_budget(self.journal(), &body, &prompt, budgets.clone()).await;
        let run = match started {
            Ok(run) => Some(run),
            // Reached since the check above (another process ran in the session).
            Err(JournalError::BudgetSpent { limit, spent, .. }) => {
                let (limit, why) = self.limits.refusal(&spent).unwrap_or_else(|| {
                    (
                        limit,
                        format!("the session's {} budget is spent", limit.name()),
                    )
                });
                *self.limits.refused.lock() = Some((limit, why.clone()));
                return Err(AgentError::Failed(why));
            }
            Err(e) => {
                eprintln_redacted!(
                    "tern: warning: the run is not journaled ({e}); it cannot be recovered if \
                     tern is killed"
                );
                let memory = Arc::new(MemoryJournal::default());
                DurableRun::start_with_budget(memory, &body, &prompt, budgets)
                    .await
                    .ok()
            }
        };
        match run {
            Some(run) => {
                let queued = self.agent.queued();
                self.agent.clear_all_queues();
                self.execute(run, prompt, queued).await
            }
            None => self.agent.prompt_messages(prompt).await,
        }
    }

    /// Runs `run` from `prompt`, with `queued` (messages queued while no run was going) as
    /// its first accepted input.
    async fn execute(
        &self,
        run: DurableRun,
        prompt: Vec<Message>,
        queued: (Vec<Message>, Vec<Message>),
    ) -> Result<RunOutcome, AgentError> {
        *self.limits.ran_under.lock() = run.budget();
        if let Some(observer) = self.inputs.lock().clone() {
            run.on_input(move |p| observer(p));
        }
        self.current.set(Some(run.clone()));
        // pi's check between two turns applies to this run's turns.
        *self.between_turns.lock() = Some(self.compactor());
        let inputs = run.attach(&self.agent);
        // Messages queued while no run was going become input of this one, journaled.
        let (steering, follow_ups) = queued;
        for m in steering {
            self.queue(Queue::Steer, m).await;
        }
        for m in follow_ups {
            self.queue(Queue::FollowUp, m).await;
        }
        let timer = self.limits.start_timer(&self.agent, &run.budget());
        // A successful answer ends a retry sequence, right after its `message_end` is out.
        let retry = self.retry.clone();
        let answers = self.agent.subscribe_sync(move |e| retry.on_message_end(e));
        let mut result = self.agent.prompt_messages(prompt).await;
        // The outcome covers every run made here: all messages and usage, the last ending.
        loop {
            while !self.limits.aborted()
                && run.ended_by().is_none()
                && self.agent.has_queued_messages()
            {
                let Ok(so_far) = result else { break };
                result = self.continue_after(so_far).await;
            }
            // A transient failure: the failed answer is omitted and the run continued.
            if run.ended_by().is_some() || !self.retry_after(&result).await {
                break;
            }
            let Ok(so_far) = result else { break };
            result = self.continue_after(so_far).await;
        }
        answers.unsubscribe();
        // A context overflow compacts and retries once, inside this run.
        let result = self.recover_overflow(result).await;
        if let Some(t) = timer {
            t.abort();
        }
        self.agent.wait_for_idle().await;
        // Input accepted from here on waits in the agent's queues for the next run; input
        // being accepted now reaches them first.
        let no_input_in_flight = self.queueing.lock().await;
        self.current.set(None);
        drop(no_input_in_flight);
        *self.between_turns.lock() = None;
        *self.limits.ended_by.lock() = run.ended_by();
        if let Err(e) = run.finish(run_end(&run, &result)).await {
            eprintln_redacted!("tern: warning: the end of the run was not journaled: {e}");
        }
        inputs.unsubscribe();
        result
    }

    /// Continues the agent's run; the outcome covers what came `so_far` and the rest.
    async fn continue_after(&self, so_far: RunOutcome) -> Result<RunOutcome, AgentError> {
        self.agent
            .continue_run()
            .await
            .map(|next| so_far.then(next))
    }

    /// Reads the session's journal: `Ok(None)` when its last run ended (or there was none),
    /// the interrupted run otherwise.
    pub fn prepare_recovery(&self) -> Result<Option<Prepared>, RecoverError> {
        if self.recorder.lock().session().path().is_none() {
            return Err(RecoverError::NoSession);
        }
        let (prefix, body) = self.split_transcript();
        let journal = self.journal();
        match DurableRun::recover(journal, &body).map_err(RecoverError::Journal)? {
            Recovery::NothingInterrupted => Ok(None),
            Recovery::Interrupted {
                run,
                prompt,
                transcript_length,
                ..
            } => {
                // The run goes on under the limits it was started with; a limit given now
                // replaces its recorded value, with a note.
                let (budgets, notes) = crate::limits::overridden(&run.budget(), &self.limits.flags);
                for n in notes {
                    eprintln_redacted!("tern: note: {n}");
                }
                let run = run.with_budgets(budgets);
                let at = transcript_length.min(body.len());
                let mut start = prefix;
                start.extend_from_slice(&body[..at]);
                Ok(Some(Prepared {
                    run,
                    prompt,
                    start,
                    already_written: body.len() - at,
                }))
            }
        }
    }

    /// Finishes an interrupted run: its recorded steps are replayed (nothing is sent or run
    /// again, and messages the file holds are not written twice), then it goes on live.
    pub async fn run_recovered(&self, p: Prepared) -> Result<RunOutcome, AgentError> {
        self.limits.reset_run();
        // Its own compact-and-retry, as a live run has (not the one an earlier prompt used).
        self.reset_overflow_retry();
        self.agent.set_messages(p.start);
        let recording =
            tern_durable::record_messages(&self.recorder, &self.agent, p.already_written);
        if let Some(old) = self.recording.lock().replace(recording) {
            old.unsubscribe();
        }
        // A recovered run replays its own input: messages queued meanwhile wait for the
        // next run (the agent would place them before the first replayed request).
        let (steering, follow_ups) = self.agent.queued();
        self.agent.clear_all_queues();
        let result = self
            .execute(p.run, p.prompt, (Vec::new(), Vec::new()))
            .await;
        for m in steering {
            self.agent.steer(m);
        }
        for m in follow_ups {
            self.agent.follow_up(m);
        }
        // pi's check after a run; none before it, which would change the transcript the
        // journal's recorded requests are replayed against.
        self.compact_after_run(&result).await;
        result
    }

    /// Whether the session's last run was cut off (false when it cannot be told).
    pub fn interrupted_run(&self) -> bool {
        if self.recorder.lock().session().path().is_none() {
            return false;
        }
        last_run_interrupted(&*self.journal())
    }

    /// Why a new run may not start: a session limit its earlier runs already reached.
    pub fn session_refusal(&self) -> Option<(tern_durable::Limit, String)> {
        if self.limits.budgets.session.is_unlimited() {
            return None;
        }
        let records = self.journal().records().ok()?;
        self.limits.refusal(&Spent::of_session(&records))
    }

    /// Queues a steering message: journaled at acceptance when a run is going, and then
    /// its input id is returned.
    pub async fn steer(&self, message: Message) -> Option<String> {
        self.queue(Queue::Steer, message).await
    }

    /// Queues a follow-up: journaled at acceptance when a run is going, and then its input
    /// id is returned.
    pub async fn follow_up(&self, message: Message) -> Option<String> {
        self.queue(Queue::FollowUp, message).await
    }

    /// Journals queued messages the host took back (RPC `clear_queue`) as returned, so a
    /// recovery does not deliver them.
    pub async fn withdraw(&self, messages: &[Message]) {
        let Some(run) = self.current.get() else {
            return;
        };
        for m in messages {
            if let Err(e) = run.withdraw(m).await {
                eprintln_redacted!(
                    "tern: warning: a cleared message was not journaled as cleared ({e}); a \
                     recovery of this run would deliver it"
                );
            }
        }
    }

    async fn queue(&self, queue: Queue, message: Message) -> Option<String> {
        let _current_stays = self.queueing.lock().await;
        if let Some(run) = self.current.get() {
            let accepted = match queue {
                Queue::FollowUp => run.follow_up(message.clone()).await,
                _ => run.steer(message.clone()).await,
            };
            match accepted {
                Ok(id) => return Some(id),
                Err(e) => eprintln_redacted!(
                    "tern: warning: the message was not journaled ({e}); it is queued all the same"
                ),
            }
        }
        match queue {
            Queue::FollowUp => self.agent.follow_up(message),
            _ => self.agent.steer(message),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_durable::{Record, Step};

    fn journal(steps: Vec<Step>) -> MemoryJournal {
        MemoryJournal::new(steps.into_iter().map(Record::new).collect())
    }

    fn started(id: &str) -> Step {
        Step::RunStarted {
            run_id: id.into(),
            transcript_digest: tern_durable::transcript_digest(&[]),
            transcript_length: 0,
            prompt: vec![Message::user_text("go")],
            budget: Default::default(),
        }
    }

    fn finished(id: &str) -> Step {
        Step::RunFinished {
            run_id: id.into(),
            end: RunEnd::Completed,
            wall_time_ms: None,
        }
    }

    #[test]
    fn only_a_last_run_without_its_end_is_interrupted() {
        assert!(!last_run_interrupted(&journal(vec![])), "no run at all");
        assert!(last_run_interrupted(&journal(vec![started("r1")])));
        assert!(!last_run_interrupted(&journal(vec![
            started("r1"),
            finished("r1")
        ])));
        assert!(last_run_interrupted(&journal(vec![
            started("r1"),
            finished("r1"),
            started("r2"),
        ])));
        // Opening such a session in the terminal UI says so, and how to finish it.
        let note = crate::modes::interactive::interrupted_note(true).unwrap_or_default();
        assert!(
            note.contains("interrupted") && note.contains("/recover"),
            "{note}"
        );
        assert!(crate::modes::interactive::interrupted_note(false).is_none());
    }
}
