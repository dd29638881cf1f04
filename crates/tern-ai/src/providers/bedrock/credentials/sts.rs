//! AWS STS's query API for the two calls of the chain: `AssumeRole` (signed with the source
//! credentials) and `AssumeRoleWithWebIdentity` (unsigned), each answering XML with a
//! `<Credentials>` element, or an `<Error>` with `<Code>` and `<Message>`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::super::sigv4::{host_header, sign, uri_encode, AwsCredentials, Scope, Signable};
use super::wire::{exchange, parse_time, xml_text, Exchange};
use super::{Env, Fresh};
use crate::stream_fn::StreamOptions;

const VERSION: &str = "2011-06-15";
const TIMEOUT: Duration = Duration::from_secs(30);

/// A role to assume.
pub(crate) struct Role<'a> {
    /// `role_arn`.
    pub arn: &'a str,
    /// `role_session_name`, else a generated one.
    pub session_name: Option<&'a str>,
    /// `external_id`.
    pub external_id: Option<&'a str>,
    /// `duration_seconds`.
    pub duration_seconds: Option<&'a str>,
    /// The region whose STS endpoint answers.
    pub region: &'a str,
}

/// The STS endpoint of `region` (`AWS_ENDPOINT_URL_STS` overrides it).
fn endpoint(env: &Env, region: &str) -> String {
    match env.get("AWS_ENDPOINT_URL_STS") {
        Some(url) => url.to_string(),
        None => format!("https://sts.{region}.amazonaws.com/"),
    }
}

/// A session name as the SDK makes one: unique per call.
fn session_name(given: Option<&str>) -> String {
    match given {
        Some(n) => n.to_string(),
        None => {
            let ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            format!("tern-session-{ms}")
        }
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k), uri_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `AssumeRole` with `source` credentials.
pub(crate) async fn assume_role(
    env: &Env,
    source: &AwsCredentials,
    role: &Role<'_>,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let name = session_name(role.session_name);
    let mut fields = vec![
        ("Action", "AssumeRole"),
        ("Version", VERSION),
        ("RoleArn", role.arn),
        ("RoleSessionName", name.as_str()),
    ];
    if let Some(id) = role.external_id {
        fields.push(("ExternalId", id));
    }
    if let Some(d) = role.duration_seconds {
        fields.push(("DurationSeconds", d));
    }
    let body = form(&fields);
    let url = endpoint(env, role.region);
    let parsed = reqwest::Url::parse(&url).map_err(|e| format!("bad STS endpoint {url}: {e}"))?;
    let host = host_header(&parsed).ok_or_else(|| format!("bad STS endpoint {url}: no host"))?;
    let mut headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    let signature = sign(
        &Signable::post(&parsed, &host, &headers, body.as_bytes()),
        source,
        &Scope {
            region: role.region,
            service: "sts",
            at: SystemTime::now(),
        },
        false,
    );
    headers.extend(signature.headers);
    call(&url, &headers, body, "AssumeRole", role.arn, options).await
}

/// `AssumeRoleWithWebIdentity` with the token read from a file.
pub(crate) async fn assume_role_with_web_identity(
    env: &Env,
    token: &str,
    role: &Role<'_>,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let name = session_name(role.session_name);
    let mut fields = vec![
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", VERSION),
        ("RoleArn", role.arn),
        ("RoleSessionName", name.as_str()),
        ("WebIdentityToken", token),
    ];
    if let Some(d) = role.duration_seconds {
        fields.push(("DurationSeconds", d));
    }
    let headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    let url = endpoint(env, role.region);
    call(
        &url,
        &headers,
        form(&fields),
        "AssumeRoleWithWebIdentity",
        role.arn,
        options,
    )
    .await
}

async fn call(
    url: &str,
    headers: &[(String, String)],
    body: String,
    action: &str,
    arn: &str,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let (status, text) = exchange(
        Exchange {
            method: "POST",
            url,
            headers,
            body,
            timeout: options.timeout_ms.map_or(TIMEOUT, Duration::from_millis),
        },
        options,
    )
    .await
    .map_err(|e| format!("STS {action} for {arn} at {url} failed: {e}"))?;
    parse_credentials(&text).ok_or_else(|| {
        let code = xml_text(&text, "Code").unwrap_or_else(|| format!("HTTP {status}"));
        let message = xml_text(&text, "Message").unwrap_or_default();
        format!("STS {action} for {arn} failed: {code} {message}")
            .trim_end()
            .to_string()
    })
}

/// The `<Credentials>` of a successful answer.
pub(crate) fn parse_credentials(xml: &str) -> Option<Fresh> {
    let start = xml.find("<Credentials>")?;
    let creds = xml.get(start..)?;
    let expiration = xml_text(creds, "Expiration");
    Some(Fresh {
        credentials: AwsCredentials {
            access_key_id: xml_text(creds, "AccessKeyId").filter(|s| !s.is_empty())?,
            secret_access_key: xml_text(creds, "SecretAccessKey").filter(|s| !s.is_empty())?,
            session_token: xml_text(creds, "SessionToken").filter(|s| !s.is_empty()),
        },
        expires: match expiration {
            Some(e) => Some(parse_time(&e)?),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_with_credentials_and_broken_answers() {
        let ok = "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
                  <AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>\
                  <SecretAccessKey>s/e+c</SecretAccessKey><SessionToken>t&amp;1</SessionToken>\
                  <Expiration>2011-07-15T23:28:33.359Z</Expiration></Credentials>\
                  </AssumeRoleResult></AssumeRoleResponse>";
        let f = parse_credentials(ok).unwrap();
        assert_eq!(f.credentials.access_key_id, "ASIA1");
        assert_eq!(f.credentials.secret_access_key, "s/e+c");
        assert_eq!(f.credentials.session_token.as_deref(), Some("t&1"));
        assert_eq!(f.expires, parse_time("2011-07-15T23:28:33Z"));
        for broken in [
            "",
            "<Credentials>",
            "<Credentials><AccessKeyId>A</AccessKeyId></Credentials>",
            "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>\
             <Expiration>soon</Expiration></Credentials>",
            "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>",
        ] {
            assert!(parse_credentials(broken).is_none(), "{broken}");
        }
        // Every prefix of the answer is handled.
        for end in 0..ok.len() {
            if let Some(p) = ok.get(..end) {
                let _ = parse_credentials(p);
            }
        }
    }
}
