//! The prompt as a session records it, pi's way: a new session's leading system message holds
//! the sections by name (`content` empty, the tools declared); a resumed session whose
//! sections differ from this run's gets a system message patching them (changed sections
//! with their new text, removed ones `null`), as pi's `diffSystemPromptSections` writes.
//! Tool changes are the agent loop's own: it declares them before the next request.

use std::sync::Arc;

use serde_json::{Map, Value};
use tern_ai::transcript::get_current_system_message;
use tern_ai::{Content, Message, SystemMessage, ToolDeclaration};

/// The sections as a system message's `sections` object.
fn as_map(sections: &[(&str, String)]) -> Map<String, Value> {
    sections
        .iter()
        .map(|(name, text)| (name.to_string(), Value::String(text.clone())))
        .collect()
}

/// A new session's leading system message: `sections` by name and the declared `tools`.
pub fn leading_message(
    sections: &[(&str, String)],
    tools: &[Arc<ToolDeclaration>],
) -> SystemMessage {
    SystemMessage {
        content: Content::Text(String::new()),
        sections: Some(Box::new(as_map(sections))),
        tools_added: (!tools.is_empty()).then(|| tools.to_vec()),
        ..SystemMessage::default()
    }
}

/// The system message patching the sections `messages` hold into `sections` (None: none
/// differs). A transcript whose prompt is a plain text with no sections (an earlier tern's,
/// or another writer's) gets none: a patch cannot take that text back.
pub fn resume_patch(
    messages: &[Message],
    sections: &[(&str, String)],
    now_ms: u64,
) -> Option<SystemMessage> {
    let current = get_current_system_message(messages)?;
    if !current.content.text("").is_empty() {
        return None;
    }
    let previous = current.sections.map(|s| *s).unwrap_or_default();
    let wanted = as_map(sections);
    let mut patch = Map::new();
    for (name, text) in &wanted {
        if previous.get(name) != Some(text) {
            patch.insert(name.clone(), text.clone());
        }
    }
    for name in previous.keys() {
        if !wanted.contains_key(name) {
            patch.insert(name.clone(), Value::Null);
        }
    }
    (!patch.is_empty()).then(|| SystemMessage {
        content: Content::Text(String::new()),
        sections: Some(Box::new(patch)),
        timestamp: now_ms,
        ..SystemMessage::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_ai::transcript::{get_current_system_message, get_system_message_text};

    fn s(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        pairs.iter().map(|(n, t)| (*n, t.to_string())).collect()
    }

    #[test]
    fn a_changed_prompt_is_patched_section_by_section() {
        let first = s(&[
            ("preamble", "P"),
            ("addendum", "<addendum>\nA\n</addendum>"),
            ("cwd", "<cwd>\n/p\n</cwd>"),
        ]);
        let mut messages = vec![Message::from(leading_message(&first, &[]))];
        assert!(resume_patch(&messages, &first, 5).is_none());
        let second = s(&[("preamble", "P"), ("cwd", "<cwd>\n/q\n</cwd>")]);
        let patch = resume_patch(&messages, &second, 5).expect("a patch");
        assert_eq!(
            serde_json::to_value(patch.sections.as_deref()).unwrap(),
            serde_json::json!({"cwd": "<cwd>\n/q\n</cwd>", "addendum": null})
        );
        messages.push(Message::from(patch));
        let now = get_current_system_message(&messages).unwrap();
        assert_eq!(get_system_message_text(&now), "P\n\n<cwd>\n/q\n</cwd>");
        assert!(resume_patch(&messages, &second, 6).is_none());
    }

    #[test]
    fn a_plain_text_prompt_gets_no_patch() {
        let plain = SystemMessage {
            content: Content::Text("old prompt".into()),
            ..SystemMessage::default()
        };
        let messages = vec![Message::from(plain)];
        assert!(resume_patch(&messages, &s(&[("preamble", "new")]), 1).is_none());
    }
}
