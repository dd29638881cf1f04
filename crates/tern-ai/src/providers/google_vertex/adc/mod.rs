//! Application Default Credentials, looked for as google-auth-library does: the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's
//! `application_default_credentials.json` (under `CLOUDSDK_CONFIG`, else
//! `~/.config/gcloud`) when it exists, else the GCE metadata server ([`metadata`]) when tern
//! runs on Google Cloud. A file holds a user's refresh token (`authorized_user`), a service
//! account's key (`service_account`, an RS256-signed JWT exchanged for a token), workload
//! identity federation (`external_account`, [`external`]: a subject token from a file, a URL,
//! a certificate, an executable or AWS, exchanged at Google's STS), or a workforce pool
//! user's refresh token (`external_account_authorized_user`, [`workforce_user`]). Tokens are
//! kept until a minute before they expire.
//!
//! As the SDK's clients do, a file's `quota_project_id` goes with the token as
//! `x-goog-user-project`, and `GOOGLE_CLOUD_QUOTA_PROJECT` overrides it (for the metadata
//! server's token too).

mod aws;
mod certificate;
mod executable;
mod external;
mod metadata;
mod workforce_user;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::providers::http::{post_form, SendError};
use crate::stream_fn::StreamOptions;

const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where the credentials come from.
enum Origin {
    /// A credentials file, and where its path came from (for messages).
    File { path: String, from: &'static str },
    /// No file: the metadata server, if there is one; `looked` says where files were looked
    /// for.
    Metadata { looked: String },
}

fn origin(options: &StreamOptions) -> Origin {
    for var in [
        "GOOGLE_APPLICATION_CREDENTIALS",
        "google_application_credentials",
    ] {
        if let Some(path) = options.env_var(var) {
            return Origin::File {
                path,
                from: "GOOGLE_APPLICATION_CREDENTIALS",
            };
        }
    }
    let (dir, from) = match options.env_var("CLOUDSDK_CONFIG") {
        Some(dir) => (Some(dir), "CLOUDSDK_CONFIG"),
        None => (
            options
                .env_var("HOME")
                .map(|home| format!("{home}/.config/gcloud")),
            "gcloud's default location",
        ),
    };
    let Some(dir) = dir else {
        return Origin::Metadata {
            looked: "GOOGLE_APPLICATION_CREDENTIALS (unset), gcloud's \
                     application_default_credentials.json (HOME and CLOUDSDK_CONFIG unset)"
                .into(),
        };
    };
    let path = format!(
        "{}/application_default_credentials.json",
        dir.trim_end_matches('/')
    );
    if std::path::Path::new(&path).exists() {
        return Origin::File { path, from };
    }
    Origin::Metadata {
        looked: format!("GOOGLE_APPLICATION_CREDENTIALS (unset), {path} (not found)"),
    }
}

/// A kept token: the token, the file's quota project, and when to stop using it.
type Kept = (String, Option<String>, Instant);

fn tokens() -> &'static Mutex<HashMap<String, Kept>> {
    static TOKENS: OnceLock<Mutex<HashMap<String, Kept>>> = OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

/// The cached token under `key` and its quota project, if it has more than a minute left.
fn cached(key: &str) -> Option<(String, Option<String>)> {
    let (token, quota, until) = tokens().lock().get(key).cloned()?;
    (until > Instant::now()).then_some((token, quota))
}

/// Keeps `token` (and the file's quota project) under `key` until a minute before its
/// `lifetime` ends.
fn keep(key: String, token: &str, quota: Option<String>, lifetime: u64) {
    let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60));
    tokens()
        .lock()
        .insert(key, (token.to_string(), quota, until));
}

/// The request headers for `token`: `authorization`, and `x-goog-user-project` when
/// `GOOGLE_CLOUD_QUOTA_PROJECT` or the file names a quota project.
fn headers(token: &str, quota: Option<String>, options: &StreamOptions) -> Vec<(String, String)> {
    let mut out = vec![("authorization".to_string(), format!("Bearer {token}"))];
    let quota = options
        .env_var("GOOGLE_CLOUD_QUOTA_PROJECT")
        .filter(|q| !q.is_empty())
        .or(quota);
    if let Some(quota) = quota {
        out.push(("x-goog-user-project".to_string(), quota));
    }
    out
}

/// The headers that authorize a Vertex request with the Application Default Credentials:
/// `authorization`, and `x-goog-user-project` when there is a quota project.
pub(super) async fn authorization(
    options: &StreamOptions,
) -> Result<Vec<(String, String)>, String> {
    let (path, from) = match origin(options) {
        Origin::File { path, from } => (path, from),
        Origin::Metadata { looked } => {
            let key = format!("metadata:{}", metadata::base_url(options));
            if let Some((token, _)) = cached(&key) {
                return Ok(headers(&token, None, options));
            }
            let (token, lifetime) = metadata::token(&looked, options).await?;
            keep(key, &token, None, lifetime);
            return Ok(headers(&token, None, options));
        }
    };
    let where_ = format!("{path} (from {from})");
    if let Some((token, quota)) = cached(&path) {
        return Ok(headers(&token, quota, options));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "No Vertex AI credentials: tried the apiKey option, GOOGLE_CLOUD_API_KEY and \
             Application Default Credentials, but {where_} cannot be read ({e}); set \
             GOOGLE_CLOUD_API_KEY, or run `gcloud auth application-default login`"
        )
    })?;
    let creds: Value = serde_json::from_str(&text)
        .map_err(|e| format!("Vertex AI credentials {where_} are not JSON: {e}"))?;
    let quota = creds
        .get("quota_project_id")
        .and_then(Value::as_str)
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    let (token, lifetime) = file_token(&creds, &path, &where_, options).await?;
    keep(path, &token, quota.clone(), lifetime);
    Ok(headers(&token, quota, options))
}

/// A fresh token from the credentials file's contents, and its lifetime in seconds.
async fn file_token(
    creds: &Value,
    path: &str,
    where_: &str,
    options: &StreamOptions,
) -> Result<(String, u64), String> {
    let field = |k: &str| creds.get(k).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "external_account" => {
            return external::token(creds, options)
                .await
                .map_err(|e| format!("Vertex AI credentials {where_}: {e}"))
        }
        "external_account_authorized_user" => {
            return workforce_user::token(creds, path, options)
                .await
                .map_err(|e| format!("Vertex AI credentials {where_}: {e}"))
        }
        _ => {}
    }
    let token_uri = Some(field("token_uri"))
        .filter(|u| !u.is_empty())
        .unwrap_or(DEFAULT_TOKEN_URI)
        .to_string();
    let (status, body) = match field("type") {
        "authorized_user" => {
            let form = [
                ("grant_type", "refresh_token"),
                ("client_id", field("client_id")),
                ("client_secret", field("client_secret")),
                ("refresh_token", field("refresh_token")),
            ];
            post_form(&token_uri, &form, options).await
        }
        "service_account" => {
            let assertion =
                signed_assertion(field("client_email"), field("private_key"), &token_uri)
                    .map_err(|e| format!("Vertex AI credentials {where_}: {e}"))?;
            let form = [
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", assertion.as_str()),
            ];
            post_form(&token_uri, &form, options).await
        }
        other => {
            return Err(format!(
                "Vertex AI credentials {where_} have type {other:?}; tern reads \
                 \"authorized_user\", \"service_account\", \"external_account\" and \
                 \"external_account_authorized_user\" files"
            ))
        }
    }
    .map_err(|e| match e {
        SendError::Aborted => "Request was aborted".to_string(),
        SendError::Network(m) | SendError::Message(m) => {
            format!("Vertex AI token request to {token_uri} failed: {m}")
        }
        SendError::Status(f) => format!("Vertex AI token request failed: {}", f.status),
    })?;
    let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let token = answer.get("access_token").and_then(Value::as_str);
    let (true, Some(token)) = ((200..300).contains(&status), token) else {
        return Err(format!(
            "Vertex AI token request to {token_uri} with {where_} failed ({status}): {}",
            body.trim()
        ));
    };
    let lifetime = answer
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    Ok((token.to_string(), lifetime))
}

/// The service account's JWT for the token endpoint, signed with its key (RS256).
fn signed_assertion(email: &str, pem: &str, audience: &str) -> Result<String, String> {
    let der = pem_body(pem).ok_or("private_key is not a PEM \"PRIVATE KEY\"")?;
    let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("private_key is not a PKCS#8 RSA key ({e})"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let header = json!({"alg": "RS256", "typ": "JWT"});
    let claims =
        json!({"iss": email, "scope": SCOPE, "aud": audience, "iat": now, "exp": now + 3600});
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0u8; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "signing the token request failed".to_string())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// The DER bytes of a `-----BEGIN PRIVATE KEY-----` block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let start = pem.find("-----BEGIN PRIVATE KEY-----")? + "-----BEGIN PRIVATE KEY-----".len();
    let end = pem[start..].find("-----END PRIVATE KEY-----")? + start;
    let b64: String = pem[start..end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}
