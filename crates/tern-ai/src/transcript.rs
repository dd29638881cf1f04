//! Transcript helpers: the system prompt and the tool set live in system messages, and
//! replaying every system message in order gives the current prompt and tools.
//!
//! ```
//! use std::sync::Arc;
//! use tern_ai::transcript::{create_initial_system_message, get_current_system_prompt};
//! use tern_ai::{Message, ToolDeclaration};
//! let tool = Arc::new(ToolDeclaration { name: "read".into(), ..Default::default() });
//! let first = create_initial_system_message(Some("Be brief."), &[tool]).unwrap();
//! let messages = vec![Message::from(first)];
//! assert_eq!(get_current_system_prompt(&messages), "Be brief.");
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::message::{Content, Message, SystemMessage, ToolDeclaration, ToolReference};

/// The leading system message for a prompt and tool set; `None` when both are empty.
/// The message shares the declarations (it clones the `Arc`s, not the schemas).
pub fn create_initial_system_message(
    system_prompt: Option<&str>,
    tools: &[Arc<ToolDeclaration>],
) -> Option<SystemMessage> {
    let has_prompt = system_prompt.is_some_and(|p| !p.is_empty());
    if !has_prompt && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: Content::Text(system_prompt.unwrap_or("").to_string()),
        sections: None,
        tools_added: (!tools.is_empty()).then(|| tools.to_vec()),
        tools_removed: None,
        timestamp: 0,
        extra: None,
    })
}

/// Folds a prompt and a tool list into a leading system message before `messages`
/// (the reference's `normalizeContext`). Without either, the messages are returned as they are.
pub fn normalize_context(
    system_prompt: Option<&str>,
    tools: &[Arc<ToolDeclaration>],
    messages: Vec<Message>,
) -> Vec<Message> {
    match create_initial_system_message(system_prompt, tools) {
        Some(first) => {
            let mut out = Vec::with_capacity(messages.len() + 1);
            out.push(Message::from(first));
            out.extend(messages);
            out
        }
        None => messages,
    }
}

/// The leading system message, if the transcript starts with one.
pub fn get_initial_system_message(messages: &[Message]) -> Option<&SystemMessage> {
    messages.first().and_then(Message::as_system)
}

/// The messages without the leading system message (for APIs with a separate prompt field).
pub fn without_initial_system_message(messages: &[Message]) -> &[Message] {
    if get_initial_system_message(messages).is_some() {
        &messages[1..]
    } else {
        messages
    }
}

/// The tools available after applying every system message's `toolsRemoved` then
/// `toolsAdded`, in first-declaration order. The declarations are shared with the messages.
pub fn get_current_tools<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Vec<Arc<ToolDeclaration>> {
    let mut replay = ToolReplay::default();
    for m in messages {
        if let Message::System(s) = m {
            replay.apply(s);
        }
    }
    replay.into_tools()
}

/// Tool-set replay one system message at a time, for callers that follow a growing
/// transcript without rescanning it.
///
/// ```
/// use std::sync::Arc;
/// use tern_ai::transcript::ToolReplay;
/// use tern_ai::{SystemMessage, ToolDeclaration, ToolReference};
/// let mut replay = ToolReplay::default();
/// replay.apply(&SystemMessage {
///     tools_added: Some(vec![Arc::new(ToolDeclaration { name: "a".into(), ..Default::default() })]),
///     ..Default::default()
/// });
/// replay.apply(&SystemMessage {
///     tools_removed: Some(vec![ToolReference { name: "a".into() }]),
///     ..Default::default()
/// });
/// assert!(replay.tools().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolReplay {
    order: Vec<Arc<ToolDeclaration>>,
    index: HashMap<String, usize>,
}

impl ToolReplay {
    /// Applies one system message: its removals, then its additions.
    pub fn apply(&mut self, s: &SystemMessage) {
        for r in s.tools_removed.iter().flatten() {
            if let Some(i) = self.index.remove(&r.name) {
                self.order.remove(i);
                for v in self.index.values_mut() {
                    if *v > i {
                        *v -= 1;
                    }
                }
            }
        }
        for t in s.tools_added.iter().flatten() {
            match self.index.get(&t.name) {
                // A JS Map keeps the position of a key that is set again.
                Some(&i) => self.order[i] = t.clone(),
                None => {
                    self.index.insert(t.name.clone(), self.order.len());
                    self.order.push(t.clone());
                }
            }
        }
    }

    /// The current tools.
    pub fn tools(&self) -> &[Arc<ToolDeclaration>] {
        &self.order
    }

    /// The current tools, by value.
    pub fn into_tools(self) -> Vec<Arc<ToolDeclaration>> {
        self.order
    }
}

/// Replays every system message into one: contents joined with a blank line, sections
/// patched by name (`null` removes), tools replayed. `None` when there is no system message
/// and no tool.
pub fn get_current_system_message(messages: &[Message]) -> Option<SystemMessage> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Map<String, Value> = Map::new();
    let mut timestamp = None;
    for m in messages {
        let Message::System(s) = m else { continue };
        timestamp.get_or_insert(s.timestamp);
        let text = s.content.text("\n");
        if !text.is_empty() {
            content.push(text);
        }
        for (name, value) in s.sections.iter().flat_map(|m| m.iter()) {
            if value.is_null() {
                sections.shift_remove(name);
            } else {
                sections.insert(name.clone(), value.clone());
            }
        }
    }
    let tools = get_current_tools(messages);
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: Content::Text(content.join("\n\n")),
        sections: (!sections.is_empty()).then(|| Box::new(sections)),
        tools_added: (!tools.is_empty()).then_some(tools),
        tools_removed: None,
        timestamp: timestamp.unwrap_or(0),
        extra: None,
    })
}

/// A system message rendered as a complete prompt: its content, then its sections.
pub fn get_system_message_text(message: &SystemMessage) -> String {
    let mut parts = vec![message.content.text("\n")];
    for v in message.sections.iter().flat_map(|s| s.values()) {
        if let Some(t) = v.as_str() {
            parts.push(t.to_string());
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// A system message as an API sends it: the whole prompt when it leads the transcript, an
/// update ([`render_system_message_update`]) after.
pub fn system_message_text(message: &SystemMessage, leading: bool) -> String {
    if leading {
        get_system_message_text(message)
    } else {
        render_system_message_update(message)
    }
}

/// The current system prompt after replaying every system message.
pub fn get_current_system_prompt(messages: &[Message]) -> String {
    get_current_system_message(messages)
        .map(|m| get_system_message_text(&m))
        .unwrap_or_default()
}

/// A later system message rendered for APIs that accept system messages mid-conversation.
pub fn render_system_message_update(message: &SystemMessage) -> String {
    let mut parts = Vec::new();
    let text = message.content.text("\n");
    if !text.is_empty() {
        parts.push(text);
    }
    for (name, value) in message.sections.iter().flat_map(|m| m.iter()) {
        match value.as_str() {
            Some(v) => parts.push(format!("Updated system prompt section \"{name}\":\n\n{v}")),
            None => parts.push(format!("Removed system prompt section \"{name}\".")),
        }
    }
    parts.join("\n\n")
}

/// The transcript for APIs without mid-conversation system messages: the replayed system
/// message leads and later system messages are dropped.
pub fn collapse_system_messages(messages: &[Message]) -> Vec<Message> {
    let head = get_current_system_message(messages);
    let mut out = Vec::with_capacity(messages.len());
    if let Some(h) = head {
        out.push(Message::from(h));
    }
    out.extend(
        messages
            .iter()
            .filter(|m| !matches!(m, Message::System(_)))
            .cloned(),
    );
    out
}

/// Whether two declarations present the same interface to the model (compared as JSON,
/// key order included, as the reference compares serialized declarations).
pub fn declarations_equal(a: &ToolDeclaration, b: &ToolDeclaration) -> bool {
    std::ptr::eq(a, b)
        || a.name == b.name
            && a.description == b.description
            && a.constrained_sampling == b.constrained_sampling
            && json_identical(&a.parameters, &b.parameters)
}

// Equality that also requires the same key order, like comparing `JSON.stringify` output.
fn json_identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && json_identical(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_identical(p, q))
        }
        _ => a == b,
    }
}

/// The difference between two tool states. A changed definition is removed and added.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolChanges {
    /// Declarations new or changed in `current`.
    pub tools_added: Vec<Arc<ToolDeclaration>>,
    /// Names gone or changed since `previous`.
    pub tools_removed: Vec<ToolReference>,
}

impl ToolChanges {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.tools_added.is_empty() && self.tools_removed.is_empty()
    }
}

/// Compares two complete tool states.
pub fn get_tool_state_changes(
    previous: &[Arc<ToolDeclaration>],
    current: &[Arc<ToolDeclaration>],
) -> ToolChanges {
    let find = |list: &[Arc<ToolDeclaration>], name: &str| -> Option<usize> {
        // Last wins, like building a Map from the list.
        list.iter().rposition(|t| t.name == name)
    };
    let tools_added = current
        .iter()
        .filter(|t| match find(previous, &t.name) {
            None => true,
            Some(i) => !declarations_equal(&previous[i], t),
        })
        .cloned()
        .collect();
    let tools_removed = previous
        .iter()
        .filter(|t| match find(current, &t.name) {
            None => true,
            Some(i) => !declarations_equal(t, &current[i]),
        })
        .map(|t| ToolReference {
            name: t.name.clone(),
        })
        .collect();
    ToolChanges {
        tools_added,
        tools_removed,
    }
}

/// A copy of a system message whose tool fields are replaced by `changes` (empty lists
/// leave the field out).
pub fn with_tool_changes(message: &SystemMessage, changes: &ToolChanges) -> SystemMessage {
    SystemMessage {
        tools_added: (!changes.tools_added.is_empty()).then(|| changes.tools_added.clone()),
        tools_removed: (!changes.tools_removed.is_empty()).then(|| changes.tools_removed.clone()),
        ..message.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl(name: &str, desc: &str) -> Arc<ToolDeclaration> {
        Arc::new(ToolDeclaration {
            name: name.into(),
            description: desc.into(),
            parameters: json!({"type":"object","properties":{}}),
            constrained_sampling: None,
        })
    }

    fn sys(v: serde_json::Value) -> Message {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn initial_message_needs_prompt_or_tools() {
        assert!(create_initial_system_message(None, &[]).is_none());
        assert!(create_initial_system_message(Some(""), &[]).is_none());
        let m = create_initial_system_message(None, &[decl("a", "")]).unwrap();
        assert_eq!(m.content, Content::Text(String::new()));
        assert_eq!(m.tools_added.unwrap().len(), 1);
    }

    #[test]
    fn replay_joins_content_and_patches_sections() {
        let messages = vec![
            sys(
                json!({"role":"system","content":"base","sections":{"a":"A","b":"B"},"timestamp":5}),
            ),
            sys(json!({"role":"user","content":"hi","timestamp":6})),
            sys(
                json!({"role":"system","content":[{"type":"text","text":"more"}],"sections":{"a":null,"c":"C"},"timestamp":7}),
            ),
        ];
        let m = get_current_system_message(&messages).unwrap();
        assert_eq!(m.content, Content::Text("base\n\nmore".into()));
        assert_eq!(m.timestamp, 5);
        let keys: Vec<_> = m.sections.as_ref().unwrap().keys().cloned().collect();
        assert_eq!(keys, vec!["b", "c"]);
        assert_eq!(
            get_current_system_prompt(&messages),
            "base\n\nmore\n\nB\n\nC"
        );
    }

    #[test]
    fn tools_replay_removals_before_additions() {
        let messages = vec![
            sys(
                json!({"role":"system","content":"","toolsAdded":[{"name":"a","description":"","parameters":{}},{"name":"b","description":"","parameters":{}}],"timestamp":0}),
            ),
            sys(
                json!({"role":"system","content":"","toolsRemoved":[{"name":"a"}],"toolsAdded":[{"name":"a","description":"new","parameters":{}}],"timestamp":0}),
            ),
        ];
        let tools = get_current_tools(&messages);
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["b", "a"]);
        assert_eq!(tools[1].description, "new");
    }

    #[test]
    fn changed_definition_is_removed_and_added() {
        let prev = vec![decl("a", "x"), decl("b", "y")];
        let cur = vec![decl("a", "x"), decl("b", "z"), decl("c", "")];
        let ch = get_tool_state_changes(&prev, &cur);
        let added: Vec<_> = ch.tools_added.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(added, vec!["b", "c"]);
        assert_eq!(ch.tools_removed, vec![ToolReference { name: "b".into() }]);
        assert!(get_tool_state_changes(&cur, &cur).is_empty());
    }

    #[test]
    fn key_order_matters_for_declarations() {
        let mut a = decl("a", "");
        let mut b = decl("a", "");
        Arc::make_mut(&mut a).parameters = json!({"type":"object","properties":{}});
        Arc::make_mut(&mut b).parameters = json!({"properties":{},"type":"object"});
        assert!(!declarations_equal(&a, &b));
    }

    #[test]
    fn collapse_keeps_one_leading_system_message() {
        let messages = vec![
            sys(json!({"role":"system","content":"a","timestamp":0})),
            sys(json!({"role":"user","content":"hi","timestamp":0})),
            sys(json!({"role":"system","content":"b","timestamp":0})),
        ];
        let c = collapse_system_messages(&messages);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0].as_system().unwrap().content,
            Content::Text("a\n\nb".into())
        );
    }

    #[test]
    fn section_update_rendering() {
        let m: SystemMessage = serde_json::from_value(
            json!({"content":"x","sections":{"s":"new","t":null},"timestamp":0}),
        )
        .unwrap();
        assert_eq!(
            render_system_message_update(&m),
            "x\n\nUpdated system prompt section \"s\":\n\nnew\n\nRemoved system prompt section \"t\"."
        );
    }
}
