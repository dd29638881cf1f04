//! The tool-result message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::extra::{message_serde, MessageExtra};
use super::{ContentBlock, JsonObject, Name, Timestamp, Usage};

/// The result of a tool call as the model sees it.
#[derive(Clone, Debug, Default)]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: Name,
    /// The tool's name.
    pub tool_name: Name,
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific data for applications (not sent to the model).
    pub details: Option<Value>,
    /// Usage of a model the tool called, if any (boxed: most tools call no model).
    pub usage: Option<Box<Usage>>,
    /// Nested tool calls record, kept as JSON (boxed: rarely present).
    pub nested_calls: Option<Box<Value>>,
    /// Whether the call failed.
    pub is_error: bool,
    /// How long the tool ran, when it ran.
    pub duration_ms: Option<u64>,
    /// Creation time.
    pub timestamp: Timestamp,
    /// Fields tern has no type for and absent typed fields (`None`: neither).
    pub extra: Option<Box<MessageExtra>>,
}

// The reference's order (its `createToolResultMessage`).
message_serde!(ToolResultMessage {
    id tool_call_id: Name = "toolCallId",
    req tool_name: Name = "toolName",
    req content: Vec<ContentBlock> = "content",
    opt details: Option<Value> = "details",
    opt usage: Option<Box<Usage>> = "usage",
    opt nested_calls: Option<Box<Value>> = "nestedCalls",
    tracked[IS_ERROR] is_error: bool = "isError",
    opt duration_ms: Option<u64> = "durationMs",
    tracked[TIMESTAMP] timestamp: Timestamp = "timestamp",
});
