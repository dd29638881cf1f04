//! Messages and content blocks, with the reference's JSON shape.
//!
//! A transcript is a `Vec<Message>`. The four LLM roles (`system`, `user`, `assistant`,
//! `toolResult`) are typed; any other role is a [`CustomMessage`] carried through untouched,
//! so an application can keep its own entries (notes, summaries, UI markers) in the same
//! transcript and decide in `convert_to_llm` what the model sees of them.
//!
//! ```
//! use tern_ai::Message;
//! let m: Message = serde_json::from_str(r#"{"role":"user","content":"hi","timestamp":0}"#).unwrap();
//! assert_eq!(m.role(), "user");
//! let back = serde_json::to_string(&m).unwrap();
//! assert_eq!(back, r#"{"role":"user","content":"hi","timestamp":0}"#);
//! ```

mod assistant;
mod constrained_sampling;
mod content;
mod extra;
mod name;
pub mod packed;
mod shrink;
mod system;
mod thinking_level;
mod tool_call;
mod tool_result;
mod usage;
mod user;

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use assistant::{AssistantExtra, AssistantMessage, StopReason};
pub use constrained_sampling::{ConstrainedSampling, GrammarVariants, Strictness};
pub use content::{
    content_text, Content, ContentBlock, ImageContent, TextContent, ThinkingContent,
};
pub use extra::{Absent, MessageExtra};
pub use name::Name;
pub use packed::{MessageKind, PackError, PackedTranscript};
pub use system::{SystemMessage, ToolDeclaration, ToolReference};
pub use thinking_level::ThinkingLevel;
pub use tool_call::{ToolCall, ToolCallExtra};
pub use tool_result::ToolResultMessage;
pub use usage::{js_number, Cost, Usage, UsageBox};
pub use user::UserMessage;

/// Milliseconds since the Unix epoch, as the reference stores them.
pub type Timestamp = u64;

/// A JSON object (`JsonObject` in the reference).
pub type JsonObject = Map<String, Value>;

/// A message of a role tern does not know, kept verbatim (its `role` included).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomMessage(pub JsonObject);

impl CustomMessage {
    /// The message's role.
    pub fn role(&self) -> &str {
        self.0.get("role").and_then(Value::as_str).unwrap_or("")
    }
}

/// One transcript entry.
///
/// Each variant holds its message behind an [`Arc`], so a message is stored once however many
/// places hold it (the agent's state, the loop's context, events, listeners): cloning a
/// `Message` never copies its content. Use [`Arc::make_mut`] to change one in place.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// `role: "system"`.
    System(Arc<SystemMessage>),
    /// `role: "user"`.
    User(Arc<UserMessage>),
    /// `role: "assistant"`.
    Assistant(Arc<AssistantMessage>),
    /// `role: "toolResult"`.
    ToolResult(Arc<ToolResultMessage>),
    /// Any other role.
    Custom(Arc<CustomMessage>),
}

impl Message {
    /// The role name as it appears in JSON.
    pub fn role(&self) -> &str {
        match self {
            Message::System(_) => "system",
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::Custom(c) => c.role(),
        }
    }

    /// A user message with one text block, as `Agent::prompt("...")` builds it.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::User(Arc::new(UserMessage {
            content: Content::Blocks(vec![ContentBlock::text(text)]),
            timestamp: crate::clock::now_ms(),
            extra: None,
        }))
    }

    /// The assistant message, if it is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(a) => Some(a),
            _ => None,
        }
    }

    /// The system message, if it is one.
    pub fn as_system(&self) -> Option<&SystemMessage> {
        match self {
            Message::System(s) => Some(s),
            _ => None,
        }
    }

    /// The message's content as JSON (what `convertToLlm` rules copy), `null` if it has none.
    pub fn content_json(&self) -> Value {
        match self {
            Message::System(m) => serde_json::to_value(&m.content).unwrap_or(Value::Null),
            Message::User(m) => serde_json::to_value(&m.content).unwrap_or(Value::Null),
            Message::Assistant(m) => serde_json::to_value(&m.content).unwrap_or(Value::Null),
            Message::ToolResult(m) => serde_json::to_value(&m.content).unwrap_or(Value::Null),
            Message::Custom(c) => c.0.get("content").cloned().unwrap_or(Value::Null),
        }
    }
}

macro_rules! message_from {
    ($ty:ty, $variant:ident) => {
        impl From<$ty> for Message {
            fn from(m: $ty) -> Self {
                Message::$variant(Arc::new(m))
            }
        }
        impl From<Arc<$ty>> for Message {
            fn from(m: Arc<$ty>) -> Self {
                Message::$variant(m)
            }
        }
    };
}
message_from!(SystemMessage, System);
message_from!(UserMessage, User);
message_from!(AssistantMessage, Assistant);
message_from!(ToolResultMessage, ToolResult);
message_from!(CustomMessage, Custom);

#[derive(Serialize)]
struct Tagged<'a, T> {
    role: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl<'a, T: Serialize> Tagged<'a, T> {
    /// Writes `inner` with its `role` tag first.
    fn write<S: Serializer>(role: &'static str, inner: &'a T, s: S) -> Result<S::Ok, S::Error> {
        Tagged { role, inner }.serialize(s)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::System(m) => Tagged::write("system", m, s),
            Message::User(m) => Tagged::write("user", m, s),
            Message::Assistant(m) => Tagged::write("assistant", m, s),
            Message::ToolResult(m) => Tagged::write("toolResult", m, s),
            Message::Custom(c) => c.0.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut obj = JsonObject::deserialize(d)?;
        let role = obj
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("message without a string `role`"))?
            .to_string();
        let known = matches!(
            role.as_str(),
            "system" | "user" | "assistant" | "toolResult"
        );
        if !known {
            return Ok(Message::Custom(Arc::new(CustomMessage(obj))));
        }
        obj.remove("role");
        let v = Value::Object(obj);
        let parsed = match role.as_str() {
            "system" => serde_json::from_value::<SystemMessage>(v).map(Message::from),
            "user" => serde_json::from_value::<UserMessage>(v).map(Message::from),
            "assistant" => serde_json::from_value::<AssistantMessage>(v).map(Message::from),
            _ => serde_json::from_value::<ToolResultMessage>(v).map(Message::from),
        };
        parsed.map_err(|e| D::Error::custom(format!("invalid {role} message: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_json_keeps_the_reference_field_order() {
        let text = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"a":1}}],"api":"x","provider":"p","model":"m","responseModel":"rm","responseId":"r","providerThinkingLevel":"hi","diagnostics":{"d":null},"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","deferred":[1],"errorMessage":"e","rawStopReason":"raw","endTurn":true,"timestamp":5,"durationMs":7,"thinkingLevel":"low"}"#;
        let m: Message = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
        let a = m.as_assistant().unwrap();
        assert_eq!(a.extra().response_model.as_deref(), Some("rm"));
        let plain: Message = serde_json::from_str(
            r#"{"role":"assistant","content":[],"diagnostics":null,"usage":{},"stopReason":"stop","timestamp":0}"#,
        )
        .unwrap();
        let plain = plain.as_assistant().unwrap().clone();
        assert!(plain.extra.is_none());
        let mut touched = plain.clone();
        touched.extra_mut();
        assert_eq!(touched, plain);
    }

    #[test]
    fn a_snapshot_keeps_its_tool_call_when_the_original_changes() {
        let mut m = AssistantMessage {
            content: vec![ContentBlock::tool_call(ToolCall {
                id: "c".into(),
                ..ToolCall::default()
            })],
            ..AssistantMessage::default()
        };
        let snapshot = m.clone();
        if let ContentBlock::ToolCall(c) = &mut m.content[0] {
            Arc::make_mut(c).arguments = serde_json::json!({"a": 1});
        }
        assert_eq!(snapshot.tool_calls().next().unwrap().arguments, Value::Null);
        assert_eq!(m.tool_calls().next().unwrap().arguments["a"], 1);
    }
}
