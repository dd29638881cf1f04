//! Which model runs: provider, model id, base URL and key from the arguments, the config
//! file and the environment; the thinking level; the stream functions behind them.

use std::sync::Arc;

use crate::models_file;
use crate::secrets::eprintln_redacted;
use crate::server_limits::{self, WindowSetting};
use serde_json::json;
use tern_ai::providers::{catalog, Providers};
use tern_ai::{Model, StreamFn, ThinkingLevel};

use crate::cli::Args;
use crate::config::Config;
use crate::model_lookup::{self, Lookup};
use crate::usage_error::UsageError;

/// The model selection, resolved.
#[derive(Clone, Debug)]
pub struct ModelChoice {
    /// The model.
    pub model: Model,
    /// Explicit API key (`--api-key` or config), if any.
    pub api_key: Option<String>,
    /// The thinking level of a `--model NAME:LEVEL` suffix.
    pub thinking: Option<ThinkingLevel>,
}

/// Providers tried, in order, when neither `--provider` nor `--model` names one, with their
/// default model.
const DEFAULT_MODELS: [(&str, &str); 4] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-4o-mini"),
    ("google", "gemini-2.5-flash"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
];

/// The context window of a model the catalog does not know (pi's `models.json` default).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// The output token limit of a model the catalog does not know (pi's `models.json` default).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 16_384;

/// A model served by an OpenAI-compatible server that the catalog does not know, with pi's
/// defaults for a custom model's context window and output limit.
pub fn on_the_fly_model(id: &str, provider: &str, base_url: &str) -> Model {
    let mut m = Model::new(id, "openai-completions", provider, base_url);
    m.input = vec!["text".into()];
    m.context_window = DEFAULT_CONTEXT_WINDOW;
    m.max_tokens = DEFAULT_MAX_OUTPUT_TOKENS;
    m.extra.insert(
        "compat".into(),
        json!({"supportsStore": false, "maxTokensField": "max_tokens"}),
    );
    m
}

/// The text telling a user how to configure a provider.
pub fn provider_help() -> String {
    "  export ANTHROPIC_API_KEY=...   (or OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY, ...)\n  \
     tern --provider openai --model gpt-4o-mini --api-key KEY \"prompt\"\n  \
     tern --base-url http://127.0.0.1:8080/v1 --model local \"prompt\"   (llama.cpp, Ollama, vLLM)\n  \
     tern --demo                     (offline walkthrough with a scripted model)\n  \
     defaults can go in the config file: provider, model, base_url (see `tern --help`)"
        .to_string()
}

/// Resolves provider, model, base URL and key from arguments, config, `models.json` and
/// environment; the context window and output limit from `--context-window` /
/// `--max-output-tokens` (or the config's `context_window` / `max_output_tokens`) when given,
/// and from the server's `/models` for `--context-window auto`.
pub async fn resolve_model(args: &Args, config: &Config) -> Result<ModelChoice, UsageError> {
    let mut choice = resolve_catalog_model(args, config)?;
    let window = args.context_window.or(config.context_window);
    let output = args.max_output_tokens.or(config.max_output_tokens);
    if window == Some(WindowSetting::Tokens(0)) {
        return Err(UsageError("--context-window must be at least 1".into()));
    }
    if output == Some(0) {
        return Err(UsageError("--max-output-tokens must be at least 1".into()));
    }
    match window {
        Some(WindowSetting::Tokens(w)) => choice.model.context_window = w,
        Some(WindowSetting::Auto) => apply_served_limits(&mut choice, output.is_none()).await,
        None => {}
    }
    if let Some(o) = output {
        choice.model.max_tokens = o;
    }
    if choice.model.max_tokens > choice.model.context_window {
        return Err(UsageError(format!(
            "the output limit ({} tokens) is larger than the context window ({} tokens); \
             lower --max-output-tokens or raise --context-window",
            choice.model.max_tokens, choice.model.context_window
        )));
    }
    Ok(choice)
}

/// The window (and, when no flag sets it, the output limit) the server reports for the
/// model; what it does not report keeps its value, said once on stderr.
async fn apply_served_limits(choice: &mut ModelChoice, output_unset: bool) {
    let m = &mut choice.model;
    let key = choice
        .api_key
        .clone()
        .or_else(|| models_file::api_key(&m.provider));
    let reported = server_limits::query(&m.base_url, &m.id, key.as_deref()).await;
    let reported = match reported {
        Ok(r) => r,
        Err(e) => {
            eprintln_redacted!(
                "tern: note: cannot read the server's model list ({e}); the context window \
                 stays {} tokens",
                m.context_window
            );
            return;
        }
    };
    match reported.context_window {
        Some(w) => m.context_window = w,
        None => eprintln_redacted!(
            "tern: note: {}/models reports no context window for {}; it stays {} tokens",
            m.base_url.trim_end_matches('/'),
            m.id,
            m.context_window
        ),
    }
    if output_unset {
        // A reply may not be longer than the window it has to fit in.
        m.max_tokens = reported
            .max_tokens
            .unwrap_or(m.max_tokens)
            .min(m.context_window);
    }
}

fn resolve_catalog_model(args: &Args, config: &Config) -> Result<ModelChoice, UsageError> {
    let mut provider = args.provider.clone().or(config.provider.clone());
    let mut id = args.model.clone().or(config.model.clone());
    let base_url = args.base_url.clone().or(config.base_url.clone());
    let api_key = args.api_key.clone().or(config.api_key.clone());
    let providers = models_file::providers();
    if provider.is_none() {
        if let Some((p, rest)) = id.as_deref().and_then(|m| m.split_once('/')) {
            if providers.iter().any(|x| x == p) {
                provider = Some(p.to_string());
                id = Some(rest.to_string());
            }
        }
    }
    if let Some(url) = base_url {
        let provider = provider.unwrap_or_else(|| "local".to_string());
        let id = id.unwrap_or_else(|| "local".to_string());
        // A catalog provider's model is looked up as pi does; any other id is the server's.
        let found = match providers.contains(&provider) {
            true => model_lookup::find(&id, Some(&provider), &|_| true),
            false => Lookup::NotFound,
        };
        let (model, thinking) = match found {
            Lookup::Found(m, level) => {
                let mut m = m.clone();
                m.base_url = url;
                (m, level)
            }
            _ => match model_lookup::split_thinking(&id) {
                Some((base, level)) => (on_the_fly_model(base, &provider, &url), Some(level)),
                None => (on_the_fly_model(&id, &provider, &url), None),
            },
        };
        return Ok(ModelChoice {
            model,
            api_key,
            thinking,
        });
    }
    let has_key = |p: &str| models_file::has_key(p, api_key.is_some());
    let mut thinking = None;
    let model = match (provider, id) {
        (p, Some(id)) => match model_lookup::find(&id, p.as_deref(), &has_key) {
            Lookup::Found(m, level) => {
                thinking = level;
                m.clone()
            }
            Lookup::Ambiguous(candidates) => {
                let names: Vec<String> = candidates
                    .iter()
                    .map(|m| format!("{}/{}", m.provider, m.id))
                    .collect();
                return Err(UsageError(format!(
                    "model {id} is offered by several providers ({}); name one with --provider \
                     or as provider/id",
                    names.join(", ")
                )));
            }
            Lookup::NotFound => {
                return Err(UsageError(match p {
                    Some(p) => format!(
                        "unknown model {p}/{id}; list the models with --list-models, or for a \
                         server the catalog does not list, pass --base-url"
                    ),
                    None => format!(
                        "unknown model {id}; list the models with --list-models, name its \
                         provider with --provider, or pass --base-url for a local server"
                    ),
                }))
            }
        },
        (Some(p), None) => {
            let preferred = DEFAULT_MODELS
                .iter()
                .find(|(dp, _)| *dp == p)
                .and_then(|(dp, di)| models_file::get_model(dp, di));
            preferred
                .or_else(|| {
                    models_file::models()
                        .iter()
                        .find(|m| m.provider == p)
                        .cloned()
                })
                .ok_or_else(|| {
                    UsageError(format!(
                        "unknown provider {p}; known providers: {}",
                        providers.join(", ")
                    ))
                })?
        }
        (None, None) => DEFAULT_MODELS
            .iter()
            .find(|(p, _)| has_key(p))
            .and_then(|(p, id)| models_file::get_model(p, id))
            .ok_or_else(|| {
                UsageError(format!(
                    "no API key found and no --base-url given, so there is no model to run.\n{}",
                    provider_help()
                ))
            })?,
    };
    if !has_key(&model.provider) {
        let vars = catalog::env_api_key_vars(&model.provider);
        let var = vars
            .last()
            .copied()
            .unwrap_or("the provider's API key variable");
        return Err(UsageError(format!(
            "no API key for provider {} (set {var} or pass --api-key), so nothing was run.\n{}",
            model.provider,
            provider_help()
        )));
    }
    Ok(ModelChoice {
        model,
        api_key,
        thinking,
    })
}

/// Parses a thinking level name.
pub fn parse_thinking(s: &str) -> Result<ThinkingLevel, UsageError> {
    ThinkingLevel::parse(s).ok_or_else(|| {
        UsageError(format!(
            "unknown thinking level {s}; use off, minimal, low, medium, high, xhigh or max"
        ))
    })
}

/// The built-in providers.
pub fn providers() -> Arc<dyn StreamFn> {
    Arc::new(Providers)
}
