//! Credentials a local endpoint hands out: the container endpoint (ECS task roles, EKS Pod
//! Identity) and the EC2 instance metadata service (IMDSv2: a session token from `PUT
//! /latest/api/token`, then the role's credentials). Both answer `{"AccessKeyId",
//! "SecretAccessKey", "Token", "Expiration"}`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde_json::Value;

use super::wire::{exchange, json_fresh, Exchange};
use super::{Env, Fresh};
use crate::stream_fn::StreamOptions;

/// The SDK's one-second budget for each metadata request.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Where ECS serves `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS_HOST: &str = "http://169.254.170.2";
const IMDS_IPV4: &str = "http://169.254.169.254";
const IMDS_IPV6: &str = "http://[fd00:ec2::254]";
/// The IMDS session token's lifetime the SDK asks for (six hours).
const IMDS_TOKEN_TTL: &str = "21600";

/// Whether the environment configures the container endpoint.
pub(crate) fn container_configured(env: &Env) -> bool {
    env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
}

/// Whether `AWS_EC2_METADATA_DISABLED` turns the instance metadata service off.
pub(crate) fn imds_disabled(env: &Env) -> bool {
    env.get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| !v.eq_ignore_ascii_case("false"))
}

/// A plain-HTTP full URI may only point at these hosts (loopback, ECS, EKS Pod Identity).
fn allowed_http_host(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            ip.is_loopback()
                || ip == Ipv4Addr::new(169, 254, 170, 2)
                || ip == Ipv4Addr::new(169, 254, 170, 23)
        }
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)
        }
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// The container endpoint's credentials.
pub(crate) async fn container(env: &Env, options: &StreamOptions) -> Result<Fresh, String> {
    let url = match (
        env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(relative), _) => format!("{ECS_HOST}{relative}"),
        (None, Some(full)) => {
            let parsed = reqwest::Url::parse(full).map_err(|e| {
                format!("AWS_CONTAINER_CREDENTIALS_FULL_URI {full} is no URL ({e})")
            })?;
            let ok = match parsed.scheme() {
                "https" => true,
                "http" => allowed_http_host(&parsed),
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI {full} must be https, or http to a \
                     loopback, ECS or EKS address"
                ));
            }
            full.to_string()
        }
        (None, None) => return Err("no container endpoint is configured".into()),
    };
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(path) => Some(
            tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {path}: {e}"))?
                .trim()
                .to_string(),
        ),
        None => env
            .get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
            .map(str::to_string),
    };
    let mut headers = Vec::new();
    if let Some(token) = token {
        if token.contains(['\r', '\n']) {
            return Err("the container authorization token has a line break".into());
        }
        headers.push(("authorization".to_string(), token));
    }
    let (status, body) = get(&url, &headers, options)
        .await
        .map_err(|e| format!("container credentials at {url}: {e}"))?;
    if status != 200 {
        return Err(format!("container credentials at {url}: HTTP {status}"));
    }
    parse_json(&body).map_err(|e| format!("container credentials at {url}: {e}"))
}

async fn get(
    url: &str,
    headers: &[(String, String)],
    options: &StreamOptions,
) -> Result<(u16, String), String> {
    exchange(
        Exchange {
            method: "GET",
            url,
            headers,
            body: String::new(),
            timeout: TIMEOUT,
        },
        options,
    )
    .await
}

/// The instance role's credentials from IMDS (v2, else v1 where the token is refused).
pub(crate) async fn instance(env: &Env, options: &StreamOptions) -> Result<Fresh, String> {
    let base = match env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        Some(e) => e.trim_end_matches('/').to_string(),
        None if env
            .get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE")
            .is_some_and(|m| m.eq_ignore_ascii_case("ipv6")) =>
        {
            IMDS_IPV6.to_string()
        }
        None => IMDS_IPV4.to_string(),
    };
    let context = |e: String| format!("instance metadata at {base}: {e}");
    let token_url = format!("{base}/latest/api/token");
    let (status, token) = exchange(
        Exchange {
            method: "PUT",
            url: &token_url,
            headers: &[(
                "x-aws-ec2-metadata-token-ttl-seconds".to_string(),
                IMDS_TOKEN_TTL.to_string(),
            )],
            body: String::new(),
            timeout: TIMEOUT,
        },
        options,
    )
    .await
    .map_err(context)?;
    let mut headers = Vec::new();
    match status {
        200 if !token.contains(['\r', '\n']) => headers.push((
            "x-aws-ec2-metadata-token".to_string(),
            token.trim().to_string(),
        )),
        // IMDSv1 only (the SDK falls back the same way).
        403..=405 => {}
        other => return Err(context(format!("token request answered HTTP {other}"))),
    }
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let (status, roles) = get(&roles_url, &headers, options).await.map_err(context)?;
    let role = roles.lines().map(str::trim).find(|l| !l.is_empty());
    let (200, Some(role)) = (status, role) else {
        return Err(context(format!(
            "no instance role (HTTP {status} for the role name)"
        )));
    };
    let role_url = format!("{roles_url}{}", super::super::sigv4::uri_encode(role));
    let (status, body) = get(&role_url, &headers, options).await.map_err(context)?;
    if status != 200 {
        return Err(context(format!("HTTP {status} for role {role}")));
    }
    parse_json(&body).map_err(|e| context(format!("role {role}: {e}")))
}

/// `{"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}` (IMDS adds `"Code":
/// "Success"`; any other code is a failure).
pub(crate) fn parse_json(body: &str) -> Result<Fresh, String> {
    let doc: Value =
        serde_json::from_str(body).map_err(|e| format!("the answer is not JSON ({e})"))?;
    if let Some(code) = doc.get("Code").and_then(Value::as_str) {
        if code != "Success" {
            return Err(format!("the answer's Code is {code:?}"));
        }
    }
    json_fresh(
        &doc,
        ["AccessKeyId", "SecretAccessKey", "Token"],
        "the answer lacks AccessKeyId or SecretAccessKey",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_ecs_and_eks_hosts_over_plain_http() {
        let ok = |u: &str| allowed_http_host(&reqwest::Url::parse(u).unwrap());
        assert!(ok("http://127.0.0.1:8080/creds"));
        assert!(ok("http://127.1.2.3/"));
        assert!(ok("http://localhost/"));
        assert!(ok("http://[::1]:9/"));
        assert!(ok("http://169.254.170.2/v2"));
        assert!(ok("http://169.254.170.23/v1"));
        assert!(ok("http://[fd00:ec2::23]/v1"));
        assert!(!ok("http://169.254.169.254/"));
        assert!(!ok("http://10.0.0.1/"));
        assert!(!ok("http://example.com/"));
    }

    #[test]
    fn answers_broken_or_failed() {
        let f = parse_json(r#"{"Code":"Success","AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"2030-01-01T00:00:00Z"}"#).unwrap();
        assert_eq!(f.credentials.session_token.as_deref(), Some("T"));
        assert!(f.expires.is_some());
        for bad in [
            "",
            "null",
            "[1]",
            r#"{"Code":"Failed"}"#,
            r#"{"AccessKeyId":"A"}"#,
            r#"{"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"later"}"#,
            r#"{"AccessKeyId":7,"SecretAccessKey":"S"}"#,
        ] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }
}
