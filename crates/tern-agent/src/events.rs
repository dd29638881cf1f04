//! The agent events: what a run tells its subscribers, in order, and the [`EventSink`] the
//! loop hands them to.

use std::future::Future;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use tern_ai::{AssistantMessageEvent, Message, PartialMessage, ToolCall, ToolResultMessage};

use crate::tool::ToolResult;

/// One event of a run (the reference's `AgentEvent`), serialized as its JSON.
///
/// Grammar of a run: `agent_start`, then turns (`turn_start` … `turn_end`), then `agent_end`
/// last. Inside a turn: message events (`message_start`, `message_update`*, `message_end`)
/// and tool events (`tool_execution_start`, `tool_execution_update`*, `tool_execution_end`).
///
/// More kinds of events may come: a `match` needs a `_` arm.
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// The streaming assistant message changed. The message being built (the reference's
    /// `message`) is the provider event's own handle: see [`AgentEvent::partial_message`].
    MessageUpdate {
        /// The provider event: one of the block events or `start`, never `done` or `error`,
        /// so it carries the partial message.
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete and added to the transcript.
    MessageEnd {
        /// The message.
        message: Message,
    },
    /// A tool call starts. The call gives `toolCallId` (`id`), `toolName` (`name`) and
    /// `args` (the raw `arguments`).
    ToolExecutionStart {
        /// The call, shared with the assistant message it came from.
        tool_call: Arc<ToolCall>,
    },
    /// A tool reported a partial result.
    ToolExecutionUpdate {
        /// The call.
        tool_call: Arc<ToolCall>,
        /// The partial result (boxed to keep every event small).
        partial_result: Box<ToolResult>,
    },
    /// A tool call finished.
    ToolExecutionEnd {
        /// The call.
        tool_call: Arc<ToolCall>,
        /// The finalized result. Shared, so the event costs no copy of it: the tool-result
        /// message takes it back once the listeners are done, unless one kept the event.
        result: Arc<ToolResult>,
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

    /// The message being built, for a `message_update`: a live handle, shared with the
    /// provider event (one handle per event, not two).
    ///
    /// ```
    /// use tern_agent::AgentEvent;
    /// use tern_ai::{AssistantMessage, AssistantMessageEvent, PartialMessage};
    /// let partial = PartialMessage::new(AssistantMessage::default());
    /// let event = AgentEvent::MessageUpdate {
    ///     assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0, partial: partial.clone() },
    /// };
    /// assert!(event.partial_message().is_some_and(|m| m.ptr_eq(&partial)));
    /// assert!(AgentEvent::TurnStart.partial_message().is_none());
    /// ```
    pub fn partial_message(&self) -> Option<&PartialMessage> {
        match self {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => assistant_message_event.partial(),
            _ => None,
        }
    }

    /// The tool call of a `tool_execution_*` event.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tern_agent::AgentEvent;
    /// use tern_ai::ToolCall;
    /// let call = Arc::new(ToolCall { id: "c1".into(), name: "read".into(), ..Default::default() });
    /// let event = AgentEvent::ToolExecutionStart { tool_call: call };
    /// assert_eq!(event.tool_call().map(|c| c.name.as_str()), Some("read"));
    /// assert!(AgentEvent::TurnStart.tool_call().is_none());
    /// ```
    pub fn tool_call(&self) -> Option<&ToolCall> {
        match self {
            AgentEvent::ToolExecutionStart { tool_call }
            | AgentEvent::ToolExecutionUpdate { tool_call, .. }
            | AgentEvent::ToolExecutionEnd { tool_call, .. } => Some(tool_call),
            _ => None,
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
                assistant_message_event,
            } => {
                // The reference's order: the event, then a copy of the partial message.
                m.serialize_entry("assistantMessageEvent", assistant_message_event)?;
                if let Some(message) = assistant_message_event.partial() {
                    m.serialize_entry("message", message)?;
                }
            }
            AgentEvent::ToolExecutionStart { tool_call } => {
                m.serialize_entry("toolCallId", &tool_call.id)?;
                m.serialize_entry("toolName", &tool_call.name)?;
                m.serialize_entry("args", &tool_call.arguments)?;
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call,
                partial_result,
            } => {
                m.serialize_entry("toolCallId", &tool_call.id)?;
                m.serialize_entry("toolName", &tool_call.name)?;
                m.serialize_entry("args", &tool_call.arguments)?;
                m.serialize_entry("partialResult", partial_result)?;
            }
            AgentEvent::ToolExecutionEnd {
                tool_call,
                result,
                is_error,
                duration_ms,
            } => {
                m.serialize_entry("toolCallId", &tool_call.id)?;
                m.serialize_entry("toolName", &tool_call.name)?;
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

/// Receives the loop's events; the loop awaits each `emit` before it goes on.
///
/// Any `Fn(AgentEvent) -> impl Future<Output = ()>` closure is a sink:
///
/// ```
/// use tern_agent::{AgentEvent, EventSink};
/// fn takes_sink(_: &impl EventSink) {}
/// takes_sink(&|event: AgentEvent| async move { println!("{}", event.kind()) });
/// ```
pub trait EventSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send;
}

impl<F, Fut> EventSink for F
where
    F: Fn(AgentEvent) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + Send,
{
    fn emit(&self, event: AgentEvent) -> impl Future<Output = ()> + Send {
        self(event)
    }
}
