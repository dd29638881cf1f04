//! The Chat Completions chunk mapper driven one record at a time, for the differential test
//! of the typed chunk read (`tests/completions_chunks.rs`): the same records through the
//! typed read, through `Value` only, or through a mapper the test writes over the steps.

use serde_json::Value;

use super::chunk::Chunk;
use super::stream::{self, ChunkRead, State};
use crate::message::AssistantMessage;
use crate::model::Model;
use crate::providers::driver::Framing;
use crate::providers::output::Output;
use crate::providers::ProviderSink;

/// One response's chunk mapper with its message (timestamp 0, so runs compare equal).
pub struct CompletionsChunks<'s> {
    model: &'s Model,
    out: Output<'s>,
    st: State,
}

impl<'s> CompletionsChunks<'s> {
    /// A mapper for `model`, reporting to `sink`.
    pub fn new(model: &'s Model, sink: &'s mut dyn ProviderSink) -> Self {
        let out = Output::new(model, sink);
        out.update(|m| m.timestamp = 0);
        CompletionsChunks {
            model,
            out,
            st: State::default(),
        }
    }

    /// Maps one record as the stream does: `Ok(true)` to go on, `Ok(false)` at `[DONE]`.
    pub fn process(&mut self, data: &str) -> Result<bool, String> {
        self.process_by(ChunkRead::Typed, data)
    }

    /// Maps one record with every chunk read through `Value`.
    pub fn process_as_value(&mut self, data: &str) -> Result<bool, String> {
        self.process_by(ChunkRead::Value, data)
    }

    fn process_by(&mut self, read: ChunkRead, data: &str) -> Result<bool, String> {
        if Framing::Sse.ends_stream(data) {
            return Ok(false);
        }
        stream::process_event_by(read, data, None, &mut self.out, &mut self.st)?;
        Ok(true)
    }

    /// Whether the typed read takes this record (otherwise it goes through `Value`).
    pub fn typed_read_accepts(data: &str) -> bool {
        super::chunk_scan::read(data).is_some() || Chunk::typed_read(data).is_some()
    }

    /// Whether the one-pass scan takes this record; when it does, its fields must be the
    /// serde typed read's (the call panics otherwise).
    pub fn scan_takes(data: &str) -> bool {
        match super::chunk_scan::read(data) {
            Some(scanned) => {
                assert_eq!(Some(scanned), Chunk::typed_read(data), "{data}");
                true
            }
            None => false,
        }
    }

    /// The message as it is now.
    pub fn message(&self) -> AssistantMessage {
        self.out.partial.snapshot()
    }

    /// Changes the message in place (no event).
    pub fn update(&mut self, f: impl FnOnce(&mut AssistantMessage)) {
        self.out.update(f);
    }

    /// A chunk's `usage` object.
    pub fn usage(&mut self, raw: &Value) {
        self.out.set_usage(stream::parse_usage(raw, self.model));
    }

    /// A non-empty `finish_reason`.
    pub fn finish_reason(&mut self, reason: &str) {
        stream::finish_reason(&mut self.out, &mut self.st, reason);
    }

    /// The non-empty text of reasoning field `field`.
    pub fn reasoning_text(&mut self, field: &str, text: &str) {
        stream::reasoning_text(self.model, &mut self.out, &mut self.st, field, text);
    }

    /// One entry of `reasoning_details`.
    pub fn reasoning_detail(&mut self, detail: &Value) {
        stream::reasoning_detail(&mut self.out, &mut self.st, detail);
    }

    /// Non-empty `content` text.
    pub fn content(&mut self, text: &str) {
        stream::content(&mut self.out, &mut self.st, text);
    }

    /// One entry of `tool_calls`.
    pub fn tool_call(
        &mut self,
        index: Option<i64>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) {
        stream::tool_call_delta(
            &mut self.out,
            &mut self.st,
            index,
            id,
            Some((name, arguments)),
            None,
        );
    }
}
