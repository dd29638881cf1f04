//! The system message and the tool declarations it announces.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::extra::{eq_as_json, extra_accessors, flat_map, Absent, MessageExtra};
use super::{Content, JsonObject, Timestamp};

/// A system message: the prompt at the head of a transcript, or a change of it later on.
#[derive(Clone, Debug, Default)]
pub struct SystemMessage {
    /// Instruction text (the base prompt on the leading message; additions later).
    pub content: Content,
    /// Named prompt sections; later messages replace them by name, `null` removes one
    /// (boxed: most system messages have none).
    pub sections: Option<Box<Map<String, Value>>>,
    /// Complete declarations of the tools that become available here (shared: a
    /// declaration is stored once however many transcripts announce it).
    pub tools_added: Option<Vec<Arc<ToolDeclaration>>>,
    /// Tools that stop being available here.
    pub tools_removed: Option<Vec<ToolReference>>,
    /// Creation time.
    pub timestamp: Timestamp,
    /// Fields tern has no type for and absent typed fields (`None`: neither).
    pub extra: Option<Box<MessageExtra>>,
}

extra_accessors!(
    SystemMessage,
    MessageExtra,
    "Fields tern has no type for and absent typed fields (empty when there are none)."
);

eq_as_json!(SystemMessage {
    content,
    sections,
    tools_added,
    tools_removed,
    timestamp,
});

impl Serialize for SystemMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = flat_map(s, extra.absent)?;
        m.field("content", &self.content)?;
        m.opt("sections", self.sections.as_ref())?;
        m.opt("toolsAdded", self.tools_added.as_ref())?;
        m.opt("toolsRemoved", self.tools_removed.as_ref())?;
        m.tracked("timestamp", Absent::TIMESTAMP, &self.timestamp)?;
        m.end(&extra.fields)
    }
}

#[derive(Deserialize)]
#[serde(rename = "SystemMessage", rename_all = "camelCase")]
struct SystemWire {
    content: Content,
    #[serde(default)]
    sections: Option<Box<Map<String, Value>>>,
    #[serde(default)]
    tools_added: Option<Vec<Arc<ToolDeclaration>>>,
    #[serde(default)]
    tools_removed: Option<Vec<ToolReference>>,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(flatten)]
    fields: JsonObject,
}

impl<'de> Deserialize<'de> for SystemMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = SystemWire::deserialize(d)?;
        let mut absent = Absent::default();
        let timestamp = absent.read(Absent::TIMESTAMP, w.timestamp);
        Ok(SystemMessage {
            content: w.content,
            sections: w.sections,
            tools_added: w.tools_added,
            tools_removed: w.tools_removed,
            timestamp,
            extra: MessageExtra::keep(w.fields, absent),
        })
    }
}

/// Declaration of a tool as the model sees it (name, description, JSON Schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDeclaration {
    /// Unique name.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default)]
    pub parameters: Value,
    /// Constrained-sampling preference, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
}

/// `{"name": ...}`: a tool referred to by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
}
