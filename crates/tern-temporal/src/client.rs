//! Starting and attaching to sessions: the library API a CLI or a service uses.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_temporal::Error> {
//! use tern_ai::{Message, Model};
//! use tern_temporal::{Sessions, SessionInput};
//! let sessions = Sessions::connect("127.0.0.1:7233", "default", "tern").await?;
//! let session = sessions
//!     .start("session-1", SessionInput { model: Model::default(), ..Default::default() })
//!     .await?;
//! session.prompt(vec![Message::user_text("Hello")]).await?;
//! let events = session.wait_idle(0).await?; // every event, as a local run prints it
//! # let _ = events; Ok(()) }
//! ```

use std::time::Duration;

use serde_json::Value;
use temporalio_client::errors::WorkflowUpdateError;
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowCancelOptions,
    WorkflowExecuteUpdateOptions, WorkflowGetResultOptions, WorkflowHandle, WorkflowQueryOptions,
    WorkflowSignalOptions, WorkflowStartOptions, WorkflowStartUpdateOptions,
};
use temporalio_common::{HasWorkflowDefinition, QueryDefinition, UpdateDefinition};
use tern_ai::Message;

use crate::error::Error;
use crate::live::{LiveListener, LiveMerge};
use crate::wire::{
    ClearQueues, LiveSubscription, LiveTarget, SessionInput, SessionMessages, SessionOutput,
    SessionSettings, SessionState,
};
use crate::workflow::AgentWorkflow;

/// How often [`SessionHandle::wait_idle`] reads new events.
const POLL_EVERY: Duration = Duration::from_millis(50);
/// How long [`SessionHandle::follow`] keeps retrying failing queries (a failover takes the
/// activity's heartbeat timeout plus the dead worker's sticky-queue timeout, about 7 s).
pub const QUERY_PATIENCE: Duration = Duration::from_secs(60);

/// The session workflow's definition its updates and queries belong to.
type SessionRun = <AgentWorkflow as HasWorkflowDefinition>::Run;

/// A connection to Temporal, for one namespace and task queue.
#[derive(Clone)]
pub struct Sessions {
    client: Client,
    task_queue: String,
}

/// `HOST:PORT` (or a full URL) as the client's URL.
pub fn parse_address(address: &str) -> Result<Url, Error> {
    let full = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    Url::parse(&full).map_err(|e| Error::Address {
        address: address.to_string(),
        reason: e.to_string(),
    })
}

/// Connects a client to `address` in `namespace`.
pub async fn connect_client(address: &str, namespace: &str) -> Result<Client, Error> {
    let connect = |reason: String| Error::Connect {
        address: address.to_string(),
        reason,
    };
    let url = parse_address(address)?;
    let connection = Connection::connect(ConnectionOptions::new(url).build())
        .await
        .map_err(|e| connect(e.to_string()))?;
    Client::new(connection, ClientOptions::new(namespace).build())
        .map_err(|e| connect(e.to_string()))
}

impl Sessions {
    /// Connects to Temporal at `address` (`HOST:PORT`).
    pub async fn connect(address: &str, namespace: &str, task_queue: &str) -> Result<Self, Error> {
        Ok(Sessions {
            client: connect_client(address, namespace).await?,
            task_queue: task_queue.to_string(),
        })
    }

    /// Starts a session's workflow with the id `session`.
    pub async fn start(&self, session: &str, input: SessionInput) -> Result<SessionHandle, Error> {
        // The handle by id alone follows the session across continue-as-new.
        self.client
            .start_workflow(
                AgentWorkflow::run,
                input,
                WorkflowStartOptions::new(self.task_queue.clone(), session.to_string()).build(),
            )
            .await
            .map_err(|e| Error::Start {
                session: session.to_string(),
                reason: e.to_string(),
            })?;
        Ok(self.attach(session))
    }

    /// Attaches to a running (or finished) session.
    pub fn attach(&self, session: &str) -> SessionHandle {
        SessionHandle {
            id: session.to_string(),
            handle: self.client.get_workflow_handle::<AgentWorkflow>(session),
        }
    }
}

/// One session's workflow, seen from a client.
pub struct SessionHandle {
    id: String,
    handle: WorkflowHandle<Client, AgentWorkflow>,
}

impl SessionHandle {
    /// The session's id (its workflow id).
    pub fn id(&self) -> &str {
        &self.id
    }

    fn update_error(&self, what: &'static str) -> impl Fn(WorkflowUpdateError) -> Error + '_ {
        move |e| match e {
            // The session's validator (or the handler) refused it: its own text.
            WorkflowUpdateError::Failed(failure) => Error::Rejected {
                session: self.id.clone(),
                what,
                reason: failure.message.clone(),
            },
            other => Error::Update {
                session: self.id.clone(),
                what,
                reason: other.to_string(),
            },
        }
    }

    /// Runs the update `update` with `input` until it completes; `what` names it in errors.
    async fn execute<U>(
        &self,
        update: U,
        input: U::Input,
        what: &'static str,
    ) -> Result<U::Output, Error>
    where
        U: UpdateDefinition<Workflow = SessionRun>,
        U::Input: Send,
    {
        self.handle
            .execute_update(update, input, WorkflowExecuteUpdateOptions::default())
            .await
            .map_err(self.update_error(what))
    }

    /// Sends the update `update` with `input` and returns once the session has accepted it;
    /// `what` names it in errors.
    async fn accepted<U>(&self, update: U, input: U::Input, what: &'static str) -> Result<(), Error>
    where
        U: UpdateDefinition<Workflow = SessionRun>,
        U::Input: Send,
    {
        self.handle
            .start_update(update, input, WorkflowStartUpdateOptions::default())
            .await
            .map(drop)
            .map_err(self.update_error(what))
    }

    /// The answer of the query `query` with `input`.
    async fn query<Q>(&self, query: Q, input: Q::Input) -> Result<Q::Output, Error>
    where
        Q: QueryDefinition<Workflow = SessionRun>,
        Q::Input: Send,
    {
        self.handle
            .query(query, input, WorkflowQueryOptions::default())
            .await
            .map_err(|e| Error::Query {
                session: self.id.clone(),
                reason: e.to_string(),
            })
    }

    /// Starts a run; returns once the messages are in the transcript.
    pub async fn prompt(&self, messages: Vec<Message>) -> Result<(), Error> {
        self.execute(
            AgentWorkflow::prompt,
            SessionMessages { messages },
            "prompt",
        )
        .await
        .map(drop)
    }

    /// Continues from the transcript as it is (`Agent::continue_run`): a tail that is not an
    /// assistant message is answered by the model; an assistant tail by the queued steering
    /// messages, else the queued follow-ups. Returns once the run has started; refused
    /// ([`Error::Rejected`], with the Agent's text) while a run is active, on a transcript
    /// with nothing to continue from, or on an assistant tail with nothing queued.
    pub async fn continue_run(&self) -> Result<(), Error> {
        self.execute(AgentWorkflow::continue_run, (), "continue")
            .await
            .map(drop)
    }

    /// Clears the conversation and the queues (`Agent::reset`), keeping the replayed system
    /// prompt and tools as one system message; refused ([`Error::Rejected`]) while a run is
    /// active. Steering and follow-up messages it discards complete their updates.
    pub async fn reset(&self) -> Result<(), Error> {
        self.execute(AgentWorkflow::reset, (), "reset").await
    }

    /// Changes the tools, transcript, model, thinking level, batch mode or queue modes for
    /// the next runs (`Agent::set_*`; the fields left `None` stay). The workers must host
    /// the tools named.
    pub async fn set(&self, settings: SessionSettings) -> Result<(), Error> {
        self.execute(AgentWorkflow::set, settings, "set").await
    }

    /// Empties the steering and/or the follow-up queue (`Agent::clear_*_queue`); the
    /// updates that queued the messages complete.
    pub async fn clear_queues(&self, which: ClearQueues) -> Result<(), Error> {
        self.execute(AgentWorkflow::clear_queues, which, "clear_queues")
            .await
    }

    /// Queues steering messages and returns once the session has accepted them, without
    /// waiting for a run to deliver them (as `Agent::steer` does; while idle they wait for
    /// the next run).
    pub async fn queue_steer(&self, messages: Vec<Message>) -> Result<(), Error> {
        self.accepted(AgentWorkflow::steer, SessionMessages { messages }, "steer")
            .await
    }

    /// Queues follow-up messages and returns once the session has accepted them (as
    /// `Agent::follow_up` does).
    pub async fn queue_follow_up(&self, messages: Vec<Message>) -> Result<(), Error> {
        self.accepted(
            AgentWorkflow::follow_up,
            SessionMessages { messages },
            "follow_up",
        )
        .await
    }

    /// Steers the running agent; returns once the messages are in the transcript (or a
    /// reset discarded them).
    pub async fn steer(&self, messages: Vec<Message>) -> Result<(), Error> {
        self.execute(AgentWorkflow::steer, SessionMessages { messages }, "steer")
            .await
            .map(drop)
    }

    /// Queues follow-up messages; returns once they are in the transcript.
    pub async fn follow_up(&self, messages: Vec<Message>) -> Result<(), Error> {
        self.execute(
            AgentWorkflow::follow_up,
            SessionMessages { messages },
            "follow_up",
        )
        .await
        .map(drop)
    }

    /// The session's state now.
    pub async fn state(&self) -> Result<SessionState, Error> {
        self.query(AgentWorkflow::state, ()).await
    }

    /// The events published from `offset` on.
    pub async fn events(&self, offset: usize) -> Result<Vec<Value>, Error> {
        self.query(AgentWorkflow::events, offset).await
    }

    /// Streams events from `offset` to `each` until the session is idle (no run in
    /// progress, as the Agent's `wait_for_idle`: messages queued after the run's last poll
    /// stay queued for its next run); returns the offset after the last event. A query that
    /// fails (the worker holding the session died, and another has not picked it up yet) is
    /// retried for up to [`QUERY_PATIENCE`] before the error is returned.
    pub async fn follow(&self, offset: usize, each: impl FnMut(&Value)) -> Result<usize, Error> {
        self.follow_merged(offset, None, each).await
    }

    /// [`follow`](Self::follow) with `live`'s events merged in ([`crate::live`]): the
    /// events of a model request reach `each` while it streams, each event once.
    pub async fn follow_live(
        &self,
        offset: usize,
        live: &mut LiveListener,
        each: impl FnMut(&Value),
    ) -> Result<usize, Error> {
        self.follow_merged(offset, Some(live), each).await
    }

    /// One look at the session for a follower at `merge`'s offset: its state, then the
    /// events from there, merged with those given out live (what to give out now). The
    /// state is read first, so when [`LiveMerge::idle_at`] it, no event is missing; events a
    /// continue-as-new left behind are skipped.
    pub async fn read_merged(
        &self,
        merge: &mut LiveMerge,
    ) -> Result<(SessionState, Vec<Value>), Error> {
        let state = self.state().await?;
        merge.skip_to(state.first_event);
        let events = self.events(merge.offset()).await?;
        Ok((state, merge.log(events)))
    }

    async fn follow_merged(
        &self,
        offset: usize,
        mut live: Option<&mut LiveListener>,
        mut each: impl FnMut(&Value),
    ) -> Result<usize, Error> {
        let mut merge = LiveMerge::new(&self.id, offset);
        let mut failing_since = None;
        loop {
            let (state, events) = match self.read_merged(&mut merge).await {
                Ok(r) => {
                    failing_since = None;
                    r
                }
                Err(e) => {
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() > QUERY_PATIENCE {
                        return Err(e);
                    }
                    tokio::time::sleep(POLL_EVERY * 10).await;
                    continue;
                }
            };
            events.iter().for_each(&mut each);
            if merge.idle_at(&state) {
                return Ok(merge.offset());
            }
            // Until the next poll, live events as they come.
            let poll = tokio::time::sleep(POLL_EVERY);
            tokio::pin!(poll);
            while let Some(l) = live.as_deref_mut() {
                tokio::select! {
                    () = &mut poll => break,
                    e = l.next() => match e {
                        Some(e) => merge.live(e).iter().for_each(&mut each),
                        None => live = None,
                    },
                }
            }
            poll.await;
        }
    }

    /// Adds a live subscriber ([`LiveListener::target`]) to the session, from its next
    /// model request on.
    pub async fn subscribe_live(&self, target: LiveTarget) -> Result<(), Error> {
        self.live(target, true).await
    }

    /// Removes a live subscriber from the session.
    pub async fn unsubscribe_live(&self, target: LiveTarget) -> Result<(), Error> {
        self.live(target, false).await
    }

    async fn live(&self, target: LiveTarget, subscribe: bool) -> Result<(), Error> {
        let input = LiveSubscription { target, subscribe };
        self.execute(AgentWorkflow::live, input, "live").await
    }

    /// The events from `offset` until the session is idle.
    pub async fn wait_idle(&self, offset: usize) -> Result<Vec<Value>, Error> {
        let mut all = Vec::new();
        self.follow(offset, |e| all.push(e.clone())).await?;
        Ok(all)
    }

    /// Aborts the current run and keeps the session (`Agent::abort`): the run's signal is
    /// cancelled, and so are its model request and tool calls in flight; the run ends as
    /// aborted, and the session takes the next prompt. Does nothing while no run is
    /// active. Returns once the workflow has cancelled the signal.
    pub async fn abort_run(&self) -> Result<(), Error> {
        self.execute(AgentWorkflow::abort_run, (), "abort_run")
            .await
            .map(drop)
    }

    /// Aborts the running agent and ends the session (Temporal cancellation of the
    /// session's workflow; [`SessionHandle::abort_run`] keeps the session): the
    /// model request or tool calls in flight are cancelled, the run ends as aborted, and the
    /// session ends with it; [`SessionHandle::result`] then has its transcript.
    pub async fn abort(&self) -> Result<(), Error> {
        self.handle
            .cancel(WorkflowCancelOptions::builder().reason("abort").build())
            .await
            .map_err(|e| Error::End {
                session: self.id.clone(),
                reason: e.to_string(),
            })
    }

    /// Waits for the session's workflow to end and returns its transcript.
    pub async fn result(&self) -> Result<SessionOutput, Error> {
        self.handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| Error::End {
                session: self.id.clone(),
                reason: e.to_string(),
            })
    }

    /// Ends the session (once it is idle) and returns its transcript.
    pub async fn close(&self) -> Result<SessionOutput, Error> {
        let end = |e: String| Error::End {
            session: self.id.clone(),
            reason: e,
        };
        self.handle
            .signal(AgentWorkflow::close, (), WorkflowSignalOptions::default())
            .await
            .map_err(|e| end(e.to_string()))?;
        self.result().await
    }
}
