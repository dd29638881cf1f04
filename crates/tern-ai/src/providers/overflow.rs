//! Context-overflow detection from error messages and usage (`isContextOverflow`).

use std::sync::OnceLock;

use regex::Regex;

use crate::message::{AssistantMessage, StopReason};

fn patterns() -> &'static (Vec<Regex>, Vec<Regex>, Option<Regex>) {
    static P: OnceLock<(Vec<Regex>, Vec<Regex>, Option<Regex>)> = OnceLock::new();
    P.get_or_init(|| {
        let overflow = [
            r"(?i)prompt (?:is )?too long",
            r"(?i)prompt exceeds max length",
            r"(?i)request_too_large",
            r"(?i)input is too long for requested model",
            r"(?i)exceeds the context window",
            r"(?i)exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
            r"(?i)context window exceeded",
            r"(?i)input token count.*exceeds the maximum",
            r"(?i)maximum prompt length is \d+",
            r"(?i)reduce the length of the messages",
            r"(?i)maximum context length is \d+ tokens",
            r"(?i)exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
            r"(?i)input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
            r"(?i)exceeds the limit of \d+",
            r"(?i)exceeds the available context size",
            r"(?i)greater than the context length",
            r"(?i)context window exceeds limit",
            r"(?i)exceeded model token limit",
            r"(?i)too large for model with \d+ maximum context length",
            r"(?i)prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
            r"(?i)model_context_window_exceeded",
            r"(?i)prompt too long; exceeded (?:max )?context length",
            r"(?i)range of input length should be",
            r"(?i)context[_ ]length[_ ]exceeded",
            r"(?i)too many tokens",
            r"(?i)token limit exceeded",
            r"(?i)^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",
        ];
        let non = [
            r"(?i)^(Throttling error|Service unavailable):",
            r"(?i)rate limit",
            r"(?i)too many requests",
        ];
        let build = |v: &[&str]| v.iter().filter_map(|p| Regex::new(p).ok()).collect::<Vec<_>>();
        let cerebras = Regex::new(r"(?i)^4(?:00|13)\s*(?:status code)?\s*\(no body\)").ok();
        (build(&overflow), build(&non), cerebras)
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
