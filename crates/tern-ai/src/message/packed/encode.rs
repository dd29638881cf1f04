//! One message into the buffer. The layout of each kind, field by field, is mirrored by
//! `decode.rs`: a header varint (the kind in its low 3 bits, then which optional fields are
//! present, and small enums), then the fields in a fixed order, the optional ones only when
//! their bit is set.

use serde_json::{Map, Value};

use super::super::{
    Absent, AssistantMessage, Content, ContentBlock, CustomMessage, Message, MessageExtra,
    StopReason, SystemMessage, ThinkingLevel, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use super::wire::{TooDeep, Writer};

pub(super) const KIND_SYSTEM: u64 = 0;
pub(super) const KIND_USER: u64 = 1;
pub(super) const KIND_ASSISTANT: u64 = 2;
pub(super) const KIND_TOOL_RESULT: u64 = 3;
pub(super) const KIND_CUSTOM: u64 = 4;
/// A message kept as it is beside the buffer (a JSON value nesting deeper than the
/// encoding's limit); the varint after the header is its index there.
pub(super) const KIND_SPILLED: u64 = 5;

pub(super) const BLOCK_TEXT: u64 = 0;
pub(super) const BLOCK_THINKING: u64 = 1;
pub(super) const BLOCK_IMAGE: u64 = 2;
pub(super) const BLOCK_TOOL_CALL: u64 = 3;

/// The header: `kind` in the low 3 bits, `flags` above.
fn header(kind: u64, flags: u64) -> u64 {
    kind | (flags << 3)
}

/// Sets `bit` in `flags` when `on`.
fn flag(flags: &mut u64, bit: u64, on: bool) {
    if on {
        *flags |= 1 << bit;
    }
}

pub(super) const ABSENT_FLAGS: [Absent; 4] = [
    Absent::TIMESTAMP,
    Absent::STOP_REASON,
    Absent::USAGE,
    Absent::IS_ERROR,
];

fn absent_bits(a: Absent) -> u64 {
    let mut bits = 0;
    for (i, f) in ABSENT_FLAGS.iter().enumerate() {
        flag(&mut bits, i as u64, a.contains(*f));
    }
    bits
}

pub(super) fn stop_reason_code(s: StopReason) -> u64 {
    match s {
        StopReason::Pending => 0,
        StopReason::Stop => 1,
        StopReason::Length => 2,
        StopReason::ToolUse => 3,
        StopReason::Error => 4,
        StopReason::Aborted => 5,
        StopReason::Deferred => 6,
    }
}

fn thinking_level_code(t: ThinkingLevel) -> u8 {
    match t {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => 1,
        ThinkingLevel::Low => 2,
        ThinkingLevel::Medium => 3,
        ThinkingLevel::High => 4,
        ThinkingLevel::Xhigh => 5,
        ThinkingLevel::Max => 6,
    }
}

impl Writer<'_> {
    pub(super) fn message(&mut self, m: &Message) -> Result<(), TooDeep> {
        match m {
            Message::System(s) => self.system(s),
            Message::User(u) => self.user(u),
            Message::Assistant(a) => self.assistant(a),
            Message::ToolResult(t) => self.tool_result(t),
            Message::Custom(c) => self.custom(c),
        }
    }

    pub(super) fn spilled(&mut self, index: usize) {
        self.varint(header(KIND_SPILLED, 0));
        self.usize(index);
    }

    fn system(&mut self, m: &SystemMessage) -> Result<(), TooDeep> {
        let extra = m.extra.as_deref().filter(|e| !e.is_empty());
        let mut flags = 0;
        flag(&mut flags, 0, matches!(m.content, Content::Blocks(_)));
        flag(&mut flags, 1, m.sections.is_some());
        flag(&mut flags, 2, m.tools_added.is_some());
        flag(&mut flags, 3, m.tools_removed.is_some());
        flag(&mut flags, 4, extra.is_some());
        self.varint(header(KIND_SYSTEM, flags));
        self.timestamp(m.timestamp);
        self.content(&m.content)?;
        if let Some(s) = &m.sections {
            self.object_body(s, 0)?;
        }
        if let Some(tools) = &m.tools_added {
            self.usize(tools.len());
            for t in tools {
                let i = self.tables.decl_index(t);
                self.usize(i);
            }
        }
        if let Some(tools) = &m.tools_removed {
            self.usize(tools.len());
            for t in tools {
                self.name(&t.name, None);
            }
        }
        if let Some(e) = extra {
            self.message_extra(e)?;
        }
        Ok(())
    }

    fn user(&mut self, m: &UserMessage) -> Result<(), TooDeep> {
        let extra = m.extra.as_deref().filter(|e| !e.is_empty());
        let mut flags = 0;
        flag(&mut flags, 0, matches!(m.content, Content::Blocks(_)));
        flag(&mut flags, 1, extra.is_some());
        self.varint(header(KIND_USER, flags));
        self.timestamp(m.timestamp);
        self.content(&m.content)?;
        if let Some(e) = extra {
            self.message_extra(e)?;
        }
        Ok(())
    }

    fn assistant(&mut self, m: &AssistantMessage) -> Result<(), TooDeep> {
        let extra = m.extra.as_deref().filter(|e| **e != Default::default());
        let usage = (*m.usage != Usage::default()).then_some(&*m.usage);
        // The stop reason in the low bits: a plain answer's header is one byte.
        let mut flags = stop_reason_code(m.stop_reason);
        flag(&mut flags, 3, usage.is_some());
        flag(&mut flags, 4, m.response_id.is_some());
        flag(&mut flags, 5, m.thinking_level.is_some());
        flag(&mut flags, 6, m.error_message.is_some());
        flag(&mut flags, 7, m.raw_stop_reason.is_some());
        flag(&mut flags, 8, m.duration_ms.is_some());
        flag(&mut flags, 9, extra.is_some());
        self.varint(header(KIND_ASSISTANT, flags));
        self.timestamp(m.timestamp);
        self.name(&m.api, Some(&m.api));
        self.name(&m.provider, Some(&m.provider));
        self.name(&m.model, Some(&m.model));
        self.blocks(&m.content)?;
        if let Some(u) = usage {
            self.usage(u);
        }
        if let Some(s) = &m.response_id {
            self.str(s);
        }
        if let Some(t) = m.thinking_level {
            self.byte(thinking_level_code(t));
        }
        if let Some(s) = &m.error_message {
            self.str(s);
        }
        if let Some(s) = &m.raw_stop_reason {
            self.str(s);
        }
        if let Some(d) = m.duration_ms {
            self.varint(d);
        }
        if let Some(e) = extra {
            let mut f = absent_bits(e.absent);
            flag(&mut f, 4, e.response_model.is_some());
            flag(&mut f, 5, e.provider_thinking_level.is_some());
            flag(&mut f, 6, e.diagnostics.is_some());
            flag(&mut f, 7, e.deferred.is_some());
            flag(&mut f, 8, e.end_turn.is_some());
            flag(&mut f, 9, e.end_turn == Some(true));
            flag(&mut f, 10, !e.fields.is_empty());
            self.varint(f);
            if let Some(s) = &e.response_model {
                self.name(s, None);
            }
            if let Some(s) = &e.provider_thinking_level {
                self.name(s, None);
            }
            if let Some(v) = &e.diagnostics {
                self.value(v, 0)?;
            }
            if let Some(v) = &e.deferred {
                self.value(v, 0)?;
            }
            if !e.fields.is_empty() {
                self.object_body(&e.fields, 0)?;
            }
        }
        Ok(())
    }

    fn tool_result(&mut self, m: &ToolResultMessage) -> Result<(), TooDeep> {
        let extra = m.extra.as_deref().filter(|e| !e.is_empty());
        let mut flags = 0;
        flag(&mut flags, 0, m.is_error);
        flag(&mut flags, 1, m.details.is_some());
        flag(&mut flags, 2, m.usage.is_some());
        flag(&mut flags, 3, m.nested_calls.is_some());
        flag(&mut flags, 4, m.duration_ms.is_some());
        flag(&mut flags, 5, extra.is_some());
        self.varint(header(KIND_TOOL_RESULT, flags));
        self.timestamp(m.timestamp);
        self.str(&m.tool_call_id);
        self.name(&m.tool_name, Some(&m.tool_name));
        self.blocks(&m.content)?;
        if let Some(v) = &m.details {
            self.value(v, 0)?;
        }
        if let Some(u) = &m.usage {
            self.usage(u);
        }
        if let Some(v) = &m.nested_calls {
            self.value(v, 0)?;
        }
        if let Some(d) = m.duration_ms {
            self.varint(d);
        }
        if let Some(e) = extra {
            self.message_extra(e)?;
        }
        Ok(())
    }

    fn custom(&mut self, m: &CustomMessage) -> Result<(), TooDeep> {
        self.varint(header(KIND_CUSTOM, 0));
        self.object_body(&m.0, 0)
    }

    fn message_extra(&mut self, e: &MessageExtra) -> Result<(), TooDeep> {
        let mut f = absent_bits(e.absent);
        flag(&mut f, 4, !e.fields.is_empty());
        self.varint(f);
        if !e.fields.is_empty() {
            self.object_body(&e.fields, 0)?;
        }
        Ok(())
    }

    fn content(&mut self, c: &Content) -> Result<(), TooDeep> {
        match c {
            Content::Text(s) => {
                self.str(s);
                Ok(())
            }
            Content::Blocks(b) => self.blocks(b),
        }
    }

    fn blocks(&mut self, blocks: &[ContentBlock]) -> Result<(), TooDeep> {
        self.usize(blocks.len());
        for b in blocks {
            self.block(b)?;
        }
        Ok(())
    }

    fn block(&mut self, b: &ContentBlock) -> Result<(), TooDeep> {
        // The block's kind in the low 2 bits of its header, its flags above.
        let head = |kind: u64, flags: u64| kind | (flags << 2);
        let fields = |f: &Option<Box<Map<String, Value>>>| -> bool {
            f.as_deref().is_some_and(|m| !m.is_empty())
        };
        match b {
            ContentBlock::Text(t) => {
                let mut f = 0;
                flag(&mut f, 0, t.text_signature.is_some());
                flag(&mut f, 1, fields(&t.extra));
                self.varint(head(BLOCK_TEXT, f));
                self.str(&t.text);
                if let Some(s) = &t.text_signature {
                    self.str(s);
                }
                self.block_fields(&t.extra)
            }
            ContentBlock::Thinking(t) => {
                let mut f = 0;
                flag(&mut f, 0, t.thinking_signature.is_some());
                flag(&mut f, 1, t.redacted.is_some());
                flag(&mut f, 2, t.redacted == Some(true));
                flag(&mut f, 3, fields(&t.extra));
                self.varint(head(BLOCK_THINKING, f));
                self.str(&t.thinking);
                if let Some(s) = &t.thinking_signature {
                    self.str(s);
                }
                self.block_fields(&t.extra)
            }
            ContentBlock::Image(i) => {
                let mut f = 0;
                flag(&mut f, 0, fields(&i.extra));
                self.varint(head(BLOCK_IMAGE, f));
                self.str(&i.data);
                self.name(&i.mime_type, None);
                self.block_fields(&i.extra)
            }
            ContentBlock::ToolCall(c) => self.tool_call(c, head),
        }
    }

    fn tool_call(&mut self, c: &ToolCall, head: impl Fn(u64, u64) -> u64) -> Result<(), TooDeep> {
        let e = c.extra();
        let mut f = 0;
        flag(&mut f, 0, e.thought_signature.is_some());
        flag(&mut f, 1, e.namespace.is_some());
        flag(&mut f, 2, e.arguments_error.is_some());
        flag(&mut f, 3, !e.fields.is_empty());
        self.varint(head(BLOCK_TOOL_CALL, f));
        self.str(&c.id);
        self.name(&c.name, Some(&c.name));
        self.value(&c.arguments, 0)?;
        if let Some(s) = &e.thought_signature {
            self.str(s);
        }
        if let Some(s) = &e.namespace {
            self.name(s, None);
        }
        if let Some(s) = &e.arguments_error {
            self.str(s);
        }
        if !e.fields.is_empty() {
            self.object_body(&e.fields, 0)?;
        }
        Ok(())
    }

    /// A block's unknown fields, when its flag said there are some.
    fn block_fields(&mut self, f: &Option<Box<Map<String, Value>>>) -> Result<(), TooDeep> {
        match f.as_deref().filter(|m| !m.is_empty()) {
            Some(m) => self.object_body(m, 0),
            None => Ok(()),
        }
    }

    fn usage(&mut self, u: &Usage) {
        let costs = [
            u.cost.input,
            u.cost.output,
            u.cost.cache_read,
            u.cost.cache_write,
            u.cost.total,
        ];
        let mut f = 0;
        flag(&mut f, 0, u.cache_write_1h.is_some());
        flag(&mut f, 1, u.reasoning.is_some());
        flag(&mut f, 2, u.cost.total_from_provider.is_some());
        flag(&mut f, 3, u.cost.total_from_provider == Some(true));
        // A cost is stored when its bits are not +0.0 (-0.0 is kept as written).
        for (i, c) in costs.iter().enumerate() {
            flag(&mut f, 4 + i as u64, c.to_bits() != 0);
        }
        self.varint(f);
        for n in [
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens,
        ] {
            self.varint(n);
        }
        if let Some(n) = u.cache_write_1h {
            self.varint(n);
        }
        if let Some(n) = u.reasoning {
            self.varint(n);
        }
        for c in costs.into_iter().filter(|c| c.to_bits() != 0) {
            self.f64(c);
        }
    }
}
