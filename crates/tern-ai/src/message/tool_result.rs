//! The tool-result message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::extra::{eq_as_json, extra_accessors, flat_map, Absent, MessageExtra};
use super::{ContentBlock, JsonObject, Timestamp, Usage};

/// The result of a tool call as the model sees it.
#[derive(Clone, Debug, Default)]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
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

extra_accessors!(
    ToolResultMessage,
    MessageExtra,
    "Fields tern has no type for and absent typed fields (empty when there are none)."
);

eq_as_json!(ToolResultMessage {
    tool_call_id,
    tool_name,
    content,
    details,
    usage,
    nested_calls,
    is_error,
    duration_ms,
    timestamp,
});

// The reference's order (its `createToolResultMessage`).
impl Serialize for ToolResultMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = flat_map(s, extra.absent)?;
        m.field("toolCallId", &self.tool_call_id)?;
        m.field("toolName", &self.tool_name)?;
        m.field("content", &self.content)?;
        m.opt("details", self.details.as_ref())?;
        m.opt("usage", self.usage.as_ref())?;
        m.opt("nestedCalls", self.nested_calls.as_ref())?;
        m.tracked("isError", Absent::IS_ERROR, &self.is_error)?;
        m.opt("durationMs", self.duration_ms.as_ref())?;
        m.tracked("timestamp", Absent::TIMESTAMP, &self.timestamp)?;
        m.end(&extra.fields)
    }
}

#[derive(Deserialize)]
#[serde(rename = "ToolResultMessage", rename_all = "camelCase")]
struct ToolResultWire {
    tool_call_id: String,
    tool_name: String,
    content: Vec<ContentBlock>,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    usage: Option<Box<Usage>>,
    #[serde(default)]
    nested_calls: Option<Box<Value>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(flatten)]
    fields: JsonObject,
}

impl<'de> Deserialize<'de> for ToolResultMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ToolResultWire::deserialize(d)?;
        let mut absent = Absent::default();
        let is_error = absent.read(Absent::IS_ERROR, w.is_error);
        let timestamp = absent.read(Absent::TIMESTAMP, w.timestamp);
        Ok(ToolResultMessage {
            tool_call_id: w.tool_call_id,
            tool_name: w.tool_name,
            content: w.content,
            details: w.details,
            usage: w.usage,
            nested_calls: w.nested_calls,
            is_error,
            duration_ms: w.duration_ms,
            timestamp,
            extra: MessageExtra::keep(w.fields, absent),
        })
    }
}
