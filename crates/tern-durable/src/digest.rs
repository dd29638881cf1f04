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
    let line = context_json(m);
    h.update((line.len() as u64).to_le_bytes());
    h.update(&line);
}

/// The message's JSON without its top-level `timestamp` and `durationMs`, byte for byte what
/// `serde_json::to_value`, `Map::remove` of both keys, `to_vec` gave (the digests on disk were
/// made so): the message is serialized once, its top-level entries are found in the text, and
/// each removal moves the last entry into the removed one's place, as the order-preserving
/// map's `remove` (a `swap_remove`) does. Building a `Value` of every message was most of a
/// journaled step's cost.
fn context_json(m: &Message) -> Vec<u8> {
    let Ok(text) = serde_json::to_vec(m) else {
        return Vec::new();
    };
    let Some(mut entries) = top_level_entries(&text) else {
        return text;
    };
    let before = entries.len();
    for key in [&b"\"timestamp\""[..], &b"\"durationMs\""[..]] {
        if let Some(i) = entries
            .iter()
            .position(|e| e.starts_with(key) && e.get(key.len()) == Some(&b':'))
        {
            entries.swap_remove(i);
        }
    }
    if entries.len() == before {
        return text;
    }
    let mut out = Vec::with_capacity(text.len());
    out.push(b'{');
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(e);
    }
    out.push(b'}');
    out
}

/// The `"key":value` slices of a compact JSON object's top level; `None` when `text` is not
/// an object.
fn top_level_entries(text: &[u8]) -> Option<Vec<&[u8]>> {
    let inner = text.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let mut entries = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, 0);
    for (i, &b) in inner.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                entries.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        entries.push(&inner[start..]);
    }
    Some(entries)
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

    /// What the context digest hashed before `context_json`: the message as a `Value`,
    /// without its timestamps.
    fn via_value(m: &Message) -> Vec<u8> {
        let mut v = serde_json::to_value(m).expect("a value");
        if let Some(o) = v.as_object_mut() {
            o.remove("timestamp");
            o.remove("durationMs");
        }
        serde_json::to_vec(&v).expect("json")
    }

    #[test]
    fn the_context_json_is_byte_for_byte_the_value_it_replaced() {
        use serde_json::json;
        let messages: Vec<Message> = [
            json!({"role": "user", "content": "plain, with \"quotes\" and {braces}", "timestamp": 5}),
            json!({"role": "user", "content": [{"type": "text", "text": "a\\"}], "timestamp": 1}),
            json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm [", "thinkingSignature": "s"},
                    {"type": "text", "text": "}"},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a,b", "n": 1.5}}],
                "api": "openai-completions", "provider": "openai", "model": "m",
                "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                          "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3}},
                "stopReason": "toolUse", "timestamp": 9, "durationMs": 12}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                "content": [{"type": "text", "text": "x"}], "details": {"d": [1, {"e": "]"}]},
                "isError": false, "timestamp": 3}),
            json!({"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "error", "errorMessage": "boom", "timestamp": 2}),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("a message"))
        .chain([Message::user_text("made here")])
        .collect();
        for m in &messages {
            assert_eq!(
                String::from_utf8_lossy(&context_json(m)),
                String::from_utf8_lossy(&via_value(m))
            );
        }
        assert_eq!(top_level_entries(b"[1]"), None);
    }

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
