//! Tool execution: preflight (lookup, argument preparation, validation, `before_tool_call`),
//! execution with updates (`updates.rs`), `after_tool_call`, and the parallel and sequential
//! batch runners (`batch.rs`, joining a parallel batch with `join.rs`).

mod batch;
mod join;
mod updates;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use futures::future::Either;
use serde_json::Value;
use tern_ai::{AssistantMessage, ToolCall};
use tokio_util::sync::CancellationToken;

use crate::config::AgentContext;
use crate::hooks::{
    AfterToolCallContext, AfterToolCallHook, BeforeToolCallContext, BeforeToolCallHook,
    BeforeToolCallResult, Hooks,
};
use crate::tool::{AgentTool, ToolResult};
use crate::tool_args::ToolArgs;

pub(crate) use batch::{execute_tool_calls, fail_truncated};
pub(crate) use updates::panic_text;
use updates::{execute_prepared, Executed};

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
    Prepared { tool: AgentTool, args: ToolArgs },
}

async fn prepare_tool_call(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    tool_call: &Arc<ToolCall>,
    hooks: &Hooks,
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
    // `None`: the arguments pass as they are.
    let coerced = tool
        .compiled_parameters()
        .validate_in_place(
            &tool_call.name,
            raw,
            tool_call.extra().arguments_error.as_deref(),
        )
        .map(|valid| match valid {
            Cow::Owned(coerced) => Some(coerced),
            Cow::Borrowed(_) => None,
        });
    // Arguments that pass as they are go to the tool as the call's own, not copied (the
    // reference's validation copies them; a tool cannot change them through `ToolArgs`).
    let mut args = match (coerced, prepared) {
        (Ok(Some(coerced)), _) => ToolArgs::from(coerced),
        (Ok(None), Some(prepared)) => ToolArgs::from(prepared),
        (Ok(None), None) => ToolArgs::of_call(tool_call.clone()),
        (Err(message), _) => return Preparation::Immediate(ToolResult::error(message)),
    };
    if let Some(before) = &hooks.before_tool_call {
        // Boxed: a call's preparation then carries the hook's state only when there is a hook.
        match Box::pin(before_tool_call(
            context, assistant, tool_call, args, before, signal,
        ))
        .await
        {
            Ok(replaced) => args = replaced,
            Err(result) => return Preparation::Immediate(result),
        }
    }
    Preparation::Prepared {
        tool: tool.clone(),
        args,
    }
}

/// Runs `before_tool_call`: the arguments to execute with (replaced or not), or the result of
/// a call that ends here (blocked, failed or aborted).
async fn before_tool_call(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    tool_call: &Arc<ToolCall>,
    mut args: ToolArgs,
    before: &BeforeToolCallHook,
    signal: &CancellationToken,
) -> Result<ToolArgs, ToolResult> {
    let decision = before(
        BeforeToolCallContext {
            assistant_message: assistant.clone(),
            tool_call: (**tool_call).clone(),
            args: Value::clone(&args),
            context: context.clone(),
        },
        signal.clone(),
    )
    .await;
    let decision = match decision {
        Ok(d) => d,
        Err(e) => return Err(ToolResult::error(e.to_string())),
    };
    if signal.is_cancelled() {
        return Err(ToolResult::error(OPERATION_ABORTED));
    }
    let decision = match decision {
        Some(BeforeToolCallResult {
            block: false,
            args: Some(replaced),
            ..
        }) => {
            args = ToolArgs::from(replaced);
            None
        }
        other => other,
    };
    if let Some(d) = decision.filter(|d| d.block) {
        let mut result = ToolResult::error(
            d.reason
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "Tool execution was blocked".to_string()),
        );
        if d.terminate {
            result.terminate = Some(true);
        }
        return Err(result);
    }
    Ok(args)
}

/// Applies `after_tool_call` to an executed call. Without the hook the outcome is ready at
/// once; the hook's step is boxed, so that a call's future (a parallel batch holds one per
/// call, all polled on every wake-up) does not carry the hook's state when there is none.
fn finalize_executed<'a>(
    context: &'a AgentContext,
    assistant: &'a Arc<AssistantMessage>,
    tool_call: &'a Arc<ToolCall>,
    args: Option<ToolArgs>,
    executed: Executed,
    hooks: &'a Hooks,
    signal: &'a CancellationToken,
) -> impl Future<Output = ToolCallOutcome> + Send + 'a {
    let outcome = |e: Executed| ToolCallOutcome {
        tool_call: tool_call.clone(),
        result: e.result,
        is_error: e.is_error,
        duration_ms: Some(e.duration_ms),
    };
    match &hooks.after_tool_call {
        None => Either::Left(std::future::ready(outcome(executed))),
        Some(after) => Either::Right(Box::pin(async move {
            outcome(
                after_tool_call(context, assistant, tool_call, args, executed, after, signal).await,
            )
        })),
    }
}

/// Runs `after_tool_call` and applies its answer to the executed call.
async fn after_tool_call(
    context: &AgentContext,
    assistant: &Arc<AssistantMessage>,
    tool_call: &Arc<ToolCall>,
    args: Option<ToolArgs>,
    mut executed: Executed,
    after: &AfterToolCallHook,
    signal: &CancellationToken,
) -> Executed {
    let result = &mut executed.result;
    let outcome = after(
        AfterToolCallContext {
            assistant_message: assistant.clone(),
            tool_call: (**tool_call).clone(),
            args: args.map(ToolArgs::into_value).unwrap_or_default(),
            result: result.clone(),
            is_error: executed.is_error,
            context: context.clone(),
        },
        signal.clone(),
    )
    .await;
    match outcome {
        Ok(Some(o)) => {
            // Structured content not replaced along with the content may no longer match.
            let structured = match (&o.structured_content, &o.content) {
                (Some(s), _) => Some(Box::new(s.clone())),
                (None, Some(_)) => None,
                (None, None) => result.structured_content.take(),
            };
            if o.content.is_some() {
                result.content = o.content;
            }
            if o.details.is_some() {
                result.details = o.details;
            }
            if let Some(u) = o.usage {
                result.usage = Some(Box::new(u));
            }
            if o.terminate.is_some() {
                result.terminate = o.terminate;
            }
            result.structured_content = structured;
            if let Some(e) = o.is_error {
                executed.is_error = e;
            }
        }
        Ok(None) => {}
        Err(e) => {
            executed.result = ToolResult::error(e.to_string());
            executed.is_error = true;
        }
    }
    executed
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
    pub hooks: Hooks,
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

fn immediate(tool_call: &Arc<ToolCall>, result: ToolResult) -> ToolCallOutcome {
    ToolCallOutcome {
        tool_call: tool_call.clone(),
        result,
        is_error: true,
        duration_ms: None,
    }
}
