//! The system message and the tool declarations it announces.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::extra::{message_serde, MessageExtra};
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

message_serde!(SystemMessage {
    req content: Content = "content",
    opt sections: Option<Box<Map<String, Value>>> = "sections",
    opt tools_added: Option<Vec<Arc<ToolDeclaration>>> = "toolsAdded",
    opt tools_removed: Option<Vec<ToolReference>> = "toolsRemoved",
    tracked[TIMESTAMP] timestamp: Timestamp = "timestamp",
});

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
    /// Constrained-sampling preference, kept as JSON (pi-ai's `constrainedSampling`; the
    /// typed view is [`ToolDeclaration::constrained_sampling_config`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
}

impl ToolDeclaration {
    /// The typed constrained-sampling config, when the declared JSON is one of the forms
    /// providers act on.
    pub fn constrained_sampling_config(&self) -> Option<super::ConstrainedSampling> {
        self.constrained_sampling
            .as_ref()
            .and_then(super::ConstrainedSampling::from_json)
    }
}

/// `{"name": ...}`: a tool referred to by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
}
