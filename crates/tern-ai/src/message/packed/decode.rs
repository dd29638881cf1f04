//! One message out of the buffer: the mirror of `encode.rs`, checking every byte it reads
//! (kinds, flags, lengths, table indices, UTF-8) so a damaged buffer is an error.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::super::{
    Absent, AssistantExtra, AssistantMessage, Content, ContentBlock, CustomMessage, ImageContent,
    Message, MessageExtra, Name, StopReason, SystemMessage, TextContent, ThinkingContent,
    ThinkingLevel, ToolCall, ToolCallExtra, ToolReference, ToolResultMessage, Usage, UsageBox,
    UserMessage,
};
use super::encode::{
    ABSENT_FLAGS, BLOCK_IMAGE, BLOCK_TEXT, BLOCK_THINKING, BLOCK_TOOL_CALL, KIND_ASSISTANT,
    KIND_CUSTOM, KIND_SPILLED, KIND_SYSTEM, KIND_TOOL_RESULT, KIND_USER,
};
use super::wire::{Read, Reader};
use super::MessageKind;

/// What a message's header decoded to.
pub(super) enum Decoded {
    Message(Message),
    /// The message is kept beside the buffer, at this index.
    Spilled(usize),
}

/// What a message's header says it is.
pub(super) enum Kind {
    Plain(MessageKind),
    Spilled(usize),
}

fn has(flags: u64, bit: u64) -> bool {
    flags & (1 << bit) != 0
}

fn stop_reason(code: u64) -> Option<StopReason> {
    Some(match code {
        0 => StopReason::Pending,
        1 => StopReason::Stop,
        2 => StopReason::Length,
        3 => StopReason::ToolUse,
        4 => StopReason::Error,
        5 => StopReason::Aborted,
        6 => StopReason::Deferred,
        _ => return None,
    })
}

fn thinking_level(code: u8) -> Option<ThinkingLevel> {
    Some(match code {
        0 => ThinkingLevel::Off,
        1 => ThinkingLevel::Minimal,
        2 => ThinkingLevel::Low,
        3 => ThinkingLevel::Medium,
        4 => ThinkingLevel::High,
        5 => ThinkingLevel::Xhigh,
        6 => ThinkingLevel::Max,
        _ => return None,
    })
}

fn absent(bits: u64) -> Absent {
    let mut a = Absent::default();
    for (i, f) in ABSENT_FLAGS.iter().enumerate() {
        if has(bits, i as u64) {
            a.insert(*f);
        }
    }
    a
}

impl Reader<'_> {
    /// Flags that may use only the low `bits` bits.
    fn flags(&self, flags: u64, bits: u32) -> Read<u64> {
        if flags >> bits != 0 {
            return self.fail("unknown flags");
        }
        Ok(flags)
    }

    /// The kind from the header alone.
    pub(super) fn kind(&mut self) -> Read<Kind> {
        let head = self.varint()?;
        Ok(Kind::Plain(match head & 7 {
            KIND_SYSTEM => MessageKind::System,
            KIND_USER => MessageKind::User,
            KIND_ASSISTANT => MessageKind::Assistant,
            KIND_TOOL_RESULT => MessageKind::ToolResult,
            KIND_CUSTOM => MessageKind::Custom,
            KIND_SPILLED => return Ok(Kind::Spilled(self.usize()?)),
            _ => return self.fail("unknown message kind"),
        }))
    }

    pub(super) fn message(&mut self) -> Read<Decoded> {
        let head = self.varint()?;
        let (kind, flags) = (head & 7, head >> 3);
        let m = match kind {
            KIND_SYSTEM => Message::from(self.system(self.flags(flags, 5)?)?),
            KIND_USER => Message::from(self.user(self.flags(flags, 2)?)?),
            KIND_ASSISTANT => Message::from(self.assistant(self.flags(flags, 10)?)?),
            KIND_TOOL_RESULT => Message::from(self.tool_result(self.flags(flags, 6)?)?),
            KIND_CUSTOM => {
                self.flags(flags, 0)?;
                Message::from(CustomMessage(self.object_body(0)?))
            }
            KIND_SPILLED => {
                self.flags(flags, 0)?;
                return Ok(Decoded::Spilled(self.usize()?));
            }
            _ => return self.fail("unknown message kind"),
        };
        Ok(Decoded::Message(m))
    }

    fn system(&mut self, flags: u64) -> Read<SystemMessage> {
        let timestamp = self.timestamp()?;
        let content = self.content(has(flags, 0))?;
        let sections = match has(flags, 1) {
            true => Some(Box::new(self.object_body(0)?)),
            false => None,
        };
        let tools_added = match has(flags, 2) {
            true => {
                let n = self.count()?;
                let mut tools = Vec::with_capacity(n);
                for _ in 0..n {
                    tools.push(self.decl()?);
                }
                Some(tools)
            }
            false => None,
        };
        let tools_removed = match has(flags, 3) {
            true => {
                let n = self.count()?;
                let mut tools = Vec::with_capacity(n);
                for _ in 0..n {
                    tools.push(ToolReference {
                        name: self.name_string()?,
                    });
                }
                Some(tools)
            }
            false => None,
        };
        Ok(SystemMessage {
            content,
            sections,
            tools_added,
            tools_removed,
            timestamp,
            extra: self.message_extra(has(flags, 4))?,
        })
    }

    fn user(&mut self, flags: u64) -> Read<UserMessage> {
        Ok(UserMessage {
            timestamp: self.timestamp()?,
            content: self.content(has(flags, 0))?,
            extra: self.message_extra(has(flags, 1))?,
        })
    }

    fn assistant(&mut self, flags: u64) -> Read<AssistantMessage> {
        let Some(stop_reason) = stop_reason(flags & 7) else {
            return self.fail("unknown stop reason");
        };
        let timestamp = self.timestamp()?;
        let api = self.name()?;
        let provider = self.name()?;
        let model = self.name()?;
        let content = self.blocks()?;
        let usage = match has(flags, 3) {
            true => UsageBox::from(self.usage()?),
            false => UsageBox::default(),
        };
        let response_id = self.opt_string(has(flags, 4))?;
        let thinking_level = match has(flags, 5) {
            true => match thinking_level(self.byte()?) {
                Some(t) => Some(t),
                None => return self.fail("unknown thinking level"),
            },
            false => None,
        };
        let error_message = self.opt_string(has(flags, 6))?;
        let raw_stop_reason = self.opt_string(has(flags, 7))?;
        let duration_ms = match has(flags, 8) {
            true => Some(self.varint()?),
            false => None,
        };
        let extra = match has(flags, 9) {
            true => Some(Box::new(self.assistant_extra()?)),
            false => None,
        };
        Ok(AssistantMessage {
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
            extra,
        })
    }

    fn assistant_extra(&mut self) -> Read<AssistantExtra> {
        let f = self.varint()?;
        let f = self.flags(f, 11)?;
        let mut e = AssistantExtra {
            absent: absent(f),
            ..AssistantExtra::default()
        };
        if has(f, 4) {
            e.response_model = Some(self.name_string()?);
        }
        if has(f, 5) {
            e.provider_thinking_level = Some(self.name_string()?);
        }
        if has(f, 6) {
            e.diagnostics = Some(self.value(0)?);
        }
        if has(f, 7) {
            e.deferred = Some(self.value(0)?);
        }
        if has(f, 8) {
            e.end_turn = Some(has(f, 9));
        } else if has(f, 9) {
            return self.fail("an end-turn value without its flag");
        }
        if has(f, 10) {
            e.fields = self.nonempty_object()?;
        }
        if e == AssistantExtra::default() {
            return self.fail("an assistant extra that is empty");
        }
        Ok(e)
    }

    fn tool_result(&mut self, flags: u64) -> Read<ToolResultMessage> {
        let timestamp = self.timestamp()?;
        let tool_call_id = self.str().map(Name::unique)?;
        let tool_name = self.name()?;
        let content = self.blocks()?;
        let details = match has(flags, 1) {
            true => Some(self.value(0)?),
            false => None,
        };
        let usage = match has(flags, 2) {
            true => Some(Box::new(self.usage()?)),
            false => None,
        };
        let nested_calls = match has(flags, 3) {
            true => Some(Box::new(self.value(0)?)),
            false => None,
        };
        let duration_ms = match has(flags, 4) {
            true => Some(self.varint()?),
            false => None,
        };
        Ok(ToolResultMessage {
            tool_call_id,
            tool_name,
            content,
            details,
            usage,
            nested_calls,
            is_error: has(flags, 0),
            duration_ms,
            timestamp,
            extra: self.message_extra(has(flags, 5))?,
        })
    }

    fn message_extra(&mut self, present: bool) -> Read<Option<Box<MessageExtra>>> {
        if !present {
            return Ok(None);
        }
        let f = self.varint()?;
        let f = self.flags(f, 5)?;
        let fields = match has(f, 4) {
            true => self.nonempty_object()?,
            false => Map::new(),
        };
        match (MessageExtra {
            fields,
            absent: absent(f),
        })
        .into_option()
        {
            Some(e) => Ok(Some(e)),
            None => self.fail("a message extra that is empty"),
        }
    }

    fn nonempty_object(&mut self) -> Read<Map<String, Value>> {
        let m = self.object_body(0)?;
        if m.is_empty() {
            return self.fail("an empty object where the flag said fields");
        }
        Ok(m)
    }

    fn opt_string(&mut self, present: bool) -> Read<Option<String>> {
        match present {
            true => self.string().map(Some),
            false => Ok(None),
        }
    }

    fn content(&mut self, blocks: bool) -> Read<Content> {
        match blocks {
            true => self.blocks().map(Content::Blocks),
            false => self.string().map(Content::Text),
        }
    }

    fn blocks(&mut self) -> Read<Vec<ContentBlock>> {
        let n = self.count()?;
        let mut blocks = Vec::with_capacity(n);
        for _ in 0..n {
            blocks.push(self.block()?);
        }
        Ok(blocks)
    }

    fn block_fields(&mut self, present: bool) -> Read<Option<Box<Map<String, Value>>>> {
        match present {
            true => self.nonempty_object().map(|m| Some(Box::new(m))),
            false => Ok(None),
        }
    }

    fn block(&mut self) -> Read<ContentBlock> {
        let head = self.varint()?;
        let (kind, f) = (head & 3, head >> 2);
        Ok(match kind {
            BLOCK_TEXT => {
                let f = self.flags(f, 2)?;
                ContentBlock::Text(TextContent {
                    text: self.string()?,
                    text_signature: self.opt_string(has(f, 0))?,
                    extra: self.block_fields(has(f, 1))?,
                })
            }
            BLOCK_THINKING => {
                let f = self.flags(f, 4)?;
                if !has(f, 1) && has(f, 2) {
                    return self.fail("a redacted value without its flag");
                }
                ContentBlock::Thinking(ThinkingContent {
                    thinking: self.string()?,
                    thinking_signature: self.opt_string(has(f, 0))?,
                    redacted: has(f, 1).then_some(has(f, 2)),
                    extra: self.block_fields(has(f, 3))?,
                })
            }
            BLOCK_IMAGE => {
                let f = self.flags(f, 1)?;
                ContentBlock::Image(ImageContent {
                    data: self.string()?,
                    mime_type: self.name_string()?,
                    extra: self.block_fields(has(f, 0))?,
                })
            }
            BLOCK_TOOL_CALL => {
                let f = self.flags(f, 4)?;
                let id = self.str().map(Name::unique)?;
                let name = self.name()?;
                let arguments = self.value(0)?;
                let mut extra = ToolCallExtra {
                    thought_signature: self.opt_string(has(f, 0))?,
                    ..ToolCallExtra::default()
                };
                if has(f, 1) {
                    extra.namespace = Some(self.name_string()?);
                }
                extra.arguments_error = self.opt_string(has(f, 2))?;
                if has(f, 3) {
                    extra.fields = self.nonempty_object()?;
                }
                ContentBlock::ToolCall(Arc::new(ToolCall {
                    id,
                    name,
                    arguments,
                    extra: extra.into_option(),
                }))
            }
            // Two bits, four kinds: every value is one of the above.
            _ => return self.fail("unknown block kind"),
        })
    }

    fn usage(&mut self) -> Read<Usage> {
        let f = self.varint()?;
        let f = self.flags(f, 9)?;
        if !has(f, 2) && has(f, 3) {
            return self.fail("a billed-total value without its flag");
        }
        let mut u = Usage {
            input: self.varint()?,
            output: self.varint()?,
            cache_read: self.varint()?,
            cache_write: self.varint()?,
            total_tokens: self.varint()?,
            ..Usage::default()
        };
        if has(f, 0) {
            u.cache_write_1h = Some(self.varint()?);
        }
        if has(f, 1) {
            u.reasoning = Some(self.varint()?);
        }
        u.cost.total_from_provider = has(f, 2).then_some(has(f, 3));
        let costs = [
            &mut u.cost.input,
            &mut u.cost.output,
            &mut u.cost.cache_read,
            &mut u.cost.cache_write,
            &mut u.cost.total,
        ];
        for (i, c) in costs.into_iter().enumerate() {
            if has(f, 4 + i as u64) {
                *c = self.f64()?;
            }
        }
        Ok(u)
    }
}
