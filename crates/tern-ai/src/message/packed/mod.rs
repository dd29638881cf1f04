//! A transcript stored as one contiguous byte buffer: for messages that are kept for long and
//! only read (an idle agent's history), at a few bytes per message beyond their texts.
//!
//! A [`Message`] in memory is an `Arc`, a content vector, one allocation per text and per
//! JSON value, and a malloc header for each: hundreds of bytes per message before its text.
//! [`PackedTranscript`] keeps each message as a compact binary record instead: varints,
//! texts inline, `api`/`provider`/`model`/tool names and MIME types as indices into a small
//! per-transcript table, default fields (a zero `usage`, absent options) as flag bits, and
//! timestamps as their difference to the transcript's first one. Reading a message decodes
//! it into an ordinary `Message`, so typed access is the same as for a `Vec<Message>`:
//!
//! ```
//! use tern_ai::message::PackedTranscript;
//! use tern_ai::Message;
//!
//! let mut packed = PackedTranscript::new();
//! packed.push(&Message::user_text("hello"));
//! let answer: Message = serde_json::from_str(
//!     r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"a","provider":"p","model":"m","stopReason":"stop","timestamp":1}"#,
//! ).unwrap();
//! packed.push(&answer);
//! assert_eq!(packed.len(), 2);
//! assert_eq!(packed.get(1).unwrap(), answer);
//! let all: Vec<Message> = packed.to_vec().unwrap();
//! assert_eq!(all[0].role(), "user");
//! ```
//!
//! Decoding is exact: `get(i)` equals the message pushed (`==`, and the same JSON text).
//! Tool declarations of system messages stay shared: the decoded message holds the same
//! `Arc`. A message the encoding cannot hold (a JSON value nested deeper than 256 levels,
//! which no JSON read from the wire has) is kept beside the buffer as it is.
//!
//! The buffer is written only by this type, so reading one back fails only if it was
//! damaged; then [`get`](PackedTranscript::get) returns a [`PackError`] naming the message
//! and the byte, and never panics or reads out of bounds.

mod decode;
mod encode;
mod wire;

#[cfg(test)]
mod tests;

use super::Message;
use decode::Decoded;
use wire::{Reader, Tables, Writer};

/// Why a message could not be read from a [`PackedTranscript`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    /// There is no message at this index.
    #[error("no message {index} in a packed transcript of {len} messages")]
    OutOfRange {
        /// The index asked for.
        index: usize,
        /// How many messages the transcript holds.
        len: usize,
    },
    /// The message's bytes do not decode: the buffer was damaged after it was written.
    #[error(
        "packed message {index} is corrupt at byte {offset} of its record ({what}); \
         the transcript's buffer was damaged: rebuild it from the messages' JSON"
    )]
    Corrupt {
        /// The message's index.
        index: usize,
        /// The byte within the message's record where decoding failed.
        offset: usize,
        /// What was wrong there.
        what: &'static str,
    },
}

/// A transcript in one byte buffer; see the [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct PackedTranscript {
    buf: Vec<u8>,
    /// Where each message's record ends in `buf` (it starts where the previous one ends).
    ends: Vec<u32>,
    tables: Tables,
    /// Timestamps are stored as their difference to this one: the first message's.
    base: u64,
    /// The rare messages kept as they are (see [`Rare`]); `None` while there are none.
    rare: Option<Box<Rare>>,
}

/// Where a message is.
enum Record<'a> {
    Bytes(&'a [u8]),
    Kept(&'a Message),
}

fn corrupt(index: usize, offset: usize, what: &'static str) -> PackError {
    PackError::Corrupt {
        index,
        offset,
        what,
    }
}

/// The role of a packed message, without decoding it (see [`PackedTranscript::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// [`Message::System`].
    System,
    /// [`Message::User`].
    User,
    /// [`Message::Assistant`].
    Assistant,
    /// [`Message::ToolResult`].
    ToolResult,
    /// [`Message::Custom`] (its role is in the message).
    Custom,
}

impl MessageKind {
    /// The kind of `m`.
    pub fn of(m: &Message) -> Self {
        match m {
            Message::System(_) => MessageKind::System,
            Message::User(_) => MessageKind::User,
            Message::Assistant(_) => MessageKind::Assistant,
            Message::ToolResult(_) => MessageKind::ToolResult,
            Message::Custom(_) => MessageKind::Custom,
        }
    }

    /// The role name as it appears in JSON; `None` for a custom message, whose role is its
    /// own.
    pub fn role(self) -> Option<&'static str> {
        match self {
            MessageKind::System => Some("system"),
            MessageKind::User => Some("user"),
            MessageKind::Assistant => Some("assistant"),
            MessageKind::ToolResult => Some("toolResult"),
            MessageKind::Custom => None,
        }
    }
}

/// What is not in the buffer.
#[derive(Clone, Debug, Default)]
struct Rare {
    /// Messages the encoding cannot hold, referred to by index from their record.
    spilled: Vec<Message>,
    /// Messages pushed once the buffer reached 4 GiB (offsets are 32-bit), in order after
    /// the packed ones.
    tail: Vec<Message>,
}

impl PackedTranscript {
    /// An empty transcript (allocates nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.ends.len() + self.rare.as_ref().map_or(0, |r| r.tail.len())
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the encoded records (the buffer's length).
    pub fn encoded_len(&self) -> usize {
        self.buf.len()
    }

    /// Appends a message (encoding it; the message itself is not kept).
    pub fn push(&mut self, m: &Message) {
        if self.rare.as_ref().is_some_and(|r| !r.tail.is_empty()) {
            self.rare_mut().tail.push(m.clone());
            return;
        }
        if self.ends.is_empty() {
            self.base = timestamp_of(m);
        }
        let start = self.buf.len();
        let mut w = Writer {
            out: &mut self.buf,
            tables: &mut self.tables,
            base: self.base,
        };
        if w.message(m).is_err() {
            // Too deep for the encoding: the record refers to the message kept beside it.
            self.buf.truncate(start);
            let rare = self.rare.get_or_insert_with(Box::default);
            let index = rare.spilled.len();
            rare.spilled.push(m.clone());
            Writer {
                out: &mut self.buf,
                tables: &mut self.tables,
                base: self.base,
            }
            .spilled(index);
        }
        match u32::try_from(self.buf.len()) {
            Ok(end) => self.ends.push(end),
            Err(_) => {
                self.buf.truncate(start);
                self.rare_mut().tail.push(m.clone());
            }
        }
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The message at `index`, decoded.
    pub fn get(&self, index: usize) -> Result<Message, PackError> {
        let bytes = match self.record(index)? {
            Record::Kept(m) => return Ok(m.clone()),
            Record::Bytes(bytes) => bytes,
        };
        let mut r = Reader::new(bytes, &self.tables, self.base);
        let decoded = r.message().map_err(|c| corrupt(index, c.offset, c.what))?;
        if !r.at_end() {
            return Err(corrupt(index, bytes.len(), "bytes left after the message"));
        }
        match decoded {
            Decoded::Message(m) => Ok(m),
            Decoded::Spilled(i) => self.spilled(index, i).cloned(),
        }
    }

    /// The kind of the message at `index`, read from its record's first byte: no decode.
    pub fn kind(&self, index: usize) -> Result<MessageKind, PackError> {
        let bytes = match self.record(index)? {
            Record::Kept(m) => return Ok(MessageKind::of(m)),
            Record::Bytes(bytes) => bytes,
        };
        let mut r = Reader::new(bytes, &self.tables, self.base);
        match r.kind().map_err(|c| corrupt(index, c.offset, c.what))? {
            decode::Kind::Plain(kind) => Ok(kind),
            decode::Kind::Spilled(i) => self.spilled(index, i).map(MessageKind::of),
        }
    }

    /// The bytes of message `index`, or the message itself when it is not in the buffer.
    fn record(&self, index: usize) -> Result<Record<'_>, PackError> {
        let Some(&end) = self.ends.get(index) else {
            let tail = self.rare.as_ref().map_or(&[][..], |r| &r.tail[..]);
            return tail
                .get(index - self.ends.len())
                .map(Record::Kept)
                .ok_or_else(|| PackError::OutOfRange {
                    index,
                    len: self.len(),
                });
        };
        let start = match index {
            0 => 0,
            _ => self.ends[index - 1] as usize,
        };
        match self.buf.get(start..end as usize) {
            Some(bytes) => Ok(Record::Bytes(bytes)),
            None => Err(corrupt(index, 0, "the record lies outside the buffer")),
        }
    }

    /// A message kept beside the buffer, which record `index` refers to as `spilled`.
    fn spilled(&self, index: usize, spilled: usize) -> Result<&Message, PackError> {
        self.rare
            .as_ref()
            .and_then(|r| r.spilled.get(spilled))
            .ok_or_else(|| corrupt(index, 0, "a kept message's index is out of range"))
    }

    /// The last message, decoded; `None` when the transcript is empty.
    pub fn last(&self) -> Option<Result<Message, PackError>> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    /// Every message in order, each decoded when the iterator reaches it.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Result<Message, PackError>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// All messages decoded, or the first error.
    pub fn to_vec(&self) -> Result<Vec<Message>, PackError> {
        self.iter().collect()
    }

    /// Appends every message of `messages`.
    pub fn extend<'a>(&mut self, messages: impl IntoIterator<Item = &'a Message>) {
        let messages = messages.into_iter();
        // Room up front for what a message of a run usually takes, instead of a growth step
        // (a reallocation and a copy) every few messages; `shrink_to_fit` returns the rest.
        // Capped: the hint comes from the caller's iterator.
        let n = messages.size_hint().0.min(RESERVE_RECORDS_MAX);
        self.ends.reserve(n);
        self.buf.reserve(n * TYPICAL_RECORD_BYTES);
        for m in messages {
            self.push(m);
        }
    }

    /// Gives back the spare capacity of the buffer, the offsets and the tables.
    pub fn shrink_to_fit(&mut self) {
        self.buf.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.tables.shrink_to_fit();
        if let Some(r) = &mut self.rare {
            r.spilled.shrink_to_fit();
            r.tail.shrink_to_fit();
        }
    }
}

/// About what one record of a run's message takes in the buffer (text aside), for the room
/// [`PackedTranscript::extend`] makes before it writes.
const TYPICAL_RECORD_BYTES: usize = 48;

/// The most records [`PackedTranscript::extend`] makes room for ahead (3 MB of buffer).
const RESERVE_RECORDS_MAX: usize = 65_536;

/// The timestamp of a message, the transcript's base when it is the first (custom
/// messages have no typed one).
fn timestamp_of(m: &Message) -> u64 {
    match m {
        Message::System(s) => s.timestamp,
        Message::User(u) => u.timestamp,
        Message::Assistant(a) => a.timestamp,
        Message::ToolResult(t) => t.timestamp,
        Message::Custom(_) => 0,
    }
}

impl From<&[Message]> for PackedTranscript {
    /// Packs `messages`, with no spare capacity.
    fn from(messages: &[Message]) -> Self {
        let mut p = PackedTranscript::new();
        p.ends.reserve_exact(messages.len());
        p.extend(messages);
        p.shrink_to_fit();
        p
    }
}

impl From<Vec<Message>> for PackedTranscript {
    /// Packs `messages`, with no spare capacity.
    fn from(messages: Vec<Message>) -> Self {
        PackedTranscript::from(&messages[..])
    }
}

impl FromIterator<Message> for PackedTranscript {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        let mut p = PackedTranscript::new();
        for m in iter {
            p.push(&m);
        }
        p.shrink_to_fit();
        p
    }
}

impl TryFrom<&PackedTranscript> for Vec<Message> {
    type Error = PackError;
    fn try_from(p: &PackedTranscript) -> Result<Self, PackError> {
        p.to_vec()
    }
}

impl TryFrom<PackedTranscript> for Vec<Message> {
    type Error = PackError;
    fn try_from(p: PackedTranscript) -> Result<Self, PackError> {
        p.to_vec()
    }
}
