//! Runs tern-agent's loop inside workflow code. The loop is polled with a waker of its own
//! (it only sets a flag), so no wake-up of the loop's futures ever reaches the SDK's
//! nondeterminism detector; every wake-up the loop sees comes from the driver answering a
//! request during the same poll. The SDK's own futures (activities) are polled with the
//! workflow's waker. The loop's clock reads the workflow's time, so timestamps and durations
//! are the same on replay.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, UNIX_EPOCH};

use futures::future::FusedFuture;
use futures::future::LocalBoxFuture;
use temporalio_common::RetryPolicy;
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, CancellableFuture, LocalActivityOptions,
    WorkflowContext,
};
use tern_agent::Replay;
use tokio_util::sync::CancellationToken;

use super::bridge::{Bridge, Request};
use super::in_flight::InFlight;
use crate::activities::AgentActivities;
use crate::hooks::{HookAnswer, HookReply};
use crate::stream_record::ModelOutcome;
use crate::wire::ToolReply;

/// How long a model request or tool call may go without a heartbeat before another worker
/// retries it (the worker heartbeats every second while it runs).
pub(crate) const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest one model request or tool call may take.
const START_TO_CLOSE: Duration = Duration::from_secs(60 * 60);
/// The longest one hook call may take (a local activity holds its workflow task open).
const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// The workflow's current time in ms since the epoch (the time of its current task).
pub(crate) fn workflow_ms<W>(ctx: &WorkflowContext<W>) -> u64 {
    ctx.workflow_time()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Drives `run` to completion, turning the requests it queues in `bridge` into activities.
/// `on_progress` runs after every poll in which the loop moved (the workflow publishes its
/// state there).
/// Cancelling the workflow aborts the run and ends the session; an abort of the run alone
/// (`signal` cancelled by a handler, which makes `aborted` ready, or by a hook's answer) keeps
/// it. Either way the activities in flight are cancelled.
pub(crate) async fn drive<W: 'static, T>(
    ctx: &WorkflowContext<W>,
    bridge: &Bridge,
    run: impl Future<Output = T>,
    signal: &CancellationToken,
    aborted: impl Future,
    mut on_progress: impl FnMut(),
) -> T {
    let mut run = pin!(run);
    let mut cancelled = pin!(ctx.cancelled());
    let mut aborted = pin!(futures::FutureExt::fuse(aborted));
    let flag = Arc::new(Flag(AtomicBool::new(true)));
    let loop_waker = Waker::from(flag.clone());
    let mut in_flight = InFlight::default();
    let mut cancelling = false;
    poll_fn(|cx: &mut Context<'_>| loop {
        let mut moved = false;
        if !bridge.is_ending() && cancelled.as_mut().poll(cx).is_ready() {
            bridge.set_ending();
            // Wakes the loop's waiters on the token: its flag, not the SDK's waker.
            signal.cancel();
            moved = true;
        }
        if !aborted.is_terminated() && aborted.as_mut().poll(cx).is_ready() {
            moved = true;
        }
        if signal.is_cancelled() && !cancelling {
            // The activities in flight see the abort when polled, and cancel themselves.
            cancelling = true;
            in_flight.wake_all();
        }
        if flag.0.swap(false, Ordering::AcqRel) {
            moved = true;
            let mut loop_cx = Context::from_waker(&loop_waker);
            let now = workflow_ms(ctx);
            let polled = tern_ai::clock::with_time_ms(now, || run.as_mut().poll(&mut loop_cx));
            on_progress();
            if let Poll::Ready(out) = polled {
                return Poll::Ready(out);
            }
        }
        for request in bridge.take() {
            moved = true;
            let hook = matches!(request, Request::Hook { .. });
            in_flight.push(start(ctx, request, signal.clone()), hook);
        }
        if in_flight.poll_ready(cx) {
            moved = true;
        }
        if !moved && !flag.0.load(Ordering::Acquire) {
            return Poll::Pending;
        }
    })
    .await
}

/// Runs `activity`, cancelling it once the run's `signal` is cancelled (seen when polled: the
/// driver polls every activity in flight when the run is aborted).
async fn abortable<F: CancellableFuture>(activity: F, signal: CancellationToken) -> F::Output {
    let mut activity = pin!(activity);
    let mut sent = false;
    poll_fn(|cx| {
        if !sent && signal.is_cancelled() {
            sent = true;
            activity.cancel();
        }
        activity.as_mut().poll(cx)
    })
    .await
}

fn start<W: 'static>(
    ctx: &WorkflowContext<W>,
    request: Request,
    signal: CancellationToken,
) -> LocalBoxFuture<'static, ()> {
    let ctx = ctx.clone();
    match request {
        Request::Model {
            request,
            reply,
            prepared,
        } => Box::pin(async move {
            let model = request.model.clone();
            let options = ActivityOptions::with_start_to_close_timeout(START_TO_CLOSE)
                .heartbeat_timeout(HEARTBEAT_TIMEOUT)
                .build();
            // A request made after the abort is answered, not cancelled.
            let aborted = request.aborted;
            let activity = ctx.execute_activity(AgentActivities::model, *request, options);
            let outcome = if aborted {
                activity.await
            } else {
                abortable(activity, signal).await
            };
            match outcome {
                Ok(ModelOutcome::Streamed(recorded)) => {
                    prepared.set(&recorded);
                    crate::stream_record::replay(&reply, *recorded)
                }
                // The run fails with the stream function's own error, as a local run does.
                Ok(ModelOutcome::Refused { message }) => reply.fail(message),
                Ok(ModelOutcome::Broke {
                    start,
                    steps,
                    message,
                }) => crate::stream_record::replay_broken(&reply, start, steps, message),
                Err(ActivityExecutionError::Cancelled(_)) => {
                    // The loop's clock is not installed here: stamp the workflow's time.
                    let mut cut = crate::stream_record::aborted(&model);
                    cut.message.timestamp = workflow_ms(&ctx);
                    crate::stream_record::replay(&reply, cut)
                }
                Err(e) => reply.fail(format!("The model request failed: {e}")),
            }
        }),
        Request::Tool {
            request,
            spec,
            reply,
        } => Box::pin(async move {
            let mut options = ActivityOptions::with_start_to_close_timeout(START_TO_CLOSE)
                .heartbeat_timeout(HEARTBEAT_TIMEOUT)
                .build();
            if spec.replay == Replay::Never {
                // After an unknown outcome (the worker died, the call timed out), never again.
                options.retry_policy = Some(RetryPolicy::builder().maximum_attempts(1).build());
            }
            let activity = ctx.execute_activity(AgentActivities::tool, *request, options);
            let outcome = abortable(activity, signal).await;
            let answer = match outcome {
                Ok(reply) => reply,
                Err(ActivityExecutionError::Cancelled(_)) => ToolReply::failed("Operation aborted"),
                Err(_) => ToolReply::failed(crate::activities::interrupted_text(&spec.name)),
            };
            // The loop may have stopped waiting (the workflow is ending): nothing to do.
            let _ = reply.send(answer);
        }),
        Request::Hook { request, reply } => Box::pin(async move {
            let name = request.call.name();
            // One attempt: a hook's error is its answer (a `Threw` reply); a failed attempt
            // (the hook outlived its timeout) ends the call as the hook's error.
            let options = LocalActivityOptions::builder()
                .start_to_close_timeout(HOOK_TIMEOUT)
                .retry_policy(RetryPolicy::builder().maximum_attempts(1).build())
                .build();
            let outcome = ctx
                .execute_local_activity(AgentActivities::hook, *request, options)
                .await;
            let answer = match outcome {
                Ok(reply) => reply,
                Err(ActivityExecutionError::Cancelled(_)) => HookAnswer::only(HookReply::Threw {
                    message: "Operation aborted".into(),
                }),
                Err(e) => HookAnswer::only(HookReply::Threw {
                    message: format!("The {name} hook call failed: {e}"),
                }),
            };
            let _ = reply.send(answer);
        }),
    }
}
