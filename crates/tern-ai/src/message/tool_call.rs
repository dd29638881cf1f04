//! A call of a tool by the model: `{"type":"toolCall","id","name","arguments"}`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::extra::{drop_tag, eq_as_json, extra_accessors, flat_map, Absent};
use super::name::UniqueName;
use super::{JsonObject, Name};

/// `{"type":"toolCall","id","name","arguments"}`.
///
/// The provider-specific fields few calls carry are in [`extra`](Self::extra), out of line;
/// the JSON is flat all the same, and carries its `"type"` tag wherever the call appears
/// alone (`toolcall_end`), as the reference's call object does.
///
/// ```
/// use tern_ai::ToolCall;
/// let text = r#"{"type":"toolCall","id":"c1","name":"read","arguments":{},"origin":"mcp"}"#;
/// let call: ToolCall = serde_json::from_str(text).unwrap();
/// assert_eq!(call.extra().fields["origin"], "mcp");
/// assert_eq!(serde_json::to_string(&call).unwrap(), text);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolCall {
    /// The call id the tool result refers to: its clones (the result's `tool_call_id`, the
    /// tool's input) share one buffer.
    pub id: Name,
    /// The tool's name, shared as every [`Name`] is.
    pub name: Name,
    /// The arguments as the model sent them (a JSON object).
    pub arguments: Value,
    /// The rarely present fields; `None` when all of them are absent. Set them through
    /// [`extra_mut`](Self::extra_mut); read them through [`extra`](Self::extra).
    pub extra: Option<Box<ToolCallExtra>>,
}

/// The fields of a [`ToolCall`] that few calls carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCallExtra {
    /// Gemini's thought signature for this call.
    pub thought_signature: Option<String>,
    /// OpenAI Responses namespace of the tool.
    pub namespace: Option<String>,
    /// Set when the model's arguments text was not a JSON object; `arguments` is then `{}`
    /// and validation fails with this text.
    pub arguments_error: Option<String>,
    /// Fields tern has no type for, in the order they were read; written after the typed ones.
    pub fields: JsonObject,
}

impl ToolCallExtra {
    /// Boxed for [`ToolCall::extra`]; `None` when every field is absent.
    pub fn into_option(self) -> Option<Box<Self>> {
        (!self.is_empty()).then(|| Box::new(self))
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

extra_accessors!(
    ToolCall,
    ToolCallExtra,
    "The rarely present fields (all `None` when the call has none of them)."
);

eq_as_json!(ToolCall {
    id,
    name,
    arguments,
});

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = flat_map(s, Absent::default())?;
        m.field("type", "toolCall")?;
        m.field("id", &self.id)?;
        m.field("name", &self.name)?;
        m.field("arguments", &self.arguments)?;
        m.opt("thoughtSignature", extra.thought_signature.as_ref())?;
        m.opt("namespace", extra.namespace.as_ref())?;
        m.opt("argumentsError", extra.arguments_error.as_ref())?;
        m.end(&extra.fields)
    }
}

#[derive(Deserialize)]
#[serde(rename = "ToolCall", rename_all = "camelCase")]
struct ToolCallWire {
    id: UniqueName,
    name: Name,
    arguments: Value,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    arguments_error: Option<String>,
    #[serde(flatten)]
    fields: JsonObject,
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut w = ToolCallWire::deserialize(d)?;
        drop_tag(&mut w.fields, "toolCall");
        let extra = ToolCallExtra {
            thought_signature: w.thought_signature,
            namespace: w.namespace,
            arguments_error: w.arguments_error,
            fields: w.fields,
        };
        Ok(ToolCall {
            id: w.id.0,
            name: w.name,
            arguments: w.arguments,
            extra: extra.into_option(),
        })
    }
}
