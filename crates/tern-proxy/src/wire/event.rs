//! The events on the wire: the reference's `ProxyAssistantMessageEvent`, an
//! [`AssistantMessageEvent`] without its `partial` message.
//!
//! ```
//! use tern_proxy::wire::ProxyEvent;
//! let e: ProxyEvent = serde_json::from_str(r#"{"type":"text_delta","contentIndex":0,"delta":"Hi"}"#).unwrap();
//! assert_eq!(e, ProxyEvent::TextDelta { content_index: 0, delta: "Hi".into() });
//! assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"type":"text_delta","contentIndex":0,"delta":"Hi"}"#);
//! ```

use serde::{Deserialize, Serialize};
use tern_ai::{AssistantMessage, AssistantMessageEvent, ContentBlock, StopReason, ToolCall, Usage};

/// One event of a proxied response. The server sends these; the client rebuilds the partial
/// message from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ProxyEvent {
    /// The response started.
    Start,
    /// A text block starts at `content_index`.
    TextStart {
        /// Index of the block in `content`.
        content_index: usize,
    },
    /// Text arrived.
    TextDelta {
        /// Index of the block in `content`.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A text block ended.
    TextEnd {
        /// Index of the block in `content`.
        content_index: usize,
        /// The block's `textSignature`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
    },
    /// A thinking block starts.
    ThinkingStart {
        /// Index of the block in `content`.
        content_index: usize,
    },
    /// Reasoning text arrived.
    ThinkingDelta {
        /// Index of the block in `content`.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A thinking block ended.
    ThinkingEnd {
        /// Index of the block in `content`.
        content_index: usize,
        /// The block's `thinkingSignature`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content_signature: Option<String>,
    },
    /// A tool call starts.
    #[serde(rename = "toolcall_start")]
    ToolcallStart {
        /// Index of the block in `content`.
        content_index: usize,
        /// The call id.
        id: String,
        /// The tool's name.
        tool_name: String,
    },
    /// A fragment of the call's JSON arguments arrived.
    #[serde(rename = "toolcall_delta")]
    ToolcallDelta {
        /// Index of the block in `content`.
        content_index: usize,
        /// The raw fragment.
        delta: String,
    },
    /// The call is complete.
    #[serde(rename = "toolcall_end")]
    ToolcallEnd {
        /// Index of the block in `content`.
        content_index: usize,
        /// The complete call (sent as a content block, with `"type":"toolCall"`).
        #[serde(with = "tool_call_block")]
        tool_call: ToolCall,
    },
    /// The response ended normally.
    Done {
        /// Why it ended (`stop`, `length`, `toolUse`).
        reason: StopReason,
        /// Tokens and cost.
        #[serde(default)]
        usage: Usage,
        /// The provider-native effort level used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_thinking_level: Option<String>,
    },
    /// The response failed or was aborted.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
        /// Tokens and cost.
        #[serde(default)]
        usage: Usage,
        /// The provider-native effort level used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_thinking_level: Option<String>,
    },
}

impl ProxyEvent {
    /// The wire form of `event`: everything but the partial message. Block details the
    /// wire event carries (a tool call's id and name at its start, a block's signature at its
    /// end) are read from the partial message.
    ///
    /// ```
    /// use tern_ai::{AssistantMessage, AssistantMessageEvent, PartialMessage};
    /// use tern_proxy::wire::ProxyEvent;
    /// let partial = PartialMessage::new(AssistantMessage::default());
    /// let event = AssistantMessageEvent::Start { partial };
    /// assert_eq!(ProxyEvent::from_event(&event), ProxyEvent::Start);
    /// ```
    pub fn from_event(event: &AssistantMessageEvent) -> Self {
        use AssistantMessageEvent as E;
        match event {
            E::Start { .. } => ProxyEvent::Start,
            E::TextStart { content_index, .. } => ProxyEvent::TextStart {
                content_index: *content_index as usize,
            },
            E::TextDelta {
                content_index,
                delta,
                ..
            } => ProxyEvent::TextDelta {
                content_index: *content_index as usize,
                delta: delta.to_string(),
            },
            E::TextEnd {
                content_index,
                partial,
                ..
            } => ProxyEvent::TextEnd {
                content_index: *content_index as usize,
                content_signature: partial.with(|m| match m.content.get(*content_index as usize) {
                    Some(ContentBlock::Text(t)) => t.text_signature.clone(),
                    _ => None,
                }),
            },
            E::ThinkingStart { content_index, .. } => ProxyEvent::ThinkingStart {
                content_index: *content_index as usize,
            },
            E::ThinkingDelta {
                content_index,
                delta,
                ..
            } => ProxyEvent::ThinkingDelta {
                content_index: *content_index as usize,
                delta: delta.to_string(),
            },
            E::ThinkingEnd {
                content_index,
                partial,
                ..
            } => ProxyEvent::ThinkingEnd {
                content_index: *content_index as usize,
                content_signature: partial.with(|m| match m.content.get(*content_index as usize) {
                    Some(ContentBlock::Thinking(t)) => t.thinking_signature.clone(),
                    _ => None,
                }),
            },
            E::ToolcallStart {
                content_index,
                partial,
            } => {
                let (id, tool_name) =
                    partial.with(|m| match m.content.get(*content_index as usize) {
                        Some(ContentBlock::ToolCall(c)) => (c.id.to_string(), c.name.to_string()),
                        _ => (String::new(), String::new()),
                    });
                ProxyEvent::ToolcallStart {
                    content_index: *content_index as usize,
                    id,
                    tool_name,
                }
            }
            E::ToolcallDelta {
                content_index,
                delta,
                ..
            } => ProxyEvent::ToolcallDelta {
                content_index: *content_index as usize,
                delta: delta.to_string(),
            },
            E::ToolcallEnd {
                content_index,
                tool_call,
                ..
            } => ProxyEvent::ToolcallEnd {
                content_index: *content_index as usize,
                tool_call: (**tool_call).clone(),
            },
            E::Done { reason, message } => ProxyEvent::done(*reason, message),
            E::Error { reason, error } => ProxyEvent::error(*reason, error),
        }
    }

    /// The wire form of a final message (for a stream that ended without a final event).
    pub fn from_final(message: &AssistantMessage) -> Self {
        match message.stop_reason {
            reason @ (StopReason::Error | StopReason::Aborted) => Self::error(reason, message),
            reason => Self::done(reason, message),
        }
    }

    /// `done` with `reason`, carrying the final message's usage and effort level.
    fn done(reason: StopReason, message: &AssistantMessage) -> Self {
        ProxyEvent::Done {
            reason,
            usage: Usage::clone(&message.usage),
            provider_thinking_level: message.extra().provider_thinking_level.clone(),
        }
    }

    /// `error` with `reason`, carrying the failed message's error, usage and effort level.
    fn error(reason: StopReason, message: &AssistantMessage) -> Self {
        ProxyEvent::Error {
            reason,
            error_message: message.error_message.clone(),
            usage: Usage::clone(&message.usage),
            provider_thinking_level: message.extra().provider_thinking_level.clone(),
        }
    }

    /// The event's `type` as on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            ProxyEvent::Start => "start",
            ProxyEvent::TextStart { .. } => "text_start",
            ProxyEvent::TextDelta { .. } => "text_delta",
            ProxyEvent::TextEnd { .. } => "text_end",
            ProxyEvent::ThinkingStart { .. } => "thinking_start",
            ProxyEvent::ThinkingDelta { .. } => "thinking_delta",
            ProxyEvent::ThinkingEnd { .. } => "thinking_end",
            ProxyEvent::ToolcallStart { .. } => "toolcall_start",
            ProxyEvent::ToolcallDelta { .. } => "toolcall_delta",
            ProxyEvent::ToolcallEnd { .. } => "toolcall_end",
            ProxyEvent::Done { .. } => "done",
            ProxyEvent::Error { .. } => "error",
        }
    }

    /// Whether the event ends the response (`done` or `error`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, ProxyEvent::Done { .. } | ProxyEvent::Error { .. })
    }
}

/// A tool call as the reference's `ToolCall` type writes it: the content block, `type` first.
mod tool_call_block {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use tern_ai::{ContentBlock, ToolCall};

    pub fn serialize<S: Serializer>(call: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
        ContentBlock::tool_call(call.clone()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ToolCall, D::Error> {
        ToolCall::deserialize(d)
    }
}

/// The event `type`s the protocol knows; a line whose `type` is another one is skipped, as
/// the reference skips it.
pub(crate) const KINDS: [&str; 12] = [
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_round_trips_in_the_reference_shape() {
        let lines = [
            json!({"type":"start"}),
            json!({"type":"text_start","contentIndex":0}),
            json!({"type":"text_delta","contentIndex":0,"delta":"a"}),
            json!({"type":"text_end","contentIndex":0,"contentSignature":"s"}),
            json!({"type":"thinking_start","contentIndex":1}),
            json!({"type":"thinking_delta","contentIndex":1,"delta":"b"}),
            json!({"type":"thinking_end","contentIndex":1}),
            json!({"type":"toolcall_start","contentIndex":2,"id":"c1","toolName":"read"}),
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"p\""}),
            json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"c1","name":"read","arguments":{"p":1}}}),
            json!({"type":"done","reason":"toolUse","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"providerThinkingLevel":"high"}),
            json!({"type":"error","reason":"aborted","errorMessage":"x","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}),
        ];
        for (line, kind) in lines.iter().zip(KINDS) {
            let event: ProxyEvent = serde_json::from_value(line.clone()).unwrap();
            assert_eq!(event.kind(), kind);
            let back = serde_json::to_string(&event).unwrap();
            assert_eq!(back, line.to_string());
        }
    }
}
