//! The tool-result message.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::extra::{same_extra, Absent, MessageExtra};
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

impl ToolResultMessage {
    /// Fields tern has no type for and absent typed fields (empty when there are none).
    pub fn extra(&self) -> &MessageExtra {
        self.extra.as_deref().unwrap_or(MessageExtra::none())
    }

    /// The same, for changing them (allocated on first use).
    pub fn extra_mut(&mut self) -> &mut MessageExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

impl PartialEq for ToolResultMessage {
    fn eq(&self, other: &Self) -> bool {
        self.tool_call_id == other.tool_call_id
            && self.tool_name == other.tool_name
            && self.content == other.content
            && self.details == other.details
            && self.usage == other.usage
            && self.nested_calls == other.nested_calls
            && self.is_error == other.is_error
            && self.duration_ms == other.duration_ms
            && self.timestamp == other.timestamp
            && same_extra(self.extra.as_deref(), other.extra.as_deref())
    }
}

// The reference's order (its `createToolResultMessage`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultView<'a> {
    tool_call_id: &'a String,
    tool_name: &'a String,
    content: &'a Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: &'a Option<Box<Usage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nested_calls: &'a Option<Box<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<&'a bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: &'a Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<&'a Timestamp>,
    #[serde(flatten)]
    fields: &'a JsonObject,
}

impl Serialize for ToolResultMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        ToolResultView {
            tool_call_id: &self.tool_call_id,
            tool_name: &self.tool_name,
            content: &self.content,
            details: &self.details,
            usage: &self.usage,
            nested_calls: &self.nested_calls,
            is_error: extra.absent.write(Absent::IS_ERROR, &self.is_error),
            duration_ms: &self.duration_ms,
            timestamp: extra.absent.write(Absent::TIMESTAMP, &self.timestamp),
            fields: &extra.fields,
        }
        .serialize(s)
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
            extra: MessageExtra {
                fields: w.fields,
                absent,
            }
            .into_option(),
        })
    }
}
