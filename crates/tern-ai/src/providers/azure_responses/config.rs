//! Where an Azure request goes: base URL, deployment name and API version, from the
//! environment and the model.

use crate::model::Model;
use crate::stream_fn::StreamOptions;

/// The API version when none is configured.
const DEFAULT_API_VERSION: &str = "v1";

/// The deployment for `model`: its entry in `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`
/// (`model=deployment,...`), else the model id.
pub(super) fn deployment_name(model: &Model, options: &StreamOptions) -> String {
    if let Some(name) = options
        .azure
        .deployment_name
        .clone()
        .filter(|d| !d.is_empty())
    {
        return name;
    }
    deployment_from_map(
        options
            .env_var("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
            .as_deref(),
        &model.id,
    )
    .unwrap_or_else(|| model.id.clone())
}

fn deployment_from_map(map: Option<&str>, id: &str) -> Option<String> {
    let mut found = None;
    for entry in map?.split(',') {
        let entry = entry.trim();
        let mut parts = entry.splitn(2, '=');
        let (Some(model), Some(deployment)) = (parts.next(), parts.next()) else {
            continue;
        };
        // A later entry for the same model wins, as in a map built in order.
        if !model.is_empty() && !deployment.is_empty() && model.trim() == id {
            found = Some(deployment.trim().to_string());
        }
    }
    found.filter(|d| !d.is_empty())
}

/// The API version: the `azureApiVersion` option, `AZURE_OPENAI_API_VERSION`, else `v1`.
pub(super) fn api_version(options: &StreamOptions) -> String {
    options
        .option_or_env(&options.azure.api_version, "AZURE_OPENAI_API_VERSION")
        .unwrap_or_else(|| DEFAULT_API_VERSION.to_string())
}

/// The base URL, or what to set when there is none.
pub(super) fn base_url(model: &Model, options: &StreamOptions) -> Result<String, String> {
    let trimmed = |u: String| Some(u.trim().to_string()).filter(|u| !u.is_empty());
    let configured = options
        .azure
        .base_url
        .clone()
        .and_then(trimmed)
        .or_else(|| options.env_var("AZURE_OPENAI_BASE_URL").and_then(trimmed));
    let from_resource = || {
        options
            .option_or_env(&options.azure.resource_name, "AZURE_OPENAI_RESOURCE_NAME")
            .map(|r| format!("https://{r}.openai.azure.com/openai/v1"))
    };
    let url = configured
        .or_else(from_resource)
        .or_else(|| (!model.base_url.is_empty()).then(|| model.base_url.clone()))
        .ok_or_else(|| {
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
             AZURE_OPENAI_RESOURCE_NAME, or pass azureBaseUrl, azureResourceName, or model.baseUrl."
                .to_string()
        })?;
    normalize_base_url(&url)
}

/// Azure hosts get `/openai/v1` as their path when they name none (or the old forms), so the
/// request path can be appended.
fn normalize_base_url(base: &str) -> Result<String, String> {
    let trimmed = base.trim().trim_end_matches('/');
    let mut url = reqwest::Url::parse(trimmed)
        .map_err(|_| format!("Invalid Azure OpenAI base URL: {base}"))?;
    let host = url.host_str().unwrap_or("").to_string();
    let azure = [
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".ai.azure.com",
    ]
    .iter()
    .any(|suffix| host.ends_with(suffix));
    let path = url.path().trim_end_matches('/').to_string();
    if azure && ["", "/", "/openai", "/openai/v1/responses"].contains(&path.as_str()) {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.to_string().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_before_the_environment_and_the_model() {
        let model = Model {
            id: "gpt-4.1".into(),
            base_url: "https://model.openai.azure.com".into(),
            ..Model::default()
        };
        let mut o = StreamOptions::default();
        o.env
            .insert("AZURE_OPENAI_API_VERSION".into(), "from-env".into());
        o.env.insert(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP".into(),
            "gpt-4.1=from-map".into(),
        );
        o.env
            .insert("AZURE_OPENAI_RESOURCE_NAME".into(), "env-resource".into());
        assert_eq!(api_version(&o), "from-env");
        assert_eq!(deployment_name(&model, &o), "from-map");
        assert_eq!(
            base_url(&model, &o).unwrap(),
            "https://env-resource.openai.azure.com/openai/v1"
        );
        o.azure = crate::AzureOptions {
            api_version: Some("2025-04-01-preview".into()),
            resource_name: Some("option-resource".into()),
            base_url: None,
            deployment_name: Some("option-deployment".into()),
            ..crate::AzureOptions::default()
        };
        assert_eq!(api_version(&o), "2025-04-01-preview");
        assert_eq!(deployment_name(&model, &o), "option-deployment");
        assert_eq!(
            base_url(&model, &o).unwrap(),
            "https://option-resource.openai.azure.com/openai/v1"
        );
        o.azure.base_url = Some(" https://gateway.example.com/azure/ ".into());
        assert_eq!(
            base_url(&model, &o).unwrap(),
            "https://gateway.example.com/azure"
        );
    }

    #[test]
    fn azure_hosts_get_the_v1_path() {
        assert_eq!(
            normalize_base_url("https://r.openai.azure.com/").unwrap(),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            normalize_base_url("https://r.cognitiveservices.azure.com/openai?x=1").unwrap(),
            "https://r.cognitiveservices.azure.com/openai/v1"
        );
        assert_eq!(
            normalize_base_url("http://127.0.0.1:9/custom/").unwrap(),
            "http://127.0.0.1:9/custom"
        );
        assert!(normalize_base_url("not a url").is_err());
    }

    #[test]
    fn the_deployment_map_names_deployments_per_model() {
        let map = Some(" gpt-5=prod-5 , bad, =x, gpt-4.1=d41");
        assert_eq!(deployment_from_map(map, "gpt-4.1").as_deref(), Some("d41"));
        assert_eq!(deployment_from_map(map, "gpt-5").as_deref(), Some("prod-5"));
        assert_eq!(deployment_from_map(map, "o3"), None);
    }
}
