//! Context-overflow detection from error messages and usage (`isContextOverflow`).

use std::sync::OnceLock;

use regex::Regex;

use crate::message::{AssistantMessage, StopReason};
use crate::schema::ecma_regex::js_regex_ignore_case;

/// pi's overflow messages: ECMAScript sources, all with the `i` flag (so `\w`, `\d` and `.`
/// are ECMAScript's, translated).
const OVERFLOW: [&str; 27] = [
    r"prompt (?:is )?too long",
    r"prompt exceeds max length",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"context window exceeded",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"range of input length should be",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
];

/// Errors that are not an overflow though an overflow pattern may match them.
const NOT_OVERFLOW: [&str; 3] = [
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

/// Cerebras answers an overflow with a status line and no body.
const CEREBRAS_BODYLESS: &str = r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)";

type Patterns = (Vec<Regex>, Vec<Regex>, Option<Regex>);

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let build = |v: &[&str]| v.iter().filter_map(|p| js_regex_ignore_case(p)).collect();
        (
            build(&OVERFLOW),
            build(&NOT_OVERFLOW),
            js_regex_ignore_case(CEREBRAS_BODYLESS),
        )
    })
}

/// Whether a response failed (or nearly failed) because the prompt did not fit the window.
pub fn is_context_overflow(message: &AssistantMessage, context_window: u64) -> bool {
    let (overflow, non, cerebras) = patterns();
    if message.stop_reason == StopReason::Error {
        if let Some(err) = message.error_message.as_deref().filter(|e| !e.is_empty()) {
            if !non.iter().any(|p| p.is_match(err)) {
                if overflow.iter().any(|p| p.is_match(err)) {
                    return true;
                }
                if message.provider == "cerebras"
                    && cerebras.as_ref().is_some_and(|c| c.is_match(err))
                {
                    return true;
                }
            }
        }
    }
    let input = message.usage.input.saturating_add(message.usage.cache_read);
    if context_window > 0 && message.stop_reason == StopReason::Stop && input > context_window {
        return true;
    }
    if context_window > 0
        && message.stop_reason == StopReason::Length
        && message.usage.output == 0
        && input as f64 >= context_window as f64 * 0.99
    {
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_translates() {
        let (overflow, not_overflow, cerebras) = patterns();
        assert_eq!(overflow.len(), OVERFLOW.len());
        assert_eq!(not_overflow.len(), NOT_OVERFLOW.len());
        assert!(cerebras.is_some());
    }

    #[test]
    fn matches_as_the_reference() {
        // (provider, error message, pi-ai's `isContextOverflow(message, 1000)`), the last
        // computed by the reference; the messages probe ECMAScript's `i` flag without `u`,
        // its ASCII `\w` and `\d` and its `.` that stops at U+2028.
        let cases = [
            (
                "openai",
                "Your input EXCEEDS THE CONTEXT WINDOW of this model",
                true,
            ),
            ("openai", "café API error (413): payload", false),
            ("openai", "Anthropic API error (413): payload", true),
            ("openai", "413", true),
            (
                "openai",
                "Input token count 5\u{2028}exceeds the maximum",
                false,
            ),
            (
                "openai",
                "Input token count 5 exceeds the maximum of 4",
                true,
            ),
            (
                "openai",
                "\u{212A}imi: exceeded model to\u{212A}en limit",
                false,
            ),
            (
                "openai",
                "Maximum context length is \u{663}\u{663} tokens",
                false,
            ),
            ("openai", "Maximum context length is 33 tokens", true),
            ("openai", "Rate limit: too many tokens", false),
            ("openai", "THROTTLING ERROR: prompt is too long", false),
            ("cerebras", "400 status code (no body)", true),
            ("cerebras", "413(NO BODY)", true),
            ("openai", "400 status code (no body)", false),
        ];
        for (provider, error, expected) in cases {
            let message = AssistantMessage {
                provider: provider.into(),
                stop_reason: StopReason::Error,
                error_message: Some(error.into()),
                ..AssistantMessage::default()
            };
            assert_eq!(is_context_overflow(&message, 1000), expected, "{error:?}");
        }
    }
}
