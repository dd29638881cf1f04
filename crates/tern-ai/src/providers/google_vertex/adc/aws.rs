//! Workload identity federation from AWS (`credential_source.environment_id: "aws1"`), as
//! google-auth-library's `AwsClient` does it: the region (`AWS_REGION`, else
//! `AWS_DEFAULT_REGION`, else `region_url` with its last character — the zone letter — cut)
//! and the role's keys (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`,
//! else the role named at `url` and its keys at `url/{role}`), the metadata reads carrying an
//! IMDSv2 session token when the file names `imdsv2_session_token_url`. The subject token is
//! a GetCallerIdentity request to `regional_cred_verification_url`, signed with tern's SigV4
//! signer and serialized (URL, method, headers sorted by name with
//! `x-goog-cloud-target-resource` added after signing) as URI-encoded JSON; Google's STS
//! replays it to AWS.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::external::{send_error, text};
use crate::providers::bedrock::sigv4::{host_header, sign, AwsCredentials, Scope, Signable};
use crate::providers::http::send_plain;
use crate::stream_fn::StreamOptions;

/// The session token lifetime the SDK asks IMDSv2 for, in seconds.
const IMDS_TOKEN_TTL: &str = "300";

/// What the credential source names.
struct Source {
    region_url: Option<String>,
    url: Option<String>,
    imdsv2_session_token_url: Option<String>,
    verification_url: String,
}

fn source_of(source: &Value) -> Result<Source, String> {
    let id = text(source, "environment_id").unwrap_or_default();
    let version = id
        .strip_prefix("aws")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
    let verification_url = text(source, "regional_cred_verification_url");
    let (Some(version), Some(verification_url)) = (version, verification_url) else {
        return Err(
            "No valid AWS \"credential_source\" provided (it needs an environment_id \
                    like \"aws1\" and a regional_cred_verification_url)"
                .into(),
        );
    };
    if version.parse::<u64>().ok() != Some(1) {
        return Err(format!(
            "aws version \"{version}\" is not supported in the current build."
        ));
    }
    Ok(Source {
        region_url: text(source, "region_url"),
        url: text(source, "url"),
        imdsv2_session_token_url: text(source, "imdsv2_session_token_url"),
        verification_url,
    })
}

/// One metadata request; the body of a 2xx answer.
async fn fetch(
    method: reqwest::Method,
    url: &str,
    headers: &[(String, String)],
    what: &str,
    options: &StreamOptions,
) -> Result<String, String> {
    let sent = send_plain(method, url, headers, String::new(), options).await;
    let (status, body) = sent.map_err(|e| format!("the AWS {what}: {}", send_error(url, e)))?;
    if !(200..300).contains(&status) {
        return Err(format!("the AWS {what}: {url} answered {status}"));
    }
    Ok(body)
}

/// The IMDSv2 session token header, when the file names where to get one.
async fn session_header(
    source: &Source,
    options: &StreamOptions,
) -> Result<Vec<(String, String)>, String> {
    let Some(url) = &source.imdsv2_session_token_url else {
        return Ok(Vec::new());
    };
    let ttl = [(
        "x-aws-ec2-metadata-token-ttl-seconds".to_string(),
        IMDS_TOKEN_TTL.to_string(),
    )];
    let token = fetch(reqwest::Method::PUT, url, &ttl, "session token", options).await?;
    if token.contains(['\r', '\n']) {
        return Err(format!("the AWS session token from {url} has a line break"));
    }
    Ok(vec![("x-aws-ec2-metadata-token".to_string(), token)])
}

async fn region(source: &Source, options: &StreamOptions) -> Result<String, String> {
    if let Some(region) = options
        .env_var("AWS_REGION")
        .or_else(|| options.env_var("AWS_DEFAULT_REGION"))
    {
        return Ok(region);
    }
    let headers = session_header(source, options).await?;
    let url = source.region_url.as_deref().ok_or(
        "Unable to determine AWS region due to missing \"options.credential_source.region_url\" \
         (or set AWS_REGION)",
    )?;
    let zone = fetch(reqwest::Method::GET, url, &headers, "region", options).await?;
    // An availability zone (`us-east-2b`): the region is all but its last character.
    let mut region = zone;
    region.pop();
    Ok(region)
}

async fn credentials(source: &Source, options: &StreamOptions) -> Result<AwsCredentials, String> {
    if let (Some(id), Some(secret)) = (
        options.env_var("AWS_ACCESS_KEY_ID"),
        options.env_var("AWS_SECRET_ACCESS_KEY"),
    ) {
        return Ok(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: options.env_var("AWS_SESSION_TOKEN"),
        });
    }
    let headers = session_header(source, options).await?;
    let url = source.url.as_deref().ok_or(
        "Unable to determine AWS role name due to missing \"options.credential_source.url\" \
         (or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
    )?;
    let role = fetch(reqwest::Method::GET, url, &headers, "role name", options).await?;
    let role = role.trim();
    let keys_url = format!("{url}/{role}");
    let body = fetch(
        reqwest::Method::GET,
        &keys_url,
        &headers,
        "role credentials",
        options,
    )
    .await?;
    let doc: Value = serde_json::from_str(&body)
        .map_err(|e| format!("the AWS role credentials from {keys_url} are not JSON ({e})"))?;
    let field = |k: &str| text(&doc, k).filter(|v| !v.is_empty());
    let (Some(id), Some(secret)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
        return Err(format!(
            "the AWS role credentials from {keys_url} lack AccessKeyId or SecretAccessKey"
        ));
    };
    Ok(AwsCredentials {
        access_key_id: id,
        secret_access_key: secret,
        session_token: field("Token"),
    })
}

/// `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` percent-encoded.
fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The signed GetCallerIdentity request, serialized as the subject token.
pub(super) async fn subject_token(
    creds: &Value,
    source: &Value,
    options: &StreamOptions,
) -> Result<String, String> {
    let source = source_of(source)?;
    let region = region(&source, options).await?;
    let keys = credentials(&source, options).await?;
    let audience = text(creds, "audience").unwrap_or_default();
    serialized_request(
        &source.verification_url,
        &region,
        &keys,
        &audience,
        SystemTime::now(),
    )
}

/// The request to `verification_url` (its `{region}` filled in) signed for `region` at `at`,
/// as the URI-encoded JSON google-auth-library sends as the subject token.
fn serialized_request(
    verification_url: &str,
    region: &str,
    keys: &AwsCredentials,
    audience: &str,
    at: SystemTime,
) -> Result<String, String> {
    let url = verification_url.replacen("{region}", region, 1);
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| format!("regional_cred_verification_url {url} is no URL ({e})"))?;
    let host = host_header(&parsed)
        .ok_or_else(|| format!("regional_cred_verification_url {url} has no host"))?;
    let service = host.split('.').next().unwrap_or_default().to_string();
    let signed = sign(
        &Signable::post(&parsed, &host, &[], b""),
        keys,
        &Scope {
            region,
            service: &service,
            at,
        },
        false,
    );
    let mut headers = signed.headers;
    headers.push(("host".into(), host));
    headers.push(("x-goog-cloud-target-resource".into(), audience.to_string()));
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let headers: Vec<Value> = headers
        .into_iter()
        .map(|(key, value)| json!({"key": key, "value": value}))
        .collect();
    let request = json!({"url": url, "method": "POST", "headers": headers});
    Ok(encode_uri_component(&request.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_ids_are_checked() {
        let with = |id: &str| {
            json!({"environment_id": id,
                   "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"})
        };
        assert!(source_of(&with("aws1")).is_ok());
        assert_eq!(
            source_of(&with("aws2")).err().as_deref(),
            Some("aws version \"2\" is not supported in the current build.")
        );
        assert!(source_of(&with("azure1")).is_err());
        assert!(source_of(&with("aws")).is_err());
        assert!(source_of(&json!({"environment_id": "aws1"})).is_err());
    }

    #[test]
    fn encode_uri_component_keeps_what_javascript_keeps() {
        assert_eq!(
            encode_uri_component("{\"a\":\"b c/d?e=f&g\"}!~*'()"),
            "%7B%22a%22%3A%22b%20c%2Fd%3Fe%3Df%26g%22%7D!~*'()"
        );
    }

    /// The subject tokens google-auth-library 10.9's `AwsClient` produced for these keys at
    /// 2024-05-06T07:08:09Z (with and without a session token): byte for byte the same.
    #[test]
    fn the_serialized_request_matches_google_auth_library() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_714_979_289);
        let url = "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15";
        let audience =
            "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/aws";
        let mut keys = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: Some("IQoJb3JpZ2luX2VjEXAMPLE/token==".into()),
        };
        let expected_with_token = [
            "%7B%22url%22%3A%22https%3A%2F%2Fsts.us-east-2.amazonaws.com%3FAction%3DGetCaller",
            "Identity%26Version%3D2011-06-15%22%2C%22method%22%3A%22POST%22%2C%22headers%22%3",
            "A%5B%7B%22key%22%3A%22authorization%22%2C%22value%22%3A%22AWS4-HMAC-SHA256%20Cre",
            "dential%3DAKIDEXAMPLE%2F20240506%2Fus-east-2%2Fsts%2Faws4_request%2C%20SignedHea",
            "ders%3Dhost%3Bx-amz-date%3Bx-amz-security-token%2C%20Signature%3D68f2402293e3b64",
            "3529cce01c7a9f678685745c888064382266d74b390a07cb8%22%7D%2C%7B%22key%22%3A%22host",
            "%22%2C%22value%22%3A%22sts.us-east-2.amazonaws.com%22%7D%2C%7B%22key%22%3A%22x-a",
            "mz-date%22%2C%22value%22%3A%2220240506T070809Z%22%7D%2C%7B%22key%22%3A%22x-amz-s",
            "ecurity-token%22%2C%22value%22%3A%22IQoJb3JpZ2luX2VjEXAMPLE%2Ftoken%3D%3D%22%7D%",
            "2C%7B%22key%22%3A%22x-goog-cloud-target-resource%22%2C%22value%22%3A%22%2F%2Fiam",
            ".googleapis.com%2Fprojects%2F123%2Flocations%2Fglobal%2FworkloadIdentityPools%2F",
            "pool%2Fproviders%2Faws%22%7D%5D%7D",
        ]
        .concat();
        assert_eq!(
            serialized_request(url, "us-east-2", &keys, audience, at).unwrap(),
            expected_with_token
        );
        keys.session_token = None;
        let expected_without = [
            "%7B%22url%22%3A%22https%3A%2F%2Fsts.us-east-2.amazonaws.com%3FAction%3DGetCaller",
            "Identity%26Version%3D2011-06-15%22%2C%22method%22%3A%22POST%22%2C%22headers%22%3",
            "A%5B%7B%22key%22%3A%22authorization%22%2C%22value%22%3A%22AWS4-HMAC-SHA256%20Cre",
            "dential%3DAKIDEXAMPLE%2F20240506%2Fus-east-2%2Fsts%2Faws4_request%2C%20SignedHea",
            "ders%3Dhost%3Bx-amz-date%2C%20Signature%3Dc60a701c561b2919fa5386b77ceacbd67ae293",
            "0cdec823607a9fe9da1c91ac2f%22%7D%2C%7B%22key%22%3A%22host%22%2C%22value%22%3A%22",
            "sts.us-east-2.amazonaws.com%22%7D%2C%7B%22key%22%3A%22x-amz-date%22%2C%22value%2",
            "2%3A%2220240506T070809Z%22%7D%2C%7B%22key%22%3A%22x-goog-cloud-target-resource%2",
            "2%2C%22value%22%3A%22%2F%2Fiam.googleapis.com%2Fprojects%2F123%2Flocations%2Fglo",
            "bal%2FworkloadIdentityPools%2Fpool%2Fproviders%2Faws%22%7D%5D%7D",
        ]
        .concat();
        assert_eq!(
            serialized_request(url, "us-east-2", &keys, audience, at).unwrap(),
            expected_without
        );
    }
}
