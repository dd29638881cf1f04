//! Microsoft Entra ID for Azure OpenAI, a tern addition (pi-ai sends API keys only): a
//! deployment that refuses keys takes `Authorization: Bearer` with a token for
//! `https://cognitiveservices.azure.com/.default`.
//!
//! An API key (the `api_key` option or `AZURE_OPENAI_API_KEY`) always wins, so every run the
//! reference can make is made the same way. Without one, in order: the token in
//! [`AzureOptions::ad_token`](crate::AzureOptions::ad_token); the one
//! [`AzureOptions::ad_token_provider`](crate::AzureOptions::ad_token_provider) returns (called
//! per request, as the `openai` package calls `azureADTokenProvider`); then azure-identity's
//! environment flows against `{AZURE_AUTHORITY_HOST or
//! https://login.microsoftonline.com}/{AZURE_TENANT_ID}/oauth2/v2.0/token` for
//! `AZURE_CLIENT_ID`: a client secret (`AZURE_CLIENT_SECRET`, `EnvironmentCredential`), else a
//! federated token file (`AZURE_FEDERATED_TOKEN_FILE`, `WorkloadIdentityCredential`, read
//! anew for each token). Their tokens are kept until five minutes before they expire (MSAL's
//! refresh offset). The `openai` package has no variable for a static Entra token, so tern
//! reads none.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use ring::digest;
use serde_json::Value;

use crate::model::Model;
use crate::providers::http::{post_form, SendError};
use crate::providers::model_options::api_key;
use crate::stream_fn::StreamOptions;

/// The scope of Azure OpenAI (Cognitive Services) tokens.
const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
/// Tokens are asked for anew this long before they expire.
const REFRESH_OFFSET: Duration = Duration::from_secs(5 * 60);

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
    Environment(Flow),
}

/// An azure-identity environment flow.
pub(super) struct Flow {
    authority: String,
    tenant: String,
    client_id: String,
    grant: Grant,
}

enum Grant {
    Secret(String),
    FederatedTokenFile(String),
}

impl Flow {
    fn token_url(&self) -> String {
        format!("{}/{}/oauth2/v2.0/token", self.authority, self.tenant)
    }

    /// The cache key: the endpoint, the client and a digest of the secret or the file's path
    /// (a changed secret is a new key; the secret itself is not kept).
    fn key(&self) -> String {
        let proof = match &self.grant {
            Grant::Secret(s) => format!("secret:{s}"),
            Grant::FederatedTokenFile(f) => format!("file:{f}"),
        };
        let sum = digest::digest(&digest::SHA256, proof.as_bytes());
        let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("{}|{}|{hex}", self.token_url(), self.client_id)
    }

    fn variables(&self) -> &'static str {
        match self.grant {
            Grant::Secret(_) => "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET",
            Grant::FederatedTokenFile(_) => {
                "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE"
            }
        }
    }
}

/// The environment's flow, if its variables are all set.
fn environment_flow(options: &StreamOptions) -> Option<Flow> {
    let tenant = options.env_var("AZURE_TENANT_ID")?;
    let client_id = options.env_var("AZURE_CLIENT_ID")?;
    let grant = match (
        options.env_var("AZURE_CLIENT_SECRET"),
        options.env_var("AZURE_FEDERATED_TOKEN_FILE"),
    ) {
        (Some(secret), _) => Grant::Secret(secret),
        (None, Some(file)) => Grant::FederatedTokenFile(file),
        (None, None) => return None,
    };
    let authority = options
        .env_var("AZURE_AUTHORITY_HOST")
        .map(|a| a.trim().trim_end_matches('/').to_string())
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| DEFAULT_AUTHORITY.to_string());
    Some(Flow {
        authority,
        tenant,
        client_id,
        grant,
    })
}

/// How this request is authorized, or what was tried and what to set.
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
    if let Some(flow) = environment_flow(options) {
        return Ok(Auth::Entra(Source::Environment(flow)));
    }
    let vars = crate::providers::catalog::env_api_key_vars(&model.provider);
    let mut tried = vec!["the apiKey option".to_string()];
    tried.extend(vars.iter().map(|v| v.to_string()));
    let unset: Vec<&str> = [
        "AZURE_TENANT_ID",
        "AZURE_CLIENT_ID",
        "AZURE_CLIENT_SECRET",
        "AZURE_FEDERATED_TOKEN_FILE",
    ]
    .into_iter()
    .filter(|v| options.env_var(v).is_none())
    .collect();
    Err(format!(
        "No API key for provider: {} (tried {}, the azure ad_token and ad_token_provider \
         options, and Microsoft Entra ID from the environment, where {} unset); set \
         AZURE_OPENAI_API_KEY, or for Entra ID AZURE_TENANT_ID, AZURE_CLIENT_ID and \
         AZURE_CLIENT_SECRET (or AZURE_FEDERATED_TOKEN_FILE)",
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

/// The bearer token of `source`.
pub(super) async fn token(source: Source, options: &StreamOptions) -> Result<String, String> {
    let token = match source {
        Source::Token(t) => t,
        Source::Provider(p) => {
            let asked = p.token();
            let answer = tokio::select! {
                biased;
                _ = options.signal.cancelled() => return Err("Request was aborted".into()),
                a = asked => a,
            };
            answer.map_err(|e| format!("Azure OpenAI: the ad_token_provider failed: {e}"))?
        }
        Source::Environment(flow) => environment_token(&flow, options).await?,
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

/// A token from the environment's flow, kept until five minutes before it expires.
async fn environment_token(flow: &Flow, options: &StreamOptions) -> Result<String, String> {
    let key = flow.key();
    if let Some((token, until)) = tokens().lock().get(&key).cloned() {
        if until > Instant::now() {
            return Ok(token);
        }
    }
    let url = flow.token_url();
    let failed = |why: String| {
        format!(
            "Azure OpenAI: Microsoft Entra ID token request to {url} failed: {why}; check {}",
            flow.variables()
        )
    };
    let assertion;
    let mut form = vec![
        ("client_id", flow.client_id.as_str()),
        ("scope", SCOPE),
        ("grant_type", "client_credentials"),
    ];
    match &flow.grant {
        Grant::Secret(secret) => form.push(("client_secret", secret.as_str())),
        Grant::FederatedTokenFile(file) => {
            assertion = tokio::fs::read_to_string(file)
                .await
                .map_err(|e| failed(format!("AZURE_FEDERATED_TOKEN_FILE {file}: {e}")))?;
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            form.push(("client_assertion", assertion.trim()));
        }
    }
    let (status, body) = post_form(&url, &form, options).await.map_err(|e| match e {
        SendError::Aborted => "Request was aborted".to_string(),
        SendError::Network(m) | SendError::Message(m) => failed(m),
        SendError::Status(f) => failed(format!("HTTP {}", f.status)),
    })?;
    let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let field = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("");
    if !(200..300).contains(&status) {
        let why = match (field("error"), field("error_description")) {
            ("", _) => format!("HTTP {status}"),
            (code, "") => format!("HTTP {status}, {code}"),
            (code, text) => format!(
                "HTTP {status}, {code}: {}",
                text.lines().next().unwrap_or("")
            ),
        };
        return Err(failed(why));
    }
    let token = Some(field("access_token"))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| failed("the answer has no access_token".into()))?
        .to_string();
    // `expires_in` is a number, or a string on some endpoints.
    let lifetime = match doc.get("expires_in") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .unwrap_or(3600);
    let until = Instant::now() + Duration::from_secs(lifetime).saturating_sub(REFRESH_OFFSET);
    tokens().lock().insert(key, (token.clone(), until));
    Ok(token)
}
