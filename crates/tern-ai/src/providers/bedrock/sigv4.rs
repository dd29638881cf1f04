//! AWS Signature Version 4 for one request with its headers signed (`Authorization:
//! AWS4-HMAC-SHA256 ...`), as the AWS SDK's signer does it for Bedrock: every header but
//! the unsignable ones, the payload hash in `x-amz-content-sha256`, the session token in
//! `x-amz-security-token`, and the path URI-encoded once more (non-S3 services).

use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};

/// Long-lived or temporary AWS credentials.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    // The secret and the token never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// The request as it goes on the wire, for signing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Signable<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The `host` header: the host, with the port when it is not the scheme's default.
    pub host: &'a str,
    /// The path as sent (already percent-encoded where it must be).
    pub path: &'a str,
    /// The query string without `?` (empty for none).
    pub query: &'a str,
    /// The headers that are sent besides `host` and the ones signing adds.
    pub headers: &'a [(String, String)],
    /// The body.
    pub payload: &'a [u8],
}

impl<'a> Signable<'a> {
    /// A `POST` of `payload` to `url`, whose `host` header is `host`.
    pub fn post(
        url: &'a reqwest::Url,
        host: &'a str,
        headers: &'a [(String, String)],
        payload: &'a [u8],
    ) -> Self {
        Signable {
            method: "POST",
            host,
            path: url.path(),
            query: url.query().unwrap_or(""),
            headers,
            payload,
        }
    }
}

/// Where the signature is valid: region, service and time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scope<'a> {
    /// `us-east-1`, ...
    pub region: &'a str,
    /// `bedrock` for Bedrock runtime.
    pub service: &'a str,
    /// The signing time.
    pub at: SystemTime,
}

/// The steps of one signature, each checkable against AWS's published examples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The canonical request.
    pub canonical_request: String,
    /// The string to sign.
    pub string_to_sign: String,
    /// The hex signature.
    pub signature: String,
    /// The headers to add to the request, `authorization` last.
    pub headers: Vec<(String, String)>,
}

/// Headers the AWS SDK never signs (proxies and clients change them).
const UNSIGNABLE: [&str; 15] = [
    "authorization",
    "cache-control",
    "connection",
    "expect",
    "from",
    "keep-alive",
    "max-forwards",
    "pragma",
    "referer",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "x-amzn-trace-id",
];

fn unsignable(name: &str) -> bool {
    UNSIGNABLE.contains(&name) || name.starts_with("proxy-") || name.starts_with("sec-")
}

/// Signs `request` with `credentials` for `scope`.
///
/// `content_sha256` adds the payload hash header (the SDK does for Bedrock; AWS's test
/// suite does not).
pub(crate) fn sign(
    request: &Signable<'_>,
    credentials: &AwsCredentials,
    scope: &Scope<'_>,
    content_sha256: bool,
) -> Signature {
    let (date, amz_date) = timestamps(scope.at);
    let payload_hash = hex(digest::digest(&digest::SHA256, request.payload).as_ref());
    let mut added = vec![("x-amz-date".to_string(), amz_date.clone())];
    if content_sha256 {
        added.push(("x-amz-content-sha256".into(), payload_hash.clone()));
    }
    if let Some(token) = &credentials.session_token {
        added.push(("x-amz-security-token".into(), token.clone()));
    }
    let mut canonical: Vec<(String, String)> = std::iter::once(("host", request.host))
        .chain(
            request
                .headers
                .iter()
                .chain(&added)
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .filter(|(k, _)| !unsignable(k))
        .map(|(k, v)| (k, v.split_whitespace().collect::<Vec<_>>().join(" ")))
        .collect();
    canonical.sort_by(|a, b| a.0.cmp(&b.0));
    // A header sent twice is one canonical header with both values.
    canonical.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 = format!("{},{}", first.1, later.1);
        }
        same
    });
    let signed_headers = canonical
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let header_lines: String = canonical
        .iter()
        .map(|(k, v)| format!("{k}:{v}\n"))
        .collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{header_lines}\n{signed_headers}\n{payload_hash}",
        request.method,
        canonical_path(request.path),
        canonical_query(request.query),
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let key = signing_key(
        &credentials.secret_access_key,
        &date,
        scope.region,
        scope.service,
    );
    let signature = hex(hmac::sign(&key, string_to_sign.as_bytes()).as_ref());
    added.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id
        ),
    ));
    Signature {
        canonical_request,
        string_to_sign,
        signature,
        headers: added,
    }
}

/// The key of one day, region and service.
fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> hmac::Key {
    let mut key = format!("AWS4{secret}").into_bytes();
    for part in [date, region, service, "aws4_request"] {
        let k = hmac::Key::new(hmac::HMAC_SHA256, &key);
        key = hmac::sign(&k, part.as_bytes()).as_ref().to_vec();
    }
    hmac::Key::new(hmac::HMAC_SHA256, &key)
}

/// The path with `.` and `..` resolved, empty segments dropped and every segment
/// percent-encoded (again: `%` becomes `%25`), as the SDK signs non-S3 paths.
fn canonical_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for s in path.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::from(if path.starts_with('/') { "/" } else { "" });
    out.push_str(
        &segments
            .iter()
            .map(|s| uri_encode(s))
            .collect::<Vec<_>>()
            .join("/"),
    );
    if !segments.is_empty() && path.ends_with('/') {
        out.push('/');
    }
    out
}

/// The query's pairs sorted by name then value, each part encoded.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (uri_encode(k), uri_encode(v))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The `host` header of `url`: its host, with the port when it is not the scheme's default.
pub(crate) fn host_header(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

/// RFC 3986 encoding: everything but unreserved characters, upper-case hex (also the
/// SDK's encoding of a path label: `encodeURIComponent` plus `!'()*`).
pub(crate) fn uri_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `YYYYMMDD` and `YYYYMMDDTHHMMSSZ` of `at` (UTC); times before 1970 sign as 1970.
fn timestamps(at: SystemTime) -> (String, String) {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::clock::civil_from_days(days as i64);
    let date = format!("{y:04}{m:02}{d:02}");
    let time = format!("{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    (date.clone(), format!("{date}T{time}Z"))
}

#[cfg(test)]
#[path = "sigv4_tests.rs"]
mod tests;
