//! Workload identity federation (`"type": "external_account"`): a subject token from the
//! file's `credential_source` — a file or a URL ([`plain_source`]), a certificate
//! ([`super::certificate`]), an executable ([`super::executable`]) or AWS ([`super::aws`],
//! when it names an `environment_id`) — exchanged at Google's STS for an access token, then
//! traded for a service account's when the file names `service_account_impersonation_url`.
//! The source is picked as google-auth-library's `ExternalAccountClient.fromJSON` picks its
//! client: `environment_id` first, then `executable`, else a file, URL or certificate (the
//! identity pool, exactly one of them).
//!
//! The STS request carries the file's `client_id` / `client_secret` as HTTP Basic auth when
//! it names a client id (the SDK's `OAuthClientAuthHandler`), else a workforce pool's
//! `workforce_pool_user_project` in its `options`; that setting is refused, as the SDK
//! refuses it, unless the audience is a workforce pool's.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};

use super::SCOPE;
use crate::providers::http::{form_body, send_plain, send_plain_headers, SendError};
use crate::providers::js_json::string_members;
use crate::stream_fn::StreamOptions;

/// The audiences of workforce pools (matched anywhere in the audience, as the SDK does).
const WORKFORCE_AUDIENCE: &str =
    r"//iam\.googleapis\.com/locations/[^/]+/workforcePools/[^/]+/providers/.+";

/// The content type of the SDK's token requests (gaxios's for a `URLSearchParams` body).
pub(super) const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded;charset=UTF-8";

/// A string field of a JSON object.
pub(super) fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// JavaScript truthiness of an optional JSON value.
pub(super) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
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

/// The answer of an OAuth token endpoint (the STS, a workforce refresh) as JSON. A failure
/// that is an OAuth error document is worded as the SDK's `getErrorFromOAuthErrorResponse`
/// words it (`Error code {error}: {description} - {uri}`); any other failure as
/// [`answered`] words it.
pub(super) fn oauth_answered(
    url: &str,
    sent: Result<(u16, String), SendError>,
) -> Result<Value, String> {
    let (status, body) = sent.map_err(|e| send_error(url, e))?;
    if !(200..300).contains(&status) {
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if let Some(code) = doc.get("error").and_then(Value::as_str) {
            let mut message = format!("Error code {code}");
            if let Some(description) = doc.get("error_description").and_then(Value::as_str) {
                message.push_str(&format!(": {description}"));
            }
            if let Some(uri) = doc.get("error_uri").and_then(Value::as_str) {
                message.push_str(&format!(" - {uri}"));
            }
            return Err(message);
        }
    }
    answered(url, Ok((status, body)))
}

/// The `authorization` header of HTTP Basic client authentication, as the SDK builds it
/// (a missing secret is empty).
pub(super) fn basic_auth(client_id: &str, client_secret: &str) -> (String, String) {
    let pair = STANDARD.encode(format!("{client_id}:{client_secret}"));
    ("authorization".to_string(), format!("Basic {pair}"))
}

/// Sends a token request through the shared client, or through `mtls` (the client
/// presenting the workload's certificate) when there is one.
async fn send(
    mtls: Option<&reqwest::Client>,
    url: &str,
    headers: &[(String, String)],
    body: String,
    options: &StreamOptions,
) -> Result<(u16, String), SendError> {
    send_plain_headers(
        mtls,
        reqwest::Method::POST,
        url,
        headers,
        body,
        None,
        options,
    )
    .await
    .map(|(status, _, text)| (status, text))
}

/// The checks the SDK makes when it reads the file, before any subject token is fetched.
fn check(creds: &Value, source: &Value) -> Result<(), String> {
    let audience = text(creds, "audience").ok_or(
        "the external_account file has no audience (the workload or workforce pool \
         provider, \"//iam.googleapis.com/...\")",
    )?;
    let workforce = text(creds, "workforce_pool_user_project").filter(|p| !p.is_empty());
    let pattern = regex::Regex::new(WORKFORCE_AUDIENCE)
        .map_err(|e| format!("the workforce audience pattern is invalid ({e})"))?;
    if workforce.is_some() && !pattern.is_match(&audience) {
        return Err(
            "workforcePoolUserProject should not be set for non-workforce pool credentials.".into(),
        );
    }
    if source.get("environment_id").is_some() || source.get("executable").is_some() {
        return Ok(());
    }
    let format = source.get("format");
    let kind = format
        .and_then(|f| text(f, "type"))
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "text".into());
    if kind != "json" && kind != "text" {
        return Err(format!("Invalid credential_source format \"{kind}\""));
    }
    let field = format
        .and_then(|f| text(f, "subject_token_field_name"))
        .filter(|n| !n.is_empty());
    if kind == "json" && field.is_none() {
        return Err("Missing subject_token_field_name for JSON credential_source format".into());
    }
    let named = ["file", "url", "certificate"]
        .iter()
        .filter(|k| truthy(source.get(**k)))
        .count();
    if named != 1 {
        return Err(
            "No valid Identity Pool \"credential_source\" provided, must be either \
                    file, url, or certificate."
                .into(),
        );
    }
    match source.get("certificate").filter(|c| truthy(Some(c))) {
        Some(certificate) => super::certificate::check(certificate),
        None => Ok(()),
    }
}

/// The subject token, the STS exchange and the impersonation. Returns the token and its
/// lifetime in seconds.
pub(super) async fn token(creds: &Value, options: &StreamOptions) -> Result<(String, u64), String> {
    let source = creds
        .get("credential_source")
        .ok_or("external_account has no credential_source")?;
    check(creds, source)?;
    let mut mtls = None;
    let subject = if source.get("environment_id").is_some() {
        super::aws::subject_token(creds, source, options).await?
    } else if source.get("executable").is_some() {
        super::executable::subject_token(creds, source, options).await?
    } else if let Some(certificate) = source.get("certificate").filter(|c| truthy(Some(c))) {
        let (subject, client) = super::certificate::subject_token(certificate, options).await?;
        mtls = Some(client);
        subject
    } else {
        plain_source(source, options).await?
    };
    if subject.is_empty() {
        return Err("the subject token is empty".into());
    }
    // Google's STS in the file's universe when the file names no `token_url`.
    let sts = text(creds, "token_url").unwrap_or_else(|| {
        let universe = text(creds, "universe_domain")
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "googleapis.com".into());
        format!("https://sts.{universe}/v1/token")
    });
    let audience = text(creds, "audience").unwrap_or_default();
    let subject_type = text(creds, "subject_token_type").unwrap_or_default();
    let client_id = text(creds, "client_id").filter(|id| !id.is_empty());
    let workforce = text(creds, "workforce_pool_user_project").filter(|p| !p.is_empty());
    // The SDK sends the user project only without client authentication.
    let extra = match (&client_id, &workforce) {
        (None, Some(project)) => Some(json!({"userProject": project}).to_string()),
        _ => None,
    };
    let mut form = vec![
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
    if let Some(extra) = &extra {
        form.push(("options", extra.as_str()));
    }
    let mut headers = vec![("content-type".to_string(), FORM_CONTENT_TYPE.to_string())];
    if let Some(id) = &client_id {
        let secret = text(creds, "client_secret").unwrap_or_default();
        headers.push(basic_auth(id, &secret));
    }
    let sent = send(mtls.as_ref(), &sts, &headers, form_body(&form), options).await;
    let exchanged = oauth_answered(&sts, sent)?;
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
    let sent = send(mtls.as_ref(), &impersonate, &headers, body, options).await;
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
            let headers: Vec<(String, String)> = string_members(source.get("headers"));
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
                "No valid Identity Pool \"credential_source\" provided, must be \
                        either file, url, or certificate."
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
