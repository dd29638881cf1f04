//! Thinking levels: which a model supports, the nearest supported one, and the level a
//! request asks for (the reference's `getSupportedThinkingLevels` / `clampThinkingLevel`).

use serde_json::Value;

use crate::message::ThinkingLevel;
use crate::model::Model;
use crate::stream_fn::StreamOptions;

/// `model.thinkingLevelMap[level]`: `None` when absent, `Some(Value::Null)` when explicitly
/// unsupported.
pub(crate) fn thinking_level_map<'m>(model: &'m Model, level: &str) -> Option<&'m Value> {
    model
        .extra
        .get("thinkingLevelMap")
        .and_then(|m| m.get(level))
}

/// The levels a model supports (the reference's `getSupportedThinkingLevels`).
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .iter()
        .copied()
        .filter(|l| {
            let mapped = thinking_level_map(model, l.as_str());
            if mapped.is_some_and(Value::is_null) {
                return false;
            }
            if matches!(l, ThinkingLevel::Xhigh | ThinkingLevel::Max) {
                return mapped.is_some();
            }
            true
        })
        .collect()
}

/// The nearest supported level, preferring higher ones (`clampThinkingLevel`).
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_thinking_levels(model);
    if available.contains(&level) {
        return level;
    }
    let idx = ThinkingLevel::ALL
        .iter()
        .position(|l| *l == level)
        .unwrap_or(0);
    for l in &ThinkingLevel::ALL[idx..] {
        if available.contains(l) {
            return *l;
        }
    }
    for l in ThinkingLevel::ALL[..idx].iter().rev() {
        if available.contains(l) {
            return *l;
        }
    }
    available.first().copied().unwrap_or(ThinkingLevel::Off)
}

/// The requested reasoning level after clamping; `None` for off.
pub(crate) fn reasoning_effort(model: &Model, options: &StreamOptions) -> Option<ThinkingLevel> {
    let level = options.reasoning?;
    if level == ThinkingLevel::Off {
        return None;
    }
    let clamped = clamp_thinking_level(model, level);
    (clamped != ThinkingLevel::Off).then_some(clamped)
}

/// The effort word of a level for Claude's adaptive thinking (Anthropic and Bedrock): the
/// model's `thinkingLevelMap` entry, else `low` / `medium` / `high`.
pub(crate) fn claude_effort(model: &Model, level: ThinkingLevel) -> String {
    if let Some(Value::String(s)) = thinking_level_map(model, level.as_str()) {
        return s.clone();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low".into(),
        ThinkingLevel::Medium => "medium".into(),
        _ => "high".into(),
    }
}

/// The thinking budget of a level for Claude (Anthropic and Bedrock): the caller's, else the
/// reference's defaults (levels above `high` use `high`'s).
pub(crate) fn claude_budget(level: ThinkingLevel, options: &StreamOptions) -> u64 {
    let b = options.thinking_budgets.clone().unwrap_or_default();
    match level {
        ThinkingLevel::Minimal => b.minimal.unwrap_or(1024),
        ThinkingLevel::Low => b.low.unwrap_or(2048),
        ThinkingLevel::Medium => b.medium.unwrap_or(8192),
        _ => b.high.unwrap_or(16384),
    }
}
