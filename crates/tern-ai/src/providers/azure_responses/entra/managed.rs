//! Managed identity (azure-identity's `ManagedIdentityCredential`, through MSAL's sources
//! in MSAL's order), for the system-assigned identity or, when `AZURE_CLIENT_ID` is set, the
//! user-assigned one with that client id:
//!
//! - App Service and Functions (`IDENTITY_ENDPOINT` + `IDENTITY_HEADER`): `GET` the endpoint
//!   with `X-IDENTITY-HEADER`, `api-version=2019-08-01`;
//! - Azure Machine Learning (`MSI_ENDPOINT` + `MSI_SECRET`): `GET` with `secret`,
//!   `api-version=2017-09-01`, `clientid` (`DEFAULT_IDENTITY_CLIENT_ID` for the system
//!   identity);
//! - Cloud Shell (`MSI_ENDPOINT`): `POST` a form with the resource, system identity only;
//! - Azure Arc (`IDENTITY_ENDPOINT` + `IMDS_ENDPOINT`, or the agent at
//!   `/opt/azcmagent/bin/himds`): `GET` with `Metadata: true`, `api-version=2020-06-01`;
//!   the agent answers 401 with `WWW-Authenticate: Basic realm=<file>`, a `.key` file of at
//!   most 4 KiB in the agent's token folder, whose text is sent back as `Authorization:
//!   Basic`;
//! - else the IMDS endpoint (`http://169.254.169.254/metadata/identity/oauth2/token`,
//!   `Metadata: true`, `api-version=2018-02-01`), first probed as the default chain does: a
//!   bare `GET` that must get any answer within one second, so a machine without IMDS fails
//!   fast. `AZURE_POD_IDENTITY_AUTHORITY_HOST` (azure-identity's) replaces its host and skips
//!   the probe; [`IMDS_HOST_VAR`] (tern's own, for tests) replaces the host and keeps it.
//!
//! A token request that gets 404, 410, 429 or a 5xx is sent again up to five times, 0.8 s
//! apart and doubling (410: three seconds first), as azure-identity's IMDS policy does.
//! Service Fabric (`IDENTITY_SERVER_THUMBPRINT`) is not supported: its endpoint's
//! certificate is pinned by thumbprint.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::{Minted, ABORTED, RESOURCE};
use crate::providers::http::{send_plain_headers, SendError};
use crate::stream_fn::StreamOptions;

/// tern's own override of the IMDS host (`http://host:port`), for tests: unlike
/// `AZURE_POD_IDENTITY_AUTHORITY_HOST` the probe still runs.
pub(super) const IMDS_HOST_VAR: &str = "TERN_AZURE_IMDS_HOST";
const IMDS_HOST: &str = "http://169.254.169.254";
const IMDS_PATH: &str = "/metadata/identity/oauth2/token";
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
const ARC_DEFAULT_ENDPOINT: &str = "http://127.0.0.1:40342/metadata/identity/oauth2/token";
const ARC_AGENT: &str = "/opt/azcmagent/bin/himds";
const ARC_KEY_MAX_BYTES: u64 = 4096;
const MAX_RETRIES: u32 = 5;

/// Where the managed identity's token comes from.
enum Endpoint {
    AppService { url: String, header: String },
    MachineLearning { url: String, secret: String },
    CloudShell { url: String },
    Arc { url: String, from: &'static str },
    Imds { host: String, probe: bool },
}

impl Endpoint {
    fn name(&self) -> &'static str {
        match self {
            Endpoint::AppService { .. } => "App Service (IDENTITY_ENDPOINT)",
            Endpoint::MachineLearning { .. } => "Azure Machine Learning (MSI_ENDPOINT)",
            Endpoint::CloudShell { .. } => "Cloud Shell (MSI_ENDPOINT)",
            Endpoint::Arc { from, .. } => from,
            Endpoint::Imds { .. } => "IMDS",
        }
    }
}

/// The source MSAL would pick from the environment.
fn detect(options: &StreamOptions, probe: bool) -> Result<Endpoint, String> {
    let var = |name: &str| options.env_var(name);
    if let (Some(_), Some(_), Some(_)) = (
        var("IDENTITY_ENDPOINT"),
        var("IDENTITY_HEADER"),
        var("IDENTITY_SERVER_THUMBPRINT"),
    ) {
        return Err(
            "Service Fabric's managed identity (IDENTITY_SERVER_THUMBPRINT is set) is \
                    not supported by tern; use an API key or a client secret or certificate"
                .into(),
        );
    }
    if let (Some(url), Some(header)) = (var("IDENTITY_ENDPOINT"), var("IDENTITY_HEADER")) {
        return Ok(Endpoint::AppService { url, header });
    }
    if let Some(url) = var("MSI_ENDPOINT") {
        return Ok(match var("MSI_SECRET") {
            Some(secret) => Endpoint::MachineLearning { url, secret },
            None => Endpoint::CloudShell { url },
        });
    }
    if let (Some(url), Some(_)) = (var("IDENTITY_ENDPOINT"), var("IMDS_ENDPOINT")) {
        return Ok(Endpoint::Arc {
            url,
            from: "Azure Arc (IDENTITY_ENDPOINT)",
        });
    }
    if cfg!(target_os = "linux") && std::path::Path::new(ARC_AGENT).exists() {
        return Ok(Endpoint::Arc {
            url: ARC_DEFAULT_ENDPOINT.into(),
            from: "Azure Arc (the agent at /opt/azcmagent/bin/himds)",
        });
    }
    let trim = |h: String| h.trim().trim_end_matches('/').to_string();
    Ok(match var("AZURE_POD_IDENTITY_AUTHORITY_HOST") {
        Some(host) => Endpoint::Imds {
            host: trim(host),
            probe: false,
        },
        None => Endpoint::Imds {
            host: var(IMDS_HOST_VAR).map_or_else(|| IMDS_HOST.to_string(), trim),
            probe,
        },
    })
}

/// One exchange with a managed identity endpoint.
struct Call {
    method: reqwest::Method,
    url: reqwest::Url,
    headers: Vec<(String, String)>,
    body: String,
}

/// `url` with `query` appended, or why it is no URL (`var` names where it came from).
fn with_query(url: &str, var: &str, query: &[(&str, &str)]) -> Result<reqwest::Url, String> {
    let mut parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("{var} is not a URL ({e}); check it or unset it"))?;
    parsed.query_pairs_mut().extend_pairs(query);
    Ok(parsed)
}

fn call(
    endpoint: &Endpoint,
    client_id: Option<&str>,
    options: &StreamOptions,
) -> Result<Call, String> {
    let header = |k: &str, v: &str| (k.to_string(), v.to_string());
    let get = |url, headers| Call {
        method: reqwest::Method::GET,
        url,
        headers,
        body: String::new(),
    };
    let user = |key| client_id.map(|id| (key, id));
    Ok(match endpoint {
        Endpoint::AppService {
            url,
            header: secret,
        } => {
            let mut query = vec![("api-version", "2019-08-01"), ("resource", RESOURCE)];
            query.extend(user("client_id"));
            let url = with_query(url, "IDENTITY_ENDPOINT", &query)?;
            get(url, vec![header("X-IDENTITY-HEADER", secret)])
        }
        Endpoint::MachineLearning { url, secret } => {
            let mut query = vec![("api-version", "2017-09-01"), ("resource", RESOURCE)];
            let default = options.env_var("DEFAULT_IDENTITY_CLIENT_ID");
            query.extend(client_id.or(default.as_deref()).map(|id| ("clientid", id)));
            let url = with_query(url, "MSI_ENDPOINT", &query)?;
            get(
                url,
                vec![header("Metadata", "true"), header("secret", secret)],
            )
        }
        Endpoint::CloudShell { url } => {
            if client_id.is_some() {
                return Err("Cloud Shell has only its system-assigned identity; unset \
                            AZURE_CLIENT_ID"
                    .into());
            }
            Call {
                method: reqwest::Method::POST,
                url: with_query(url, "MSI_ENDPOINT", &[])?,
                headers: vec![
                    header("Metadata", "true"),
                    header("content-type", "application/x-www-form-urlencoded"),
                ],
                body: format!(
                    "resource={}",
                    crate::providers::bedrock::sigv4::uri_encode(RESOURCE)
                ),
            }
        }
        Endpoint::Arc { url, .. } => {
            let mut query = vec![("api-version", "2020-06-01"), ("resource", RESOURCE)];
            query.extend(user("client_id"));
            let url = url.replace("localhost", "127.0.0.1");
            let url = with_query(&url, "IDENTITY_ENDPOINT", &query)?;
            get(url, vec![header("Metadata", "true")])
        }
        Endpoint::Imds { host, .. } => {
            let mut query = vec![("api-version", "2018-02-01"), ("resource", RESOURCE)];
            query.extend(user("client_id"));
            let url = with_query(&format!("{host}{IMDS_PATH}"), "the IMDS host", &query)?;
            get(url, vec![header("Metadata", "true")])
        }
    })
}

/// Sends `call`, again after a pause while the answer says to; the last answer.
async fn send(call: &Call, options: &StreamOptions) -> Result<(u16, HeaderMap, String), String> {
    let mut attempt = 0;
    loop {
        let answer = send_plain_headers(
            None,
            call.method.clone(),
            call.url.as_str(),
            &call.headers,
            call.body.clone(),
            None,
            options,
        )
        .await
        .map_err(|e| match e {
            SendError::Aborted => ABORTED.to_string(),
            SendError::Network(m) | SendError::Message(m) => m,
            SendError::Status(f) => format!("HTTP {}", f.status),
        })?;
        let status = answer.0;
        let again = matches!(status, 404 | 410 | 429 | 500..=599) && attempt < MAX_RETRIES;
        if !again {
            return Ok(answer);
        }
        let first = if status == 410 { 3000 } else { 800 };
        let pause = Duration::from_millis(first << attempt).min(Duration::from_secs(64));
        attempt += 1;
        tokio::select! {
            biased;
            _ = options.signal.cancelled() => return Err(ABORTED.into()),
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// Whether something answers at the IMDS host within a second (a bare request, which a
/// real endpoint refuses quickly for want of `Metadata: true`).
async fn probe(host: &str, options: &StreamOptions) -> Result<(), String> {
    let url = format!("{host}{IMDS_PATH}");
    let accept = [("Accept".to_string(), "application/json".to_string())];
    let sent = send_plain_headers(
        None,
        reqwest::Method::GET,
        &url,
        &accept,
        String::new(),
        Some(PROBE_TIMEOUT),
        options,
    )
    .await;
    match sent {
        Err(SendError::Aborted) => Err(ABORTED.into()),
        Err(SendError::Network(m) | SendError::Message(m)) => Err(format!(
            "no IMDS endpoint answered at {host} within a second ({m}); this is not an Azure \
             VM or scale set"
        )),
        Err(SendError::Status(f)) => Err(format!("the IMDS probe at {host} got HTTP {}", f.status)),
        Ok((403, _, body)) if body.contains("unreachable") => Err(format!(
            "the IMDS endpoint at {host} is unreachable from here (HTTP 403)"
        )),
        Ok(_) => Ok(()),
    }
}

/// The key file an Azure Arc challenge names, checked as MSAL checks it; its text.
async fn arc_secret(headers: &HeaderMap) -> Result<String, String> {
    let challenge = headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .ok_or("the agent's 401 has no WWW-Authenticate header")?;
    let (_, file) = challenge
        .split_once("Basic realm=")
        .ok_or("the agent's WWW-Authenticate is not `Basic realm=<file>`")?;
    let file = std::path::Path::new(file.trim());
    let folder = if cfg!(windows) {
        std::env::var("ProgramData")
            .map(|d| format!("{d}\\AzureConnectedMachineAgent\\Tokens\\"))
            .map_err(|_| "ProgramData is unset, so the agent's token folder is unknown")?
    } else if cfg!(target_os = "linux") {
        "/var/opt/azcmagent/tokens/".to_string()
    } else {
        return Err("Azure Arc's managed identity needs Linux or Windows".into());
    };
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if std::path::Path::new(&folder).join(name) != file {
        return Err(format!(
            "the agent named a key file outside {folder}: {}",
            file.display()
        ));
    }
    if !name.ends_with(".key") {
        return Err(format!(
            "the agent's key file {} is not a .key file",
            file.display()
        ));
    }
    let size = tokio::fs::metadata(file)
        .await
        .map_err(|e| format!("the agent's key file {}: {e}", file.display()))?
        .len();
    if size > ARC_KEY_MAX_BYTES {
        return Err(format!(
            "the agent's key file {} is over {ARC_KEY_MAX_BYTES} bytes",
            file.display()
        ));
    }
    tokio::fs::read_to_string(file)
        .await
        .map_err(|e| format!("the agent's key file {}: {e}", file.display()))
}

/// The endpoint's error in a few words (MSAL reads `error` as a string or `{code, message}`,
/// and `message` or `error_description`).
fn refusal(status: u16, body: &str) -> String {
    let doc: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let (code, description) = match doc.get("error") {
        Some(Value::Object(e)) => (text(e.get("code")), text(e.get("message"))),
        other => (
            text(other),
            text(doc.get("message").or_else(|| doc.get("error_description"))),
        ),
    };
    let description = description.lines().next().unwrap_or("").trim().to_string();
    match (code.as_str(), description.as_str()) {
        ("", "") => format!("HTTP {status}"),
        (code, "") => format!("HTTP {status}, {code}"),
        ("", text) => format!("HTTP {status}: {text}"),
        (code, text) => format!("HTTP {status}, {code}: {text}"),
    }
}

/// The managed identity's token, or why there is none (the chain goes on either way).
pub(super) async fn token(options: &StreamOptions, probe_imds: bool) -> Result<Minted, String> {
    let endpoint = detect(options, probe_imds)?;
    let client_id = options.env_var("AZURE_CLIENT_ID");
    if let Endpoint::Imds { host, probe: true } = &endpoint {
        probe(host, options).await?;
    }
    let place = format!("{} at {}", endpoint.name(), address(&endpoint));
    let mut call = call(&endpoint, client_id.as_deref(), options)?;
    let failed = |why: String| {
        if why == ABORTED {
            why
        } else {
            format!("{place}: {why}")
        }
    };
    let (mut status, headers, mut body) = send(&call, options).await.map_err(failed)?;
    if status == 401 && matches!(endpoint, Endpoint::Arc { .. }) {
        let secret = arc_secret(&headers).await.map_err(failed)?;
        call.headers
            .push(("Authorization".into(), format!("Basic {}", secret.trim())));
        (status, _, body) = send(&call, options).await.map_err(failed)?;
    }
    if !(200..300).contains(&status) {
        let hint = match status {
            400 if client_id.is_some() => {
                "; check that AZURE_CLIENT_ID names a user-assigned identity of this resource"
            }
            400 => {
                "; check that this resource has a system-assigned identity, or set \
                    AZURE_CLIENT_ID to a user-assigned one"
            }
            _ => "",
        };
        return Err(failed(format!("{}{hint}", refusal(status, &body))));
    }
    let doc: Value =
        serde_json::from_str(&body).map_err(|_| failed("the answer is not JSON".into()))?;
    let token = doc
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| failed("the answer has no access_token".into()))?
        .to_string();
    Ok(match super::epoch(doc.get("expires_on")) {
        Some(at) => Minted::until(token, at),
        None => Minted::lasting(token, super::seconds(doc.get("expires_in")).unwrap_or(3600)),
    })
}

/// The endpoint's address as configured, for messages (never its query).
fn address(endpoint: &Endpoint) -> String {
    let url = match endpoint {
        Endpoint::AppService { url, .. }
        | Endpoint::MachineLearning { url, .. }
        | Endpoint::CloudShell { url }
        | Endpoint::Arc { url, .. } => url.clone(),
        Endpoint::Imds { host, .. } => format!("{host}{IMDS_PATH}"),
    };
    url.split('?').next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_both_error_shapes() {
        assert_eq!(refusal(500, "nope"), "HTTP 500");
        assert_eq!(
            refusal(
                400,
                r#"{"error":"invalid_request","error_description":"Identity not found\r\nmore"}"#
            ),
            "HTTP 400, invalid_request: Identity not found"
        );
        assert_eq!(
            refusal(
                400,
                r#"{"error":{"code":"BadRequest","message":"No identity"}}"#
            ),
            "HTTP 400, BadRequest: No identity"
        );
        assert_eq!(refusal(404, r#"{"message":"gone"}"#), "HTTP 404: gone");
    }
}
