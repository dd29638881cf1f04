//! azure-identity's flows from the environment against `{AZURE_AUTHORITY_HOST or
//! https://login.microsoftonline.com}/{AZURE_TENANT_ID}/oauth2/v2.0/token` for
//! `AZURE_CLIENT_ID`, in `DefaultAzureCredential`'s order: a client secret
//! (`AZURE_CLIENT_SECRET`), else a client certificate (`AZURE_CLIENT_CERTIFICATE_PATH`,
//! [`super::certificate`]), both `EnvironmentCredential`; else a federated token file
//! (`AZURE_FEDERATED_TOKEN_FILE`, `WorkloadIdentityCredential`, read anew for each token).
//! A flow whose variables are set is used, and its failure is the request's (the chain does
//! not go on to managed identity or the CLI, as azure-identity's does not).

use ring::digest;
use serde_json::Value;

use super::certificate::Certificate;
use super::{Minted, Selection};
use crate::providers::http::{post_form, SendError};
use crate::stream_fn::StreamOptions;

const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// An environment flow whose variables are all set.
pub(in crate::providers::azure_responses) struct Flow {
    authority: String,
    tenant: String,
    client_id: String,
    grant: Grant,
}

enum Grant {
    Secret(String),
    /// The certificate file's path, and whether its chain goes in `x5c`.
    Certificate {
        path: String,
        send_chain: bool,
    },
    FederatedTokenFile(String),
}

impl Flow {
    fn token_url(&self) -> String {
        format!("{}/{}/oauth2/v2.0/token", self.authority, self.tenant)
    }

    /// The cache key: the endpoint, the client and a digest of the secret or the file's path
    /// (a changed secret is a new key; the secret itself is not kept).
    pub(super) fn key(&self) -> String {
        let proof = match &self.grant {
            Grant::Secret(s) => format!("secret:{s}"),
            Grant::Certificate { path, send_chain } => format!("certificate:{send_chain}:{path}"),
            Grant::FederatedTokenFile(f) => format!("file:{f}"),
        };
        let sum = digest::digest(&digest::SHA256, proof.as_bytes());
        let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("{}|{}|{hex}", self.token_url(), self.client_id)
    }

    fn variables(&self) -> &'static str {
        match self.grant {
            Grant::Secret(_) => "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET",
            Grant::Certificate { .. } => {
                "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_CERTIFICATE_PATH"
            }
            Grant::FederatedTokenFile(_) => {
                "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE"
            }
        }
    }
}

/// The environment's flow, if its variables are all set and `selection` allows it.
pub(super) fn flow(options: &StreamOptions, selection: &Selection) -> Option<Flow> {
    let tenant = options.env_var("AZURE_TENANT_ID")?;
    let client_id = options.env_var("AZURE_CLIENT_ID")?;
    let secret = options.env_var("AZURE_CLIENT_SECRET");
    let certificate = options.env_var("AZURE_CLIENT_CERTIFICATE_PATH");
    let file = options.env_var("AZURE_FEDERATED_TOKEN_FILE");
    let grant = match (secret, certificate, file) {
        (Some(secret), _, _) if selection.environment => Grant::Secret(secret),
        (None, Some(path), _) if selection.environment => {
            let send_chain = options
                .env_var("AZURE_CLIENT_SEND_CERTIFICATE_CHAIN")
                .is_some_and(|v| matches!(v.to_lowercase().as_str(), "true" | "1"));
            Grant::Certificate { path, send_chain }
        }
        (_, _, Some(file)) if selection.workload_identity => Grant::FederatedTokenFile(file),
        _ => return None,
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

/// The environment variables of the flows that are unset, for the message when nothing works.
pub(super) fn unset(options: &StreamOptions) -> Vec<&'static str> {
    [
        "AZURE_TENANT_ID",
        "AZURE_CLIENT_ID",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PATH",
        "AZURE_FEDERATED_TOKEN_FILE",
    ]
    .into_iter()
    .filter(|v| options.env_var(v).is_none())
    .collect()
}

/// A token from the flow's endpoint.
pub(super) async fn token(flow: &Flow, options: &StreamOptions) -> Result<Minted, String> {
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
        ("scope", super::SCOPE),
        ("grant_type", "client_credentials"),
    ];
    match &flow.grant {
        Grant::Secret(secret) => form.push(("client_secret", secret.as_str())),
        Grant::Certificate { path, send_chain } => {
            let pem = tokio::fs::read_to_string(path)
                .await
                .map_err(|e| failed(format!("AZURE_CLIENT_CERTIFICATE_PATH {path}: {e}")))?;
            assertion = Certificate::from_pem(&pem, *send_chain)
                .and_then(|c| c.assertion(&flow.client_id, &url))
                .map_err(|e| failed(format!("AZURE_CLIENT_CERTIFICATE_PATH {path}: {e}")))?;
            form.push(("client_assertion_type", ASSERTION_TYPE));
            form.push(("client_assertion", assertion.as_str()));
        }
        Grant::FederatedTokenFile(file) => {
            assertion = tokio::fs::read_to_string(file)
                .await
                .map_err(|e| failed(format!("AZURE_FEDERATED_TOKEN_FILE {file}: {e}")))?;
            form.push(("client_assertion_type", ASSERTION_TYPE));
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
    let lifetime = super::seconds(doc.get("expires_in")).unwrap_or(3600);
    Ok(Minted::lasting(token, lifetime))
}
