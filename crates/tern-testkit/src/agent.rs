//! Helpers for agent runs in tests: a model pointed at a local Chat Completions server, and
//! what the tools answered in a transcript.

use tern_ai::{content_text, Message, Model};

/// An `openai-completions` model named `id` of `provider`, served at `base_url`: text
/// input, a 128k context window and `max_tokens` output, as a local scripted server is
/// declared.
pub fn chat_model(id: &str, provider: &str, base_url: &str, max_tokens: u64) -> Model {
    let mut m = Model::new(id, "openai-completions", provider, base_url);
    m.input = vec!["text".into()];
    m.context_window = 128_000;
    m.max_tokens = max_tokens;
    m
}

/// Each tool result of `messages`, in order: the tool's name, whether it is an error, and
/// its text blocks joined by newlines.
pub fn tool_results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((
                r.tool_name.clone(),
                r.is_error,
                content_text(&r.content, "\n"),
            )),
            _ => None,
        })
        .collect()
}
