//! The assistant-message event protocol: what a stream function tells its consumer while a
//! response arrives.
//!
//! Every event except the final one carries the [`PartialMessage`]: a shared handle to the one
//! message the producer is building. Cloning the handle is O(1), so an event costs the same
//! whether the answer is ten bytes or ten megabytes; reading it shows the message as it is
//! now (like the reference, whose events all point at one mutable object).

use std::sync::Arc;

use parking_lot::Mutex;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::message::{AssistantMessage, Message, StopReason, ToolCall};

/// The text of one streamed delta (`text_delta`, `thinking_delta`, `toolcall_delta`).
///
/// It reads as a `&str`. Deltas of up to 15 bytes, the usual size of a token, are stored
/// inline: a delta event then costs no allocation. A longer one is shared by its clones.
///
/// ```
/// use tern_ai::Delta;
/// let d = Delta::from("Hel");
/// assert_eq!(d, "Hel");
/// assert_eq!(d.len(), 3);
/// assert_eq!(format!("{d}lo"), "Hello");
/// assert_eq!(serde_json::to_string(&d).unwrap(), r#""Hel""#);
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Delta(ecow::EcoString);

impl Delta {
    /// The text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl std::ops::Deref for Delta {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Delta {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for Delta {
    fn from(s: &str) -> Self {
        Delta(s.into())
    }
}

impl From<String> for Delta {
    fn from(s: String) -> Self {
        Delta(s.into())
    }
}

impl From<Delta> for String {
    fn from(d: Delta) -> Self {
        d.0.into()
    }
}

impl std::fmt::Display for Delta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl std::fmt::Debug for Delta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Delta {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Delta {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Delta {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl Serialize for Delta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

/// A shared, growing assistant message.
///
/// Copy-on-write: [`shared`](Self::shared) hands out the message as it is now without
/// copying it, and the next [`update`](Self::update) copies it only while such a share is
/// still held. A response's `done` can so carry the very message its events built.
///
/// ```
/// use tern_ai::{AssistantMessage, ContentBlock, PartialMessage};
/// let p = PartialMessage::new(AssistantMessage::default());
/// let seen = p.clone();
/// p.update(|m| m.content.push(ContentBlock::text("hi")));
/// assert_eq!(seen.snapshot().text(), "hi");
/// let at_hi = p.shared();
/// p.update(|m| m.content.push(ContentBlock::text("!")));
/// assert_eq!((at_hi.text(), p.shared().text()), ("hi".to_string(), "hi!".to_string()));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PartialMessage(Arc<Mutex<Arc<AssistantMessage>>>);

impl PartialMessage {
    /// Wraps a message.
    pub fn new(message: AssistantMessage) -> Self {
        PartialMessage(Arc::new(Mutex::new(Arc::new(message))))
    }

    /// Changes the message in place (a copy first, if a [`shared`](Self::shared) one is
    /// still held elsewhere).
    pub fn update<R>(&self, f: impl FnOnce(&mut AssistantMessage) -> R) -> R {
        f(crate::cow::make_mut(&mut self.0.lock()))
    }

    /// Reads the message without copying it.
    pub fn with<R>(&self, f: impl FnOnce(&AssistantMessage) -> R) -> R {
        f(&self.0.lock())
    }

    /// A copy of the message as it is now.
    pub fn snapshot(&self) -> AssistantMessage {
        AssistantMessage::clone(&self.0.lock())
    }

    /// The message as it is now, shared rather than copied: later updates do not change it.
    pub fn shared(&self) -> Arc<AssistantMessage> {
        self.0.lock().clone()
    }

    /// Whether `message` is this message as it is now (a [`shared`](Self::shared) handle
    /// with no update since).
    pub fn is_shared(&self, message: &Arc<AssistantMessage>) -> bool {
        Arc::ptr_eq(&self.0.lock(), message)
    }

    /// Changes `message`: in place when it is this message as it is now (a
    /// [`shared`](Self::shared) handle with no update since), so that the handles see the
    /// change as [`update`](Self::update) would show it; on its own (a copy if shared)
    /// otherwise. Returns the changed message. One lock for what
    /// [`is_shared`](Self::is_shared), [`update`](Self::update) and
    /// [`shared`](Self::shared) would do in three.
    ///
    /// ```
    /// use tern_ai::{AssistantMessage, PartialMessage, StopReason};
    /// let p = PartialMessage::new(AssistantMessage::default());
    /// let done = p.update_shared(p.shared(), |m| m.stop_reason = StopReason::Length);
    /// assert!(p.is_shared(&done));
    /// assert_eq!(p.snapshot().stop_reason, StopReason::Length);
    /// // Another message changes alone.
    /// let other = p.update_shared(std::sync::Arc::new(AssistantMessage::default()), |m| {
    ///     m.stop_reason = StopReason::Error
    /// });
    /// assert_eq!((other.stop_reason, p.snapshot().stop_reason), (StopReason::Error, StopReason::Length));
    /// ```
    pub fn update_shared(
        &self,
        mut message: Arc<AssistantMessage>,
        f: impl FnOnce(&mut AssistantMessage),
    ) -> Arc<AssistantMessage> {
        let mut current = self.0.lock();
        if Arc::ptr_eq(&current, &message) {
            // Ours dropped first, so that the change is in place unless others share it.
            drop(message);
            f(crate::cow::make_mut(&mut current));
            current.clone()
        } else {
            drop(current);
            f(crate::cow::make_mut(&mut message));
            message
        }
    }

    /// Whether two handles share one message.
    pub fn ptr_eq(&self, other: &PartialMessage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A number naming the shared message while a handle to it lives: handles that
    /// [`ptr_eq`](Self::ptr_eq) give the same one, and it is never 0. A message built after
    /// this one is dropped may reuse it.
    ///
    /// ```
    /// use tern_ai::{AssistantMessage, PartialMessage};
    /// let p = PartialMessage::new(AssistantMessage::default());
    /// let other = PartialMessage::new(AssistantMessage::default());
    /// assert_eq!(p.identity(), p.clone().identity());
    /// assert_ne!(p.identity(), other.identity());
    /// ```
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl PartialEq for PartialMessage {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || *self.0.lock() == *other.0.lock()
    }
}

impl Serialize for PartialMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Message::Assistant(self.shared()).serialize(s)
    }
}

/// The `content_index` of an event about block `index` of a message.
///
/// Events keep the index in 32 bits, so that the variant's tag fits beside it and every event
/// is 32 bytes (48 with a `usize`): a long response queues hundreds of thousands of them. A
/// message never holds 2³² blocks; an index beyond that saturates.
///
/// ```
/// use tern_ai::event::content_index;
/// assert_eq!(content_index(3), 3);
/// assert_eq!(content_index(usize::MAX), u32::MAX);
/// ```
pub fn content_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

// A long response queues hundreds of thousands of events, and moving them is most of what
// streaming costs: keep every event within four words (the tag beside the 32-bit index, a
// two-word delta or text, the partial handle).
#[cfg(all(target_pointer_width = "64", target_endian = "little"))]
const _: () = assert!(std::mem::size_of::<AssistantMessageEvent>() == 32);

/// One event of an assistant response, in the reference's vocabulary.
#[derive(Clone, Debug, PartialEq)]
pub enum AssistantMessageEvent {
    /// The response started; `partial` is the message being built.
    Start {
        /// The message being built.
        partial: PartialMessage,
    },
    /// A text block started at `content_index`.
    TextStart {
        /// Index of the block in `content`.
        content_index: u32,
        /// The message being built.
        partial: PartialMessage,
    },
    /// Text arrived.
    TextDelta {
        /// Index of the block in `content`.
        content_index: u32,
        /// The new text.
        delta: Delta,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A text block ended with `content`.
    TextEnd {
        /// Index of the block in `content`.
        content_index: u32,
        /// The block's whole text (a `Box<str>`, two words, so that every event is 32 bytes).
        content: Box<str>,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A thinking block started.
    ThinkingStart {
        /// Index of the block in `content`.
        content_index: u32,
        /// The message being built.
        partial: PartialMessage,
    },
    /// Reasoning text arrived.
    ThinkingDelta {
        /// Index of the block in `content`.
        content_index: u32,
        /// The new text.
        delta: Delta,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A thinking block ended.
    ThinkingEnd {
        /// Index of the block in `content`.
        content_index: u32,
        /// The block's whole text (a `Box<str>`, two words, so that every event is 32 bytes).
        content: Box<str>,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A tool call started.
    ToolcallStart {
        /// Index of the block in `content`.
        content_index: u32,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A fragment of the tool call's JSON arguments arrived.
    ToolcallDelta {
        /// Index of the block in `content`.
        content_index: u32,
        /// The raw fragment.
        delta: Delta,
        /// The message being built.
        partial: PartialMessage,
    },
    /// A tool call is complete.
    ToolcallEnd {
        /// Index of the block in `content`.
        content_index: u32,
        /// The complete call (shared with the block of the message, so the event stays small
        /// and carries no copy).
        tool_call: Arc<ToolCall>,
        /// The message being built.
        partial: PartialMessage,
    },
    /// The response ended normally (`stop`, `length`, `toolUse`, `deferred`).
    Done {
        /// Why it ended.
        reason: StopReason,
        /// The final message (shared: the stream's result is the same message).
        message: Arc<AssistantMessage>,
    },
    /// The response failed (`error`) or was aborted (`aborted`).
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The final message, with `errorMessage` (shared like `Done`'s).
        error: Arc<AssistantMessage>,
    },
}

// Any of the events about one content block, binding `$field` (which all of them have).
macro_rules! block_event {
    ($field:ident) => {
        TextStart { $field, .. }
            | TextDelta { $field, .. }
            | TextEnd { $field, .. }
            | ThinkingStart { $field, .. }
            | ThinkingDelta { $field, .. }
            | ThinkingEnd { $field, .. }
            | ToolcallStart { $field, .. }
            | ToolcallDelta { $field, .. }
            | ToolcallEnd { $field, .. }
    };
}

impl AssistantMessageEvent {
    /// The event's `type` as in JSON (`text_delta`, `done`, ...).
    pub fn kind(&self) -> &'static str {
        use AssistantMessageEvent::*;
        match self {
            Start { .. } => "start",
            TextStart { .. } => "text_start",
            TextDelta { .. } => "text_delta",
            TextEnd { .. } => "text_end",
            ThinkingStart { .. } => "thinking_start",
            ThinkingDelta { .. } => "thinking_delta",
            ThinkingEnd { .. } => "thinking_end",
            ToolcallStart { .. } => "toolcall_start",
            ToolcallDelta { .. } => "toolcall_delta",
            ToolcallEnd { .. } => "toolcall_end",
            Done { .. } => "done",
            Error { .. } => "error",
        }
    }

    /// The delta text of `*_delta` events.
    pub fn delta(&self) -> Option<&str> {
        use AssistantMessageEvent::*;
        match self {
            TextDelta { delta, .. } | ThinkingDelta { delta, .. } | ToolcallDelta { delta, .. } => {
                Some(delta)
            }
            _ => None,
        }
    }

    /// The partial message of every non-final event.
    pub fn partial(&self) -> Option<&PartialMessage> {
        use AssistantMessageEvent::*;
        match self {
            Start { partial } | block_event!(partial) => Some(partial),
            Done { .. } | Error { .. } => None,
        }
    }

    /// The index of the content block a `text_*`, `thinking_*` or `toolcall_*` event is about.
    pub fn content_index(&self) -> Option<usize> {
        use AssistantMessageEvent::*;
        match self {
            block_event!(content_index) => Some(*content_index as usize),
            Start { .. } | Done { .. } | Error { .. } => None,
        }
    }
}

// `A | B => { x, y }`: the pattern `A { x, y } | B { x, y }`, for variants that bind the
// same fields.
macro_rules! each {
    ($($variant:ident)|+ => $fields:tt) => {
        $($variant $fields)|+
    };
}

impl Serialize for AssistantMessageEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use AssistantMessageEvent::*;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", self.kind())?;
        match self {
            Start { partial } => m.serialize_entry("partial", partial)?,
            each!(TextStart | ThinkingStart | ToolcallStart => { content_index, partial }) => {
                m.serialize_entry("contentIndex", content_index)?;
                m.serialize_entry("partial", partial)?;
            }
            each!(TextDelta | ThinkingDelta | ToolcallDelta => { content_index, delta, partial }) =>
            {
                m.serialize_entry("contentIndex", content_index)?;
                m.serialize_entry("delta", delta)?;
                m.serialize_entry("partial", partial)?;
            }
            each!(TextEnd | ThinkingEnd => { content_index, content, partial }) => {
                m.serialize_entry("contentIndex", content_index)?;
                m.serialize_entry("content", content)?;
                m.serialize_entry("partial", partial)?;
            }
            ToolcallEnd {
                content_index,
                tool_call,
                partial,
            } => {
                m.serialize_entry("contentIndex", content_index)?;
                m.serialize_entry("toolCall", tool_call)?;
                m.serialize_entry("partial", partial)?;
            }
            Done { reason, message } => {
                m.serialize_entry("reason", reason)?;
                m.serialize_entry("message", &Message::Assistant(message.clone()))?;
            }
            Error { reason, error } => {
                m.serialize_entry("reason", reason)?;
                m.serialize_entry("error", &Message::Assistant(error.clone()))?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_of_every_length_read_back_whole() {
        // Inline up to 15 bytes, shared beyond: both read the same.
        for len in [0, 1, 15, 16, 24, 25, 4096] {
            let text: String = "é0123456789".chars().cycle().take(len).collect();
            let d = Delta::from(text.as_str());
            assert_eq!(d.as_str(), text);
            let copy = d.clone();
            drop(d);
            assert_eq!(String::from(copy), text);
            assert_eq!(Delta::from(text.clone()), text);
        }
    }
}
