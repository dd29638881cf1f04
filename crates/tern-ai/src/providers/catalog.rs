//! The model catalog (every chat model pi-ai 1.6.0 lists for the wire APIs tern implements, as
//! data: ids, APIs, base URLs, context windows, output limits, prices with tiers, thinking
//! maps, compat flags, input types) and the providers' API-key variables.
//!
//! `catalog.json` is generated from the reference package by `scripts/gen-catalog.mjs`; never
//! edit it by hand.
//!
//! ```
//! use tern_ai::providers::catalog::{get_model, models};
//! let m = get_model("anthropic", "claude-sonnet-4-5").expect("in the catalog");
//! assert_eq!(m.api, "anthropic-messages");
//! assert!(models().iter().any(|m| m.provider == "google"));
//! ```

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::model::Model;

const CATALOG_JSON: &str = include_str!("catalog.json");

/// `catalog.json` as written by the generator.
#[derive(Default, Deserialize)]
struct Catalog {
    /// The APIs the catalog was generated for.
    apis: Vec<String>,
    providers: Vec<ProviderEntry>,
    models: Vec<Model>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderEntry {
    id: String,
    env_api_keys: Vec<String>,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    // The file is generated and embedded at build time; the catalog test proves it parses.
    CATALOG.get_or_init(|| serde_json::from_str(CATALOG_JSON).unwrap_or_default())
}

/// Every model of the catalog, in the reference's order (providers alphabetically, then
/// their models).
pub fn models() -> &'static [Model] {
    &catalog().models
}

/// The wire APIs the catalog was generated for.
pub fn apis() -> &'static [String] {
    &catalog().apis
}

/// The model `id` of `provider`, if the catalog has it.
pub fn get_model(provider: &str, id: &str) -> Option<Model> {
    find_model(models(), provider, id)
}

/// The providers in the catalog, in first-seen order.
pub fn providers() -> Vec<String> {
    providers_of(models())
}

/// The model `id` of `provider` in `models` (the catalog's or a list extended from it).
///
/// ```
/// use tern_ai::providers::catalog;
/// let all = catalog::models();
/// let first = &all[0];
/// let found = catalog::find_model(all, &first.provider, &first.id);
/// assert_eq!(found.map(|m| m.id), Some(first.id.clone()));
/// ```
pub fn find_model(models: &[Model], provider: &str, id: &str) -> Option<Model> {
    models
        .iter()
        .find(|m| m.provider == provider && m.id == id)
        .cloned()
}

/// The providers of `models`, in first-seen order.
pub fn providers_of(models: &[Model]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in models {
        if !out.contains(&m.provider) {
            out.push(m.provider.clone());
        }
    }
    out
}

/// The environment variables that hold a provider's API key, in lookup order.
pub fn env_api_key_vars(provider: &str) -> &'static [&'static str] {
    static VARS: OnceLock<HashMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    let vars = VARS.get_or_init(|| {
        catalog()
            .providers
            .iter()
            .map(|p| {
                let names = p.env_api_keys.iter().map(String::as_str).collect();
                (p.id.as_str(), names)
            })
            .collect()
    });
    vars.get(provider).map(Vec::as_slice).unwrap_or(&[])
}

/// The API key of a provider from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
/// `GEMINI_API_KEY`, `OPENROUTER_API_KEY`, ...). `StreamOptions::api_key` overrides it per
/// call.
pub fn env_api_key(provider: &str) -> Option<String> {
    env_api_key_in(provider, &crate::StreamOptions::default())
}

/// [`env_api_key`] with a request's scoped [`env`](StreamOptions::env) read first.
pub(crate) fn env_api_key_in(provider: &str, options: &crate::StreamOptions) -> Option<String> {
    env_api_key_vars(provider)
        .iter()
        .find_map(|v| options.env_var(v))
}

/// Whether `provider` has credentials in the environment other than an API key (pi-ai's
/// `getEnvApiKey` answering `<authenticated>`): Amazon Bedrock with `AWS_PROFILE`, access
/// keys, `AWS_BEARER_TOKEN_BEDROCK`, container or web-identity credentials; Google Vertex with
/// an application-default credentials file (`GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's)
/// and `GOOGLE_CLOUD_PROJECT` (or `GCLOUD_PROJECT`) and `GOOGLE_CLOUD_LOCATION`. And, a tern
/// addition, Azure OpenAI (`azure`) with a Microsoft Entra ID client secret, certificate or
/// federated token (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, and `AZURE_CLIENT_SECRET`,
/// `AZURE_CLIENT_CERTIFICATE_PATH` or `AZURE_FEDERATED_TOKEN_FILE`), or a managed identity the
/// environment announces (App Service's `IDENTITY_ENDPOINT` + `IDENTITY_HEADER`, Azure Arc's
/// `IDENTITY_ENDPOINT` + `IMDS_ENDPOINT`, `MSI_ENDPOINT`, `AZURE_POD_IDENTITY_AUTHORITY_HOST`);
/// not a VM's IMDS endpoint or the Azure CLI, which only a request (a probe, a process) finds.
/// A front end counts such a provider as usable.
///
/// ```
/// assert!(!tern_ai::providers::catalog::has_ambient_credentials("openai"));
/// ```
pub fn has_ambient_credentials(provider: &str) -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    match provider {
        "amazon-bedrock" => {
            set("AWS_PROFILE")
                || (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
                || set("AWS_BEARER_TOKEN_BEDROCK")
                || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
                || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        }
        "google-vertex" => {
            let file = match std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
                Some(path) if !path.is_empty() => Some(std::path::PathBuf::from(path)),
                _ => std::env::var_os("HOME").map(|home| {
                    std::path::Path::new(&home)
                        .join(".config/gcloud/application_default_credentials.json")
                }),
            };
            file.is_some_and(|f| f.exists())
                && (set("GOOGLE_CLOUD_PROJECT") || set("GCLOUD_PROJECT"))
                && set("GOOGLE_CLOUD_LOCATION")
        }
        "azure" => {
            let service_principal = set("AZURE_TENANT_ID")
                && set("AZURE_CLIENT_ID")
                && (set("AZURE_CLIENT_SECRET")
                    || set("AZURE_CLIENT_CERTIFICATE_PATH")
                    || set("AZURE_FEDERATED_TOKEN_FILE"));
            let managed_identity = (set("IDENTITY_ENDPOINT")
                && (set("IDENTITY_HEADER") || set("IMDS_ENDPOINT")))
                || set("MSI_ENDPOINT")
                || set("AZURE_POD_IDENTITY_AUTHORITY_HOST");
            service_principal || managed_identity
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_loads_every_api() {
        let all = models();
        assert!(all.len() > 1000);
        assert_eq!(apis(), crate::providers::APIS);
        for api in crate::providers::APIS {
            assert!(all.iter().any(|m| m.api == api), "{api}");
        }
        let m = get_model("openai", "gpt-4.1-mini").unwrap();
        assert!(m.context_window > 0 && m.max_tokens > 0 && m.cost.input > 0.0);
        assert_eq!(env_api_key_vars("mistral"), ["MISTRAL_API_KEY"]);
        assert_eq!(
            env_api_key_vars("anthropic"),
            [
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_OAUTH_TOKEN",
                "ANTHROPIC_API_KEY"
            ]
        );
        assert!(env_api_key_vars("no-such-provider").is_empty());
    }
}
