//! Rebuilding the partial message from wire events (the reference's `processProxyEvent`).
//!
//! Each wire event changes the one partial message and becomes the
//! [`AssistantMessageEvent`] a local provider would have sent, carrying that message.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use tern_ai::json_parse::ToolCallArgumentsStream;
use tern_ai::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Model, PartialMessage, StopReason,
    ThinkingContent, ToolCall, Usage,
};

use crate::wire::ProxyEvent;

/// The message being rebuilt, and the argument text of the tool calls still open (kept off
/// the blocks, as the reference keeps it).
pub(crate) struct Rebuild {
    partial: PartialMessage,
    tool_arguments: HashMap<usize, ToolCallArgumentsStream>,
}

/// The two block kinds that stream as text with a closing signature.
#[derive(Clone, Copy)]
enum Prose {
    Text,
    Thinking,
}

impl Prose {
    /// The kind's name in wire event types and errors.
    fn name(self) -> &'static str {
        match self {
            Prose::Text => "text",
            Prose::Thinking => "thinking",
        }
    }
}

impl Rebuild {
    /// An empty `pending` message for `model`, stamped now.
    pub(crate) fn new(model: &Model) -> Self {
        Rebuild {
            partial: PartialMessage::new(AssistantMessage::pending(model)),
            tool_arguments: HashMap::new(),
        }
    }

    /// Applies one wire event. `Ok(None)` when the event changes nothing the consumer hears
    /// of (a `toolcall_end` for a block that is not a tool call, as in the reference);
    /// `Err` with the reference's text when the event does not fit the message.
    pub(crate) fn apply(
        &mut self,
        event: ProxyEvent,
    ) -> Result<Option<AssistantMessageEvent>, String> {
        use AssistantMessageEvent as E;
        let partial = self.partial.clone();
        let event = match event {
            ProxyEvent::Start => E::Start { partial },
            ProxyEvent::TextStart { content_index } => {
                self.set_block("text_start", content_index, ContentBlock::text(""))?;
                E::TextStart {
                    content_index: tern_ai::event::content_index(content_index),
                    partial,
                }
            }
            ProxyEvent::TextDelta {
                content_index,
                delta,
            } => {
                self.edit_text(content_index, Prose::Text, "delta", |text, _| {
                    text.push_str(&delta)
                })?;
                E::TextDelta {
                    content_index: tern_ai::event::content_index(content_index),
                    delta: delta.into(),
                    partial,
                }
            }
            ProxyEvent::TextEnd {
                content_index,
                content_signature,
            } => {
                let content =
                    self.edit_text(content_index, Prose::Text, "end", |text, signature| {
                        *signature = content_signature;
                        Box::<str>::from(text.as_str())
                    })?;
                E::TextEnd {
                    content_index: tern_ai::event::content_index(content_index),
                    content,
                    partial,
                }
            }
            ProxyEvent::ThinkingStart { content_index } => {
                let block = ContentBlock::Thinking(ThinkingContent::default());
                self.set_block("thinking_start", content_index, block)?;
                E::ThinkingStart {
                    content_index: tern_ai::event::content_index(content_index),
                    partial,
                }
            }
            ProxyEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                self.edit_text(content_index, Prose::Thinking, "delta", |text, _| {
                    text.push_str(&delta)
                })?;
                E::ThinkingDelta {
                    content_index: tern_ai::event::content_index(content_index),
                    delta: delta.into(),
                    partial,
                }
            }
            ProxyEvent::ThinkingEnd {
                content_index,
                content_signature,
            } => {
                let content =
                    self.edit_text(content_index, Prose::Thinking, "end", |text, signature| {
                        *signature = content_signature;
                        Box::<str>::from(text.as_str())
                    })?;
                E::ThinkingEnd {
                    content_index: tern_ai::event::content_index(content_index),
                    content,
                    partial,
                }
            }
            ProxyEvent::ToolcallStart {
                content_index,
                id,
                tool_name,
            } => {
                let block = ContentBlock::tool_call(ToolCall {
                    id: tern_ai::Name::unique(&id),
                    name: tool_name.into(),
                    arguments: Value::Object(Map::new()),
                    extra: None,
                });
                self.set_block("toolcall_start", content_index, block)?;
                self.tool_arguments
                    .insert(content_index, ToolCallArgumentsStream::new());
                E::ToolcallStart {
                    content_index: tern_ai::event::content_index(content_index),
                    partial,
                }
            }
            ProxyEvent::ToolcallDelta {
                content_index,
                delta,
            } => {
                let args = self.tool_arguments.get_mut(&content_index);
                self.partial
                    .update(|m| match (m.content.get_mut(content_index), args) {
                        (Some(ContentBlock::ToolCall(call)), Some(args)) => {
                            let partial_args = args.append(&delta).clone();
                            Arc::make_mut(call).arguments = partial_args;
                            Ok(())
                        }
                        _ => Err("Received toolcall_delta for non-toolCall content".to_string()),
                    })?;
                E::ToolcallDelta {
                    content_index: tern_ai::event::content_index(content_index),
                    delta: delta.into(),
                    partial,
                }
            }
            ProxyEvent::ToolcallEnd {
                content_index,
                tool_call,
            } => {
                // The reference assigns the wire call's fields onto the block; a complete call
                // (id, name, arguments and its extras) replaces every field the block has.
                let call = Arc::new(tool_call);
                let replaced = self
                    .partial
                    .update(|m| match m.content.get_mut(content_index) {
                        Some(block @ ContentBlock::ToolCall(_)) => {
                            *block = ContentBlock::ToolCall(call.clone());
                            true
                        }
                        _ => false,
                    });
                if !replaced {
                    return Ok(None);
                }
                self.tool_arguments.remove(&content_index);
                E::ToolcallEnd {
                    content_index: tern_ai::event::content_index(content_index),
                    tool_call: call,
                    partial,
                }
            }
            ProxyEvent::Done {
                reason,
                usage,
                provider_thinking_level,
            } => E::Done {
                reason,
                message: self.finish(reason, usage, provider_thinking_level, |_| {}),
            },
            ProxyEvent::Error {
                reason,
                error_message,
                usage,
                provider_thinking_level,
            } => E::Error {
                reason,
                error: self.finish(reason, usage, provider_thinking_level, |m| {
                    m.error_message = error_message;
                }),
            },
        };
        Ok(Some(event))
    }

    /// The final message of a `done` or `error` event: the partial message with the end's
    /// reason, usage and effort level, and what `set` changes besides.
    fn finish(
        &self,
        reason: StopReason,
        usage: Usage,
        provider_thinking_level: Option<String>,
        set: impl FnOnce(&mut AssistantMessage),
    ) -> Arc<AssistantMessage> {
        Arc::new(self.partial.update(|m| {
            m.stop_reason = reason;
            set(m);
            m.usage = usage.into();
            if provider_thinking_level.is_some() {
                m.extra_mut().provider_thinking_level = provider_thinking_level;
            }
            m.clone()
        }))
    }

    /// The final `error` event of a response that failed locally: the message so far with
    /// this reason and text.
    pub(crate) fn fail(&self, reason: StopReason, message: String) -> AssistantMessageEvent {
        let error = self.partial.update(|m| {
            m.stop_reason = reason;
            m.error_message = Some(message);
            m.clone()
        });
        AssistantMessageEvent::Error {
            reason,
            error: Arc::new(error),
        }
    }

    /// Puts `block` at `index`: replaces the block there or appends it. The reference's
    /// array would grow a hole for an index past the end; a message has no holes, so that is
    /// an error here.
    /// Runs `f` on the text and signature of the block at `index` when it is a `kind`
    /// block; otherwise the reference's error for the `{kind}_{phase}` event.
    fn edit_text<R>(
        &self,
        index: usize,
        kind: Prose,
        phase: &str,
        f: impl FnOnce(&mut String, &mut Option<String>) -> R,
    ) -> Result<R, String> {
        self.partial
            .update(|m| match (kind, m.content.get_mut(index)) {
                (Prose::Text, Some(ContentBlock::Text(t))) => {
                    Ok(f(&mut t.text, &mut t.text_signature))
                }
                (Prose::Thinking, Some(ContentBlock::Thinking(t))) => {
                    Ok(f(&mut t.thinking, &mut t.thinking_signature))
                }
                _ => {
                    let kind = kind.name();
                    Err(format!("Received {kind}_{phase} for non-{kind} content"))
                }
            })
    }

    fn set_block(&self, kind: &str, index: usize, block: ContentBlock) -> Result<(), String> {
        self.partial.update(|m| {
            let len = m.content.len();
            match index.cmp(&len) {
                std::cmp::Ordering::Less => m.content[index] = block,
                std::cmp::Ordering::Equal => m.content.push(block),
                std::cmp::Ordering::Greater => {
                    return Err(format!(
                    "Received {kind} for content index {index}, but the message has {len} blocks"
                ))
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tern_ai::Usage;

    fn rebuild() -> Rebuild {
        Rebuild::new(&Model::new("m", "api", "prov", ""))
    }

    fn apply(r: &mut Rebuild, line: Value) -> Result<Option<AssistantMessageEvent>, String> {
        r.apply(serde_json::from_value(line).unwrap())
    }

    #[test]
    fn text_thinking_and_a_fragmented_tool_call_rebuild_the_message() {
        let mut r = rebuild();
        let events = [
            json!({"type":"start"}),
            json!({"type":"thinking_start","contentIndex":0}),
            json!({"type":"thinking_delta","contentIndex":0,"delta":"hm"}),
            json!({"type":"thinking_end","contentIndex":0,"contentSignature":"sig"}),
            json!({"type":"text_start","contentIndex":1}),
            json!({"type":"text_delta","contentIndex":1,"delta":"Hel"}),
            json!({"type":"text_delta","contentIndex":1,"delta":"lo"}),
            json!({"type":"text_end","contentIndex":1}),
            json!({"type":"toolcall_start","contentIndex":2,"id":"c1","toolName":"read"}),
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"{\"pa"}),
        ];
        for e in events {
            apply(&mut r, e).unwrap().unwrap();
        }
        // The partial arguments show the key once its value starts.
        let seen = r.partial.snapshot();
        assert_eq!(seen.tool_calls().next().unwrap().arguments, json!({}));
        apply(
            &mut r,
            json!({"type":"toolcall_delta","contentIndex":2,"delta":"th\":\"a."}),
        )
        .unwrap();
        assert_eq!(
            r.partial.snapshot().tool_calls().next().unwrap().arguments,
            json!({"path":"a."})
        );
        let end = apply(&mut r, json!({"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}}}))
            .unwrap()
            .unwrap();
        let AssistantMessageEvent::ToolcallEnd { tool_call, .. } = end else {
            panic!("toolcall_end expected");
        };
        assert_eq!(tool_call.arguments, json!({"path":"a.txt"}));
        let done = apply(&mut r, json!({"type":"done","reason":"toolUse","usage":{"input":3,"output":4,"totalTokens":7}}))
            .unwrap()
            .unwrap();
        let AssistantMessageEvent::Done { message, .. } = done else {
            panic!("done expected");
        };
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        assert_eq!(message.usage.total_tokens, 7);
        assert_eq!(message.text(), "Hello");
        assert_eq!(message.model, "m");
        assert_eq!(message.api, "api");
        let ContentBlock::Thinking(t) = &message.content[0] else {
            panic!("thinking block expected");
        };
        assert_eq!(t.thinking_signature.as_deref(), Some("sig"));
    }

    #[test]
    fn events_that_do_not_fit_the_message_fail_with_the_reference_text() {
        let mut r = rebuild();
        apply(&mut r, json!({"type":"thinking_start","contentIndex":0})).unwrap();
        for (line, text) in [
            (
                json!({"type":"text_delta","contentIndex":0,"delta":"x"}),
                "Received text_delta for non-text content",
            ),
            (
                json!({"type":"text_end","contentIndex":0}),
                "Received text_end for non-text content",
            ),
            (
                json!({"type":"toolcall_delta","contentIndex":0,"delta":"x"}),
                "Received toolcall_delta for non-toolCall content",
            ),
            (
                json!({"type":"thinking_delta","contentIndex":3,"delta":"x"}),
                "Received thinking_delta for non-thinking content",
            ),
            (
                json!({"type":"text_start","contentIndex":5}),
                "Received text_start for content index 5, but the message has 1 blocks",
            ),
        ] {
            assert_eq!(apply(&mut r, line).unwrap_err(), text);
        }
        // A toolcall_end for a block that is not a call is passed over.
        let call = json!({"type":"toolcall_end","contentIndex":0,"toolCall":{"id":"c","name":"n","arguments":{}}});
        assert!(apply(&mut r, call).unwrap().is_none());
    }

    #[test]
    fn a_local_failure_keeps_the_content_so_far() {
        let mut r = rebuild();
        apply(&mut r, json!({"type":"text_start","contentIndex":0})).unwrap();
        apply(
            &mut r,
            json!({"type":"text_delta","contentIndex":0,"delta":"par"}),
        )
        .unwrap();
        let AssistantMessageEvent::Error { reason, error } =
            r.fail(StopReason::Aborted, "Request aborted by user".into())
        else {
            panic!("error expected");
        };
        assert_eq!(reason, StopReason::Aborted);
        assert_eq!(error.text(), "par");
        assert_eq!(error.usage, Usage::default());
        assert_eq!(
            error.error_message.as_deref(),
            Some("Request aborted by user")
        );
    }
}
