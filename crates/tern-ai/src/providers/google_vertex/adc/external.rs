//! Workload identity federation (`"type": "external_account"`): a subject token from the
//! file's `credential_source` — a file or a URL ([`plain_source`]), an executable
//! ([`super::executable`]) or AWS ([`super::aws`], when it names an `environment_id`) —
//! exchanged at Google's STS for an access token, then traded for a service account's when
//! the file names `service_account_impersonation_url`. The source is picked as
//! google-auth-library's `ExternalAccountClient.fromJSON` picks its client:
//! `environment_id` first, then `executable`, else a file or URL.

use serde_json::{json, Value};

use super::SCOPE;
use crate::providers::http::{post_form, send_plain, SendError};
use crate::stream_fn::StreamOptions;

/// Google's STS, when the file names no `token_url`.
const DEFAULT_STS_URL: &str = "https://sts.googleapis.com/v1/token";

/// A string field of a JSON object.
pub(super) fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// A token request's failure in words.
pub(super) fn send_error(url: &str, e: SendError) -> String {
    match e {
        SendError::Aborted => "Request was aborted".to_string(),
        SendError::Network(m) | SendError::Message(m) => format!("request to {url} failed: {m}"),
        SendError::Status(f) => format!("request to {url} failed: {}", f.status),
    }
}

/// The answer of a token request as JSON, or its failure with what the server said.
pub(super) fn answered(url: &str, sent: Result<(u16, String), SendError>) -> Result<Value, String> {
    let (status, body) = sent.map_err(|e| send_error(url, e))?;
    if !(200..300).contains(&status) {
        return Err(format!("{url} answered {status}: {}", body.trim()));
    }
    serde_json::from_str(&body).map_err(|e| format!("{url} answered something not JSON ({e})"))
}

/// The subject token, the STS exchange and the impersonation. Returns the token and its
/// lifetime in seconds.
pub(super) async fn token(creds: &Value, options: &StreamOptions) -> Result<(String, u64), String> {
    let source = creds
        .get("credential_source")
        .ok_or("external_account has no credential_source")?;
    let subject = if source.get("environment_id").is_some() {
        super::aws::subject_token(creds, source, options).await?
    } else if source.get("executable").is_some() {
        super::executable::subject_token(creds, source, options).await?
    } else {
        plain_source(source, options).await?
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

/// The service account an impersonation URL names
/// (`.../serviceAccounts/{email}:generateAccessToken`), as google-auth-library reads it.
pub(super) fn impersonated_email(creds: &Value) -> Result<Option<String>, String> {
    let Some(url) = text(creds, "service_account_impersonation_url") else {
        return Ok(None);
    };
    if url.len() > 256 {
        return Err(format!(
            "service_account_impersonation_url is too long ({} characters, at most 256)",
            url.len()
        ));
    }
    let Some(rest) = url.strip_suffix(":generateAccessToken") else {
        return Ok(None);
    };
    let Some(at) = rest.rfind("serviceAccounts/") else {
        return Ok(None);
    };
    let email = &rest[at + "serviceAccounts/".len()..];
    Ok((!email.is_empty() && !email.contains(':')).then(|| email.to_string()))
}

/// A subject token from `credential_source.file` or `.url`, plain or a JSON field.
async fn plain_source(source: &Value, options: &StreamOptions) -> Result<String, String> {
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
                "credential_source names no file, url, executable or environment_id \
                 (tern reads those four)"
                    .into(),
            )
        }
    };
    let format = source.get("format");
    match format.and_then(|f| text(f, "type")).as_deref() {
        Some("json") => {
            let name = format
                .and_then(|f| text(f, "subject_token_field_name"))
                .ok_or("credential_source.format has no subject_token_field_name")?;
            let doc: Value = serde_json::from_str(&raw)
                .map_err(|e| format!("the subject token source is not JSON ({e})"))?;
            text(&doc, &name).ok_or_else(|| format!("the subject token source has no {name}"))
        }
        _ => Ok(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_impersonated_email_is_read_off_the_url() {
        let with = |url: &str| json!({"service_account_impersonation_url": url});
        assert_eq!(
            impersonated_email(&with(
                "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken"
            )),
            Ok(Some("sa@p.iam.gserviceaccount.com".to_string()))
        );
        assert_eq!(impersonated_email(&with("https://x/other")), Ok(None));
        assert_eq!(impersonated_email(&json!({})), Ok(None));
        let long = format!("https://x/{}", "a".repeat(300));
        assert!(impersonated_email(&with(&long)).is_err());
    }
}
