//! Console sessions (`aws login`): a profile's `login_session` names a cache file,
//! `~/.aws/login/cache/{sha256}.json` (or under `AWS_LOGIN_CACHE_DIRECTORY`), whose
//! `accessToken` holds the session's keys.
//!
//! Keys within five minutes of expiring are refreshed as `@aws-sdk/credential-provider-login`
//! does: `POST /v1/token` at the sign-in service (`https://{region}.signin.aws.amazon.com`,
//! the region the token's `signInRegion`, else the profile's, else `AWS_REGION`;
//! `AWS_ENDPOINT_URL_SIGNIN` moves it) with the cached `clientId` and `refreshToken` and a
//! DPoP proof signed with the cached `dpopKey` ([`super::dpop`]); the new keys, expiry and
//! refresh token are written back to the cache file (the rest of it kept). A refusal of the
//! session (`AccessDeniedException`) ends with the SDK's words; any other failure keeps keys
//! that have not expired yet, as the SDK does.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::digest;
use serde_json::{json, Value};

use super::wire::{exchange_with_headers, json_keys, parse_time, Exchange};
use super::{Env, Fresh};
use crate::stream_fn::StreamOptions;

/// Keys this close to expiring are refreshed (the SDK's threshold).
const REFRESH_THRESHOLD: Duration = Duration::from_secs(5 * 60);
/// The refreshed keys' lifetime when the answer names none (the SDK's default).
const DEFAULT_EXPIRES_IN: u64 = 900;
const TIMEOUT: Duration = Duration::from_secs(30);

/// A `login_session` profile.
pub(crate) struct Login<'a> {
    /// The profile, for messages.
    pub profile: &'a str,
    /// Its `login_session`.
    pub session: &'a str,
    /// Its `region`.
    pub region: Option<&'a str>,
}

/// The cache file of login session `session`.
fn cache_path(env: &Env, session: &str) -> String {
    let dir = match env.get("AWS_LOGIN_CACHE_DIRECTORY") {
        Some(d) => d.trim_end_matches('/').to_string(),
        None => format!("{}/.aws/login/cache", env.get("HOME").unwrap_or("~")),
    };
    let sum = digest::digest(&digest::SHA256, session.as_bytes());
    let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{dir}/{hex}.json")
}

/// The cached token, with the fields the SDK requires checked (its words).
async fn load(path: &str) -> Result<Value, String> {
    let failed = |why: String| format!("Failed to load token from {path}: {why}");
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let token: Value = serde_json::from_str(&text).map_err(|e| failed(e.to_string()))?;
    let present = |k: &str| match token.get(k) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Bool(b)) => *b,
        Some(_) => true,
    };
    let mut missing: Vec<&str> = ["accessToken", "clientId", "refreshToken", "dpopKey"]
        .into_iter()
        .filter(|k| !present(k))
        .collect();
    if token
        .pointer("/accessToken/accountId")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        missing.push("accountId");
    }
    if !missing.is_empty() {
        return Err(failed(format!(
            "Token validation failed, missing fields: {}",
            missing.join(", ")
        )));
    }
    Ok(token)
}

/// The keys of `token` and their expiry.
fn fresh(token: &Value, path: &str) -> Result<Fresh, String> {
    let failed = |why: &str| format!("Failed to load token from {path}: {why}");
    let access = token.get("accessToken").unwrap_or(&Value::Null);
    let expires = access
        .get("expiresAt")
        .and_then(Value::as_str)
        .and_then(parse_time)
        .ok_or_else(|| failed("the accessToken has no expiresAt"))?;
    let credentials = json_keys(access, ["accessKeyId", "secretAccessKey", "sessionToken"])
        .ok_or_else(|| failed("the accessToken has no accessKeyId or secretAccessKey"))?;
    Ok(Fresh {
        credentials,
        expires: Some(expires),
    })
}

/// The keys of a `login_session` profile, refreshed when they are about to expire.
pub(crate) async fn resolve(
    env: &Env,
    login: &Login<'_>,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let path = cache_path(env, login.session);
    let token = load(&path).await?;
    let current = fresh(&token, &path)?;
    let now = SystemTime::now();
    let expires = current.expires.unwrap_or(now);
    if expires
        .duration_since(now)
        .is_ok_and(|left| left > REFRESH_THRESHOLD)
    {
        return Ok(current);
    }
    match refresh(env, login, &path, &token, options).await {
        Ok(fresh) => Ok(fresh),
        Err(Failure::Denied(message)) => Err(message),
        Err(Failure::Aborted) => Err("aborted".into()),
        // As the SDK: keys not expired yet are used until they are.
        Err(Failure::Other(_)) if expires > SystemTime::now() => Ok(current),
        Err(Failure::Other(e)) => Err(format!(
            "Failed to refresh token: {e}. Please re-authenticate using aws login (the \
             console session of profile {})",
            login.profile
        )),
    }
}

/// Why a refresh gave no keys.
enum Failure {
    /// The service refused the session: the SDK's words, final.
    Denied(String),
    /// Anything else, in the SDK's `String(error)` form.
    Other(String),
    Aborted,
}

/// The sign-in service's base URL for this session.
fn endpoint(env: &Env, login: &Login<'_>, token: &Value) -> Result<String, Failure> {
    if let Some(url) = env.get("AWS_ENDPOINT_URL_SIGNIN") {
        return Ok(url.trim_end_matches('/').to_string());
    }
    let region = token
        .get("signInRegion")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .or(login.region)
        .or_else(|| env.get("AWS_REGION"))
        .ok_or_else(|| Failure::Other("Error: Invalid Configuration: Missing Region".into()))?;
    Ok(format!("https://{region}.signin.aws.amazon.com"))
}

/// `CreateOAuth2Token` with the cached refresh token; the new keys, written back to `path`.
async fn refresh(
    env: &Env,
    login: &Login<'_>,
    path: &str,
    token: &Value,
    options: &StreamOptions,
) -> Result<Fresh, Failure> {
    let url = format!("{}/v1/token", endpoint(env, login, token)?);
    let key = token.get("dpopKey").and_then(Value::as_str).unwrap_or("");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let proof = super::dpop::proof(key, "POST", &url, now).map_err(|e| {
        Failure::Other(format!(
            "CredentialsProviderError: Failed to generate Dpop proof: {e}"
        ))
    })?;
    let body = json!({
        "clientId": token.get("clientId"),
        "grantType": "refresh_token",
        "refreshToken": token.get("refreshToken"),
    });
    let sent = exchange_with_headers(
        Exchange {
            method: "POST",
            url: &url,
            headers: &[
                ("content-type".to_string(), "application/json".to_string()),
                ("DPoP".to_string(), proof),
            ],
            body: body.to_string(),
            timeout: options.timeout_ms.map_or(TIMEOUT, Duration::from_millis),
        },
        options,
    )
    .await;
    let (status, headers, answer) = match sent {
        Ok(r) => r,
        Err(e) if e == "aborted" => return Err(Failure::Aborted),
        Err(e) => return Err(Failure::Other(format!("Error: {url}: {e}"))),
    };
    let doc: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        return Err(service_error(status, &headers, &doc));
    }
    let text = |p: &str| {
        doc.pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(id), Some(secret), Some(session), Some(refresh_token)) = (
        text("/accessToken/accessKeyId"),
        text("/accessToken/secretAccessKey"),
        text("/accessToken/sessionToken"),
        text("/refreshToken"),
    ) else {
        return Err(Failure::Other(
            "CredentialsProviderError: Token refresh response missing required fields".into(),
        ));
    };
    let expires_in = doc
        .get("expiresIn")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_EXPIRES_IN);
    let expires = SystemTime::now() + Duration::from_secs(expires_in);
    let ms = expires
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut updated = token.clone();
    if let Some(access) = updated
        .get_mut("accessToken")
        .and_then(Value::as_object_mut)
    {
        access.insert("accessKeyId".into(), json!(id));
        access.insert("secretAccessKey".into(), json!(secret));
        access.insert("sessionToken".into(), json!(session));
        access.insert("expiresAt".into(), json!(crate::clock::iso_time(ms)));
    }
    if let Some(o) = updated.as_object_mut() {
        o.insert("refreshToken".into(), json!(refresh_token));
    }
    save(path, &updated).await.map_err(Failure::Other)?;
    fresh(&updated, path).map_err(Failure::Other)
}

/// Writes the refreshed token where the SDK does, as it does (two-space JSON, the file's
/// permissions kept, a new one created with the default mode).
async fn save(path: &str, token: &Value) -> Result<(), String> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    let text = serde_json::to_string_pretty(token).map_err(|e| format!("Error: {e}"))?;
    tokio::fs::write(path, text)
        .await
        .map_err(|e| format!("Error: writing {path}: {e}"))
}

/// A refused refresh in the SDK's words: the error type from `x-amzn-errortype` or the
/// body's `__type` / `code`, then `AccessDeniedException`'s `error` codes.
fn service_error(status: u16, headers: &reqwest::header::HeaderMap, doc: &Value) -> Failure {
    let from_header = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v).to_string());
    let from_body = || {
        ["__type", "code"]
            .iter()
            .find_map(|k| doc.get(*k).and_then(Value::as_str))
            .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
    };
    let name = from_header
        .or_else(from_body)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| format!("HTTP {status}"));
    let message = ["message", "Message"]
        .iter()
        .find_map(|k| doc.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    if name != "AccessDeniedException" {
        return Failure::Other(format!("{name}: {message}"));
    }
    Failure::Denied(
        match doc.get("error").and_then(Value::as_str).unwrap_or("") {
            "TOKEN_EXPIRED" => "Your session has expired. Please reauthenticate.".to_string(),
            "USER_CREDENTIALS_CHANGED" => "Unable to refresh credentials because of a change \
                 in your password. Please reauthenticate with your new password."
                .to_string(),
            "INSUFFICIENT_PERMISSIONS" => "Unable to refresh credentials due to insufficient \
                 permissions. You may be missing permission for the 'CreateOAuth2Token' action."
                .to_string(),
            _ => format!(
                "Failed to refresh token: {name}: {message}. Please re-authenticate using \
                 `aws login`"
            ),
        },
    )
}
