//! Tool execution: preflight (lookup, argument preparation, validation, `before_tool_call`),
//! execution with updates, `after_tool_call`, and the parallel and sequential batch runners.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures::future::{join_all, BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::task::AtomicWaker;
use parking_lot::Mutex;
use serde_json::Value;
use tern_ai::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use crate::config::{AfterToolCallContext, AgentContext, BeforeToolCallContext, ToolHooks};
use crate::events::AgentEvent;
use crate::sink::EventSink;
use crate::tool::{
    AgentTool, ToolCallInput, ToolExecutionMode, ToolResult, ToolUpdater, UpdateTarget,
};

const OPERATION_ABORTED: &str = "Operation aborted";

/// The outcome of one tool call (the reference's `AgentToolCallOutcome`).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallOutcome {
    /// The call.
    pub tool_call: Arc<ToolCall>,
    /// The finalized result.
    pub result: ToolResult,
    /// The finalized error flag.
    pub is_error: bool,
    /// How long `execute` ran; `None` when the tool never ran.
    pub duration_ms: Option<u64>,
}

// Short-lived on the stack; boxing the result would only add an allocation per call.
#[allow(clippy::large_enum_variant)]
enum Preparation {
    Immediate(ToolResult),
    Prepared { tool: AgentTool, args: Value },
}

async fn prepare_tool_call(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    tool_call: &Arc<ToolCall>,
    hooks: &ToolHooks,
    signal: &CancellationToken,
    tools: &[AgentTool],
) -> Preparation {
    // Once aborted, skip preparation and hooks; the caller still records a result.
    if signal.is_cancelled() {
        return Preparation::Immediate(ToolResult::error(OPERATION_ABORTED));
    }
    let Some(tool) = tools.iter().find(|t| t.name() == tool_call.name) else {
        return Preparation::Immediate(ToolResult::error(format!(
            "Tool {} not found",
            tool_call.name
        )));
    };
    let prepared = tool.prepare_arguments(&tool_call.arguments);
    let raw = prepared.as_ref().unwrap_or(&tool_call.arguments);
    let args = match tool.compiled_parameters().validate(
        &tool_call.name,
        raw,
        tool_call.extra().arguments_error.as_deref(),
    ) {
        Ok(a) => a,
        Err(message) => return Preparation::Immediate(ToolResult::error(message)),
    };
    if let Some(before) = &hooks.before_tool_call {
        let decision = before(
            BeforeToolCallContext {
                assistant_message: assistant.clone(),
                tool_call: (**tool_call).clone(),
                args: args.clone(),
                context: context.clone(),
            },
            signal.clone(),
        )
        .await;
        let decision = match decision {
            Ok(d) => d,
            Err(e) => return Preparation::Immediate(ToolResult::error(e.to_string())),
        };
        if signal.is_cancelled() {
            return Preparation::Immediate(ToolResult::error(OPERATION_ABORTED));
        }
        if let Some(d) = decision.filter(|d| d.block) {
            let mut result = ToolResult::error(
                d.reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "Tool execution was blocked".to_string()),
            );
            if d.terminate {
                result.terminate = Some(true);
            }
            return Preparation::Immediate(result);
        }
    }
    Preparation::Prepared {
        tool: tool.clone(),
        args,
    }
}

struct Executed {
    result: ToolResult,
    is_error: bool,
    duration_ms: u64,
}

/// The executor's side of a call's [`ToolUpdater`]: `start` begins the handling of one
/// update and returns what is left of it; leftovers queue here until the executor polls
/// them. Built once per call and allocation-free until a tool sends an update.
struct Updates<F> {
    open: AtomicBool,
    started: Mutex<VecDeque<BoxFuture<'static, ()>>>,
    waker: AtomicWaker,
    start: F,
}

impl<F> Updates<F> {
    fn pop(&self) -> Option<BoxFuture<'static, ()>> {
        self.started.lock().pop_front()
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
        self.started.lock().push_back(handling);
        self.waker.wake();
    }
    fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }
    fn close(&self) {
        self.open.store(false, Ordering::SeqCst);
    }
}

/// Runs `execute`. Each update's handling starts inside the tool's `update` call and runs
/// alongside the tool, as the reference's un-awaited emits do; all of them are awaited after
/// `execute` settles. Updates sent after that are dropped.
async fn execute_prepared<F>(
    tool: &AgentTool,
    tool_call: &ToolCall,
    args: Value,
    signal: &CancellationToken,
    start_update: F,
) -> Executed
where
    F: Fn(ToolResult) -> Option<BoxFuture<'static, ()>> + Send + Sync + 'static,
{
    let updates = Arc::new(Updates {
        open: AtomicBool::new(true),
        started: Mutex::new(VecDeque::new()),
        waker: AtomicWaker::new(),
        start: start_update,
    });
    let started_at = Instant::now();
    let input = ToolCallInput {
        tool_call_id: tool_call.id.clone(),
        args,
        signal: signal.clone(),
        updater: ToolUpdater::to(updates.clone()),
    };
    // A panicking tool becomes an error result instead of unwinding through the loop
    // (which left the agent running forever).
    // Built on the first update: most tools send none.
    let mut in_flight: Option<FuturesUnordered<BoxFuture<'static, ()>>> = None;
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
    let duration_ms = (started_at.elapsed().as_secs_f64() * 1000.0).round() as u64;
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

async fn finalize_executed(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    tool_call: &Arc<ToolCall>,
    args: Option<Value>,
    executed: Executed,
    hooks: &ToolHooks,
    signal: &CancellationToken,
) -> ToolCallOutcome {
    let Executed {
        mut result,
        mut is_error,
        duration_ms,
    } = executed;
    if let Some(after) = &hooks.after_tool_call {
        let outcome = after(
            AfterToolCallContext {
                assistant_message: assistant.clone(),
                tool_call: (**tool_call).clone(),
                args: args.unwrap_or_default(),
                result: result.clone(),
                is_error,
                context: context.clone(),
            },
            signal.clone(),
        )
        .await;
        match outcome {
            Ok(Some(o)) => {
                // Structured content not replaced along with the content may no longer match.
                let structured = match (&o.structured_content, &o.content) {
                    (Some(s), _) => Some(s.clone()),
                    (None, Some(_)) => None,
                    (None, None) => result.structured_content.take(),
                };
                if o.content.is_some() {
                    result.content = o.content;
                }
                if o.details.is_some() {
                    result.details = o.details;
                }
                if o.usage.is_some() {
                    result.usage = o.usage;
                }
                if o.terminate.is_some() {
                    result.terminate = o.terminate;
                }
                result.structured_content = structured;
                if let Some(e) = o.is_error {
                    is_error = e;
                }
            }
            Ok(None) => {}
            Err(e) => {
                result = ToolResult::error(e.to_string());
                is_error = true;
            }
        }
    }
    ToolCallOutcome {
        tool_call: tool_call.clone(),
        result,
        is_error,
        duration_ms: Some(duration_ms),
    }
}

/// Options of [`run_tool_call`].
#[derive(Clone)]
pub struct RunToolCallOptions {
    /// Tools to look the call up in.
    pub tools: Vec<AgentTool>,
    /// The assistant message the call belongs to (hooks see it).
    pub assistant_message: AssistantMessage,
    /// The context hooks see.
    pub context: AgentContext,
    /// Cancellation; checked before anything else.
    pub signal: CancellationToken,
    /// Hooks applied to the call.
    pub hooks: ToolHooks,
    /// Receives partial results.
    pub on_update: Option<Arc<dyn Fn(ToolResult) + Send + Sync>>,
}

/// Runs one tool call through the same steps as a model-issued call (preparation,
/// validation, `before_tool_call`, execution, `after_tool_call`) without emitting events.
/// Tools that call other tools use it so that hooks (permission checks) apply to them too.
/// Failures come back as `is_error: true`, never as a panic or `Err`.
pub async fn run_tool_call(tool_call: ToolCall, options: RunToolCallOptions) -> ToolCallOutcome {
    let tool_call = Arc::new(tool_call);
    let assistant = Arc::new(options.assistant_message);
    let preparation = prepare_tool_call(
        &options.context,
        &assistant,
        &tool_call,
        &options.hooks,
        &options.signal,
        &options.tools,
    )
    .await;
    let (tool, args) = match preparation {
        Preparation::Immediate(result) => return immediate(&tool_call, result),
        Preparation::Prepared { tool, args } => (tool, args),
    };
    let on_update = options.on_update.clone();
    let start = move |u| {
        if let Some(f) = &on_update {
            f(u);
        }
        None
    };
    // The validated arguments go to the tool; `after_tool_call` sees a copy.
    let hook_args = options.hooks.after_tool_call.as_ref().map(|_| args.clone());
    let executed = execute_prepared(&tool, &tool_call, args, &options.signal, start).await;
    finalize_executed(
        &options.context,
        &assistant,
        &tool_call,
        hook_args,
        executed,
        &options.hooks,
        &options.signal,
    )
    .await
}

/// The result of one batch: tool-result messages in source order, and whether every
/// result asked to terminate.
pub(crate) struct Batch {
    pub messages: Vec<Arc<ToolResultMessage>>,
    pub terminate: bool,
}

/// The tool-result message of an outcome (after its `tool_execution_end` was emitted).
fn result_message(o: ToolCallOutcome) -> Arc<ToolResultMessage> {
    Arc::new(ToolResultMessage {
        tool_call_id: o.tool_call.id.clone(),
        tool_name: o.tool_call.name.clone(),
        content: o.result.content.unwrap_or_default(),
        details: o.result.details,
        usage: o.result.usage.map(Box::new),
        nested_calls: None,
        is_error: o.is_error,
        duration_ms: o.duration_ms,
        timestamp: tern_ai::clock::now_ms(),
    })
}

async fn emit_start<S: EventSink + Clone + 'static>(sink: &S, c: &Arc<ToolCall>) {
    sink.emit(AgentEvent::ToolExecutionStart {
        tool_call: c.clone(),
    })
    .await;
}

async fn emit_end<S: EventSink + Clone + 'static>(sink: &S, o: &ToolCallOutcome) {
    sink.emit(AgentEvent::ToolExecutionEnd {
        tool_call: o.tool_call.clone(),
        result: Box::new(o.result.clone()),
        is_error: o.is_error,
        duration_ms: o.duration_ms,
    })
    .await;
}

async fn emit_result<S: EventSink + Clone + 'static>(sink: &S, m: &Arc<ToolResultMessage>) {
    sink.emit(AgentEvent::MessageStart {
        message: Message::from(m.clone()),
    })
    .await;
    sink.emit(AgentEvent::MessageEnd {
        message: Message::from(m.clone()),
    })
    .await;
}

fn terminates(outcomes: &[ToolCallOutcome]) -> bool {
    !outcomes.is_empty() && outcomes.iter().all(|o| o.result.terminate == Some(true))
}

fn immediate(tool_call: &Arc<ToolCall>, result: ToolResult) -> ToolCallOutcome {
    ToolCallOutcome {
        tool_call: tool_call.clone(),
        result,
        is_error: true,
        duration_ms: None,
    }
}

/// The calls of `assistant` as shared handles: events, outcomes and hooks all refer to them.
fn shared_calls(assistant: &AssistantMessage) -> Vec<Arc<ToolCall>> {
    assistant
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// Fails every call of a message cut off by the token limit: their arguments may be truncated.
pub(crate) async fn fail_truncated<S: EventSink + Clone + 'static>(
    assistant: &AssistantMessage,
    sink: &S,
) -> Batch {
    let calls = shared_calls(assistant);
    let mut messages = Vec::with_capacity(calls.len());
    for c in &calls {
        emit_start(sink, c).await;
        let o = immediate(
            c,
            ToolResult::error(format!(
                "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
                c.name
            )),
        );
        emit_end(sink, &o).await;
        let m = result_message(o);
        emit_result(sink, &m).await;
        messages.push(m);
    }
    Batch {
        messages,
        terminate: false,
    }
}

/// What every call of one batch shares.
struct BatchEnv<'a, S> {
    context: &'a AgentContext,
    assistant: &'a Arc<AssistantMessage>,
    hooks: &'a ToolHooks,
    signal: &'a CancellationToken,
    sink: &'a S,
}

async fn run_prepared<S: EventSink + Clone + 'static>(
    env: &BatchEnv<'_, S>,
    call: &Arc<ToolCall>,
    tool: &AgentTool,
    args: Value,
) -> ToolCallOutcome {
    let (sink, shared) = (env.sink.clone(), call.clone());
    let start = move |partial| -> Option<BoxFuture<'static, ()>> {
        let sink = sink.clone();
        let event = AgentEvent::ToolExecutionUpdate {
            tool_call: shared.clone(),
            partial_result: Box::new(partial),
        };
        Some(Box::pin(async move { sink.emit(event).await }))
    };
    let hook_args = env.hooks.after_tool_call.as_ref().map(|_| args.clone());
    let executed = execute_prepared(tool, call, args, env.signal, start).await;
    finalize_executed(
        env.context,
        env.assistant,
        call,
        hook_args,
        executed,
        env.hooks,
        env.signal,
    )
    .await
}

/// A call of a parallel batch after preflight: finished already, or ready to execute.
#[allow(clippy::large_enum_variant)]
enum Slot {
    Done(ToolCallOutcome),
    Run(AgentTool, Value),
}

async fn finish_slot<S: EventSink + Clone + 'static>(
    env: &BatchEnv<'_, S>,
    slot: Slot,
    call: &Arc<ToolCall>,
) -> ToolCallOutcome {
    match slot {
        Slot::Done(o) => o,
        Slot::Run(tool, args) => {
            // The executor checks the signal once more right before `execute`.
            let o = if env.signal.is_cancelled() {
                immediate(call, ToolResult::error(OPERATION_ABORTED))
            } else {
                run_prepared(env, call, &tool, args).await
            };
            emit_end(env.sink, &o).await;
            o
        }
    }
}

/// Announces a call of a parallel batch and prepares it; a call that fails preparation
/// ends here.
async fn preflight<S: EventSink + Clone + 'static>(
    env: &BatchEnv<'_, S>,
    call: &Arc<ToolCall>,
    tools: &[AgentTool],
) -> Slot {
    emit_start(env.sink, call).await;
    let prepared = prepare_tool_call(
        env.context,
        env.assistant,
        call,
        env.hooks,
        env.signal,
        tools,
    )
    .await;
    match prepared {
        Preparation::Immediate(r) => {
            let o = immediate(call, r);
            emit_end(env.sink, &o).await;
            Slot::Done(o)
        }
        Preparation::Prepared { tool, args } => Slot::Run(tool, args),
    }
}

/// Emits the tool-result messages in source order and tells whether the batch terminates.
async fn finish_batch<S: EventSink + Clone + 'static>(
    sink: &S,
    outcomes: Vec<ToolCallOutcome>,
) -> Batch {
    let terminate = terminates(&outcomes);
    let mut messages = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        let m = result_message(o);
        emit_result(sink, &m).await;
        messages.push(m);
    }
    Batch {
        messages,
        terminate,
    }
}

/// Executes the tool calls of `assistant`: sequentially when configured or when any called
/// tool is sequential, else preflight one by one and execute concurrently.
pub(crate) async fn execute_tool_calls<S: EventSink + Clone + 'static>(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    mode: ToolExecutionMode,
    hooks: &ToolHooks,
    signal: &CancellationToken,
    sink: &S,
) -> Batch {
    let calls = shared_calls(assistant);
    let tools = context.tools.as_slice();
    let env = BatchEnv {
        context,
        assistant,
        hooks,
        signal,
        sink,
    };
    let any_sequential = calls.iter().any(|c| {
        tools
            .iter()
            .find(|t| t.name() == c.name)
            .and_then(|t| t.execution_mode())
            == Some(ToolExecutionMode::Sequential)
    });
    if mode == ToolExecutionMode::Sequential || any_sequential {
        let mut messages = Vec::with_capacity(calls.len());
        let mut terminate = !calls.is_empty();
        for call in &calls {
            emit_start(sink, call).await;
            let o = match prepare_tool_call(context, assistant, call, hooks, signal, tools).await {
                Preparation::Immediate(r) => immediate(call, r),
                Preparation::Prepared { tool, args } => run_prepared(&env, call, &tool, args).await,
            };
            emit_end(sink, &o).await;
            terminate &= o.result.terminate == Some(true);
            let m = result_message(o);
            emit_result(sink, &m).await;
            messages.push(m);
        }
        return Batch {
            messages,
            terminate,
        };
    }

    let env = &env;
    if let [call] = calls.as_slice() {
        // One call needs no slot list and no join.
        let slot = preflight(env, call, tools).await;
        let outcome = finish_slot(env, slot, call).await;
        return finish_batch(sink, vec![outcome]).await;
    }
    let mut slots = Vec::with_capacity(calls.len());
    for call in &calls {
        slots.push(preflight(env, call, tools).await);
    }
    let outcomes = join_all(
        slots
            .into_iter()
            .zip(calls.iter())
            .map(|(slot, call)| finish_slot(env, slot, call)),
    )
    .await;
    finish_batch(sink, outcomes).await
}
