//! The message being built and the sink it is reported to: every provider reports through
//! [`Output`], so event order and failure shape are the same everywhere.

use serde_json::Value;

use super::ProviderSink;
use crate::event::{content_index, AssistantMessageEvent, Delta, PartialMessage};
use crate::message::{AssistantMessage, ContentBlock, StopReason, Usage};
use crate::model::Model;

/// The message being built plus the sink: every provider reports through this, so event
/// order and failure shape are the same everywhere.
pub(crate) struct Output<'a> {
    /// The model the request is for.
    pub model: &'a Model,
    pub partial: PartialMessage,
    sink: &'a mut dyn ProviderSink,
    /// Whether the sink takes a read's events together ([`Output::batched`]).
    takes_batches: bool,
    /// Events held back inside [`Output::batched`] (`None` outside it).
    held: Option<Vec<AssistantMessageEvent>>,
    /// The buffer of `held`, kept between reads.
    spare: Vec<AssistantMessageEvent>,
}

impl<'a> Output<'a> {
    pub fn new(model: &'a Model, sink: &'a mut dyn ProviderSink) -> Self {
        let message = AssistantMessage::pending(model);
        Output {
            model,
            partial: PartialMessage::new(message),
            takes_batches: sink.takes_batches(),
            sink,
            held: None,
            spare: Vec::new(),
        }
    }

    /// Runs `f` (the mapping of one network read, which cannot wait for anything) with its
    /// events handed to the sink together at the end, when the sink takes batches; to any
    /// other sink each event goes as it is made.
    pub fn batched<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if !self.takes_batches || self.held.is_some() {
            return f(self);
        }
        self.held = Some(std::mem::take(&mut self.spare));
        let result = f(self);
        if let Some(mut held) = self.held.take() {
            if !held.is_empty() {
                self.sink.emit_all(&mut held);
            }
            held.clear();
            self.spare = held;
        }
        result
    }

    pub fn update<R>(&self, f: impl FnOnce(&mut AssistantMessage) -> R) -> R {
        self.partial.update(f)
    }

    pub fn with<R>(&self, f: impl FnOnce(&AssistantMessage) -> R) -> R {
        self.partial.with(f)
    }

    fn emit(&mut self, event: AssistantMessageEvent) {
        match &mut self.held {
            Some(held) => held.push(event),
            None => self.sink.emit(event),
        }
    }

    pub fn start(&mut self) {
        let partial = self.partial.clone();
        self.emit(AssistantMessageEvent::Start { partial });
    }

    pub fn len(&self) -> usize {
        self.with(|m| m.content.len())
    }

    /// Appends a block and emits its `*_start`; returns its content index.
    pub fn push_block(&mut self, block: ContentBlock) -> usize {
        let kind = match &block {
            ContentBlock::Text(_) => 0,
            ContentBlock::Thinking(_) => 1,
            _ => 2,
        };
        let index = self.update(|m| {
            m.content.push(block);
            m.content.len() - 1
        });
        let partial = self.partial.clone();
        self.emit(match kind {
            0 => AssistantMessageEvent::TextStart {
                content_index: content_index(index),
                partial,
            },
            1 => AssistantMessageEvent::ThinkingStart {
                content_index: content_index(index),
                partial,
            },
            _ => AssistantMessageEvent::ToolcallStart {
                content_index: content_index(index),
                partial,
            },
        });
        index
    }

    /// Appends text to a text or thinking block and emits the matching delta.
    pub fn append_text(&mut self, index: usize, delta: &str) {
        let is_thinking = self.update(|m| match m.content.get_mut(index) {
            Some(ContentBlock::Text(t)) => {
                t.text.push_str(delta);
                Some(false)
            }
            Some(ContentBlock::Thinking(t)) => {
                t.thinking.push_str(delta);
                Some(true)
            }
            _ => None,
        });
        let partial = self.partial.clone();
        match is_thinking {
            Some(false) => self.emit(AssistantMessageEvent::TextDelta {
                content_index: content_index(index),
                delta: delta.into(),
                partial,
            }),
            Some(true) => self.emit(AssistantMessageEvent::ThinkingDelta {
                content_index: content_index(index),
                delta: delta.into(),
                partial,
            }),
            None => {}
        }
    }

    /// Emits the text or thinking delta of a block the caller already extended.
    pub fn emit_delta(&mut self, index: usize, delta: &str) {
        let is_thinking =
            self.with(|m| matches!(m.content.get(index), Some(ContentBlock::Thinking(_))));
        let partial = self.partial.clone();
        let delta = Delta::from(delta);
        self.emit(if is_thinking {
            AssistantMessageEvent::ThinkingDelta {
                content_index: content_index(index),
                delta,
                partial,
            }
        } else {
            AssistantMessageEvent::TextDelta {
                content_index: content_index(index),
                delta,
                partial,
            }
        });
    }

    /// Emits a `toolcall_delta` after the caller updated the block's arguments.
    pub fn tool_delta(&mut self, index: usize, delta: &str) {
        let partial = self.partial.clone();
        self.emit(AssistantMessageEvent::ToolcallDelta {
            content_index: content_index(index),
            delta: delta.into(),
            partial,
        });
    }

    /// Sets a tool call's partial arguments.
    pub fn set_tool_arguments(&self, index: usize, args: Value) {
        self.update(|m| {
            if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
                crate::cow::make_mut(c).arguments = args;
            }
        });
    }

    /// Emits the `*_end` event of a block as it is now.
    pub fn end_block(&mut self, index: usize) {
        let block = self.with(|m| m.content.get(index).cloned());
        let partial = self.partial.clone();
        match block {
            Some(ContentBlock::Text(t)) => self.emit(AssistantMessageEvent::TextEnd {
                content_index: content_index(index),
                content: t.text.into(),
                partial,
            }),
            Some(ContentBlock::Thinking(t)) => self.emit(AssistantMessageEvent::ThinkingEnd {
                content_index: content_index(index),
                content: t.thinking.into(),
                partial,
            }),
            Some(ContentBlock::ToolCall(c)) => self.emit(AssistantMessageEvent::ToolcallEnd {
                content_index: content_index(index),
                tool_call: c,
                partial,
            }),
            _ => {}
        }
    }

    /// Finalizes a tool call's arguments from the full text and emits `toolcall_end`.
    pub fn finish_tool_call(
        &mut self,
        index: usize,
        args: &crate::json_parse::ToolCallArgumentsStream,
    ) {
        let (value, error) = args.finish();
        self.update(|m| {
            if let Some(ContentBlock::ToolCall(c)) = m.content.get_mut(index) {
                let c = crate::cow::make_mut(c);
                c.arguments = value;
                if error.is_some() || c.extra.is_some() {
                    c.extra_mut().arguments_error = error;
                }
            }
        });
        self.end_block(index);
    }

    pub fn set_usage(&self, usage: Usage) {
        self.update(|m| m.usage = usage.into());
    }

    /// Ends with `done`.
    pub fn done(&mut self) {
        // The message the events built, stamped and then shared: no copy of a long answer.
        self.partial.update(|m| self.sink.stamp_final(m));
        let message = self.partial.shared();
        let reason = message.stop_reason;
        self.emit(AssistantMessageEvent::Done { reason, message });
    }

    /// Ends with `error`: `stopReason` becomes `aborted` or `error` with `message`.
    pub fn fail(&mut self, message: String, aborted: bool) {
        let reason = if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        self.update(|m| {
            m.stop_reason = reason;
            m.error_message = Some(message);
        });
        self.partial.update(|m| self.sink.stamp_final(m));
        let error = self.partial.shared();
        self.emit(AssistantMessageEvent::Error { reason, error });
    }
}

/// Whether the content has a tool call.
pub(crate) fn has_tool_call(m: &AssistantMessage) -> bool {
    m.content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)))
}

/// Appends a provider diagnostic (`{type, timestamp, details}`) to the message.
pub(crate) fn append_diagnostic(m: &mut AssistantMessage, kind: &str, details: Value) {
    append_error_diagnostic(m, kind, None, details);
}

/// Appends a provider diagnostic with the error it reports (`{type, timestamp, error,
/// details}`) to the message.
pub(crate) fn append_error_diagnostic(
    m: &mut AssistantMessage,
    kind: &str,
    error: Option<Value>,
    details: Value,
) {
    let mut d = serde_json::Map::new();
    d.insert("type".into(), Value::String(kind.into()));
    d.insert("timestamp".into(), Value::from(crate::clock::now_ms()));
    if let Some(error) = error {
        d.insert("error".into(), error);
    }
    d.insert("details".into(), details);
    let list = m
        .extra_mut()
        .diagnostics
        .get_or_insert_with(|| Value::Array(Vec::new()));
    match list {
        Value::Array(a) => a.push(Value::Object(d)),
        other => *other = Value::Array(vec![Value::Object(d)]),
    }
}

/// The listed keys of a wire object that are present, as JSON keeps them after
/// `({type, id}) => ({type, id})` (absent keys vanish); with `drop_null`, null values vanish
/// too (`type ?? undefined`).
pub(crate) fn pick_keys(v: &Value, keys: &[&str], drop_null: bool) -> Value {
    let mut out = serde_json::Map::new();
    for k in keys {
        if let Some(x) = v.get(*k).filter(|x| !(drop_null && x.is_null())) {
            out.insert((*k).to_string(), x.clone());
        }
    }
    Value::Object(out)
}
