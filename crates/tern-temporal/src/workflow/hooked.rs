//! The session's hooks as the loop sees them: each call only queues a `hook` request in the
//! bridge (the driver runs it as a local activity on the worker, where the embedder's hook
//! runs) and turns the worker's answer back into the loop's types.

use std::sync::Arc;

use tern_agent::hooks::TurnContext;
use tern_agent::{AgentTool, Hooks};
use tern_ai::{BoxError, Message};

use super::bridge::{bridged_tool, Bridge};
use crate::hooks::{
    request_update, turn_update, HookCall, HookName, HookReply, WireContext, WireTurn,
};
use crate::wire::ToolSpec;

/// The loop's hooks for the hooks a session names; each runs on the worker.
pub(crate) fn bridged_hooks(names: &[HookName], bridge: &Arc<Bridge>) -> Hooks {
    let mut hooks = Hooks::default();
    for name in names {
        let b = bridge.clone();
        hooks = match name {
            HookName::ConvertToLlm => hooks.convert_to_llm(move |m: Arc<Vec<Message>>| {
                let reply = b.hook(HookCall::ConvertToLlm {
                    messages: m.to_vec(),
                });
                async move { messages_of(reply.await?, m) }
            }),
            HookName::TransformContext => hooks.transform_context(move |m, _signal| {
                let reply = b.hook(HookCall::TransformContext {
                    messages: m.to_vec(),
                });
                async move { messages_of(reply.await?, m) }
            }),
            HookName::BeforeToolCall => hooks.before_tool_call(move |ctx, _signal| {
                let reply = b.hook(HookCall::BeforeToolCall {
                    assistant_message: Message::Assistant(ctx.assistant_message),
                    tool_call: ctx.tool_call,
                    args: ctx.args,
                    context: WireContext::of(&ctx.context),
                });
                async move {
                    match reply.await? {
                        HookReply::Before { result } => Ok(result),
                        other => Err(mismatch(HookName::BeforeToolCall, &other)),
                    }
                }
            }),
            HookName::AfterToolCall => hooks.after_tool_call(move |ctx, _signal| {
                let reply = b.hook(HookCall::AfterToolCall {
                    assistant_message: Message::Assistant(ctx.assistant_message),
                    tool_call: ctx.tool_call,
                    args: ctx.args,
                    result: Box::new(ctx.result),
                    is_error: ctx.is_error,
                    context: WireContext::of(&ctx.context),
                });
                async move {
                    match reply.await? {
                        HookReply::After { result } => Ok(result),
                        other => Err(mismatch(HookName::AfterToolCall, &other)),
                    }
                }
            }),
            HookName::FinishTurn => hooks.finish_turn(move |ctx, _signal| {
                let reply = b.hook(HookCall::FinishTurn {
                    turn: Box::new(wire_turn(ctx)),
                });
                async move {
                    match reply.await? {
                        HookReply::Finish { decision } => Ok(decision),
                        other => Err(mismatch(HookName::FinishTurn, &other)),
                    }
                }
            }),
            HookName::PrepareRequest => hooks.prepare_request(move |ctx, _signal| {
                let reply = b.hook(HookCall::PrepareRequest {
                    context: WireContext::of(&ctx.context),
                    model: Box::new(ctx.model),
                    thinking_level: ctx.thinking_level,
                });
                let b = b.clone();
                async move {
                    match reply.await? {
                        HookReply::Update { update } => {
                            Ok(update.map(|u| request_update(u, &|s| tools_of(s, &b))))
                        }
                        other => Err(mismatch(HookName::PrepareRequest, &other)),
                    }
                }
            }),
            HookName::PrepareNextTurn => hooks.prepare_next_turn(move |ctx, _signal| {
                let reply = b.hook(HookCall::PrepareNextTurn {
                    turn: Box::new(wire_turn(ctx)),
                });
                let b = b.clone();
                async move {
                    match reply.await? {
                        HookReply::Update { update } => {
                            Ok(update.map(|u| turn_update(u, &|s| tools_of(s, &b))))
                        }
                        other => Err(mismatch(HookName::PrepareNextTurn, &other)),
                    }
                }
            }),
        };
    }
    hooks
}

fn tools_of(specs: &[ToolSpec], bridge: &Arc<Bridge>) -> Vec<AgentTool> {
    specs
        .iter()
        .map(|s| bridged_tool(s, bridge.clone()))
        .collect()
}

fn wire_turn(ctx: TurnContext) -> WireTurn {
    WireTurn {
        message: Message::Assistant(ctx.message),
        tool_results: ctx
            .tool_results
            .into_iter()
            .map(Message::ToolResult)
            .collect(),
        context: WireContext::of(&ctx.context),
        new_messages: ctx.new_messages,
    }
}

/// A messages hook's answer: the new messages, or its input when unchanged.
fn messages_of(reply: HookReply, input: Arc<Vec<Message>>) -> Result<Arc<Vec<Message>>, BoxError> {
    match reply {
        HookReply::Messages { messages: Some(m) } => Ok(Arc::new(m)),
        HookReply::Messages { messages: None } => Ok(input),
        other => Err(mismatch(HookName::TransformContext, &other)),
    }
}

fn mismatch(hook: HookName, reply: &HookReply) -> BoxError {
    format!("the worker answered a {hook:?} hook call with {reply:?}").into()
}
