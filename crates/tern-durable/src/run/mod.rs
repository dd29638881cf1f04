//! Durable execution of one run on top of the core: the model and the tools are wrapped so
//! each request and call is a journaled step, a hook's question to a person is one too
//! ([`DurableRun::decide`]), and recovery replays the recorded outcomes.
//!
//! The loop itself is the core's, unchanged: a durable run is an [`Agent`](tern_agent::Agent) built with
//! [`DurableRun::model`] as its stream function and [`DurableRun::tool`] around each tool.
//! Between steps the loop is deterministic, so re-running it from the transcript the run
//! started from, with the same input, meets the same steps in the same order.

mod decision_step;
mod inputs;
mod model_step;
pub mod recorded;
mod tool_step;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::AgentTool;
use tern_ai::environment::Environment;
use tern_ai::{Message, StreamFn};

pub use inputs::{InputProgress, InputStage};
pub use recorded::{RecordedDecision, RecordedInput, RecordedModel, RecordedRun, RecordedTool};
pub use tool_step::interrupted_text;

use crate::budget::{Budgets, Scope, Spending, Spent};
use crate::{transcript_digest, Journal, JournalError, Queue, Record, RunEnd, Step};

pub(crate) struct Cursor {
    pub(crate) recorded: RecordedRun,
    pub(crate) next_model: usize,
    /// Accepted input not yet seen in the transcript: (id, message).
    pub(crate) uncommitted: Vec<(String, Message)>,
    /// Tool calls started so far.
    pub(crate) next_tool: usize,
}

pub(crate) struct RunInner {
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) run_id: String,
    /// The clock and id source of the run's own ids and messages.
    pub(crate) env: Environment,
    pub(crate) cursor: Mutex<Cursor>,
    inputs: AtomicU64,
    /// Where accepted input goes; set by `attach`, cleared by `finish` (the agent holds
    /// this run through its stream function, so the link is broken when the run ends).
    pub(crate) agent: Mutex<Option<tern_agent::Agent>>,
    /// A replay: nothing goes live; a step the recording lacks is a divergence.
    pub(crate) offline: bool,
    divergence: Mutex<Option<crate::Divergence>>,
    pub(crate) spending: Mutex<crate::budget::Spending>,
    /// Who hears how far accepted input has come ([`DurableRun::on_input`]).
    pub(crate) observers: Mutex<Vec<inputs::InputObserver>>,
    /// Input placed into the transcript, not yet sent: (id, the request it precedes).
    pub(crate) unseen: Mutex<Vec<(String, usize)>>,
    /// The context digest so far: each request hashes only the messages it adds.
    pub(crate) context_digests: Mutex<crate::digest::ContextDigests>,
}

impl RunInner {
    /// Keeps the first divergence only: later ones follow from it.
    pub(crate) fn note_divergence(&self, d: crate::Divergence) {
        self.divergence.lock().get_or_insert(d);
    }
}

/// One durable run: its journal, its id, and what recovery replays.
#[derive(Clone)]
pub struct DurableRun {
    inner: Arc<RunInner>,
}

impl std::fmt::Debug for DurableRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableRun")
            .field("run_id", &self.inner.run_id)
            .field("journal", &self.inner.journal.describe())
            .finish()
    }
}

/// What [`DurableRun::recover`] found.
#[derive(Debug)]
pub enum Recovery {
    /// The journal's last run ended (or there was none): nothing to finish.
    NothingInterrupted,
    /// A run was cut off: re-run it with this run and this input.
    Interrupted {
        /// The run, replaying its recorded steps, then live.
        run: DurableRun,
        /// The prompt it was started with.
        prompt: Vec<Message>,
        /// Messages the transcript held when it started (replay from there).
        transcript_length: usize,
        /// Accepted steering and follow-up input not yet placed into the transcript.
        pending: Vec<RecordedInput>,
    },
}

/// `run-<ms>-<16 hex digits>`: when, and a fresh id from the environment.
fn new_run_id(env: &Environment) -> String {
    format!("run-{}-{:016x}", env.now_ms(), env.next_id())
}

impl DurableRun {
    fn with(
        env: Environment,
        journal: Arc<dyn Journal>,
        run_id: String,
        recorded: RecordedRun,
        before: Spent,
    ) -> Self {
        let inputs = recorded.inputs.len() as u64;
        let spending = Spending::new(recorded.budget.clone(), before, env.clone());
        DurableRun {
            inner: Arc::new(RunInner {
                journal,
                run_id,
                env,
                cursor: Mutex::new(Cursor {
                    recorded,
                    next_model: 0,
                    uncommitted: Vec::new(),
                    next_tool: 0,
                }),
                offline: false,
                divergence: Mutex::new(None),
                observers: Mutex::new(Vec::new()),
                unseen: Mutex::new(Vec::new()),
                spending: Mutex::new(spending),
                inputs: AtomicU64::new(inputs),
                agent: Mutex::new(None),
                context_digests: Mutex::new(Default::default()),
            }),
        }
    }

    /// Starts a new run from `transcript`; its prompt is journaled in the same record, so a
    /// run on disk always has its input.
    pub async fn start(
        journal: Arc<dyn Journal>,
        transcript: &[Message],
        prompt: &[Message],
    ) -> Result<DurableRun, JournalError> {
        Self::start_with_budget(journal, transcript, prompt, Budgets::default()).await
    }

    /// Starts a new run under `budget`, journaled in its first record (a recovery or a
    /// replay runs under the same limits). The session's limits count what the journal's
    /// earlier runs used; when one is already reached the run is refused
    /// ([`JournalError::BudgetSpent`]) and nothing is journaled.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tern_durable::{Budget, Budgets, DurableRun, JournalError, MemoryJournal, Limit};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let journal = Arc::new(MemoryJournal::default());
    /// let none_left = Budgets {
    ///     session: Budget { max_tool_calls: Some(0), ..Default::default() },
    ///     ..Default::default()
    /// };
    /// let refused = DurableRun::start_with_budget(journal, &[], &[], none_left).await;
    /// assert!(matches!(refused, Err(JournalError::BudgetSpent { limit: Limit::SessionToolCalls, .. })));
    /// # });
    /// ```
    pub async fn start_with_budget(
        journal: Arc<dyn Journal>,
        transcript: &[Message],
        prompt: &[Message],
        budget: Budgets,
    ) -> Result<DurableRun, JournalError> {
        Self::start_in(Environment::system(), journal, transcript, prompt, budget).await
    }

    /// [`start_with_budget`](Self::start_with_budget) with the run's clock and id source
    /// given: its run id and the messages the durable layer makes itself (a refused
    /// request's error) come from `env`. With a fixed clock and a deterministic id source
    /// (and the session written with the same,
    /// [`SessionFile::with_environment`](tern_session::SessionFile::with_environment)), the
    /// same run writes the same journal, byte for byte.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tern_ai::environment::Environment;
    /// use tern_durable::{Budgets, DurableRun, Journal, MemoryJournal, Step};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let journal = Arc::new(MemoryJournal::default());
    /// let env = || Environment::fixed(1_733_234_400_000, 7);
    /// let run = DurableRun::start_in(env(), journal.clone(), &[], &[], Budgets::default())
    ///     .await
    ///     .unwrap();
    /// let again = DurableRun::start_in(env(), journal.clone(), &[], &[], Budgets::default())
    ///     .await
    ///     .unwrap();
    /// assert_eq!(run.id(), again.id(), "the same clock and seed, the same run id");
    /// assert!(run.id().starts_with("run-1733234400000-"));
    /// # });
    /// ```
    pub async fn start_in(
        env: Environment,
        journal: Arc<dyn Journal>,
        transcript: &[Message],
        prompt: &[Message],
        budget: Budgets,
    ) -> Result<DurableRun, JournalError> {
        let before = if budget.session.is_unlimited() {
            Spent::default()
        } else {
            Spent::of_session(&journal.records()?)
        };
        if let Some(limit) = before.reaches(&budget.session, Scope::Session) {
            return Err(JournalError::BudgetSpent {
                limit,
                spent: before,
                budget: budget.session,
            });
        }
        let recorded = RecordedRun {
            budget: budget.clone(),
            ..RecordedRun::default()
        };
        let run_id = new_run_id(&env);
        let run = Self::with(env, journal, run_id, recorded, before);
        run.inner
            .journal
            .append(&Record::new(Step::RunStarted {
                run_id: run.inner.run_id.clone(),
                transcript_digest: transcript_digest(transcript),
                transcript_length: transcript.len(),
                prompt: prompt.to_vec(),
                budget,
            }))
            .await?;
        Ok(run)
    }

    /// Reads the journal and, when its last run was cut off, prepares to finish it.
    ///
    /// `transcript` is the session's transcript as loaded; its first messages must be the
    /// ones the run started from, or the journal is refused ([`JournalError::OtherTranscript`]).
    pub fn recover(
        journal: Arc<dyn Journal>,
        transcript: &[Message],
    ) -> Result<Recovery, JournalError> {
        Self::recover_in(Environment::system(), journal, transcript)
    }

    /// [`recover`](Self::recover) with the recovered run's clock and id source given (see
    /// [`start_in`](Self::start_in)).
    pub fn recover_in(
        env: Environment,
        journal: Arc<dyn Journal>,
        transcript: &[Message],
    ) -> Result<Recovery, JournalError> {
        let records = journal.records()?;
        let Some(recorded) = RecordedRun::last(&records) else {
            return Ok(Recovery::NothingInterrupted);
        };
        let earlier = records
            .iter()
            .rposition(|r| matches!(r.step, Step::RunStarted { .. }))
            .unwrap_or(0);
        if !recorded.interrupted() {
            return Ok(Recovery::NothingInterrupted);
        }
        let start = recorded.transcript_length.min(transcript.len());
        let here = transcript_digest(&transcript[..start]);
        if recorded.transcript_length > transcript.len() || here != recorded.transcript_digest {
            return Err(JournalError::OtherTranscript {
                journal: recorded.transcript_digest.clone(),
                transcript: here,
            });
        }
        let prompt = recorded.prompt.clone();
        let pending = recorded
            .inputs
            .iter()
            .filter(|i| i.queue != Queue::Prompt && i.committed_before.is_none() && !i.returned)
            .cloned()
            .collect();
        let transcript_length = recorded.transcript_length;
        let run_id = recorded.run_id.clone();
        Ok(Recovery::Interrupted {
            run: Self::with(
                env,
                journal,
                run_id,
                recorded,
                Spent::of_session(&records[..earlier]),
            ),
            prompt,
            transcript_length,
            pending,
        })
    }

    /// This run as a replay: nothing goes live (only before it is used).
    pub(crate) fn offline(self) -> Self {
        let mut inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            Err(shared) => return DurableRun { inner: shared },
        };
        inner.offline = true;
        DurableRun {
            inner: Arc::new(inner),
        }
    }

    /// The first divergence a replay met, then whether fewer requests were made.
    pub(crate) fn first_divergence(&self) -> Option<crate::Divergence> {
        if let Some(d) = self.inner.divergence.lock().clone() {
            return Some(d);
        }
        let cursor = self.inner.cursor.lock();
        let recorded = cursor.recorded.models.len();
        (cursor.next_model < recorded).then(|| crate::Divergence::MissingRequests {
            recorded,
            made: cursor.next_model,
        })
    }

    /// Sets the run's own limits (before it starts), keeping the session's; see
    /// [`Budget`](crate::Budget). Not journaled: a run started with
    /// [`start_with_budget`](Self::start_with_budget) has its limits on record, and a
    /// recovered run gets them back without this.
    pub fn with_budget(self, budget: crate::Budget) -> Self {
        let budgets = Budgets {
            run: budget,
            session: self.inner.spending.lock().budgets().session.clone(),
        };
        self.with_budgets(budgets)
    }

    /// Sets the run's and the session's limits (before it starts), not journaled.
    pub fn with_budgets(self, budgets: Budgets) -> Self {
        {
            let mut spending = self.inner.spending.lock();
            let before = spending.before().clone();
            *spending = Spending::new(budgets, before, self.inner.env.clone());
        }
        self
    }

    /// The limits the run goes under (a recovered run: the ones it was started with).
    pub fn budget(&self) -> Budgets {
        self.inner.spending.lock().budgets().clone()
    }

    /// What the run has used so far.
    pub fn spent(&self) -> Spent {
        self.inner.spending.lock().used()
    }

    /// The limit that ended the run with a wrap-up turn, if one did.
    pub fn ended_by(&self) -> Option<crate::Limit> {
        self.inner.spending.lock().ended_by
    }

    /// How the run ended, for [`finish`](Self::finish): a budget's wrap-up, or `completed`.
    pub fn end(&self) -> RunEnd {
        match self.ended_by() {
            Some(limit) => RunEnd::Budget {
                limit: limit.name().to_string(),
            },
            None => RunEnd::Completed,
        }
    }

    /// The run id.
    pub fn id(&self) -> &str {
        &self.inner.run_id
    }

    /// The stream function for the run's agent: `inner` wrapped as model-request steps.
    pub fn model(&self, inner: Arc<dyn StreamFn>) -> Arc<dyn StreamFn> {
        Arc::new(model_step::DurableModel {
            run: self.inner.clone(),
            inner,
        })
    }

    /// `tool` wrapped as tool-call steps (same name, schema and policy).
    pub fn tool(&self, tool: AgentTool) -> AgentTool {
        tool_step::durable_tool(self.inner.clone(), tool)
    }

    /// Journals an input at acceptance and returns its id; hand the message to the agent
    /// (`steer` / `follow_up`) only after this returns.
    pub async fn accept(&self, queue: Queue, message: Message) -> Result<String, JournalError> {
        let n = self.inner.inputs.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}:i{n}", self.inner.run_id);
        self.inner
            .journal
            .append(&Record::new(Step::InputAccepted {
                id: id.clone(),
                queue,
                message,
            }))
            .await?;
        Ok(id)
    }

    /// Journals how the run ended.
    pub async fn finish(&self, end: RunEnd) -> Result<(), JournalError> {
        self.inner.agent.lock().take();
        self.inner
            .journal
            .append(&Record::new(Step::RunFinished {
                run_id: self.inner.run_id.clone(),
                end,
                wall_time_ms: Some(self.spent().wall_time.as_millis() as u64),
            }))
            .await
    }
}

/// Records `agent`'s finished messages into `recorder`'s session, skipping the first
/// `already_written`: a recovered run replays messages the session file already holds.
pub fn record_messages(
    recorder: &Arc<Mutex<tern_session::Recorder>>,
    agent: &tern_agent::Agent,
    already_written: usize,
) -> tern_agent::Subscription {
    let rec = recorder.clone();
    let skip = AtomicU64::new(already_written as u64);
    agent.subscribe_sync(move |event| {
        if let tern_agent::AgentEvent::MessageEnd { message } = event {
            let left = skip.load(Ordering::Relaxed);
            if left > 0 {
                skip.store(left - 1, Ordering::Relaxed);
                return;
            }
            rec.lock().record_message(message);
        }
    })
}
