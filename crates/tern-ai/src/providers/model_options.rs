//! What every request builder reads from the model and the options: compatibility flags,
//! the output-token budget, the API key, extra headers, the body's opening fields.

use serde_json::{json, Map, Value};

use super::{catalog, transform};
use crate::model::Model;
use crate::stream_fn::{Context, StreamOptions};

/// The opening fields of a streamed request body, in the SDKs' order: `model`, the
/// transcript under `key` (`messages`, or `input` for Responses), `stream: true`.
pub(crate) fn stream_body(model: &str, key: &str, transcript: Vec<Value>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(key.into(), Value::Array(transcript));
    body.insert("stream".into(), json!(true));
    body
}

/// A field of `model.compat`, if set.
pub(crate) fn compat<'m>(model: &'m Model, key: &str) -> Option<&'m Value> {
    model
        .extra
        .get("compat")
        .and_then(|c| c.get(key))
        .filter(|v| !v.is_null())
}

/// `options.maxTokens` or the model's, clamped to what fits the context window after a rough
/// estimate of the prompt (the reference's `clampMaxTokensToContext`).
pub(crate) fn resolve_max_tokens(model: &Model, context: &Context, options: &StreamOptions) -> u64 {
    let requested = options.max_tokens.unwrap_or(model.max_tokens);
    let window = model.context_window as i64;
    if window <= 0 {
        return requested.max(1);
    }
    let input = transform::estimate_tokens(&context.messages) as i64;
    let margin = 4096i64.max(((input as f64) * 0.15).ceil() as i64);
    let mut room = window - input - margin;
    if room < 32768 {
        room = 32768i64.min(window - input - 4096);
    }
    (requested as i64).min(room.max(1)).max(0) as u64
}

/// The API key: the option, else the environment (see [`catalog::env_api_key`]).
pub(crate) fn api_key(model: &Model, options: &StreamOptions) -> Option<String> {
    options
        .api_key
        .clone()
        .filter(|k| !k.is_empty())
        .or_else(|| catalog::env_api_key_in(&model.provider, options))
}

/// Model and option headers merged into `headers` (later wins; `null` removes).
pub(crate) fn merge_headers(
    headers: &mut Vec<(String, String)>,
    extra: Option<&serde_json::Map<String, Value>>,
) {
    let Some(extra) = extra else { return };
    for (k, v) in extra {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        match v {
            Value::String(s) => headers.push((k.clone(), s.clone())),
            Value::Null => {}
            other => headers.push((k.clone(), other.to_string())),
        }
    }
}

/// `options.cacheRetention`, `short` by default.
pub(crate) fn cache_retention(options: &StreamOptions) -> &str {
    options.cache_retention.as_deref().unwrap_or("short")
}
