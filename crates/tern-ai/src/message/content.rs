//! Content blocks (text, thinking, image, tool call) and the string-or-blocks content of
//! system and user messages.
//!
//! Every block writes its own `"type"` tag, so a block alone (a tool call in `toolcall_end`,
//! say) has the same JSON as inside a message. Fields of a block that tern has no type for
//! are kept in its `extra` box (one pointer, allocated only when there are some) and written
//! after the typed ones.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::extra::{boxed_fields, drop_tag, eq_as_json, flat_field, flat_map, no_fields, Absent};
use super::{JsonObject, ToolCall};

/// A block of message content. Which blocks a role may hold is the reference's convention:
/// assistant: text, thinking, toolCall; user and toolResult: text, image.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ContentBlock {
    /// Plain text.
    Text(TextContent),
    /// Model reasoning.
    Thinking(ThinkingContent),
    /// A base64 image.
    Image(ImageContent),
    /// A call of a tool by the model. Shared: snapshots, events and the loop clone the
    /// `Arc`; a provider that updates a call while streaming uses [`Arc::make_mut`], which
    /// copies the call only when a snapshot still shares it.
    ToolCall(Arc<ToolCall>),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => b.serialize(s),
            ContentBlock::Thinking(b) => b.serialize(s),
            ContentBlock::Image(b) => b.serialize(s),
            ContentBlock::ToolCall(b) => b.serialize(s),
        }
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// A tool-call block.
    pub fn tool_call(call: ToolCall) -> Self {
        ContentBlock::ToolCall(Arc::new(call))
    }

    /// The block's text when it is a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The tool call when the block is one.
    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        }
    }
}

impl From<ToolCall> for ContentBlock {
    fn from(call: ToolCall) -> Self {
        ContentBlock::tool_call(call)
    }
}

// The JSON of a content block, from its fields in the reference's order (`kind name: Type =
// "key"`, `req` or `opt` as in `flat_field`): the `type` tag first, the fields tern has no
// type for last. Also `fields()` and equality as JSON sees it.
macro_rules! block_serde {
    ($ty:ident, $tag:literal { $($kind:ident $field:ident: $fty:ty = $key:literal),+ $(,)? }) => {
        impl $ty {
            /// Fields tern has no type for (empty when there are none).
            pub fn fields(&self) -> &JsonObject {
                self.extra.as_deref().unwrap_or(no_fields())
            }
        }

        eq_as_json!($ty { $($field),+ });

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = flat_map(s, Absent::default())?;
                m.field("type", $tag)?;
                $(flat_field!(@write m, $kind [], $key, self.$field);)+
                m.end(self.fields())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // The wire form, named as the block for serde's messages (it shadows the
                // block's name here; `Self` is the block). A missing `Option` reads as `None`.
                #[derive(Deserialize)]
                struct $ty {
                    $(#[serde(rename = $key)] $field: $fty,)+
                    #[serde(flatten)]
                    fields: JsonObject,
                }
                let mut w = $ty::deserialize(d)?;
                drop_tag(&mut w.fields, $tag);
                Ok(Self {
                    $($field: w.$field,)+
                    extra: boxed_fields(w.fields),
                })
            }
        }
    };
}

/// `{"type":"text","text":...}`.
#[derive(Clone, Debug, Default)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature of the text (OpenAI Responses message ids).
    pub text_signature: Option<String>,
    /// Fields tern has no type for (`None` when there are none), written after the typed ones.
    pub extra: Option<Box<JsonObject>>,
}

block_serde!(TextContent, "text" {
    req text: String = "text",
    opt text_signature: Option<String> = "textSignature",
});

/// `{"type":"thinking","thinking":...}`.
#[derive(Clone, Debug, Default)]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Opaque provider signature, replayed to the same provider.
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning (the payload is in the signature).
    pub redacted: Option<bool>,
    /// Fields tern has no type for (`None` when there are none), written after the typed ones.
    pub extra: Option<Box<JsonObject>>,
}

block_serde!(ThinkingContent, "thinking" {
    req thinking: String = "thinking",
    opt thinking_signature: Option<String> = "thinkingSignature",
    opt redacted: Option<bool> = "redacted",
});

/// `{"type":"image","data":<base64>,"mimeType":...}`.
#[derive(Clone, Debug, Default)]
pub struct ImageContent {
    /// Base64 data without a `data:` prefix.
    pub data: String,
    /// For example `image/png`.
    pub mime_type: String,
    /// Fields tern has no type for (`None` when there are none), written after the typed ones.
    pub extra: Option<Box<JsonObject>>,
}

block_serde!(ImageContent, "image" {
    req data: String = "data",
    req mime_type: String = "mimeType",
});

/// Content that may be a plain string or a list of blocks (system and user messages).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// A plain string.
    Text(String),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl Content {
    /// The text of the content: the string itself, or the text blocks joined with `sep`.
    pub fn text(&self, sep: &str) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(blocks) => content_text(blocks, sep),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_string())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

/// Joins the text blocks of `blocks` with `sep` (the reference's `contentText`).
pub fn content_text(blocks: &[ContentBlock], sep: &str) -> String {
    let mut out = String::new();
    let mut first = true;
    for b in blocks {
        if let ContentBlock::Text(t) = b {
            if !first {
                out.push_str(sep);
            }
            out.push_str(&t.text);
            first = false;
        }
    }
    out
}
