//! The model and thinking-level commands: `get_available_models`, `cycle_model`,
//! `get_available_thinking_levels`, `cycle_thinking_level`.

use serde_json::{json, Value};
use tern_ai::providers::supported_thinking_levels;
use tern_ai::ThinkingLevel;

use super::handler::Rpc;
use crate::models_file::available;

/// The level that follows `level` among `levels`, wrapping round.
fn next_level(levels: &[ThinkingLevel], level: ThinkingLevel) -> Option<ThinkingLevel> {
    let at = levels.iter().position(|l| *l == level);
    let next = at.map_or(0, |i| (i + 1) % levels.len());
    levels.get(next).copied()
}

impl Rpc {
    /// `get_available_models`.
    pub(super) fn available_models(&self) -> Value {
        json!({"models": available(&self.rt.agent.state().model)})
    }

    /// `cycle_model`: the next available model, with the thinking level clamped to it.
    pub(super) fn cycle_model(&self) -> Option<Value> {
        let agent = &self.rt.agent;
        let st = agent.state();
        let models = available(&st.model);
        if models.len() < 2 {
            return None;
        }
        let at = models
            .iter()
            .position(|m| m.provider == st.model.provider && m.id == st.model.id)
            .unwrap_or(0);
        let next = models[(at + 1) % models.len()].clone();
        let level = tern_ai::providers::clamp_thinking_level(&next, st.thinking_level);
        agent.set_model(next.clone());
        agent.set_thinking_level(level);
        let mut rec = self.rt.recorder.lock();
        rec.record_model_change(&next.provider, &next.id);
        if level != st.thinking_level {
            rec.record_thinking_change(level.as_str());
        }
        Some(json!({"model": next, "thinkingLevel": level, "isScoped": false}))
    }

    /// `get_available_thinking_levels`.
    pub(super) fn thinking_levels(&self) -> Value {
        json!({"levels": supported_thinking_levels(&self.rt.agent.state().model)})
    }

    /// `cycle_thinking_level`: `None` for a model without reasoning.
    pub(super) fn cycle_thinking_level(&self) -> Option<Value> {
        let agent = &self.rt.agent;
        let st = agent.state();
        if !st.model.reasoning {
            return None;
        }
        let level = next_level(&supported_thinking_levels(&st.model), st.thinking_level)?;
        agent.set_thinking_level(level);
        self.rt
            .recorder
            .lock()
            .record_thinking_change(level.as_str());
        Some(json!({ "level": level }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_cycle_round() {
        use ThinkingLevel::*;
        let levels = [Off, Low, High];
        assert_eq!(next_level(&levels, Off), Some(Low));
        assert_eq!(next_level(&levels, High), Some(Off));
        assert_eq!(next_level(&levels, Medium), Some(Off));
    }
}
