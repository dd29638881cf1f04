//! Digests that tie a journal to what it recorded: the transcript a run starts from, and the
//! context of each model request. SHA-256 over the messages' JSON (the reference's JSON, so
//! the digest is the same wherever the transcript was written), first 16 bytes in hex.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use tern_ai::Message;

/// The digest of a transcript: equal transcripts, equal digests.
///
/// ```
/// use tern_ai::Message;
/// let hi = Message::user_text("hi");
/// let a = tern_durable::transcript_digest(&[hi.clone()]);
/// assert_eq!(a, tern_durable::transcript_digest(&[hi]));
/// assert_ne!(a, tern_durable::transcript_digest(&[Message::user_text("ho")]));
/// assert_eq!(a.len(), 32);
/// ```
pub fn transcript_digest(messages: &[Message]) -> String {
    let mut h = Sha256::new();
    for m in messages {
        // A message that cannot serialize still counts, by its position.
        let line = serde_json::to_vec(m).unwrap_or_default();
        h.update((line.len() as u64).to_le_bytes());
        h.update(&line);
    }
    hex(&h.finalize()[..16])
}

/// The digest of a model request's context (system prompt and tools are in the messages,
/// as transcript system messages). Times are left out (`timestamp`, `durationMs`): a
/// recovered run re-creates tool results at another time, and the model saw the same text.
///
/// ```
/// use tern_ai::Message;
/// let at = |t: u64| -> Message {
///     serde_json::from_value(serde_json::json!({"role":"user","content":"hi","timestamp":t})).unwrap()
/// };
/// assert_eq!(tern_durable::context_digest(&[at(1)]), tern_durable::context_digest(&[at(2)]));
/// assert_ne!(tern_durable::transcript_digest(&[at(1)]), tern_durable::transcript_digest(&[at(2)]));
/// ```
pub fn context_digest(messages: &[Message]) -> String {
    let mut h = Sha256::new();
    for m in messages {
        hash_context_message(&mut h, m);
    }
    hex(&h.finalize()[..16])
}

fn hash_context_message(h: &mut Sha256, m: &Message) {
    let mut v = serde_json::to_value(m).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("timestamp");
        o.remove("durationMs");
    }
    let line = serde_json::to_vec(&v).unwrap_or_default();
    h.update((line.len() as u64).to_le_bytes());
    h.update(&line);
}

/// [`context_digest`] for the successive requests of one run: it keeps the hash state after
/// the messages it has hashed, so a context that starts with the same messages (the same
/// `Arc`s: the loop only appends to its transcript) hashes only the new ones. A run of `T`
/// turns then costs `O(T)` serializations instead of `O(T²)`. Any other context is hashed
/// from the start.
#[derive(Clone, Default)]
pub(crate) struct ContextDigests {
    hashed: Vec<Message>,
    state: Sha256,
}

/// The same message object (not merely an equal one).
fn same_message(a: &Message, b: &Message) -> bool {
    match (a, b) {
        (Message::System(x), Message::System(y)) => Arc::ptr_eq(x, y),
        (Message::User(x), Message::User(y)) => Arc::ptr_eq(x, y),
        (Message::Assistant(x), Message::Assistant(y)) => Arc::ptr_eq(x, y),
        (Message::ToolResult(x), Message::ToolResult(y)) => Arc::ptr_eq(x, y),
        (Message::Custom(x), Message::Custom(y)) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

impl ContextDigests {
    /// The [`context_digest`] of `messages`.
    pub(crate) fn digest(&mut self, messages: &[Message]) -> String {
        let extends = self.hashed.len() <= messages.len()
            && self
                .hashed
                .iter()
                .zip(messages)
                .all(|(a, b)| same_message(a, b));
        if !extends {
            self.hashed.clear();
            self.state = Sha256::new();
        }
        for m in &messages[self.hashed.len()..] {
            hash_context_message(&mut self.state, m);
            self.hashed.push(m.clone());
        }
        hex(&self.state.clone().finalize()[..16])
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The digests of one model request's parts, so a replay can say which part differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestDigests {
    /// The system prompt: the system messages' text and sections.
    pub system: String,
    /// The tool set and schemas: the system messages' `toolsAdded` / `toolsRemoved`.
    pub tools: String,
    /// The whole context ([`context_digest`]).
    pub context: String,
}

/// The [`RequestDigests`] of a request's messages.
///
/// ```
/// use tern_ai::Message;
/// let d = tern_durable::digest::request_digests(&[Message::user_text("hi")]);
/// assert_eq!(d.context, tern_durable::context_digest(&[Message::user_text("hi")]));
/// ```
pub fn request_digests(messages: &[Message]) -> RequestDigests {
    request_digests_with(messages, &mut ContextDigests::default())
}

/// [`request_digests`], the context digest continued from `cache` (see [`ContextDigests`]).
pub(crate) fn request_digests_with(
    messages: &[Message],
    cache: &mut ContextDigests,
) -> RequestDigests {
    let mut system = Sha256::new();
    let mut tools = Sha256::new();
    for m in messages {
        if let Message::System(s) = m {
            let text = serde_json::to_vec(&(&s.content, &s.sections)).unwrap_or_default();
            system.update((text.len() as u64).to_le_bytes());
            system.update(&text);
            let t = serde_json::to_vec(&(&s.tools_added, &s.tools_removed)).unwrap_or_default();
            tools.update((t.len() as u64).to_le_bytes());
            tools.update(&t);
        }
    }
    RequestDigests {
        system: hex(&system.finalize()[..16]),
        tools: hex(&tools.finalize()[..16]),
        context: cache.digest(messages),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_continued_digest_is_the_digest_of_the_whole_context() {
        let mut cache = ContextDigests::default();
        let mut ctx = vec![Message::user_text("a")];
        assert_eq!(cache.digest(&ctx), context_digest(&ctx));
        ctx.push(Message::user_text("b"));
        ctx.push(Message::user_text("c"));
        assert_eq!(cache.digest(&ctx), context_digest(&ctx));
        assert_eq!(cache.hashed.len(), 3);
        // A message replaced in the middle by an equal-looking new one, or by another one:
        // hashed again from the start.
        ctx[1] = Message::user_text("x");
        assert_eq!(cache.digest(&ctx), context_digest(&ctx));
        ctx[1] = Message::user_text("b");
        assert_eq!(cache.digest(&ctx), context_digest(&ctx));
        // A shorter context (compaction) too.
        ctx.truncate(1);
        assert_eq!(cache.digest(&ctx), context_digest(&ctx));
        assert_eq!(cache.digest(&[]), context_digest(&[]));
    }
}
