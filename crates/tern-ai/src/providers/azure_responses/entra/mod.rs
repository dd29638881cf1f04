//! Microsoft Entra ID for Azure OpenAI, a tern addition (pi-ai sends API keys only): a
//! deployment that refuses keys takes `Authorization: Bearer` with a token for
//! `https://cognitiveservices.azure.com/.default`.
//!
//! An API key (the `api_key` option or `AZURE_OPENAI_API_KEY`) always wins, so every run the
//! reference can make is made the same way. Without one, in order: the token in
//! [`AzureOptions::ad_token`](crate::AzureOptions::ad_token); the one
//! [`AzureOptions::ad_token_provider`](crate::AzureOptions::ad_token_provider) returns (called
//! per request, as the `openai` package calls `azureADTokenProvider`); then azure-identity's
//! environment flows ([`environment`]): a client secret, a client certificate
//! ([`certificate`]) or a federated token file for `AZURE_CLIENT_ID` in `AZURE_TENANT_ID`.
//! Their tokens are kept until five minutes before they expire (MSAL's refresh offset), or
//! half their life when that is over two hours (MSAL's `refresh_in`). The `openai` package
//! has no variable for a static Entra token, so tern reads none. Tokens and secrets are
//! never logged or quoted.

mod certificate;
mod environment;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use crate::model::Model;
use crate::providers::model_options::api_key;
use crate::stream_fn::StreamOptions;

/// The scope of Azure OpenAI (Cognitive Services) tokens.
const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// Tokens are asked for anew this long before they expire.
const REFRESH_OFFSET: Duration = Duration::from_secs(5 * 60);
/// The error text of an aborted request.
const ABORTED: &str = "Request was aborted";

/// How a request is authorized.
pub(super) enum Auth {
    /// The `api-key` header (the reference's only way).
    Key(String),
    /// `Authorization: Bearer`, with the token still to get.
    Entra(Source),
}

/// Where the Entra ID token comes from.
pub(super) enum Source {
    Token(String),
    Provider(crate::AzureTokenProvider),
    Environment(environment::Flow),
}

/// A token and how long it lasts from now.
pub(super) struct Minted {
    token: String,
    lifetime: Duration,
}

impl Minted {
    /// A token valid for `seconds` from now.
    fn lasting(token: String, seconds: u64) -> Minted {
        Minted {
            token,
            lifetime: Duration::from_secs(seconds),
        }
    }
}

/// Seconds as a JSON number or a string of digits.
fn seconds(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// How a request is authorized, or what was tried and what to set.
pub(super) fn auth(model: &Model, options: &StreamOptions) -> Result<Auth, String> {
    if let Some(key) = api_key(model, options) {
        return Ok(Auth::Key(key));
    }
    if let Some(token) = options.azure.ad_token.clone().filter(|t| !t.is_empty()) {
        return Ok(Auth::Entra(Source::Token(token)));
    }
    if let Some(provider) = options.azure.ad_token_provider.clone() {
        return Ok(Auth::Entra(Source::Provider(provider)));
    }
    if let Some(flow) = environment::flow(options) {
        return Ok(Auth::Entra(Source::Environment(flow)));
    }
    let vars = crate::providers::catalog::env_api_key_vars(&model.provider);
    let mut tried = vec!["the apiKey option".to_string()];
    tried.extend(vars.iter().map(|v| v.to_string()));
    let unset = environment::unset(options);
    Err(format!(
        "No API key for provider: {} (tried {}, the azure ad_token and ad_token_provider \
         options, and Microsoft Entra ID from the environment, where {} unset); set \
         AZURE_OPENAI_API_KEY, or for Entra ID AZURE_TENANT_ID, AZURE_CLIENT_ID and \
         AZURE_CLIENT_SECRET (or AZURE_CLIENT_CERTIFICATE_PATH or AZURE_FEDERATED_TOKEN_FILE)",
        model.provider,
        tried.join(", "),
        match unset.len() {
            1 => format!("{} is", unset.join("")),
            _ => format!("{} are", unset.join(", ")),
        }
    ))
}

fn tokens() -> &'static Mutex<HashMap<String, (String, Instant)>> {
    static TOKENS: OnceLock<Mutex<HashMap<String, (String, Instant)>>> = OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

fn cached(key: &str) -> Option<String> {
    let (token, until) = tokens().lock().get(key).cloned()?;
    (until > Instant::now()).then_some(token)
}

/// Keeps `minted` under `key` until it should be renewed; its token.
fn keep(key: String, minted: Minted) -> String {
    let Minted { token, lifetime } = minted;
    let renew_after = if lifetime > Duration::from_secs(2 * 3600) {
        lifetime / 2
    } else {
        lifetime.saturating_sub(REFRESH_OFFSET)
    };
    if !renew_after.is_zero() {
        tokens()
            .lock()
            .insert(key, (token.clone(), Instant::now() + renew_after));
    }
    token
}

/// The bearer token of `source`.
pub(super) async fn token(source: Source, options: &StreamOptions) -> Result<String, String> {
    let token = match source {
        Source::Token(t) => t,
        Source::Provider(p) => {
            let asked = p.token();
            let answer = tokio::select! {
                biased;
                _ = options.signal.cancelled() => return Err(ABORTED.into()),
                a = asked => a,
            };
            answer.map_err(|e| format!("Azure OpenAI: the ad_token_provider failed: {e}"))?
        }
        Source::Environment(flow) => {
            let key = flow.key();
            match cached(&key) {
                Some(token) => token,
                None => keep(key, environment::token(&flow, options).await?),
            }
        }
    };
    if token.is_empty() || token.contains(['\r', '\n']) {
        return Err(
            "Azure OpenAI: the Entra ID token is empty or has a line break; check where it \
             comes from"
                .into(),
        );
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifetimes_are_numbers_or_strings() {
        assert_eq!(seconds(Some(&json!(3599))), Some(3599));
        assert_eq!(seconds(Some(&json!("3599"))), Some(3599));
        assert_eq!(seconds(Some(&json!("soon"))), None);
    }

    #[test]
    fn long_lived_tokens_are_renewed_at_half_life() {
        let key = |n: &str| format!("test-keep-{n}");
        keep(key("short"), Minted::lasting("a".into(), 60));
        assert_eq!(cached(&key("short")), None);
        keep(key("hour"), Minted::lasting("b".into(), 3600));
        assert_eq!(cached(&key("hour")).as_deref(), Some("b"));
        let day = Minted::lasting("c".into(), 86_400);
        keep(key("day"), day);
        let until = tokens().lock().get(&key("day")).map(|(_, u)| *u).unwrap();
        let left = until - Instant::now();
        assert!(left <= Duration::from_secs(43_200) && left > Duration::from_secs(43_000));
    }
}
