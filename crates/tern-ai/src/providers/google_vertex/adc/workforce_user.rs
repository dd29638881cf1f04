//! Workforce identity federation's user credentials (`"type":
//! "external_account_authorized_user"`, what `gcloud auth application-default login` writes
//! for a workforce pool user), as google-auth-library's
//! `ExternalAccountAuthorizedUserClient` uses them: the refresh token posted to `token_url`
//! (default `https://sts.{universe_domain}/v1/oauthtoken`) with `client_id` /
//! `client_secret` as HTTP Basic auth. A refresh token the endpoint sends back replaces the
//! file's for the rest of the process, as the SDK's client keeps it; `revoke_url` is not
//! used (nothing is revoked), and `quota_project_id` is read with the other files'
//! ([`super::authorization`]).

use std::collections::HashMap;
use std::sync::OnceLock;

use parking_lot::Mutex;
use serde_json::Value;

use super::external::{basic_auth, oauth_answered, text};
use crate::providers::http::{form_body, send_plain};
use crate::stream_fn::StreamOptions;

/// The refresh tokens endpoints sent back, by credentials file: the file's token and the
/// one that replaced it.
fn rotated() -> &'static Mutex<HashMap<String, (String, String)>> {
    static ROTATED: OnceLock<Mutex<HashMap<String, (String, String)>>> = OnceLock::new();
    ROTATED.get_or_init(Default::default)
}

/// The token endpoint for these credentials.
fn token_url(creds: &Value) -> String {
    text(creds, "token_url").unwrap_or_else(|| {
        let universe = text(creds, "universe_domain")
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "googleapis.com".into());
        format!("https://sts.{universe}/v1/oauthtoken")
    })
}

/// A fresh access token and its lifetime in seconds; `file` keys the rotated refresh token.
pub(super) async fn token(
    creds: &Value,
    file: &str,
    options: &StreamOptions,
) -> Result<(String, u64), String> {
    let missing = |field: &str| {
        format!(
            "the external_account_authorized_user file has no {field}; run `gcloud auth \
             application-default login` again to write a complete one"
        )
    };
    let client_id = text(creds, "client_id").ok_or_else(|| missing("client_id"))?;
    let client_secret = text(creds, "client_secret").unwrap_or_default();
    let from_file = text(creds, "refresh_token").ok_or_else(|| missing("refresh_token"))?;
    let refresh = match rotated().lock().get(file) {
        Some((original, newer)) if *original == from_file => newer.clone(),
        _ => from_file.clone(),
    };
    let url = token_url(creds);
    let headers = [
        (
            "content-type".to_string(),
            super::external::FORM_CONTENT_TYPE.to_string(),
        ),
        basic_auth(&client_id, &client_secret),
    ];
    let body = form_body(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
    ]);
    let sent = send_plain(reqwest::Method::POST, &url, &headers, body, options).await;
    let answer = oauth_answered(&url, sent)?;
    let access =
        text(&answer, "access_token").ok_or_else(|| format!("{url} answered no access_token"))?;
    if let Some(newer) = text(&answer, "refresh_token") {
        rotated()
            .lock()
            .insert(file.to_string(), (from_file, newer));
    }
    let lifetime = answer
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    Ok((access, lifetime))
}
