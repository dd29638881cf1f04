//! IAM Identity Center (SSO) profiles: the access token `aws sso login` cached in
//! `~/.aws/sso/cache/{sha1}.json` (the SHA-1 of the `sso_session` name, or of the legacy
//! profile's `sso_start_url`), exchanged at the portal's `GetRoleCredentials` for the
//! account's role credentials.
//!
//! A session's token (`sso_session` profiles) within five minutes of expiring is refreshed
//! as the SDK's `fromSso` does: SSO-OIDC `CreateToken` with the cached `clientId`,
//! `clientSecret` and `refreshToken`, at most once every 30 seconds per session; the new
//! token is written back to the cache file, and a failed refresh keeps a token not yet
//! expired. A legacy profile's expired token is not refreshed: the message says to log in.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use ring::digest;
use serde_json::Value;

use super::ini::Settings;
use super::wire::{exchange, json_keys, parse_time, Exchange};
use super::{Env, Fresh};
use crate::stream_fn::StreamOptions;

const TIMEOUT: Duration = Duration::from_secs(30);
const LOGIN: &str = "run `aws sso login` with the corresponding profile";
/// The SDK's words after its token errors.
const REFRESH_MESSAGE: &str =
    "To refresh this SSO session run 'aws sso login' with the corresponding profile.";
/// A token this close to expiring is refreshed.
const EXPIRE_WINDOW: Duration = Duration::from_secs(5 * 60);
/// A session's refreshes are this far apart at least.
const REFRESH_PAUSE: Duration = Duration::from_secs(30);

/// The SSO settings of one profile, its session's settings merged in.
pub(crate) struct Sso<'a> {
    /// The profile, for messages.
    pub profile: &'a str,
    /// The profile's settings.
    pub settings: &'a Settings,
    /// Its `[sso-session]` section, when it names one.
    pub session: Option<(&'a str, &'a Settings)>,
}

fn get<'a>(s: &'a Settings, key: &str) -> Option<&'a str> {
    s.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The role credentials of an SSO profile.
pub(crate) async fn resolve(
    env: &Env,
    sso: &Sso<'_>,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let profile = sso.profile;
    let from_session = |k: &str| sso.session.and_then(|(_, s)| get(s, k));
    let setting = |k: &str| from_session(k).or_else(|| get(sso.settings, k));
    let missing = |k: &str| format!("SSO profile {profile} has no {k}");
    let region = setting("sso_region").ok_or_else(|| missing("sso_region"))?;
    let account = get(sso.settings, "sso_account_id").ok_or_else(|| missing("sso_account_id"))?;
    let role = get(sso.settings, "sso_role_name").ok_or_else(|| missing("sso_role_name"))?;
    let cache_key = match sso.session {
        Some((name, _)) => name,
        None => get(sso.settings, "sso_start_url").ok_or_else(|| missing("sso_start_url"))?,
    };
    let home = env.get("HOME").unwrap_or("~");
    let digest = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, cache_key.as_bytes());
    let path = format!("{home}/.aws/sso/cache/{}.json", hex(digest.as_ref()));
    let text = tokio::fs::read(&path)
        .await
        .map_err(|e| format!("SSO profile {profile}: no cached token at {path} ({e}); {LOGIN}"))?;
    let cached: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("SSO profile {profile}: {path} is not JSON ({e}); {LOGIN}"))?;
    let token = cached
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && !t.contains(['\r', '\n']))
        .ok_or_else(|| format!("SSO profile {profile}: {path} has no accessToken; {LOGIN}"))?;
    let expires = cached
        .get("expiresAt")
        .and_then(Value::as_str)
        .and_then(parse_time)
        .ok_or_else(|| format!("SSO profile {profile}: {path} has no expiresAt; {LOGIN}"))?;
    let refreshed;
    let token = match sso.session {
        Some((name, _)) => {
            refreshed = session_token(env, name, region, &path, &cached, expires, options).await?;
            refreshed.as_str()
        }
        None if expires <= SystemTime::now() => {
            return Err(format!(
                "SSO profile {profile}: the token is expired; {LOGIN}"
            ));
        }
        None => token,
    };
    let base = match env.get("AWS_ENDPOINT_URL_SSO") {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => format!("https://portal.sso.{region}.amazonaws.com"),
    };
    let enc = super::super::sigv4::uri_encode;
    let url = format!(
        "{base}/federation/credentials?account_id={}&role_name={}",
        enc(account),
        enc(role)
    );
    let (status, body) = exchange(
        Exchange {
            method: "GET",
            url: &url,
            headers: &[("x-amz-sso_bearer_token".to_string(), token.to_string())],
            body: String::new(),
            timeout: options.timeout_ms.map_or(TIMEOUT, Duration::from_millis),
        },
        options,
    )
    .await
    .map_err(|e| format!("SSO GetRoleCredentials at {base} failed: {e}"))?;
    if status != 200 {
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let message = doc.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(format!(
            "SSO GetRoleCredentials for account {account} role {role} failed: HTTP {status} \
             {message}; {LOGIN}"
        ));
    }
    parse_role_credentials(&body)
        .ok_or_else(|| format!("SSO GetRoleCredentials for account {account} role {role}: the answer has no roleCredentials"))
}

/// When each session's token was last refreshed, or tried.
fn last_refreshes() -> &'static Mutex<HashMap<String, Instant>> {
    static LAST: OnceLock<Mutex<HashMap<String, Instant>>> = OnceLock::new();
    LAST.get_or_init(Default::default)
}

/// The access token of session `name` (the SDK's `fromSso`): the cached one while more than
/// five minutes remain, else a refreshed one (written back to `path`), else the cached one
/// while it has not expired.
async fn session_token(
    env: &Env,
    name: &str,
    region: &str,
    path: &str,
    cached: &Value,
    expires: SystemTime,
    options: &StreamOptions,
) -> Result<String, String> {
    let field = |k: &str| cached.get(k).and_then(Value::as_str).map(str::to_string);
    let token = field("accessToken").unwrap_or_default();
    let now = SystemTime::now();
    let usable = || {
        (expires > SystemTime::now())
            .then(|| token.clone())
            .ok_or_else(|| format!("Token is expired. {REFRESH_MESSAGE}"))
    };
    if expires
        .duration_since(now)
        .is_ok_and(|left| left > EXPIRE_WINDOW)
    {
        return Ok(token);
    }
    {
        let mut last = last_refreshes().lock();
        if last
            .get(name)
            .is_some_and(|at| at.elapsed() < REFRESH_PAUSE)
        {
            return usable();
        }
        for key in ["clientId", "clientSecret", "refreshToken"] {
            if cached.get(key).is_none() {
                return Err(format!(
                    "Value not present for '{key}' in SSO Token. Cannot refresh. {REFRESH_MESSAGE}"
                ));
            }
        }
        last.insert(name.to_string(), Instant::now());
    }
    match create_token(env, region, cached, options).await {
        Some((access, expires_in, refresh)) => {
            let at = SystemTime::now() + Duration::from_secs(expires_in);
            let ms = at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let mut updated = cached.clone();
            if let Some(o) = updated.as_object_mut() {
                o.insert("accessToken".into(), Value::String(access.clone()));
                o.insert(
                    "expiresAt".into(),
                    Value::String(crate::clock::iso_time(ms)),
                );
                // The SDK writes what CreateToken answered: no refresh token drops it.
                match refresh {
                    Some(r) => o.insert("refreshToken".into(), Value::String(r)),
                    None => o.remove("refreshToken"),
                };
            }
            // As the SDK: a cache that cannot be written does not fail the request.
            if let Ok(text) = serde_json::to_string_pretty(&updated) {
                let _ = tokio::fs::write(path, text).await;
            }
            Ok(access)
        }
        None => usable(),
    }
}

/// SSO-OIDC `CreateToken` with the cached client and refresh token: the new access token,
/// its lifetime in seconds and the new refresh token; `None` when the service refused or
/// answered something else.
async fn create_token(
    env: &Env,
    region: &str,
    cached: &Value,
    options: &StreamOptions,
) -> Option<(String, u64, Option<String>)> {
    let base = match env.get("AWS_ENDPOINT_URL_SSO_OIDC") {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => format!("https://oidc.{region}.amazonaws.com"),
    };
    let body = serde_json::json!({
        "clientId": cached.get("clientId"),
        "clientSecret": cached.get("clientSecret"),
        "refreshToken": cached.get("refreshToken"),
        "grantType": "refresh_token",
    });
    let (status, answer) = exchange(
        Exchange {
            method: "POST",
            url: &format!("{base}/token"),
            headers: &[("content-type".to_string(), "application/json".to_string())],
            body: body.to_string(),
            timeout: options.timeout_ms.map_or(TIMEOUT, Duration::from_millis),
        },
        options,
    )
    .await
    .ok()?;
    if status != 200 {
        return None;
    }
    let doc: Value = serde_json::from_str(&answer).ok()?;
    let access = doc
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && !t.contains(['\r', '\n']))?;
    let expires_in = doc
        .get("expiresIn")
        .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))?;
    let refresh = doc
        .get("refreshToken")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((access.to_string(), expires_in, refresh))
}

/// `{"roleCredentials": {"accessKeyId", "secretAccessKey", "sessionToken", "expiration"}}`
/// (the expiration in milliseconds since 1970).
pub(crate) fn parse_role_credentials(body: &str) -> Option<Fresh> {
    let doc: Value = serde_json::from_str(body).ok()?;
    let c = doc.get("roleCredentials")?;
    let expires = match c.get("expiration") {
        Some(v) => Some(UNIX_EPOCH.checked_add(Duration::from_millis(v.as_u64()?))?),
        None => None,
    };
    Some(Fresh {
        credentials: json_keys(c, ["accessKeyId", "secretAccessKey", "sessionToken"])?,
        expires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_credentials_and_broken_answers() {
        let f = parse_role_credentials(
            r#"{"roleCredentials":{"accessKeyId":"A","secretAccessKey":"S","sessionToken":"T","expiration":1700000000000}}"#,
        )
        .unwrap();
        assert_eq!(f.credentials.session_token.as_deref(), Some("T"));
        assert_eq!(
            f.expires,
            UNIX_EPOCH.checked_add(Duration::from_secs(1_700_000_000))
        );
        for bad in [
            "",
            "{}",
            r#"{"roleCredentials":1}"#,
            r#"{"roleCredentials":{"accessKeyId":"A"}}"#,
            r#"{"roleCredentials":{"accessKeyId":"A","secretAccessKey":"S","expiration":-1}}"#,
        ] {
            assert!(parse_role_credentials(bad).is_none(), "{bad}");
        }
    }
}
