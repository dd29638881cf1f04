//! The agent events: what a run tells its subscribers, in order.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

use tern_ai::{AssistantMessageEvent, Message, PartialMessage, ToolResultMessage};

use crate::tool::ToolResult;

/// One event of a run (the reference's `AgentEvent`), serialized as its JSON.
///
/// Grammar of a run: `agent_start`, then turns (`turn_start` … `turn_end`), then `agent_end`
/// last. Inside a turn: message events (`message_start`, `message_update`*, `message_end`)
/// and tool events (`tool_execution_start`, `tool_execution_update`*, `tool_execution_end`).
#[derive(Clone, Debug)]
pub enum AgentEvent {
    /// The run started.
    AgentStart,
    /// The run ended; `messages` are the messages it added.
    AgentEnd {
        /// New messages of this run.
        messages: Vec<Message>,
    },
    /// A turn (one assistant response and its tool calls) starts.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The turn's assistant message.
        message: Message,
        /// Its tool results.
        tool_results: Vec<Arc<ToolResultMessage>>,
    },
    /// A message starts (complete for non-assistant messages).
    MessageStart {
        /// The message.
        message: Message,
    },
    /// The streaming assistant message changed.
    MessageUpdate {
        /// The message being built (a live handle).
        message: PartialMessage,
        /// The provider event.
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete and added to the transcript.
    MessageEnd {
        /// The message.
        message: Message,
    },
    /// A tool call starts.
    ToolExecutionStart {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Raw arguments of the call.
        args: Value,
    },
    /// A tool reported a partial result.
    ToolExecutionUpdate {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Raw arguments of the call.
        args: Value,
        /// The partial result (boxed to keep every event small).
        partial_result: Box<ToolResult>,
    },
    /// A tool call finished.
    ToolExecutionEnd {
        /// Call id.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// The finalized result (boxed to keep every event small).
        result: Box<ToolResult>,
        /// The finalized error flag.
        is_error: bool,
        /// How long `execute` ran, when it ran.
        duration_ms: Option<u64>,
    },
}

impl AgentEvent {
    /// The event's `type` (`agent_start`, `message_update`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
        }
    }
}

impl Serialize for AgentEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", self.kind())?;
        match self {
            AgentEvent::AgentStart | AgentEvent::TurnStart => {}
            AgentEvent::AgentEnd { messages } => m.serialize_entry("messages", messages)?,
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => {
                m.serialize_entry("message", message)?;
                let results: Vec<Message> = tool_results
                    .iter()
                    .cloned()
                    .map(Message::ToolResult)
                    .collect();
                m.serialize_entry("toolResults", &results)?;
            }
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                m.serialize_entry("message", message)?
            }
            AgentEvent::MessageUpdate {
                message,
                assistant_message_event,
            } => {
                m.serialize_entry("message", message)?;
                m.serialize_entry("assistantMessageEvent", assistant_message_event)?;
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("args", args)?;
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("args", args)?;
                m.serialize_entry("partialResult", partial_result)?;
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
            } => {
                m.serialize_entry("toolCallId", tool_call_id)?;
                m.serialize_entry("toolName", tool_name)?;
                m.serialize_entry("result", result)?;
                m.serialize_entry("isError", is_error)?;
                if let Some(d) = duration_ms {
                    m.serialize_entry("durationMs", d)?;
                }
            }
        }
        m.end()
    }
}
