//! The model catalog and API keys from the environment.

/// The API key of a provider from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
/// `GEMINI_API_KEY`, `OPENROUTER_API_KEY`, ...).
pub fn env_api_key(provider: &str) -> Option<String> {
    let vars: &[&str] = match provider {
        "openai" => &["OPENAI_API_KEY"],
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "google" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "moonshotai" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        _ => &[],
    };
    vars.iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
}
