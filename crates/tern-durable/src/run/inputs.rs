//! Acknowledged input: steering and follow-ups are journaled when accepted, before the
//! agent sees them; when one is placed into the transcript (its `message_end`) that is
//! journaled too, with the model request it precedes. Recovery hands each recorded input to
//! the agent again at the same place, so the replayed requests meet the same contexts.
//!
//! A host hears each stage of its input ([`DurableRun::on_input`]): accepted (journaled),
//! committed (placed into the transcript, journaled) and seen (sent to the model in a
//! request).

use std::sync::Arc;

use tern_agent::{Agent, AgentEvent, Subscription};
use tern_ai::Message;

use super::{DurableRun, RunInner};
use crate::{JournalError, Queue, Record, Step};

/// How far an accepted input has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputStage {
    /// Journaled: a crash from here on does not lose it.
    Accepted,
    /// Placed into the transcript (its `message_end`), and that placement journaled.
    Committed,
    /// Sent to the model as part of a request's context.
    Seen,
}

impl InputStage {
    /// The stage's name: `accepted`, `committed`, `seen`.
    pub fn name(self) -> &'static str {
        match self {
            InputStage::Accepted => "accepted",
            InputStage::Committed => "committed",
            InputStage::Seen => "seen",
        }
    }
}

/// One input reaching one stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputProgress {
    /// The id [`DurableRun::steer`] / [`DurableRun::follow_up`] / [`DurableRun::accept`] returned.
    pub id: String,
    /// The stage it reached.
    pub stage: InputStage,
}

pub(crate) type InputObserver = Arc<dyn Fn(&InputProgress) + Send + Sync>;

impl RunInner {
    pub(crate) fn notify(&self, id: &str, stage: InputStage) {
        let observers = self.observers.lock().clone();
        let progress = InputProgress {
            id: id.to_string(),
            stage,
        };
        for o in observers {
            o(&progress);
        }
    }

    /// Request `n` is being sent: input placed before it is seen now.
    pub(crate) fn note_request(&self, n: usize) {
        let seen: Vec<String> = {
            let mut unseen = self.unseen.lock();
            let (now, later): (Vec<_>, Vec<_>) = unseen.drain(..).partition(|(_, b)| *b <= n);
            *unseen = later;
            now.into_iter().map(|(id, _)| id).collect()
        };
        for id in seen {
            self.notify(&id, InputStage::Seen);
        }
    }

    fn deliver(&self, queue: Queue, message: Message) {
        if let Some(agent) = self.agent.lock().as_ref() {
            match queue {
                Queue::Steer => agent.steer(message),
                Queue::FollowUp => agent.follow_up(message),
                // A prompt starts a run; it is never queued into one.
                Queue::Prompt => {}
            }
        }
    }

    /// Called when model request `n` is planned: recorded input placed before request
    /// `n + 1` goes to the agent now (it drains its queues after this turn's tools); when
    /// `n` is the last recorded request, input accepted but never placed goes too.
    pub(crate) fn deliver_recorded(&self, n: usize) {
        let due = self.cursor.lock().inputs_due(n + 1);
        for (queue, message) in due {
            self.deliver(queue, message);
        }
    }
}

impl super::Cursor {
    /// Recorded steering and follow-up input to deliver before request `k` (0-based): what
    /// was placed before it, and, when `k` is one past the last recorded request, what was
    /// accepted but never placed.
    fn inputs_due(&self, k: usize) -> Vec<(Queue, Message)> {
        let unrequested = k == self.recorded.models.len();
        self.recorded
            .inputs
            .iter()
            .filter(|i| !i.returned && i.queue != Queue::Prompt)
            .filter(|i| i.committed_before.map_or(unrequested, |before| before == k))
            .map(|i| (i.queue, i.message.clone()))
            .collect()
    }
}

impl DurableRun {
    /// Connects the run to the agent that executes it: accepted input goes to its queues,
    /// placements are journaled, and a recovered run's input placed before its first
    /// request (or never placed, when nothing was requested) is queued now.
    pub fn attach(&self, agent: &Agent) -> Subscription {
        *self.inner.agent.lock() = Some(agent.clone());
        {
            let mut cursor = self.inner.cursor.lock();
            let recorded: Vec<_> = cursor
                .recorded
                .inputs
                .iter()
                .filter(|i| i.committed_before.is_none() && !i.returned)
                .map(|i| (i.id.clone(), i.message.clone()))
                .collect();
            cursor.uncommitted = recorded;
        }
        let first = self.inner.cursor.lock().inputs_due(0);
        for (q, m) in first {
            self.inner.deliver(q, m);
        }
        let run = self.inner.clone();
        agent.subscribe(move |event, _signal| {
            let run = run.clone();
            async move {
                let AgentEvent::MessageEnd { message } = &*event else {
                    return;
                };
                if message.role() != "user" {
                    return;
                }
                if let Some(id) = run.take_uncommitted(message) {
                    let before_request = run.cursor.lock().next_model;
                    // A listener is awaited before the loop goes on: the placement is on
                    // disk before the request that carries it.
                    let placed = run
                        .journal
                        .append(&Record::new(Step::InputCommitted {
                            id: id.clone(),
                            before_request,
                        }))
                        .await;
                    if placed.is_ok() {
                        run.unseen.lock().push((id.clone(), before_request));
                        run.notify(&id, InputStage::Committed);
                    }
                }
            }
        })
    }

    /// Calls `observer` each time an input of this run reaches a stage: accepted when
    /// [`steer`](Self::steer) / [`follow_up`](Self::follow_up) journal it, committed when it
    /// is placed into the transcript, seen when a request carries it to the model.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use tern_durable::{DurableRun, InputStage, MemoryJournal};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let run = DurableRun::start(Arc::new(MemoryJournal::default()), &[], &[]).await.unwrap();
    /// let heard = Arc::new(Mutex::new(Vec::new()));
    /// let h = heard.clone();
    /// run.on_input(move |p| h.lock().unwrap().push((p.id.clone(), p.stage)));
    /// let id = run.steer(tern_ai::Message::user_text("and the tests")).await.unwrap();
    /// assert_eq!(*heard.lock().unwrap(), [(id, InputStage::Accepted)]);
    /// # });
    /// ```
    pub fn on_input(&self, observer: impl Fn(&InputProgress) + Send + Sync + 'static) {
        self.inner.observers.lock().push(Arc::new(observer));
    }

    /// Accepts a steering message: journaled, then queued. Returns its id.
    ///
    /// It is queued in the attached agent; once [`finish`](Self::finish) has detached it,
    /// input is journaled and queued nowhere, so a host that queues while a run ends makes
    /// the two happen one after the other (tern's CLI holds a lock across both).
    pub async fn steer(&self, message: Message) -> Result<String, JournalError> {
        self.accept_and_deliver(Queue::Steer, message).await
    }

    /// Accepts a follow-up: journaled, then queued. Returns its id.
    pub async fn follow_up(&self, message: Message) -> Result<String, JournalError> {
        self.accept_and_deliver(Queue::FollowUp, message).await
    }

    /// Takes back accepted input the host removed from the agent's queues before it was
    /// placed (RPC `clear_queue`): journaled as returned, so a recovery does not deliver it
    /// again. `Ok(None)` when `message` is not input of this run still waiting.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tern_ai::Message;
    /// use tern_durable::{DurableRun, Journal, MemoryJournal, Recovery, Step};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let journal = Arc::new(MemoryJournal::default());
    /// let run = DurableRun::start(journal.clone(), &[], &[Message::user_text("go")]).await.unwrap();
    /// let later = Message::user_text("later");
    /// let id = run.follow_up(later.clone()).await.unwrap();
    /// assert_eq!(run.withdraw(&later).await.unwrap(), Some(id));
    /// assert_eq!(run.withdraw(&later).await.unwrap(), None, "only once");
    /// let records = journal.records().unwrap();
    /// assert!(matches!(records.last().unwrap().step, Step::InputReturned { .. }));
    /// match DurableRun::recover(journal, &[]).unwrap() {
    ///     Recovery::Interrupted { pending, .. } => assert!(pending.is_empty()),
    ///     Recovery::NothingInterrupted => unreachable!("the run did not end"),
    /// }
    /// # });
    /// ```
    pub async fn withdraw(&self, message: &Message) -> Result<Option<String>, JournalError> {
        let Some(id) = self.inner.take_uncommitted(message) else {
            return Ok(None);
        };
        self.inner
            .journal
            .append(&Record::new(Step::InputReturned { id: id.clone() }))
            .await?;
        Ok(Some(id))
    }

    async fn accept_and_deliver(
        &self,
        queue: Queue,
        message: Message,
    ) -> Result<String, JournalError> {
        let id = self.accept(queue, message.clone()).await?;
        self.inner.notify(&id, InputStage::Accepted);
        self.inner
            .cursor
            .lock()
            .uncommitted
            .push((id.clone(), message.clone()));
        self.inner.deliver(queue, message);
        Ok(id)
    }
}

impl RunInner {
    fn take_uncommitted(self: &Arc<Self>, message: &Message) -> Option<String> {
        let mut cursor = self.cursor.lock();
        let at = cursor.uncommitted.iter().position(|(_, m)| m == message)?;
        Some(cursor.uncommitted.remove(at).0)
    }
}
