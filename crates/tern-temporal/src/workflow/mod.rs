//! The session workflow: one per session. It waits for a prompt, runs tern-agent's own loop
//! on it ([`tern_agent::run_agent_loop`], through the driver in `workflow/driver.rs`), and waits again;
//! steering and follow-up messages reach the running loop through its message sources.
//!
//! Input arrives as Workflow Updates (`prompt`, `steer`, `follow_up`): the validator decides
//! acceptance, and the update completes once its messages are committed to the transcript.
//! `close` (a signal) ends the session once it is idle; the `state` and `events` queries read
//! it at any time.

// The SDK's macros add an undocumented constant per handler (its definition); the
// handlers themselves are documented.
#![allow(missing_docs)]

mod bridge;
pub(crate) mod driver;
mod hooked;
mod in_flight;
mod session;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ContinueAsNewOptions, SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult,
};
use tern_agent::{
    run_agent_loop, run_agent_loop_continue, AgentContext, AgentError, AgentLoopConfig, EventSink,
};
use tern_ai::{Message, StreamFn};
use tokio_util::sync::CancellationToken;

use crate::wire::{
    ClearQueues, LiveSubscription, SessionInput, SessionMessages, SessionOutput, SessionSettings,
    SessionState,
};
use bridge::{bridged_tool, Bridge, BridgedModel};
use session::{Input, Seq, Session, Shared, Start};

type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// The workflow of one agent session.
#[workflow]
pub struct AgentWorkflow {
    shared: Shared,
}

#[workflow_methods]
impl AgentWorkflow {
    /// Builds the session from its input (before any update is handled).
    #[init]
    pub fn new(_ctx: &WorkflowContextView, input: SessionInput) -> Self {
        let shared = Shared(Arc::new(parking_lot::Mutex::new(Session::new(&input))));
        AgentWorkflow { shared }
    }

    /// Runs prompts until the session is closed, continuing as new when the history grows
    /// long (between runs, carrying the transcript).
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<SessionOutput> {
        let shared = ctx.state(|w| w.shared.clone());
        let bridge = Arc::new(Bridge::new(shared.clone()));
        let stream_fn: Arc<dyn StreamFn> = Arc::new(BridgedModel(bridge.clone()));
        loop {
            ctx.wait_condition(|w| {
                let s = w.shared.0.lock();
                s.has_run() || s.closed
            })
            .await?;
            let (start, transcript, settings) = {
                let mut s = shared.0.lock();
                let Some(start) = s.take_run() else {
                    break;
                };
                s.is_streaming = true;
                s.run_start = s.published();
                s.error_message = None;
                (start, s.messages.clone(), s.settings.clone())
            };
            let tools: Vec<_> = settings
                .tools
                .iter()
                .map(|spec| bridged_tool(spec, bridge.clone()))
                .collect();
            ctx.state_mut(|_| ());
            let skip_initial_steering = matches!(
                start,
                Start::Prompt {
                    skip_initial_steering: true,
                    ..
                }
            );
            let mut config = AgentLoopConfig::new(settings.model.clone());
            config.reasoning = settings.reasoning;
            config.tool_execution = settings.tool_execution;
            config.stream_options = settings.stream_options.stream_options();
            config.hooks = hooked::bridged_hooks(&settings.hooks, &bridge);
            config.get_steering_messages = Some(shared.steering_source(skip_initial_steering));
            config.get_follow_up_messages = Some(shared.follow_up_source());
            let context = AgentContext::new(transcript, tools);
            let sink = session::Listening {
                shared: shared.clone(),
                bridge: bridge.clone(),
                kinds: Arc::new(settings.listen.clone()),
                full_state: settings.listen_full_state,
            };
            let signal = CancellationToken::new();
            shared.0.lock().run_signal = Some(signal.clone());
            let run: BoxFuture<'_, Result<Vec<Message>, AgentError>> = match start {
                Start::Prompt { messages, .. } => Box::pin(run_agent_loop(
                    messages,
                    context,
                    config,
                    &sink,
                    signal.clone(),
                    stream_fn.clone(),
                )),
                Start::Continue => Box::pin(run_agent_loop_continue(
                    context,
                    config,
                    &sink,
                    signal.clone(),
                    stream_fn.clone(),
                )),
            };
            // A failed run (a hook or the stream function failed) ends, as the Agent's does,
            // with a failure message carrying the error; the session stays usable.
            // An abort (the `abort_run` update) cancels the signal from a handler: this wait
            // wakes the driver for it.
            let watched = signal.clone();
            let aborted = ctx.wait_condition(move |_| watched.is_cancelled());
            let ran = driver::drive(ctx, &bridge, run, &signal, aborted, || {
                ctx.state_mut(|_| ())
            })
            .await;
            if let Err(e) = ran {
                let at = driver::workflow_ms(ctx);
                let events =
                    session::run_failure(&settings.model, e.to_string(), signal.is_cancelled(), at);
                // Published as the loop's events are (the listener hears them too).
                let publish = async {
                    for event in events {
                        sink.emit(event).await;
                    }
                };
                let never = std::future::pending::<()>();
                driver::drive(ctx, &bridge, publish, &signal, never, || {
                    ctx.state_mut(|_| ())
                })
                .await;
            }
            {
                let mut s = shared.0.lock();
                s.is_streaming = false;
                s.run_signal = None;
            }
            ctx.state_mut(|_| ());
            if bridge.is_ending() {
                // Cancelling the workflow aborted the run: the session ends with it.
                break;
            }
            if ctx.continue_as_new_suggested() && ctx.all_handlers_finished() {
                let next = shared.0.lock().continued();
                ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
            }
        }
        let messages = shared.0.lock().messages.clone();
        Ok(SessionOutput { messages })
    }

    #[update_validator(prompt)]
    fn validate_prompt(
        &self,
        _ctx: &WorkflowContextView,
        input: &SessionMessages,
    ) -> Result<(), HandlerError> {
        let s = self.shared.0.lock();
        if s.closed {
            return Err("The session is closed".into());
        }
        if s.is_busy() {
            return Err(AgentError::PromptWhileRunning.to_string().into());
        }
        if input.messages.is_empty() {
            return Err("A prompt needs at least one message".into());
        }
        Ok(())
    }

    /// Starts a run with these messages; completes when they are in the transcript.
    #[update]
    pub async fn prompt(ctx: &mut WorkflowContext<Self>, input: SessionMessages) -> Seq {
        accept(ctx, Input::Prompt, input).await
    }

    #[update_validator(continue_run)]
    fn validate_continue(
        &self,
        _ctx: &WorkflowContextView,
        _input: &(),
    ) -> Result<(), HandlerError> {
        open_and(self, Session::cannot_continue)
    }

    /// Continues from the transcript as it is, as `Agent::continue_run` does (an assistant
    /// tail is answered by the queued steering, else the queued follow-ups); completes when
    /// the run has started.
    #[update]
    pub async fn continue_run(ctx: &mut WorkflowContext<Self>, _input: ()) -> Seq {
        let seq = ctx.state_mut(|w| w.shared.0.lock().accept(Input::Continue, Vec::new()));
        // Cancelled waits end with the workflow: the update then reports that, not a seq.
        let _ = ctx
            .wait_condition(|w| w.shared.0.lock().is_started(seq))
            .await;
        seq
    }

    #[update_validator(abort_run)]
    fn validate_abort_run(
        &self,
        _ctx: &WorkflowContextView,
        _input: &(),
    ) -> Result<(), HandlerError> {
        open(self)
    }

    /// Aborts the current run (`Agent::abort`; nothing while idle): its signal is
    /// cancelled, its activities in flight with it; the session stays.
    #[update]
    pub async fn abort_run(ctx: &mut WorkflowContext<Self>, _input: ()) {
        ctx.state_mut(|w| w.shared.0.lock().abort_run());
    }

    #[update_validator(reset)]
    fn validate_reset(&self, _ctx: &WorkflowContextView, _input: &()) -> Result<(), HandlerError> {
        open_and(self, Session::cannot_reset)
    }

    /// Clears the conversation and the queues (`Agent::reset`), keeping the replayed system
    /// prompt and tools as one system message. Refused while a run is active.
    #[update]
    pub async fn reset(ctx: &mut WorkflowContext<Self>, _input: ()) {
        ctx.state_mut(|w| w.shared.0.lock().reset());
    }

    /// Changes the tools, transcript, model, thinking level, batch mode or queue modes for
    /// the next runs (`Agent::set_*`); the running loop keeps its own.
    #[update]
    pub async fn set(ctx: &mut WorkflowContext<Self>, input: SessionSettings) {
        ctx.state_mut(|w| w.shared.0.lock().apply(input));
    }

    /// Adds or removes a live subscriber: the workers send it each model request's events
    /// while they stream ([`crate::live`]). Takes effect from the next request.
    #[update]
    pub async fn live(ctx: &mut WorkflowContext<Self>, input: LiveSubscription) {
        ctx.state_mut(|w| {
            let live = &mut w.shared.0.lock().settings.live;
            live.retain(|t| t.address != input.target.address);
            if input.subscribe {
                live.push(input.target);
            }
        });
    }

    /// Empties the steering and/or follow-up queue (`Agent::clear_*_queue`).
    #[update]
    pub async fn clear_queues(ctx: &mut WorkflowContext<Self>, input: ClearQueues) {
        ctx.state_mut(|w| w.shared.0.lock().clear_queues(input));
    }

    #[update_validator(steer)]
    fn validate_steer(
        &self,
        _ctx: &WorkflowContextView,
        _input: &SessionMessages,
    ) -> Result<(), HandlerError> {
        open(self)
    }

    /// Queues steering messages (delivered after the current turn); completes when they are
    /// in the transcript.
    #[update]
    pub async fn steer(ctx: &mut WorkflowContext<Self>, input: SessionMessages) -> Seq {
        accept(ctx, Input::Steer, input).await
    }

    #[update_validator(follow_up)]
    fn validate_follow_up(
        &self,
        _ctx: &WorkflowContextView,
        _input: &SessionMessages,
    ) -> Result<(), HandlerError> {
        open(self)
    }

    /// Queues follow-up messages (delivered when the agent would stop); completes when they
    /// are in the transcript.
    #[update]
    pub async fn follow_up(ctx: &mut WorkflowContext<Self>, input: SessionMessages) -> Seq {
        accept(ctx, Input::FollowUp, input).await
    }

    /// Ends the session once the current run (and any queued prompt) is done.
    #[signal]
    pub fn close(&mut self, _ctx: &mut SyncWorkflowContext<Self>, _input: ()) {
        self.shared.0.lock().closed = true;
    }

    /// The session's state: transcript, whether it streams, pending calls, queues.
    #[query]
    pub fn state(&self, _ctx: &WorkflowContextView, _input: ()) -> SessionState {
        self.shared.0.lock().state()
    }

    /// The events published from `offset` on (each as a local run prints it).
    #[query]
    pub fn events(&self, _ctx: &WorkflowContextView, offset: usize) -> Vec<Value> {
        self.shared.0.lock().events_since(offset)
    }
}

fn open(w: &AgentWorkflow) -> Result<(), HandlerError> {
    open_and(w, |_| None)
}

/// Refuses an update on a closed session, or with the error `refused` finds in its state.
fn open_and(
    w: &AgentWorkflow,
    refused: impl FnOnce(&Session) -> Option<AgentError>,
) -> Result<(), HandlerError> {
    let s = w.shared.0.lock();
    if s.closed {
        return Err("The session is closed".into());
    }
    match refused(&s) {
        Some(e) => Err(e.to_string().into()),
        None => Ok(()),
    }
}

async fn accept(ctx: &mut WorkflowContext<AgentWorkflow>, input: Input, m: SessionMessages) -> Seq {
    let seq = ctx.state_mut(|w| w.shared.0.lock().accept(input, m.messages));
    // Cancelled waits end with the workflow: the update then reports that, not a seq.
    let _ = ctx
        .wait_condition(|w| w.shared.0.lock().is_committed(seq))
        .await;
    seq
}
