//! Giving back the spare capacity of a message that is kept for long: a transcript an agent
//! is handed holds its messages for the agent's lifetime, while the buffers they were built
//! in were sized for building (a one-key `serde_json` map reserves room for three entries).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Content, ContentBlock, Message};

impl Message {
    /// Gives back the spare capacity of the message's vectors, strings and JSON maps, the
    /// way [`Vec::shrink_to_fit`] does for one vector. Nothing observable changes.
    ///
    /// Only what this value holds alone is shrunk: a message (or tool call) whose [`Arc`]
    /// another holder shares is left as it is, since copying it would cost more than it
    /// gives back.
    ///
    /// ```
    /// use tern_ai::{AssistantMessage, ContentBlock, Message, ToolCall};
    /// let call = ToolCall { arguments: serde_json::json!({"n": 1}), ..ToolCall::default() };
    /// let mut m = Message::from(AssistantMessage {
    ///     content: vec![ContentBlock::tool_call(call)],
    ///     ..AssistantMessage::default()
    /// });
    /// let before = serde_json::to_string(&m).unwrap();
    /// m.shrink_to_fit();
    /// assert_eq!(serde_json::to_string(&m).unwrap(), before);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        match self {
            Message::System(m) => {
                if let Some(m) = Arc::get_mut(m) {
                    shrink_content(&mut m.content);
                }
            }
            Message::User(m) => {
                if let Some(m) = Arc::get_mut(m) {
                    shrink_content(&mut m.content);
                }
            }
            Message::Assistant(m) => {
                if let Some(m) = Arc::get_mut(m) {
                    shrink_blocks(&mut m.content);
                }
            }
            Message::ToolResult(m) => {
                if let Some(m) = Arc::get_mut(m) {
                    shrink_blocks(&mut m.content);
                    if let Some(d) = &mut m.details {
                        shrink_value(d);
                    }
                }
            }
            Message::Custom(m) => {
                if let Some(m) = Arc::get_mut(m) {
                    shrink_map(&mut m.0);
                }
            }
        }
    }
}

fn shrink_content(content: &mut Content) {
    match content {
        Content::Text(s) => s.shrink_to_fit(),
        Content::Blocks(blocks) => shrink_blocks(blocks),
    }
}

fn shrink_blocks(blocks: &mut Vec<ContentBlock>) {
    blocks.shrink_to_fit();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => t.text.shrink_to_fit(),
            ContentBlock::Thinking(t) => t.thinking.shrink_to_fit(),
            ContentBlock::Image(i) => i.data.shrink_to_fit(),
            ContentBlock::ToolCall(c) => {
                if let Some(c) = Arc::get_mut(c) {
                    shrink_value(&mut c.arguments);
                }
            }
        }
    }
}

fn shrink_value(v: &mut Value) {
    match v {
        Value::String(s) => s.shrink_to_fit(),
        Value::Array(items) => {
            items.shrink_to_fit();
            items.iter_mut().for_each(shrink_value);
        }
        Value::Object(m) => shrink_map(m),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `serde_json::Map` has no `shrink_to_fit`: the entries move into a map of exactly their
/// number (in order, so a `preserve_order` map keeps its order).
fn shrink_map(m: &mut Map<String, Value>) {
    let old = std::mem::take(m);
    let mut tight = Map::with_capacity(old.len());
    for (mut k, mut v) in old {
        k.shrink_to_fit();
        shrink_value(&mut v);
        tight.insert(k, v);
    }
    *m = tight;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Name, ToolCall, ToolResultMessage, UserMessage};

    #[test]
    fn shrinking_changes_no_json_and_keeps_key_order() {
        let call = ToolCall {
            id: Name::unique("c1"),
            name: "noop".into(),
            arguments: serde_json::json!({"z": 1, "a": [1, {"y": "t", "b": null}], "m": "s"}),
            ..ToolCall::default()
        };
        let mut msgs = vec![
            Message::from(UserMessage {
                content: Content::Text(String::with_capacity(100) + "hi"),
                ..UserMessage::default()
            }),
            Message::from(crate::AssistantMessage {
                content: vec![ContentBlock::text("a"), ContentBlock::tool_call(call)],
                ..crate::AssistantMessage::default()
            }),
            Message::from(ToolResultMessage {
                tool_call_id: "c1".into(),
                details: Some(serde_json::json!({"k": {"x": 1, "b": 2}})),
                ..ToolResultMessage::default()
            }),
            serde_json::from_str(r#"{"role":"note","z":1,"a":{"q":2,"c":3}}"#).unwrap(),
        ];
        let before = serde_json::to_string(&msgs).unwrap();
        msgs.iter_mut().for_each(Message::shrink_to_fit);
        assert_eq!(serde_json::to_string(&msgs).unwrap(), before);
        let Message::User(u) = &msgs[0] else {
            panic!("user")
        };
        let Content::Text(t) = &u.content else {
            panic!("text")
        };
        assert_eq!(t.capacity(), 2);
    }

    #[test]
    fn a_shared_message_is_left_as_it_is() {
        let mut m = Message::from(UserMessage {
            content: Content::Text(String::with_capacity(100) + "hi"),
            ..UserMessage::default()
        });
        let other = m.clone();
        m.shrink_to_fit();
        let Message::User(u) = &m else { panic!("user") };
        let Content::Text(t) = &u.content else {
            panic!("text")
        };
        assert_eq!(t.capacity(), 100);
        drop(other);
    }
}
