//! OpenAI Chat Completions streaming as a scripted server writes it: the SSE chunks of one
//! completion, its usage chunk and `[DONE]`, the JSON error answer, and what a request body
//! says (how many assistant turns it carries, a message's text).

use serde_json::{json, Value};

use crate::http;

/// The SSE line that ends a stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// The chunks of one completion: every chunk carries the same `id`, `model` and `created`.
#[derive(Clone, Copy, Debug)]
pub struct ChatStream {
    /// The completion id (`chatcmpl-…`).
    pub id: &'static str,
    /// The model the chunks name.
    pub model: &'static str,
    /// The `created` timestamp (seconds).
    pub created: u64,
}

impl ChatStream {
    /// Chunks with this id and model, `created` 0.
    pub const fn new(id: &'static str, model: &'static str) -> Self {
        ChatStream {
            id,
            model,
            created: 0,
        }
    }

    /// The same chunks with `created` set.
    pub const fn created(self, created: u64) -> Self {
        ChatStream { created, ..self }
    }

    /// One `chat.completion.chunk` event of choice 0: `data: {…}` and the blank line.
    pub fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        self.event(
            json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            None,
        )
    }

    /// The usage chunk (no choices) that closes a completion.
    pub fn usage(&self, prompt_tokens: u64, completion_tokens: u64) -> String {
        let usage = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        });
        self.event(json!([]), Some(usage))
    }

    fn event(&self, choices: Value, usage: Option<Value>) -> String {
        let mut v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model, "choices": choices,
        });
        if let Some(usage) = usage {
            v["usage"] = usage;
        }
        format!("data: {v}\n\n")
    }
}

/// The two halves of a tool call's JSON arguments, cut at a character boundary: a server
/// streams them as two deltas, so the client has to join fragments.
pub fn halves(arguments: &str) -> (&str, &str) {
    let cut = arguments
        .char_indices()
        .nth(arguments.chars().count() / 2)
        .map_or(arguments.len(), |(i, _)| i);
    arguments.split_at(cut)
}

/// The answer to a request the script cannot serve: `status` with the JSON error body the
/// OpenAI API sends (`invalid_request_error`), closing the connection.
pub fn error_response(status: u16, message: &str) -> Vec<u8> {
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
    http::response(
        &format!("{status} Error"),
        "application/json",
        "connection: close\r\n",
        body.to_string().as_bytes(),
    )
}

/// How many assistant messages a request body's transcript holds: which turn of a script
/// the request is.
pub fn assistant_turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// The text of a Chat Completions message: its string content, or its text parts joined.
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_carry_the_completion() {
        let s = ChatStream::new("chatcmpl-t", "m").created(5);
        let c = s.chunk(json!({"content": "hi"}), Some("stop"));
        let v: Value = serde_json::from_str(c.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["id"], "chatcmpl-t");
        assert_eq!(v["created"], 5);
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        let u = s.usage(100, 20);
        assert!(u.contains(r#""choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}"#), "{u}");
    }

    #[test]
    fn halves_cut_at_a_character() {
        assert_eq!(halves(r#"{"a":1}"#), (r#"{"a"#, r#"":1}"#));
        assert_eq!(halves("éé"), ("é", "é"));
        assert_eq!(halves(""), ("", ""));
    }

    #[test]
    fn request_bodies() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "x"},
        ]});
        assert_eq!(assistant_turns(&body), 1);
        assert_eq!(message_text(&body["messages"][0]), "ab");
        assert_eq!(message_text(&body["messages"][1]), "x");
        assert_eq!(assistant_turns(&json!(null)), 0);
    }
}
