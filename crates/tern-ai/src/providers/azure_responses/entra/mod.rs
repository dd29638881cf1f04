//! Microsoft Entra ID for Azure OpenAI, a tern addition (pi-ai sends API keys only): a
//! deployment that refuses keys takes `Authorization: Bearer` with a token for
//! `https://cognitiveservices.azure.com/.default`.
//!
//! An API key (the `api_key` option or `AZURE_OPENAI_API_KEY`) always wins, so every run the
//! reference can make is made the same way. Without one, in order: the token in
//! [`AzureOptions::ad_token`](crate::AzureOptions::ad_token); the one
//! [`AzureOptions::ad_token_provider`](crate::AzureOptions::ad_token_provider) returns (called
//! per request, as the `openai` package calls `azureADTokenProvider`); then azure-identity's
//! `DefaultAzureCredential` chain as far as tern has it:
//!
//! 1. the environment ([`environment`]): a client secret, a client certificate
//!    ([`certificate`]) or a federated token file for `AZURE_CLIENT_ID` in
//!    `AZURE_TENANT_ID` — a flow whose variables are set is used, and its failure is the
//!    request's;
//! 2. managed identity ([`managed`]): App Service and Functions, Azure Machine Learning,
//!    Cloud Shell, Azure Arc, else the VM's IMDS endpoint after a one-second probe;
//! 3. the Azure CLI ([`cli`]): `az account get-access-token`.
//!
//! Managed identity and the CLI are tried in turn; when neither gives a token the error
//! lists every source and why it failed. `AZURE_TOKEN_CREDENTIALS` narrows the chain as it
//! does azure-identity's (`prod`, `dev`, or one credential's name). Tokens are kept until
//! five minutes before they expire (MSAL's refresh offset), or half their life when that is
//! over two hours (MSAL's `refresh_in`); the chain's token is kept as one, so the IMDS probe
//! runs again only when it must be renewed. The `openai` package has no variable for a
//! static Entra token, so tern reads none. Tokens and secrets are never logged or quoted.

mod certificate;
mod cli;
mod environment;
mod managed;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use ring::digest;
use serde_json::Value;

use crate::model::Model;
use crate::providers::model_options::api_key;
use crate::stream_fn::StreamOptions;

/// The scope of Azure OpenAI (Cognitive Services) tokens.
const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// The same as a resource (managed identity and the CLI take a resource).
const RESOURCE: &str = "https://cognitiveservices.azure.com";
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
    /// Managed identity, then the Azure CLI, as `selection` allows.
    Ambient {
        provider: String,
        selection: Selection,
    },
}

/// The credentials of the chain `AZURE_TOKEN_CREDENTIALS` keeps (all when unset).
pub(super) struct Selection {
    /// `EnvironmentCredential`: a client secret or certificate.
    environment: bool,
    /// `WorkloadIdentityCredential`: a federated token file.
    workload_identity: bool,
    managed_identity: bool,
    /// Whether the IMDS endpoint is probed first (azure-identity probes inside the default
    /// chain, not when `AZURE_TOKEN_CREDENTIALS` names `ManagedIdentityCredential`).
    probe: bool,
    cli: bool,
    /// `AZURE_TOKEN_CREDENTIALS`, when set.
    named: Option<String>,
}

impl Selection {
    fn from_env(options: &StreamOptions) -> Result<Selection, String> {
        let all = Selection {
            environment: true,
            workload_identity: true,
            managed_identity: true,
            probe: true,
            cli: true,
            named: None,
        };
        let Some(raw) = options.env_var("AZURE_TOKEN_CREDENTIALS") else {
            return Ok(all);
        };
        let none = Selection {
            environment: false,
            workload_identity: false,
            managed_identity: false,
            probe: false,
            cli: false,
            named: Some(raw.clone()),
        };
        Ok(match raw.trim().to_lowercase().as_str() {
            "prod" => Selection {
                environment: true,
                workload_identity: true,
                managed_identity: true,
                probe: true,
                ..none
            },
            "dev" => Selection { cli: true, ..none },
            "environmentcredential" => Selection {
                environment: true,
                ..none
            },
            "workloadidentitycredential" => Selection {
                workload_identity: true,
                ..none
            },
            "managedidentitycredential" => Selection {
                managed_identity: true,
                ..none
            },
            "azureclicredential" => Selection { cli: true, ..none },
            "visualstudiocodecredential"
            | "azurepowershellcredential"
            | "azuredeveloperclicredential" => {
                return Err(format!(
                    "Azure OpenAI: AZURE_TOKEN_CREDENTIALS is {raw}, a credential tern does not \
                     have; tern has EnvironmentCredential, WorkloadIdentityCredential, \
                     ManagedIdentityCredential and AzureCliCredential (or prod, dev), or unset it"
                ))
            }
            _ => {
                return Err(format!(
                    "Invalid value for AZURE_TOKEN_CREDENTIALS = {raw}. Valid values are 'prod' \
                     or 'dev' or any of these credentials - EnvironmentCredential, \
                     WorkloadIdentityCredential, ManagedIdentityCredential, AzureCliCredential."
                ))
            }
        })
    }
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

    /// A token valid until `epoch` (seconds since 1970).
    fn until(token: String, epoch: SystemTime) -> Minted {
        let lifetime = epoch
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        Minted { token, lifetime }
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

/// An instant as seconds since 1970 (a number or a string of digits) or an ISO 8601 time.
fn epoch(v: Option<&Value>) -> Option<SystemTime> {
    if let Some(s) = seconds(v) {
        return UNIX_EPOCH.checked_add(Duration::from_secs(s));
    }
    let text = v?.as_str()?;
    // A time without a zone is local to the machine that wrote it: unusable here.
    let zoned = text.trim().ends_with(['Z', 'z'])
        || text.get(19..).is_some_and(|rest| rest.contains(['+', '-']));
    zoned.then(|| crate::providers::bedrock::parse_time(text))?
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
    let selection = Selection::from_env(options)?;
    if let Some(flow) = environment::flow(options, &selection) {
        return Ok(Auth::Entra(Source::Environment(flow)));
    }
    if selection.managed_identity || selection.cli {
        return Ok(Auth::Entra(Source::Ambient {
            provider: model.provider.clone(),
            selection,
        }));
    }
    Err(nothing_works(&model.provider, &selection, options, &[]))
}

/// The error when no source gave a token: every source tried, why it failed, what to set.
fn nothing_works(
    provider: &str,
    selection: &Selection,
    options: &StreamOptions,
    failures: &[String],
) -> String {
    let vars = crate::providers::catalog::env_api_key_vars(provider);
    let mut tried = vec!["the apiKey option".to_string()];
    tried.extend(vars.iter().map(|v| v.to_string()));
    tried.push("the azure ad_token and ad_token_provider options".into());
    let mut entra = Vec::new();
    if selection.environment || selection.workload_identity {
        let unset = environment::unset(options);
        entra.push(format!(
            "the environment, where {}",
            match unset.len() {
                1 => format!("{} is unset", unset.join("")),
                _ => format!("{} are unset", unset.join(", ")),
            }
        ));
    }
    entra.extend(failures.iter().cloned());
    if let Some(named) = &selection.named {
        entra.push(format!(
            "no other source (AZURE_TOKEN_CREDENTIALS is {named})"
        ));
    }
    format!(
        "No API key for provider: {provider} (tried {}, and Microsoft Entra ID: {}); set \
         AZURE_OPENAI_API_KEY, or for Entra ID AZURE_TENANT_ID and AZURE_CLIENT_ID with \
         AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH or AZURE_FEDERATED_TOKEN_FILE, or run \
         where a managed identity is assigned, or run `az login`",
        tried.join(", "),
        entra.join("; ")
    )
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
        Source::Ambient {
            provider,
            selection,
        } => ambient_token(&provider, &selection, options).await?,
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

/// The cache key of the ambient chain: a digest of every setting that picks its source
/// (some are secrets, so only the digest is kept).
fn ambient_key(options: &StreamOptions, selection: &Selection) -> String {
    let mut material = format!(
        "{}{}{}",
        selection.managed_identity, selection.probe, selection.cli
    );
    for v in [
        "AZURE_CLIENT_ID",
        "IDENTITY_ENDPOINT",
        "IDENTITY_HEADER",
        "IDENTITY_SERVER_THUMBPRINT",
        "IMDS_ENDPOINT",
        "MSI_ENDPOINT",
        "MSI_SECRET",
        "DEFAULT_IDENTITY_CLIENT_ID",
        "AZURE_POD_IDENTITY_AUTHORITY_HOST",
        managed::IMDS_HOST_VAR,
        "PATH",
    ] {
        material.push('\n');
        material.push_str(&options.env_var(v).unwrap_or_default());
    }
    let sum = digest::digest(&digest::SHA256, material.as_bytes());
    let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("ambient|{hex}")
}

/// Managed identity, then the Azure CLI: the first token, or every failure.
async fn ambient_token(
    provider: &str,
    selection: &Selection,
    options: &StreamOptions,
) -> Result<String, String> {
    let key = ambient_key(options, selection);
    if let Some(token) = cached(&key) {
        return Ok(token);
    }
    let mut failures = Vec::new();
    if selection.managed_identity {
        match managed::token(options, selection.probe).await {
            Ok(minted) => return Ok(keep(key, minted)),
            Err(why) if why == ABORTED => return Err(why),
            Err(why) => failures.push(format!("managed identity: {why}")),
        }
    }
    if selection.cli {
        match cli::token(options).await {
            Ok(minted) => return Ok(keep(key, minted)),
            Err(why) if why == ABORTED => return Err(why),
            Err(why) => failures.push(format!("the Azure CLI: {why}")),
        }
    }
    Err(nothing_works(provider, selection, options, &failures))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expiry_times_take_every_form_the_endpoints_send() {
        assert_eq!(seconds(Some(&json!(3599))), Some(3599));
        assert_eq!(seconds(Some(&json!("3599"))), Some(3599));
        assert_eq!(seconds(Some(&json!("soon"))), None);
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(epoch(Some(&json!(1_700_000_000))), Some(at(1_700_000_000)));
        assert_eq!(epoch(Some(&json!("1700000000"))), Some(at(1_700_000_000)));
        assert_eq!(
            epoch(Some(&json!("2023-11-14T22:13:20Z"))),
            Some(at(1_700_000_000))
        );
        assert_eq!(
            epoch(Some(&json!("2023-11-14T23:13:20.000+01:00"))),
            Some(at(1_700_000_000))
        );
        // The CLI's old local time without a zone cannot be placed.
        assert_eq!(epoch(Some(&json!("2023-11-14 22:13:20.000000"))), None);
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

    #[test]
    fn the_selection_follows_azure_token_credentials() {
        let with = |v: &str| {
            let mut o = StreamOptions::default();
            o.env.insert("AZURE_TOKEN_CREDENTIALS".into(), v.into());
            Selection::from_env(&o)
        };
        let dev = with("dev").unwrap();
        assert!(dev.cli && !dev.managed_identity && !dev.environment);
        let prod = with(" Prod ").unwrap();
        assert!(prod.environment && prod.workload_identity && prod.managed_identity);
        assert!(prod.probe && !prod.cli);
        let mi = with("ManagedIdentityCredential").unwrap();
        assert!(mi.managed_identity && !mi.probe && !mi.cli);
        assert!(with("AzurePowerShellCredential")
            .err()
            .unwrap()
            .contains("a credential tern does not have"));
        assert!(with("everything")
            .err()
            .unwrap()
            .starts_with("Invalid value for AZURE_TOKEN_CREDENTIALS = everything."));
    }
}
