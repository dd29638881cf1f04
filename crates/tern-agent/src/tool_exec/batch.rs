//! The batch runners: every call of one assistant message, sequentially or with parallel
//! execution, each announced and finished with its events, the results in source order.

use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, Either, FutureExt};
use tern_ai::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage};
use tokio_util::sync::CancellationToken;

use super::join::join_in_order;
use super::updates::execute_prepared;
use super::{
    finalize_executed, immediate, prepare_tool_call, Preparation, ToolCallOutcome,
    OPERATION_ABORTED,
};
use crate::config::AgentContext;
use crate::events::{AgentEvent, EventSink};
use crate::hooks::Hooks;
use crate::tool::{AgentTool, ToolExecutionMode, ToolResult};
use crate::tool_args::ToolArgs;

/// The result of one batch: tool-result messages in source order, and whether every
/// result asked to terminate.
pub(crate) struct Batch {
    pub messages: Vec<Arc<ToolResultMessage>>,
    pub terminate: bool,
}

impl Batch {
    /// A batch with room for `n` results. It terminates when it has results and every one
    /// asks to.
    fn with_capacity(n: usize) -> Self {
        Batch {
            messages: Vec::with_capacity(n),
            terminate: n > 0,
        }
    }

    /// Adds a finished call (after its `tool_execution_end`): its tool-result message, for
    /// the caller to announce.
    fn add(&mut self, o: ToolCallOutcome) -> &Arc<ToolResultMessage> {
        self.terminate &= o.result.terminate == Some(true);
        self.messages.push(result_message(o));
        &self.messages[self.messages.len() - 1]
    }
}

/// The tool-result message of an outcome (after its `tool_execution_end` was emitted).
fn result_message(o: ToolCallOutcome) -> Arc<ToolResultMessage> {
    Arc::new(ToolResultMessage {
        tool_call_id: o.tool_call.id.clone(),
        tool_name: o.tool_call.name.clone(),
        content: o.result.content.unwrap_or_default(),
        details: o.result.details,
        usage: o.result.usage,
        nested_calls: None,
        is_error: o.is_error,
        duration_ms: o.duration_ms,
        timestamp: tern_ai::clock::now_ms(),
        extra: None,
    })
}

async fn emit_start<S: EventSink + Clone + 'static>(sink: &S, c: &Arc<ToolCall>) {
    sink.emit(AgentEvent::ToolExecutionStart {
        tool_call: c.clone(),
    })
    .await;
}

/// The event lends the outcome's result and gives it back after the listeners ran (a copy
/// only when a listener kept the event).
async fn emit_end<S: EventSink + Clone + 'static>(sink: &S, o: &mut ToolCallOutcome) {
    let result = Arc::new(std::mem::take(&mut o.result));
    sink.emit(AgentEvent::ToolExecutionEnd {
        tool_call: o.tool_call.clone(),
        result: result.clone(),
        is_error: o.is_error,
        duration_ms: o.duration_ms,
    })
    .await;
    o.result = Arc::try_unwrap(result).unwrap_or_else(|kept| ToolResult::clone(&kept));
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

/// The calls of `assistant` as shared handles: events, outcomes and hooks all refer to them.
fn shared_calls(assistant: &AssistantMessage) -> impl Iterator<Item = &Arc<ToolCall>> + Clone {
    assistant.content.iter().filter_map(|b| match b {
        ContentBlock::ToolCall(c) => Some(c),
        _ => None,
    })
}

/// Fails every call of a message cut off by the token limit: their arguments may be truncated.
pub(crate) async fn fail_truncated<S: EventSink + Clone + 'static>(
    assistant: &AssistantMessage,
    sink: &S,
) -> Batch {
    let calls = shared_calls(assistant);
    // Error results never ask to terminate: the batch does not.
    let mut batch = Batch::with_capacity(calls.clone().count());
    for c in calls {
        emit_start(sink, c).await;
        let mut o = immediate(
            c,
            ToolResult::error(format!(
                "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
                c.name
            )),
        );
        emit_end(sink, &mut o).await;
        emit_result(sink, batch.add(o)).await;
    }
    batch
}

/// What every call of one batch shares.
struct BatchEnv<'a, S> {
    context: &'a AgentContext,
    assistant: &'a Arc<AssistantMessage>,
    hooks: &'a Hooks,
    signal: &'a CancellationToken,
    sink: &'a S,
}

async fn run_prepared<S: EventSink + Clone + 'static>(
    env: &BatchEnv<'_, S>,
    call: &Arc<ToolCall>,
    tool: &AgentTool,
    args: ToolArgs,
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
    Run(AgentTool, ToolArgs),
}

/// A call's part of the parallel batch. The slot is matched before any future is built: a
/// future keeps its arguments for its whole life, and a finished call's outcome beside the
/// execution's state made each call's future larger than the allocator's fast sizes.
fn finish_slot<'a, S: EventSink + Clone + 'static>(
    env: &'a BatchEnv<'a, S>,
    slot: Slot,
    call: &'a Arc<ToolCall>,
) -> impl Future<Output = ToolCallOutcome> + 'a {
    match slot {
        Slot::Done(o) => Either::Left(std::future::ready(o)),
        Slot::Run(tool, args) => Either::Right(run_slot(env, tool, args, call)),
    }
}

async fn run_slot<S: EventSink + Clone + 'static>(
    env: &BatchEnv<'_, S>,
    tool: AgentTool,
    args: ToolArgs,
    call: &Arc<ToolCall>,
) -> ToolCallOutcome {
    // The executor checks the signal once more right before `execute`.
    let mut o = if env.signal.is_cancelled() {
        immediate(call, ToolResult::error(OPERATION_ABORTED))
    } else {
        run_prepared(env, call, &tool, args).await
    };
    emit_end(env.sink, &mut o).await;
    o
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
            let mut o = immediate(call, r);
            emit_end(env.sink, &mut o).await;
            Slot::Done(o)
        }
        Preparation::Prepared { tool, args } => Slot::Run(tool, args),
    }
}

/// Emits the tool-result messages in source order and tells whether the batch terminates
/// (it does when every result asks to).
async fn finish_batch<S: EventSink + Clone + 'static>(
    sink: &S,
    outcomes: impl ExactSizeIterator<Item = ToolCallOutcome>,
) -> Batch {
    let mut batch = Batch::with_capacity(outcomes.len());
    for o in outcomes {
        emit_result(sink, batch.add(o)).await;
    }
    batch
}

/// Executes the tool calls of `assistant`: sequentially when configured or when any called
/// tool is sequential, else preflight one by one and execute concurrently.
///
/// A message of one call, the common case, runs here; the sequential and the many-call
/// paths run out of line (boxed), so that the loop's code for a turn stays compact.
pub(crate) async fn execute_tool_calls<S: EventSink + Clone + 'static>(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    mode: ToolExecutionMode,
    hooks: &Hooks,
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
    let any_sequential = calls.clone().any(|c| {
        tools
            .iter()
            .find(|t| t.name() == c.name)
            .and_then(|t| t.execution_mode())
            == Some(ToolExecutionMode::Sequential)
    });
    if mode == ToolExecutionMode::Sequential || any_sequential {
        return run_sequential(&env, calls).boxed().await;
    }
    let mut rest = calls.clone();
    if let (Some(call), None) = (rest.next(), rest.next()) {
        // One call needs no slot list, no join and no outcome iterator: each would move the
        // outcome once more (a memcpy of its 152 bytes) on the path of every common turn.
        let outcome = match preflight(&env, call, tools).await {
            Slot::Done(o) => o,
            Slot::Run(tool, args) => run_slot(&env, tool, args, call).await,
        };
        let mut batch = Batch::with_capacity(1);
        emit_result(sink, batch.add(outcome)).await;
        return batch;
    }
    run_parallel(&env, calls).boxed().await
}

/// Every call in turn: announced, prepared, executed and finished before the next.
async fn run_sequential<'a, S: EventSink + Clone + 'static>(
    env: &BatchEnv<'a, S>,
    calls: impl Iterator<Item = &'a Arc<ToolCall>> + Clone + Send,
) -> Batch {
    let (context, assistant, hooks, signal, sink) =
        (env.context, env.assistant, env.hooks, env.signal, env.sink);
    let tools = context.tools.as_slice();
    let mut batch = Batch::with_capacity(calls.clone().count());
    for call in calls {
        emit_start(sink, call).await;
        let mut o = match prepare_tool_call(context, assistant, call, hooks, signal, tools).await {
            Preparation::Immediate(r) => immediate(call, r),
            Preparation::Prepared { tool, args } => run_prepared(env, call, &tool, args).await,
        };
        emit_end(sink, &mut o).await;
        emit_result(sink, batch.add(o)).await;
    }
    batch
}

/// Every call preflighted in turn, then all executed at once; the results in source order.
async fn run_parallel<'a, S: EventSink + Clone + 'static>(
    env: &BatchEnv<'a, S>,
    calls: impl Iterator<Item = &'a Arc<ToolCall>> + Clone + Send,
) -> Batch {
    let tools = env.context.tools.as_slice();
    // Each slot beside its call: the join then knows the batch's size before it builds anything.
    let mut slots = Vec::with_capacity(calls.clone().count());
    for call in calls {
        slots.push((preflight(env, call, tools).await, call));
    }
    let outcomes = join_in_order(
        slots
            .into_iter()
            .map(|(slot, call)| finish_slot(env, slot, call)),
    )
    .await;
    finish_batch(env.sink, outcomes.into_iter()).await
}
