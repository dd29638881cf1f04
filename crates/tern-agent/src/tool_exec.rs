//! Tool execution: preflight (lookup, argument preparation, validation, `before_tool_call`),
//! execution with updates, `after_tool_call`, and the parallel and sequential batch runners.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures::future::{join_all, BoxFuture, FutureExt};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;
use tern_ai::validation::validate_tool_arguments;
use tern_ai::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{AfterToolCallContext, AgentContext, BeforeToolCallContext, ToolHooks};
use crate::events::AgentEvent;
use crate::sink::EventSink;
use crate::tool::{AgentTool, ToolCallInput, ToolExecutionMode, ToolResult, ToolUpdater};

const OPERATION_ABORTED: &str = "Operation aborted";

/// The outcome of one tool call (the reference's `AgentToolCallOutcome`).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallOutcome {
    /// The call.
    pub tool_call: ToolCall,
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
    tool_call: &ToolCall,
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
    let args = match validate_tool_arguments(
        &tool_call.name,
        tool.parameters(),
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
                tool_call: tool_call.clone(),
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

/// Starts the handling of one update and returns what is left of it, if anything.
type UpdateStarter = Arc<dyn Fn(ToolResult) -> Option<BoxFuture<'static, ()>> + Send + Sync>;

/// Runs `execute`. Each update's handling starts inside the tool's `update` call and runs
/// alongside the tool, as the reference's un-awaited emits do; all of them are awaited after
/// `execute` settles. Updates sent after that are dropped.
async fn execute_prepared(
    tool: &AgentTool,
    tool_call: &ToolCall,
    args: Value,
    signal: &CancellationToken,
    start_update: UpdateStarter,
) -> Executed {
    let (tx, mut started) = mpsc::unbounded_channel::<BoxFuture<'static, ()>>();
    let updater = ToolUpdater::new(move |partial| {
        let Some(mut handling) = start_update(partial) else {
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
        let _ = tx.send(handling);
    });
    let started_at = Instant::now();
    // A panicking tool becomes an error result instead of unwinding through the loop
    // (which left the agent running forever).
    let input = ToolCallInput {
        tool_call_id: tool_call.id.clone(),
        args,
        signal: signal.clone(),
        updater: updater.clone(),
    };
    let mut run = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.execute(input))) {
        Ok(fut) => AssertUnwindSafe(fut)
            .catch_unwind()
            .map(|r| r.unwrap_or_else(|p| Err(panic_message(p).into())))
            .boxed(),
        Err(p) => futures::future::ready(Err(panic_message(p).into())).boxed(),
    };
    let mut in_flight = FuturesUnordered::new();
    let output = loop {
        tokio::select! {
            biased;
            out = &mut run => break out,
            Some(handling) = started.recv() => in_flight.push(handling),
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
        }
    };
    let duration_ms = (started_at.elapsed().as_secs_f64() * 1000.0).round() as u64;
    updater.close();
    drop(updater);
    while let Ok(handling) = started.try_recv() {
        in_flight.push(handling);
    }
    while in_flight.next().await.is_some() {}
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
    tool_call: &ToolCall,
    args: Value,
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
                tool_call: tool_call.clone(),
                args,
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
        Preparation::Immediate(result) => {
            return ToolCallOutcome {
                tool_call,
                result,
                is_error: true,
                duration_ms: None,
            }
        }
        Preparation::Prepared { tool, args } => (tool, args),
    };
    let on_update = options.on_update.clone();
    let start: UpdateStarter = Arc::new(move |u| {
        if let Some(f) = &on_update {
            f(u);
        }
        None
    });
    let executed = execute_prepared(&tool, &tool_call, args.clone(), &options.signal, start).await;
    finalize_executed(
        &options.context,
        &assistant,
        &tool_call,
        args,
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

fn result_message(o: &ToolCallOutcome) -> Arc<ToolResultMessage> {
    Arc::new(ToolResultMessage {
        tool_call_id: o.tool_call.id.clone(),
        tool_name: o.tool_call.name.clone(),
        content: o.result.content.clone().unwrap_or_default(),
        details: o.result.details.clone(),
        usage: o.result.usage.clone().map(Box::new),
        nested_calls: None,
        is_error: o.is_error,
        duration_ms: o.duration_ms,
        timestamp: tern_ai::clock::now_ms(),
    })
}

async fn emit_start<S: EventSink + Clone + 'static>(sink: &S, c: &ToolCall) {
    sink.emit(AgentEvent::ToolExecutionStart {
        tool_call_id: c.id.clone(),
        tool_name: c.name.clone(),
        args: c.arguments.clone(),
    })
    .await;
}

async fn emit_end<S: EventSink + Clone + 'static>(sink: &S, o: &ToolCallOutcome) {
    sink.emit(AgentEvent::ToolExecutionEnd {
        tool_call_id: o.tool_call.id.clone(),
        tool_name: o.tool_call.name.clone(),
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

fn immediate(tool_call: &ToolCall, result: ToolResult) -> ToolCallOutcome {
    ToolCallOutcome {
        tool_call: tool_call.clone(),
        result,
        is_error: true,
        duration_ms: None,
    }
}

/// Fails every call of a message cut off by the token limit: their arguments may be truncated.
pub(crate) async fn fail_truncated<S: EventSink + Clone + 'static>(
    calls: &[&ToolCall],
    sink: &S,
) -> Batch {
    let mut messages = Vec::with_capacity(calls.len());
    for c in calls {
        emit_start(sink, c).await;
        let o = immediate(
            c,
            ToolResult::error(format!(
                "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
                c.name
            )),
        );
        emit_end(sink, &o).await;
        let m = result_message(&o);
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
    call: &ToolCall,
    tool: &AgentTool,
    args: Value,
) -> ToolCallOutcome {
    // The call is found again in the shared message on update, so a tool that never
    // reports progress costs no copy of its call.
    let (sink_owned, message) = (env.sink.clone(), env.assistant.clone());
    let block = message
        .content
        .iter()
        .position(|b| matches!(b, ContentBlock::ToolCall(c) if std::ptr::eq(&**c, call)));
    let start: UpdateStarter = Arc::new(move |partial| {
        let sink = sink_owned.clone();
        let Some(ContentBlock::ToolCall(call)) = block.and_then(|i| message.content.get(i)) else {
            return None;
        };
        let event = AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result: Box::new(partial),
        };
        Some(Box::pin(async move { sink.emit(event).await }))
    });
    let executed = execute_prepared(tool, call, args.clone(), env.signal, start).await;
    finalize_executed(
        env.context,
        env.assistant,
        call,
        args,
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
    call: &ToolCall,
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
    let calls: Vec<&ToolCall> = assistant.tool_calls().collect();
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
        let mut outcomes = Vec::with_capacity(calls.len());
        let mut messages = Vec::with_capacity(calls.len());
        for call in calls {
            emit_start(sink, call).await;
            let o = match prepare_tool_call(context, assistant, call, hooks, signal, tools).await {
                Preparation::Immediate(r) => immediate(call, r),
                Preparation::Prepared { tool, args } => run_prepared(&env, call, &tool, args).await,
            };
            emit_end(sink, &o).await;
            let m = result_message(&o);
            emit_result(sink, &m).await;
            outcomes.push(o);
            messages.push(m);
        }
        return Batch {
            messages,
            terminate: terminates(&outcomes),
        };
    }

    let mut slots = Vec::with_capacity(calls.len());
    for call in &calls {
        emit_start(sink, call).await;
        match prepare_tool_call(context, assistant, call, hooks, signal, tools).await {
            Preparation::Immediate(r) => {
                let o = immediate(call, r);
                emit_end(sink, &o).await;
                slots.push(Slot::Done(o));
            }
            Preparation::Prepared { tool, args } => slots.push(Slot::Run(tool, args)),
        }
    }
    let env = &env;
    let outcomes = if slots.len() == 1 {
        // One call needs no join.
        let mut outcomes = Vec::with_capacity(1);
        for (slot, call) in slots.into_iter().zip(calls.iter()) {
            outcomes.push(finish_slot(env, slot, call).await);
        }
        outcomes
    } else {
        join_all(
            slots
                .into_iter()
                .zip(calls.iter())
                .map(|(slot, call)| finish_slot(env, slot, call)),
        )
        .await
    };
    let mut messages = Vec::with_capacity(outcomes.len());
    for o in &outcomes {
        let m = result_message(o);
        emit_result(sink, &m).await;
        messages.push(m);
    }
    Batch {
        messages,
        terminate: terminates(&outcomes),
    }
}
