//! Application Default Credentials: an OAuth access token from the credentials file that
//! `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's
//! `~/.config/gcloud/application_default_credentials.json` — a user's refresh token
//! (`authorized_user`), a service account's key (`service_account`, an RS256-signed JWT
//! exchanged for a token), or workload identity federation (`external_account`: a subject
//! token from a file or a URL exchanged at Google's STS, then, when the file names one, a
//! service account impersonated). Tokens are kept until a minute before they expire.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::providers::http::{post_form, send_plain, SendError};
use crate::stream_fn::StreamOptions;

const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where the credentials file came from, for messages.
struct Source {
    path: String,
    from: &'static str,
}

fn source(options: &StreamOptions) -> Result<Source, String> {
    if let Some(path) = options.env_var("GOOGLE_APPLICATION_CREDENTIALS") {
        return Ok(Source {
            path,
            from: "GOOGLE_APPLICATION_CREDENTIALS",
        });
    }
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty()).ok_or(
        "No Vertex AI credentials: tried the apiKey option, GOOGLE_CLOUD_API_KEY and \
         GOOGLE_APPLICATION_CREDENTIALS, and HOME is unset so gcloud's \
         application_default_credentials.json cannot be found",
    )?;
    Ok(Source {
        path: format!("{home}/.config/gcloud/application_default_credentials.json"),
        from: "gcloud's default location",
    })
}

fn tokens() -> &'static Mutex<HashMap<String, (String, Instant)>> {
    static TOKENS: OnceLock<Mutex<HashMap<String, (String, Instant)>>> = OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

/// The `authorization` header for the Application Default Credentials.
pub(super) async fn authorization(options: &StreamOptions) -> Result<(String, String), String> {
    let src = source(options)?;
    let where_ = format!("{} (from {})", src.path, src.from);
    if let Some((token, until)) = tokens().lock().get(&src.path).cloned() {
        if until > Instant::now() {
            return Ok(("authorization".into(), format!("Bearer {token}")));
        }
    }
    let text = std::fs::read_to_string(&src.path).map_err(|e| {
        format!(
            "No Vertex AI credentials: tried the apiKey option, GOOGLE_CLOUD_API_KEY and \
             Application Default Credentials, but {where_} cannot be read ({e}); set \
             GOOGLE_CLOUD_API_KEY, or run `gcloud auth application-default login`"
        )
    })?;
    let creds: Value = serde_json::from_str(&text)
        .map_err(|e| format!("Vertex AI credentials {where_} are not JSON: {e}"))?;
    let field = |k: &str| creds.get(k).and_then(Value::as_str).unwrap_or("");
    if field("type") == "external_account" {
        let (token, lifetime) = external_account(&creds, options)
            .await
            .map_err(|e| format!("Vertex AI credentials {where_}: {e}"))?;
        let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60));
        tokens()
            .lock()
            .insert(src.path.clone(), (token.clone(), until));
        return Ok(("authorization".into(), format!("Bearer {token}")));
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
                 \"authorized_user\", \"service_account\" and \"external_account\" files"
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
    let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60));
    tokens()
        .lock()
        .insert(src.path.clone(), (token.to_string(), until));
    Ok(("authorization".into(), format!("Bearer {token}")))
}

/// Google's STS, when the file names no `token_url`.
const DEFAULT_STS_URL: &str = "https://sts.googleapis.com/v1/token";

/// A token request's failure in words.
fn send_error(url: &str, e: SendError) -> String {
    match e {
        SendError::Aborted => "Request was aborted".to_string(),
        SendError::Network(m) | SendError::Message(m) => format!("request to {url} failed: {m}"),
        SendError::Status(f) => format!("request to {url} failed: {}", f.status),
    }
}

/// The answer of a token request as JSON, or its failure with what the server said.
fn answered(url: &str, sent: Result<(u16, String), SendError>) -> Result<Value, String> {
    let (status, body) = sent.map_err(|e| send_error(url, e))?;
    if !(200..300).contains(&status) {
        return Err(format!("{url} answered {status}: {}", body.trim()));
    }
    serde_json::from_str(&body).map_err(|e| format!("{url} answered something not JSON ({e})"))
}

/// Workload identity federation: the subject token (`credential_source.file` or `.url`,
/// plain or a JSON field), exchanged at the STS for a Google access token, then traded for a
/// service account's when the file names `service_account_impersonation_url`. Returns the
/// token and its lifetime in seconds.
async fn external_account(creds: &Value, options: &StreamOptions) -> Result<(String, u64), String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let source = creds
        .get("credential_source")
        .ok_or("external_account has no credential_source")?;
    let raw = match (text(source, "file"), text(source, "url")) {
        (Some(file), _) => tokio::fs::read_to_string(&file)
            .await
            .map_err(|e| format!("the subject token file {file} cannot be read ({e})"))?,
        (None, Some(url)) => {
            let headers: Vec<(String, String)> = source
                .get("headers")
                .and_then(Value::as_object)
                .map(|h| {
                    h.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let sent =
                send_plain(reqwest::Method::GET, &url, &headers, String::new(), options).await;
            let (status, body) = sent.map_err(|e| send_error(&url, e))?;
            if !(200..300).contains(&status) {
                return Err(format!("the subject token URL {url} answered {status}"));
            }
            body
        }
        (None, None) => {
            return Err(
                "credential_source names neither a file nor a url (tern reads those two)".into(),
            )
        }
    };
    let format = source.get("format");
    let subject = match format.and_then(|f| text(f, "type")).as_deref() {
        Some("json") => {
            let name = format
                .and_then(|f| text(f, "subject_token_field_name"))
                .ok_or("credential_source.format has no subject_token_field_name")?;
            let doc: Value = serde_json::from_str(&raw)
                .map_err(|e| format!("the subject token source is not JSON ({e})"))?;
            text(&doc, &name).ok_or_else(|| format!("the subject token source has no {name}"))?
        }
        _ => raw,
    };
    if subject.is_empty() {
        return Err("the subject token is empty".into());
    }
    let sts = text(creds, "token_url").unwrap_or_else(|| DEFAULT_STS_URL.to_string());
    let audience = text(creds, "audience").unwrap_or_default();
    let subject_type = text(creds, "subject_token_type").unwrap_or_default();
    let form = [
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("audience", audience.as_str()),
        ("scope", SCOPE),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("subject_token", subject.as_str()),
        ("subject_token_type", subject_type.as_str()),
    ];
    let exchanged = answered(&sts, post_form(&sts, &form, options).await)?;
    let access = text(&exchanged, "access_token")
        .ok_or_else(|| format!("{sts} answered no access_token"))?;
    let lifetime = exchanged
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    let Some(impersonate) = text(creds, "service_account_impersonation_url") else {
        return Ok((access, lifetime));
    };
    let seconds = creds
        .pointer("/service_account_impersonation/token_lifetime_seconds")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    let headers = [
        ("authorization".to_string(), format!("Bearer {access}")),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    let body = json!({"scope": [SCOPE], "lifetime": format!("{seconds}s")}).to_string();
    let sent = send_plain(reqwest::Method::POST, &impersonate, &headers, body, options).await;
    let doc = answered(&impersonate, sent)?;
    let token = text(&doc, "accessToken")
        .ok_or_else(|| format!("{impersonate} answered no accessToken"))?;
    Ok((token, seconds))
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
