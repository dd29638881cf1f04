//! One tool execution: `execute` runs while the updates it sends are handled alongside it,
//! as the reference's un-awaited emits are; a panicking tool becomes an error result.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::task::AtomicWaker;
use parking_lot::Mutex;
use tern_ai::ToolCall;
use tokio_util::sync::CancellationToken;

use crate::tool::{AgentTool, ToolCallInput, ToolResult, ToolUpdater, UpdateTarget};
use crate::tool_args::ToolArgs;

/// What `execute` produced, before `after_tool_call`.
pub(super) struct Executed {
    pub(super) result: ToolResult,
    pub(super) is_error: bool,
    pub(super) duration_ms: u64,
}

/// The executor's side of a call's [`ToolUpdater`]: `start` begins the handling of one
/// update and returns what is left of it; leftovers queue here until the executor polls
/// them. Built once per call and allocation-free until a tool sends an update.
struct Updates<F> {
    open: AtomicBool,
    // Whether `started` holds anything: the executor asks after every poll of the tool and
    // once more at its end, and most tools send no update, so it asks without the lock.
    queued: AtomicBool,
    started: Mutex<VecDeque<BoxFuture<'static, ()>>>,
    waker: AtomicWaker,
    start: F,
}

impl<F> Updates<F> {
    fn pop(&self) -> Option<BoxFuture<'static, ()>> {
        // A handling queued while this reads `false` wakes the executor after it is queued
        // (the waker is registered before the executor asks), so it is not missed.
        if !self.queued.load(Ordering::Acquire) {
            return None;
        }
        let mut started = self.started.lock();
        let next = started.pop_front();
        if started.is_empty() {
            self.queued.store(false, Ordering::Release);
        }
        next
    }
}

impl<F> UpdateTarget for Updates<F>
where
    F: Fn(ToolResult) -> Option<BoxFuture<'static, ()>> + Send + Sync,
{
    fn update(&self, partial: ToolResult) {
        let Some(mut handling) = (self.start)(partial) else {
            return;
        };
        // Run the handling up to its first wait now, so it is seen before whatever the tool
        // does next; off the runtime (a tool's own thread) it starts on the loop's next poll.
        if tokio::runtime::Handle::try_current().is_ok() {
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            if handling.as_mut().poll(&mut cx).is_ready() {
                return;
            }
        }
        {
            let mut started = self.started.lock();
            started.push_back(handling);
            self.queued.store(true, Ordering::Release);
        }
        self.waker.wake();
    }
    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }
    fn close(&self) {
        // The queue's lock orders the handlings; this flag only stops new ones.
        self.open.store(false, Ordering::Release);
    }
}

/// Runs `execute`. Each update's handling starts inside the tool's `update` call and runs
/// alongside the tool, as the reference's un-awaited emits do; all of them are awaited after
/// `execute` settles. Updates sent after that are dropped.
pub(super) async fn execute_prepared<F>(
    tool: &AgentTool,
    tool_call: &ToolCall,
    args: ToolArgs,
    signal: &CancellationToken,
    start_update: F,
) -> Executed
where
    F: Fn(ToolResult) -> Option<BoxFuture<'static, ()>> + Send + Sync + 'static,
{
    let updates = Arc::new(Updates {
        open: AtomicBool::new(true),
        queued: AtomicBool::new(false),
        started: Mutex::new(VecDeque::new()),
        waker: AtomicWaker::new(),
        start: start_update,
    });
    // The clock seam, so that a replayed run measures the same duration.
    let started_at = tern_ai::clock::Stopwatch::start();
    let input = ToolCallInput {
        tool_call_id: tool_call.id.clone(),
        args,
        signal: signal.clone(),
        updater: ToolUpdater::to(updates.clone()),
    };
    // Built on the first update: most tools send none.
    let mut in_flight: Option<FuturesUnordered<BoxFuture<'static, ()>>> = None;
    // A panicking tool becomes an error result instead of unwinding through the loop
    // (which left the agent running forever).
    let output: crate::tool::ToolOutput =
        match std::panic::catch_unwind(AssertUnwindSafe(|| tool.execute(input))) {
            Err(p) => Err(panic_message(p).into()),
            Ok(fut) => {
                let mut run = AssertUnwindSafe(fut).catch_unwind();
                // The tool first, then one queued handling, then the handlings in flight;
                // the tool again after each step (the order of a biased select over the
                // three).
                poll_fn(|cx| loop {
                    if let Poll::Ready(r) = run.poll_unpin(cx) {
                        return Poll::Ready(r.unwrap_or_else(|p| Err(panic_message(p).into())));
                    }
                    updates.waker.register(cx.waker());
                    if let Some(handling) = updates.pop() {
                        in_flight
                            .get_or_insert_with(FuturesUnordered::new)
                            .push(handling);
                        continue;
                    }
                    match in_flight.as_mut().map(|f| f.poll_next_unpin(cx)) {
                        Some(Poll::Ready(Some(()))) => continue,
                        _ => return Poll::Pending,
                    }
                })
                .await
            }
        };
    let duration_ms = started_at.elapsed_ms();
    updates.close();
    while let Some(handling) = updates.pop() {
        in_flight
            .get_or_insert_with(FuturesUnordered::new)
            .push(handling);
    }
    if let Some(mut in_flight) = in_flight {
        while in_flight.next().await.is_some() {}
    }
    match output {
        Ok(result) => Executed {
            is_error: result.is_error == Some(true),
            result,
            duration_ms,
        },
        Err(e) => Executed {
            result: ToolResult::error(e.to_string()),
            is_error: true,
            duration_ms,
        },
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    format!("Tool panicked: {}", panic_text(payload.as_ref()))
}

/// The text of a panic payload (`&str` or `String`), for error messages.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".into())
}
