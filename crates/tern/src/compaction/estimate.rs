//! pi's token estimates: characters / 4 (rounded up) per message, images as 4,800
//! characters, and a provider's usage where one was reported.

use serde_json::Value;
use tern_ai::{Message, StopReason, Usage};

/// Characters an image counts for.
const IMAGE_CHARS: usize = 4800;

/// The length JavaScript gives a string (UTF-16 code units), which pi's estimate counts.
pub fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

fn content_chars(content: &Value) -> usize {
    match content {
        Value::String(s) => js_len(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map_or(0, js_len),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// A message's estimated tokens (pi's `estimateTokens`).
pub fn estimate_tokens(message: &Message) -> u64 {
    let Ok(v) = serde_json::to_value(message) else {
        return 0;
    };
    let chars = match v["role"].as_str() {
        Some("system") => {
            let sections: usize = v["sections"]
                .as_object()
                .map(|s| s.values().filter_map(Value::as_str).map(js_len).sum())
                .unwrap_or(0);
            let tools = match &v["toolsAdded"] {
                Value::Null => 0,
                t => js_len(&t.to_string()),
            };
            content_chars(&v["content"]) + sections + tools
        }
        Some("user" | "toolResult" | "custom") => content_chars(&v["content"]),
        Some("assistant") => v["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| match b["type"].as_str() {
                        Some("text") => b["text"].as_str().map_or(0, js_len),
                        Some("thinking") => b["thinking"].as_str().map_or(0, js_len),
                        Some("toolCall") => {
                            b["name"].as_str().map_or(0, js_len)
                                + js_len(&b["arguments"].to_string())
                        }
                        _ => 0,
                    })
                    .sum()
            })
            .unwrap_or(0),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

/// The context size a usage reports (pi's `calculateContextTokens`).
pub fn context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        return usage.total_tokens;
    }
    usage.input + usage.output + usage.cache_read + usage.cache_write
}

/// The usage of an assistant message that reports a real one (not aborted, failed or
/// all zero).
fn valid_usage(message: &Message) -> Option<&Usage> {
    let a = message.as_assistant()?;
    let bad = matches!(a.stop_reason, StopReason::Aborted | StopReason::Error);
    (!bad && context_tokens(&a.usage) > 0).then_some(&a.usage)
}

/// The context size of `messages` (pi's `estimateContextTokens`): the last valid usage plus
/// the estimate of what followed it, or the estimate of everything.
pub fn estimate_context_tokens(messages: &[Message]) -> u64 {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| valid_usage(m).map(|u| (i, u)));
    match last {
        Some((i, usage)) => {
            context_tokens(usage) + messages[i + 1..].iter().map(estimate_tokens).sum::<u64>()
        }
        None => messages.iter().map(estimate_tokens).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_counts_utf16_units_over_four_rounded_up() {
        assert_eq!(estimate_tokens(&Message::user_text("abcde")), 2);
        // One astral character is two UTF-16 units, as in JavaScript.
        assert_eq!(estimate_tokens(&Message::user_text("😀😀")), 1);
        assert_eq!(estimate_tokens(&Message::user_text("")), 0);
    }
}
