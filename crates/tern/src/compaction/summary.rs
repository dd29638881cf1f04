//! The summary request: the conversation serialized as text (so the model does not carry
//! it on), pi's instructions, and the model's answer checked before it becomes a checkpoint.

use std::sync::Arc;

use serde_json::{json, Value};
use tern_ai::{Context, Message, Model, StopReason, StreamFn, StreamOptions, Usage};

use super::estimate::js_len;
use super::prompts;
use super::CompactError;
use crate::session_entries::content_text;

/// Characters of a tool result kept in the serialized conversation.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// The first `max` UTF-16 units of `text`, then a marker naming how many were cut.
fn truncate(text: &str, max: usize) -> String {
    let len = js_len(text);
    if len <= max {
        return text.to_string();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        &text[..end],
        len - max
    )
}

/// The conversation as pi's summarizer reads it (`serializeConversation`): `[User]:`,
/// `[Assistant]:`, `[Assistant tool calls]:` and `[Tool result]:` paragraphs, thinking
/// left out.
pub fn serialize(messages: &[Message]) -> String {
    let mut parts = Vec::new();
    for m in messages {
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        match v["role"].as_str() {
            // Custom messages reach the model as the user's.
            Some("user" | "custom") => {
                let text = content_text(&v["content"], "");
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Some("assistant") => {
                let blocks = v["content"].as_array().cloned().unwrap_or_default();
                let calls: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| {
                        let args = b["arguments"]
                            .as_object()
                            .map(|a| {
                                a.iter()
                                    .map(|(k, v)| format!("{k}={v}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            })
                            .unwrap_or_default();
                        format!("{}({args})", b["name"].as_str().unwrap_or_default())
                    })
                    .collect();
                if blocks.iter().any(|b| b["type"] == "text") {
                    parts.push(format!(
                        "[Assistant]: {}",
                        content_text(&v["content"], "\n")
                    ));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Some("toolResult") => {
                let text = content_text(&v["content"], "");
                if !text.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate(&text, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// The prompt of a history summary (pi's `generateSummary`).
pub fn history_prompt(
    messages: &[Message],
    previous: Option<&str>,
    instructions: Option<&str>,
) -> String {
    let mut base = if previous.is_some() {
        prompts::UPDATE.to_string()
    } else {
        prompts::SUMMARIZE.to_string()
    };
    if let Some(i) = instructions {
        base = format!("{base}\n\nAdditional focus: {i}");
    }
    let mut text = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize(messages)
    );
    if let Some(p) = previous {
        text.push_str(&format!("<previous-summary>\n{p}\n</previous-summary>\n\n"));
    }
    text.push_str(&base);
    text
}

/// The prompt of a split turn's start (pi's `generateTurnPrefixSummary`).
pub fn turn_prefix_prompt(messages: &[Message], instructions: Option<&str>) -> String {
    let mut text = format!(
        "# Conversation\n{}\n\n# Instructions\n{}",
        serialize(messages),
        prompts::TURN_PREFIX
    );
    if let Some(i) = instructions {
        text = format!("{text}\n\nAdditional focus: {i}");
    }
    text
}

/// Who answers summary requests: the session's model through its stream function.
#[derive(Clone)]
pub struct Summarizer {
    /// The stream function (not the journaled one: a summary is not a step of a run).
    pub stream_fn: Arc<dyn StreamFn>,
    /// Options of the session's requests (key, session id, retries, headers).
    pub options: StreamOptions,
}

impl Summarizer {
    /// Asks `model` for the summary `prompt` asks for; `label` names the request in errors
    /// (pi's "Summarization", "Turn prefix summarization").
    pub async fn ask(
        &self,
        model: &Model,
        thinking: tern_ai::ThinkingLevel,
        prompt: String,
        label: &str,
    ) -> Result<(String, Usage), CompactError> {
        let now = tern_ai::clock::now_ms();
        let system: Message = serde_json::from_value(
            json!({"role": "system", "content": prompts::SYSTEM, "timestamp": now}),
        )
        .map_err(|e| CompactError::Failed(format!("{label} failed: {e}")))?;
        let user: Message = serde_json::from_value(json!({
            "role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": now
        }))
        .map_err(|e| CompactError::Failed(format!("{label} failed: {e}")))?;
        let mut options = self.options.clone();
        // One-off prompts: no cache writes.
        options.cache_retention = Some("none".into());
        if options.api_key.is_none() {
            options.api_key = crate::models_file::api_key(&model.provider);
        }
        options.reasoning =
            (model.reasoning && thinking != tern_ai::ThinkingLevel::Off).then_some(thinking);
        let stream = self
            .stream_fn
            .stream(model, Context::new(vec![system, user]), &options)
            .map_err(|e| CompactError::Failed(format!("{label} failed: {e}")))?;
        let answer = stream.result().await;
        match answer.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                let why = answer
                    .error_message
                    .clone()
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "Unknown error".into());
                return Err(CompactError::Failed(format!("{label} failed: {why}")));
            }
            StopReason::Length => {
                return Err(CompactError::Failed(format!(
                    "{label} failed: generation hit the token cap and the summary is incomplete"
                )))
            }
            _ => {}
        }
        if answer.tool_calls().next().is_some() {
            return Err(CompactError::Failed(format!(
                "{label} attempted to call a tool"
            )));
        }
        let text = answer
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("\n");
        Ok((text, answer.usage.clone().into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_tool_result_is_cut_with_a_marker() {
        let t = truncate(&"x".repeat(2005), 2000);
        assert!(t.ends_with("x\n\n[... 5 more characters truncated]"), "{t}");
        assert_eq!(truncate("short", 2000), "short");
    }
}
