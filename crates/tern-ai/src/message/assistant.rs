//! The assistant message and why it ended.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::extra::{eq_as_json, extra_accessors, flat_map, Absent};
use super::{
    content_text, ContentBlock, JsonObject, Name, ThinkingLevel, Timestamp, ToolCall, UsageBox,
};
use crate::clock::now_ms;
use crate::model::Model;

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

/// An assistant message, final or partial.
///
/// The fields few responses carry are in [`extra`](Self::extra), out of line: the provider
/// fields few responses have, fields tern has no type for, and which of `usage`, `stopReason`
/// and `timestamp` were absent from the JSON it was read from. The JSON is flat all the same,
/// in the order the reference builds the message: the provider's fields, then `durationMs`
/// (set by the event stream), then `thinkingLevel` (set by the agent loop), then the fields
/// tern has no type for.
///
/// ```
/// use tern_ai::Message;
/// let text = r#"{"role":"assistant","content":[],"model":"m","traceId":"t1"}"#;
/// let m: Message = serde_json::from_str(text).unwrap();
/// assert_eq!(m.as_assistant().unwrap().extra().fields["traceId"], "t1");
/// assert_eq!(serde_json::to_string(&m).unwrap(), text); // no stopReason, usage or timestamp added
/// ```
#[derive(Clone, Debug, Default)]
pub struct AssistantMessage {
    /// Text, thinking and toolCall blocks in model order.
    pub content: Vec<ContentBlock>,
    /// The wire API that produced it (`openai-completions`, ...); shared with every other
    /// message that names it.
    pub api: Name,
    /// The provider id (shared the same way).
    pub provider: Name,
    /// The requested model id (shared the same way).
    pub model: Name,
    /// The provider's response id.
    pub response_id: Option<String>,
    /// The thinking level the agent loop requested.
    pub thinking_level: Option<ThinkingLevel>,
    /// Tokens and cost (nothing stored while all zero).
    pub usage: UsageBox,
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
    /// Fields tern has no type for, in the order they were read; written after the typed ones.
    pub fields: JsonObject,
    /// Which of `usage`, `stopReason` and `timestamp` were absent (see [`Absent`]).
    pub absent: Absent,
}

impl AssistantExtra {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl AssistantMessage {
    /// The empty message a response from `model` starts as: the model's api, provider and
    /// id, [`StopReason::Pending`], stamped now.
    ///
    /// ```
    /// let model = tern_ai::Model::default();
    /// let m = tern_ai::AssistantMessage::pending(&model);
    /// assert_eq!(m.stop_reason, tern_ai::StopReason::Pending);
    /// ```
    pub fn pending(model: &Model) -> Self {
        AssistantMessage {
            api: Name::from(&model.api),
            provider: Name::from(&model.provider),
            model: Name::from(&model.id),
            stop_reason: StopReason::Pending,
            timestamp: now_ms(),
            ..AssistantMessage::default()
        }
    }

    /// The text blocks joined without separator (what a user reads as the answer).
    pub fn text(&self) -> String {
        content_text(&self.content, "")
    }

    /// The tool calls of the message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }
}

extra_accessors!(
    AssistantMessage,
    AssistantExtra,
    "The rarely present fields (all `None` when the message has none of them)."
);

eq_as_json!(AssistantMessage {
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
});

// The wire form, flat and in the reference's order.
impl Serialize for AssistantMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = flat_map(s, extra.absent)?;
        m.field("content", &self.content)?;
        m.opt("api", self.api.non_empty())?;
        m.opt("provider", self.provider.non_empty())?;
        m.opt("model", self.model.non_empty())?;
        m.opt("responseModel", extra.response_model.as_ref())?;
        m.opt("responseId", self.response_id.as_ref())?;
        m.opt(
            "providerThinkingLevel",
            extra.provider_thinking_level.as_ref(),
        )?;
        m.opt("diagnostics", extra.diagnostics.as_ref())?;
        m.tracked("usage", Absent::USAGE, &*self.usage)?;
        m.tracked("stopReason", Absent::STOP_REASON, &self.stop_reason)?;
        m.opt("deferred", extra.deferred.as_ref())?;
        m.opt("errorMessage", self.error_message.as_ref())?;
        m.opt("rawStopReason", self.raw_stop_reason.as_ref())?;
        m.opt("endTurn", extra.end_turn.as_ref())?;
        m.tracked("timestamp", Absent::TIMESTAMP, &self.timestamp)?;
        m.opt("durationMs", self.duration_ms.as_ref())?;
        m.opt("thinkingLevel", self.thinking_level.as_ref())?;
        m.end(&extra.fields)
    }
}

// The wire form read back: the same fields and defaults as the view.
#[derive(Deserialize)]
#[serde(rename = "AssistantMessage", rename_all = "camelCase")]
struct AssistantWire {
    content: Vec<ContentBlock>,
    #[serde(default)]
    api: Name,
    #[serde(default)]
    provider: Name,
    #[serde(default)]
    model: Name,
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
    usage: Option<UsageBox>,
    #[serde(default)]
    stop_reason: Option<StopReason>,
    #[serde(default)]
    deferred: Option<Value>,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default)]
    raw_stop_reason: Option<String>,
    #[serde(default)]
    end_turn: Option<bool>,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(default)]
    duration_ms: Option<u64>,
    #[serde(flatten)]
    fields: JsonObject,
}

impl<'de> Deserialize<'de> for AssistantMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = AssistantWire::deserialize(d)?;
        let mut absent = Absent::default();
        let usage = absent.read(Absent::USAGE, w.usage);
        let stop_reason = absent.read(Absent::STOP_REASON, w.stop_reason);
        let timestamp = absent.read(Absent::TIMESTAMP, w.timestamp);
        let extra = AssistantExtra {
            response_model: w.response_model,
            provider_thinking_level: w.provider_thinking_level,
            diagnostics: w.diagnostics,
            deferred: w.deferred,
            end_turn: w.end_turn,
            fields: w.fields,
            absent,
        };
        Ok(AssistantMessage {
            content: w.content,
            api: w.api,
            provider: w.provider,
            model: w.model,
            response_id: w.response_id,
            thinking_level: w.thinking_level,
            usage,
            stop_reason,
            error_message: w.error_message,
            raw_stop_reason: w.raw_stop_reason,
            timestamp,
            duration_ms: w.duration_ms,
            extra: (!extra.is_empty()).then(|| Box::new(extra)),
        })
    }
}
