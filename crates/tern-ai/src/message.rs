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

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Milliseconds since the Unix epoch, as the reference stores them.
pub type Timestamp = u64;

/// A JSON object (`JsonObject` in the reference).
pub type JsonObject = Map<String, Value>;

/// How hard a model is asked to think. `Off` means no reasoning request at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning requested.
    #[default]
    Off,
    /// The smallest budget a provider offers.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// Extra-high effort (only some models).
    Xhigh,
    /// The largest budget a provider offers.
    Max,
}

impl ThinkingLevel {
    /// The level's wire name (`"off"`, `"low"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => ThinkingLevel::Off,
            "minimal" => ThinkingLevel::Minimal,
            "low" => ThinkingLevel::Low,
            "medium" => ThinkingLevel::Medium,
            "high" => ThinkingLevel::High,
            "xhigh" => ThinkingLevel::Xhigh,
            "max" => ThinkingLevel::Max,
            _ => return None,
        })
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an assistant message ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Still streaming (only on partial messages).
    Pending,
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output token limit cut the answer off.
    Length,
    /// The model asked for tool calls.
    ToolUse,
    /// The request failed; `errorMessage` says why.
    Error,
    /// The request was aborted by its signal.
    Aborted,
    /// The provider continues the request asynchronously.
    Deferred,
}

impl StopReason {
    /// The wire name (`"stop"`, `"toolUse"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Pending => "pending",
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Deferred => "deferred",
        }
    }
}

/// A block of message content. Which blocks a role may hold is the reference's convention:
/// assistant: text, thinking, toolCall; user and toolResult: text, image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
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

/// `{"type":"text","text":...}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature of the text (OpenAI Responses message ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// `{"type":"thinking","thinking":...}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Opaque provider signature, replayed to the same provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning (the payload is in the signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// `{"type":"image","data":<base64>,"mimeType":...}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 data without a `data:` prefix.
    pub data: String,
    /// For example `image/png`.
    pub mime_type: String,
}

/// `{"type":"toolCall","id","name","arguments"}`.
///
/// The provider-specific fields few calls carry are in [`extra`](Self::extra), out of line;
/// the JSON is flat all the same.
#[derive(Clone, Debug, Default)]
pub struct ToolCall {
    /// The call id the tool result refers to.
    pub id: String,
    /// The tool's name.
    pub name: String,
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

static NO_CALL_EXTRA: ToolCallExtra = ToolCallExtra {
    thought_signature: None,
    namespace: None,
    arguments_error: None,
};

impl ToolCall {
    /// The rarely present fields (all `None` when the call has none of them).
    pub fn extra(&self) -> &ToolCallExtra {
        self.extra.as_deref().unwrap_or(&NO_CALL_EXTRA)
    }

    /// The rarely present fields, for changing them (allocated on first use).
    pub fn extra_mut(&mut self) -> &mut ToolCallExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

// Equality as JSON sees it: an allocated but empty `extra` equals none.
impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        let ToolCall {
            id,
            name,
            arguments,
            extra: _,
        } = self;
        *id == other.id
            && *name == other.name
            && *arguments == other.arguments
            && self.extra() == other.extra()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallView<'a> {
    id: &'a String,
    name: &'a String,
    arguments: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_error: &'a Option<String>,
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        ToolCallView {
            id: &self.id,
            name: &self.name,
            arguments: &self.arguments,
            thought_signature: &extra.thought_signature,
            namespace: &extra.namespace,
            arguments_error: &extra.arguments_error,
        }
        .serialize(s)
    }
}

#[derive(Deserialize)]
#[serde(rename = "ToolCall", rename_all = "camelCase")]
struct ToolCallWire {
    id: String,
    name: String,
    arguments: Value,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    arguments_error: Option<String>,
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ToolCallWire::deserialize(d)?;
        let extra = ToolCallExtra {
            thought_signature: w.thought_signature,
            namespace: w.namespace,
            arguments_error: w.arguments_error,
        };
        Ok(ToolCall {
            id: w.id,
            name: w.name,
            arguments: w.arguments,
            extra: extra.into_option(),
        })
    }
}

impl From<ToolCall> for ContentBlock {
    fn from(call: ToolCall) -> Self {
        ContentBlock::tool_call(call)
    }
}

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

/// Token counts and cost of one response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from cache.
    #[serde(default)]
    pub input: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to cache.
    #[serde(default)]
    pub cache_write: u64,
    /// Part of `cache_write` written with 1-hour retention (Anthropic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Reasoning tokens, a subset of `output`, when the provider reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// The provider's total.
    #[serde(default)]
    pub total_tokens: u64,
    /// Cost in dollars.
    #[serde(default)]
    pub cost: Cost,
}

/// Cost of one response in dollars.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Catalog-derived input cost.
    #[serde(default)]
    pub input: f64,
    /// Catalog-derived output cost.
    #[serde(default)]
    pub output: f64,
    /// Catalog-derived cache-read cost.
    #[serde(default)]
    pub cache_read: f64,
    /// Catalog-derived cache-write cost.
    #[serde(default)]
    pub cache_write: f64,
    /// Billed total when the provider reports it, else the catalog estimate.
    #[serde(default)]
    pub total: f64,
    /// True when `total` is the provider's billed cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
}

/// A system message: the prompt at the head of a transcript, or a change of it later on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Instruction text (the base prompt on the leading message; additions later).
    pub content: Content,
    /// Named prompt sections; later messages replace them by name, `null` removes one
    /// (boxed: most system messages have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Box<Map<String, Value>>>,
    /// Complete declarations of the tools that become available here (shared: a
    /// declaration is stored once however many transcripts announce it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<Arc<ToolDeclaration>>>,
    /// Tools that stop being available here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    /// Creation time.
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// A user message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// A string, or text and image blocks.
    pub content: Content,
    /// Creation time.
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// An assistant message, final or partial.
///
/// The fields few responses carry are in [`extra`](Self::extra), out of line; the JSON is
/// flat all the same, in the reference's field order.
#[derive(Clone, Debug, Default)]
pub struct AssistantMessage {
    /// Text, thinking and toolCall blocks in model order.
    pub content: Vec<ContentBlock>,
    /// The wire API that produced it (`openai-completions`, ...).
    pub api: String,
    /// The provider id.
    pub provider: String,
    /// The requested model id.
    pub model: String,
    /// The provider's response id.
    pub response_id: Option<String>,
    /// The thinking level the agent loop requested.
    pub thinking_level: Option<ThinkingLevel>,
    /// Tokens and cost.
    pub usage: Usage,
    /// Why the response ended.
    pub stop_reason: StopReason,
    /// Why the request failed (with `error`/`aborted`).
    pub error_message: Option<String>,
    /// The provider's own stop reason.
    pub raw_stop_reason: Option<String>,
    /// Creation time.
    pub timestamp: Timestamp,
    /// How long the response took, measured by its event stream.
    pub duration_ms: Option<u64>,
    /// The rarely present fields; `None` when all of them are absent. Set them through
    /// [`extra_mut`](Self::extra_mut); read them through [`extra`](Self::extra).
    pub extra: Option<Box<AssistantExtra>>,
}

/// The fields of an [`AssistantMessage`] that few responses carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssistantExtra {
    /// The model id the provider reported, when it differs.
    pub response_model: Option<String>,
    /// The provider-native effort level used.
    pub provider_thinking_level: Option<String>,
    /// Provider diagnostics, kept as JSON.
    pub diagnostics: Option<Value>,
    /// Deferred-response handle, kept as JSON.
    pub deferred: Option<Value>,
    /// Provider-reported end of turn.
    pub end_turn: Option<bool>,
}

impl AssistantExtra {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

static NO_EXTRA: AssistantExtra = AssistantExtra {
    response_model: None,
    provider_thinking_level: None,
    diagnostics: None,
    deferred: None,
    end_turn: None,
};

impl AssistantMessage {
    /// The text blocks joined without separator (what a user reads as the answer).
    pub fn text(&self) -> String {
        content_text(&self.content, "")
    }

    /// The tool calls of the message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// The rarely present fields (all `None` when the message has none of them).
    pub fn extra(&self) -> &AssistantExtra {
        self.extra.as_deref().unwrap_or(&NO_EXTRA)
    }

    /// The rarely present fields, for changing them (allocated on first use).
    pub fn extra_mut(&mut self) -> &mut AssistantExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

// Equality as JSON sees it: an allocated but empty `extra` equals none.
impl PartialEq for AssistantMessage {
    fn eq(&self, other: &Self) -> bool {
        let AssistantMessage {
            content,
            api,
            provider,
            model,
            response_id,
            thinking_level,
            usage,
            stop_reason,
            error_message,
            raw_stop_reason,
            timestamp,
            duration_ms,
            extra: _,
        } = self;
        *content == other.content
            && *api == other.api
            && *provider == other.provider
            && *model == other.model
            && *response_id == other.response_id
            && *thinking_level == other.thinking_level
            && *usage == other.usage
            && *stop_reason == other.stop_reason
            && *error_message == other.error_message
            && *raw_stop_reason == other.raw_stop_reason
            && *timestamp == other.timestamp
            && *duration_ms == other.duration_ms
            && self.extra() == other.extra()
    }
}

// The wire form, flat and in the reference's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AssistantView<'a> {
    content: &'a Vec<ContentBlock>,
    #[serde(skip_serializing_if = "str::is_empty")]
    api: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    provider: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_model: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_id: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_thinking_level: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: &'a Option<ThinkingLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnostics: &'a Option<Value>,
    usage: &'a Usage,
    stop_reason: &'a StopReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    deferred: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_stop_reason: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_turn: &'a Option<bool>,
    timestamp: &'a Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: &'a Option<u64>,
}

impl Serialize for AssistantMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        AssistantView {
            content: &self.content,
            api: &self.api,
            provider: &self.provider,
            model: &self.model,
            response_model: &extra.response_model,
            response_id: &self.response_id,
            provider_thinking_level: &extra.provider_thinking_level,
            thinking_level: &self.thinking_level,
            diagnostics: &extra.diagnostics,
            usage: &self.usage,
            stop_reason: &self.stop_reason,
            deferred: &extra.deferred,
            error_message: &self.error_message,
            raw_stop_reason: &self.raw_stop_reason,
            end_turn: &extra.end_turn,
            timestamp: &self.timestamp,
            duration_ms: &self.duration_ms,
        }
        .serialize(s)
    }
}

// The wire form read back: the same fields and defaults as the view.
#[derive(Deserialize)]
#[serde(rename = "AssistantMessage", rename_all = "camelCase")]
struct AssistantWire {
    content: Vec<ContentBlock>,
    #[serde(default)]
    api: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    response_model: Option<String>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    provider_thinking_level: Option<String>,
    #[serde(default)]
    thinking_level: Option<ThinkingLevel>,
    #[serde(default)]
    diagnostics: Option<Value>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    stop_reason: StopReason,
    #[serde(default)]
    deferred: Option<Value>,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default)]
    raw_stop_reason: Option<String>,
    #[serde(default)]
    end_turn: Option<bool>,
    #[serde(default)]
    timestamp: Timestamp,
    #[serde(default)]
    duration_ms: Option<u64>,
}

impl<'de> Deserialize<'de> for AssistantMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = AssistantWire::deserialize(d)?;
        let extra = AssistantExtra {
            response_model: w.response_model,
            provider_thinking_level: w.provider_thinking_level,
            diagnostics: w.diagnostics,
            deferred: w.deferred,
            end_turn: w.end_turn,
        };
        Ok(AssistantMessage {
            content: w.content,
            api: w.api,
            provider: w.provider,
            model: w.model,
            response_id: w.response_id,
            thinking_level: w.thinking_level,
            usage: w.usage,
            stop_reason: w.stop_reason,
            error_message: w.error_message,
            raw_stop_reason: w.raw_stop_reason,
            timestamp: w.timestamp,
            duration_ms: w.duration_ms,
            extra: (!extra.is_empty()).then(|| Box::new(extra)),
        })
    }
}

/// The result of a tool call as the model sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific data for applications (not sent to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Usage of a model the tool called, if any (boxed: most tools call no model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// Nested tool calls record, kept as JSON (boxed: rarely present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_calls: Option<Box<Value>>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// How long the tool ran, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Creation time.
    #[serde(default)]
    pub timestamp: Timestamp,
}

/// A message of a role tern does not know, kept verbatim (its `role` included).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomMessage(pub JsonObject);

impl CustomMessage {
    /// The message's role.
    pub fn role(&self) -> &str {
        self.0.get("role").and_then(Value::as_str).unwrap_or("")
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

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::System(m) => Tagged {
                role: "system",
                inner: m,
            }
            .serialize(s),
            Message::User(m) => Tagged {
                role: "user",
                inner: m,
            }
            .serialize(s),
            Message::Assistant(m) => Tagged {
                role: "assistant",
                inner: m,
            }
            .serialize(s),
            Message::ToolResult(m) => Tagged {
                role: "toolResult",
                inner: m,
            }
            .serialize(s),
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
        let text = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"a":1}}],"api":"x","provider":"p","model":"m","responseModel":"rm","responseId":"r","providerThinkingLevel":"hi","thinkingLevel":"low","diagnostics":{"d":null},"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"error","deferred":[1],"errorMessage":"e","rawStopReason":"raw","endTurn":true,"timestamp":5,"durationMs":7}"#;
        let m: Message = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
        let a = m.as_assistant().unwrap();
        assert_eq!(a.extra().response_model.as_deref(), Some("rm"));
        let plain: Message = serde_json::from_str(
            r#"{"role":"assistant","content":[],"diagnostics":null,"timestamp":0}"#,
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
