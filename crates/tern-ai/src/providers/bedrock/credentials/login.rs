//! Console sessions (`aws login`): a profile's `login_session` names a cache file,
//! `~/.aws/login/cache/{sha256}.json` (or under `AWS_LOGIN_CACHE_DIRECTORY`), whose
//! `accessToken` holds the session's keys.
//!
//! The SDK refreshes keys within five minutes of expiring at the sign-in service with a DPoP
//! proof; tern does not: it keeps using keys that have not expired yet (as the SDK does when
//! a refresh fails; the chain reads the file again for each request then, so a new `aws
//! login` is seen at once), and asks to log in again once they have.

use std::time::SystemTime;

use ring::digest;
use serde_json::Value;

use super::wire::{json_keys, parse_time};
use super::{Env, Fresh};

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

/// The keys of login session `session` (profile `profile`, for messages).
pub(crate) async fn resolve(env: &Env, profile: &str, session: &str) -> Result<Fresh, String> {
    let path = cache_path(env, session);
    let failed = |why: String| format!("Failed to load token from {path}: {why}");
    let text = tokio::fs::read_to_string(&path)
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
    let access = token.get("accessToken").cloned().unwrap_or(Value::Null);
    if access
        .get("accountId")
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
    let expires = access
        .get("expiresAt")
        .and_then(Value::as_str)
        .and_then(parse_time)
        .ok_or_else(|| failed("the accessToken has no expiresAt".into()))?;
    let now = SystemTime::now();
    if expires <= now {
        return Err(format!(
            "Failed to refresh token: the console session of profile {profile} expired and \
             tern cannot refresh it. Please re-authenticate using aws login"
        ));
    }
    let credentials = json_keys(&access, ["accessKeyId", "secretAccessKey", "sessionToken"])
        .ok_or_else(|| failed("the accessToken has no accessKeyId or secretAccessKey".into()))?;
    Ok(Fresh {
        credentials,
        expires: Some(expires),
    })
}
