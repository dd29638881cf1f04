//! The model catalog (current models of the built-in APIs, as data: ids, APIs, base URLs,
//! context windows, output limits, prices, thinking maps) and API keys from the environment.
//!
//! ```
//! use tern_ai::providers::catalog::{get_model, models};
//! let m = get_model("anthropic", "claude-sonnet-4-5").expect("in the catalog");
//! assert_eq!(m.api, "anthropic-messages");
//! assert!(models().iter().any(|m| m.provider == "google"));
//! ```

use std::sync::OnceLock;

use crate::model::Model;

const CATALOG_JSON: &str = include_str!("catalog.json");

/// Every model of the catalog (generated from pi-ai 1.6.0's catalog for the providers whose
/// APIs tern implements; OpenRouter trimmed to the major model families).
pub fn models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| serde_json::from_str(CATALOG_JSON).unwrap_or_default())
}

/// The model `id` of `provider`, if the catalog has it.
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    models()
        .iter()
        .find(|m| m.provider == provider && m.id == id)
        .cloned()
}

/// The providers in the catalog, in first-seen order.
pub fn providers() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in models() {
        if !out.contains(&m.provider) {
            out.push(m.provider.clone());
        }
    }
    out
}

/// The environment variables that hold a provider's API key, in lookup order.
pub fn env_api_key_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "openai" => &["OPENAI_API_KEY"],
        "anthropic" => &[
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_OAUTH_TOKEN",
            "ANTHROPIC_API_KEY",
        ],
        "google" => &["GEMINI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        _ => &[],
    }
}

/// The API key of a provider from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
/// `GEMINI_API_KEY`, `OPENROUTER_API_KEY`, ...). `StreamOptions::api_key` overrides it per
/// call.
pub fn env_api_key(provider: &str) -> Option<String> {
    env_api_key_vars(provider)
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_loads_every_api() {
        let all = models();
        assert!(all.len() > 100);
        for api in crate::providers::APIS {
            assert!(all.iter().any(|m| m.api == api), "{api}");
        }
        let m = get_model("openai", "gpt-4.1-mini").unwrap();
        assert!(m.context_window > 0 && m.max_tokens > 0 && m.cost.input > 0.0);
    }
}
