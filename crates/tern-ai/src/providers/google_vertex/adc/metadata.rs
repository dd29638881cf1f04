//! The GCE metadata server, the last Application Default Credentials source (as in
//! google-auth-library with gcp-metadata): used when tern runs on Google Cloud — a
//! serverless runtime (`CLOUD_RUN_JOB`, `FUNCTION_NAME`, `K_SERVICE`), a Linux VM whose BIOS
//! vendor is Google, a network interface with a GCE MAC address (`42:01:...`), or a server
//! that answers `GET /computeMetadata/v1/instance` with `Metadata-Flavor: Google` within three
//! seconds (`METADATA_SERVER_DETECTION` = `assume-present`, `none`, `bios-only` or
//! `ping-only` changes that probe as it does for gcp-metadata). The server is
//! `GCE_METADATA_IP`, else `GCE_METADATA_HOST`, else `169.254.169.254` (and
//! `metadata.google.internal.`, raced, when neither is set). The token is the default service
//! account's, for the cloud-platform scope; every request carries `Metadata-Flavor: Google`
//! and every answer must too.
//!
//! The project is not read from the server: a Vertex request without an API key needs
//! `GOOGLE_CLOUD_PROJECT` before any credentials are looked for (the reference's rule), so
//! google-auth-library finds the project in the environment as well.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use futures::future::select_ok;
use parking_lot::Mutex;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::providers::http::{send_plain_headers, SendError};
use crate::stream_fn::StreamOptions;

const HOST_ADDRESS: &str = "http://169.254.169.254";
const SECONDARY_HOST_ADDRESS: &str = "http://metadata.google.internal.";
const BASE_PATH: &str = "/computeMetadata/v1";
/// gcp-metadata's limit for a metadata request off Google Cloud.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// gcp-metadata retries a request that got no response this many times.
const NO_RESPONSE_RETRIES: usize = 3;
const DETECTION_MODES: [&str; 4] = ["assume-present", "none", "bios-only", "ping-only"];

fn flavor() -> [(String, String); 1] {
    [("Metadata-Flavor".to_string(), "Google".to_string())]
}

/// `http://host[:port]/computeMetadata/v1` for a host given with or without a scheme.
fn base_of(host: &str) -> String {
    let with_scheme = if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        format!("http://{host}")
    };
    reqwest::Url::parse(&with_scheme)
        .and_then(|u| u.join(BASE_PATH))
        .map(|u| u.to_string())
        .unwrap_or_else(|_| format!("{}{BASE_PATH}", with_scheme.trim_end_matches('/')))
}

/// Whether `GCE_METADATA_IP` or `GCE_METADATA_HOST` names the server.
fn configured_host(options: &StreamOptions) -> Option<String> {
    options
        .env_var("GCE_METADATA_IP")
        .or_else(|| options.env_var("GCE_METADATA_HOST"))
}

/// The metadata server's `.../computeMetadata/v1`.
pub(super) fn base_url(options: &StreamOptions) -> String {
    base_of(&configured_host(options).unwrap_or_else(|| HOST_ADDRESS.to_string()))
}

/// Whether this machine is on Google Cloud by its own signs (gcp-metadata's "residency").
fn resident(options: &StreamOptions) -> bool {
    let serverless = ["CLOUD_RUN_JOB", "FUNCTION_NAME", "K_SERVICE"]
        .iter()
        .any(|v| options.env_var(v).is_some());
    serverless || (cfg!(target_os = "linux") && (google_bios() || google_mac()))
}

fn google_bios() -> bool {
    std::fs::metadata("/sys/class/dmi/id/bios_date").is_ok()
        && std::fs::read_to_string("/sys/class/dmi/id/bios_vendor")
            .is_ok_and(|vendor| vendor.contains("Google"))
}

fn google_mac() -> bool {
    let Ok(interfaces) = std::fs::read_dir("/sys/class/net") else {
        return false;
    };
    interfaces.flatten().any(|i| {
        std::fs::read_to_string(i.path().join("address"))
            .is_ok_and(|mac| mac.trim().to_ascii_lowercase().starts_with("42:01"))
    })
}

/// The answer's `Metadata-Flavor`, which must be `Google`.
fn check_flavor(headers: &HeaderMap) -> Result<(), String> {
    match headers
        .get("metadata-flavor")
        .map(|v| v.to_str().unwrap_or("?"))
    {
        Some("Google") => Ok(()),
        got => Err(format!(
            "Invalid response from metadata service: incorrect Metadata-Flavor header. \
             Expected 'Google', got {}",
            got.map_or("no header".to_string(), |g| format!("'{g}'"))
        )),
    }
}

/// One GET with `Metadata-Flavor: Google`, retried while nothing answers; a 2xx answer's
/// headers and body, or why there is none.
async fn get(
    url: &str,
    limit: Option<Duration>,
    retries: usize,
    options: &StreamOptions,
) -> Result<(u16, HeaderMap, String), String> {
    let mut attempt = 0;
    loop {
        let sent = send_plain_headers(
            None,
            reqwest::Method::GET,
            url,
            &flavor(),
            String::new(),
            limit,
            options,
        )
        .await;
        match sent {
            Ok(answer) => return Ok(answer),
            Err(SendError::Network(_)) if attempt < retries => attempt += 1,
            Err(SendError::Aborted) => return Err("Request was aborted".into()),
            Err(SendError::Network(m) | SendError::Message(m)) => return Err(m),
            Err(SendError::Status(f)) => return Err(format!("HTTP {}", f.status)),
        }
    }
}

/// `GET {base}/instance`: the headers of a 2xx answer.
async fn probe(base: String, options: &StreamOptions) -> Result<HeaderMap, String> {
    let url = format!("{base}/instance");
    let (status, headers, _) = get(&url, Some(PROBE_TIMEOUT), 0, options).await?;
    match status {
        200..=299 => Ok(headers),
        other => Err(format!("HTTP {other}")),
    }
}

/// Whether a metadata server answers at `base` (or, when no host is configured, at either
/// address), as gcp-metadata's `isAvailable` decides it.
async fn ping(base: &str, options: &StreamOptions) -> Result<(), String> {
    let headers = match configured_host(options) {
        Some(_) => probe(base.to_string(), options).await?,
        None => {
            let secondary = base_of(SECONDARY_HOST_ADDRESS);
            select_ok([
                Box::pin(probe(base.to_string(), options)),
                Box::pin(probe(secondary, options)),
            ])
            .await?
            .0
        }
    };
    check_flavor(&headers)
}

/// Whether the metadata server is there: the machine's own signs, else the probe (its
/// outcome kept per server for the process, as gcp-metadata keeps it).
async fn on_google_cloud(
    base: &str,
    options: &StreamOptions,
) -> Result<Result<(), String>, String> {
    if resident(options) {
        return Ok(Ok(()));
    }
    match options
        .env_var("METADATA_SERVER_DETECTION")
        .map(|v| v.trim().to_lowercase())
        .as_deref()
    {
        None | Some("ping-only") => {}
        Some("assume-present") => return Ok(Ok(())),
        Some("none") => return Ok(Err("METADATA_SERVER_DETECTION is none".into())),
        Some("bios-only") => {
            return Ok(Err(
                "METADATA_SERVER_DETECTION is bios-only and this is no Google Cloud machine".into(),
            ))
        }
        Some(other) => {
            return Err(format!(
                "Unknown `METADATA_SERVER_DETECTION` env variable. Got `{other}`, but it should \
                 be `{}`, or unset",
                DETECTION_MODES.join("`, `")
            ))
        }
    }
    static PINGS: OnceLock<Mutex<HashMap<String, Result<(), String>>>> = OnceLock::new();
    let pings = PINGS.get_or_init(Default::default);
    if let Some(known) = pings.lock().get(base).cloned() {
        return Ok(known);
    }
    let found = ping(base, options).await;
    if found.as_ref().is_err_and(|e| e == "Request was aborted") {
        return Err("Request was aborted".into());
    }
    pings.lock().insert(base.to_string(), found.clone());
    Ok(found)
}

/// The default service account's token and its lifetime in seconds; `looked` says which
/// credentials files were looked for, for the message when there is no server either.
pub(super) async fn token(looked: &str, options: &StreamOptions) -> Result<(String, u64), String> {
    let base = base_url(options);
    if let Err(why) = on_google_cloud(&base, options).await? {
        return Err(format!(
            "Could not load the default credentials: tried the apiKey option, \
             GOOGLE_CLOUD_API_KEY, {looked} and the GCE metadata server at {base} ({why}). Set \
             GOOGLE_CLOUD_API_KEY or GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth \
             application-default login`"
        ));
    }
    let url = format!(
        "{base}/instance/service-accounts/default/token?scopes={}",
        crate::providers::bedrock::sigv4::uri_encode(super::SCOPE)
    );
    let limit = (!resident(options)).then_some(PROBE_TIMEOUT);
    let failed = |why: String| format!("Could not refresh access token from {base}: {why}");
    let (status, headers, body) = get(&url, limit, NO_RESPONSE_RETRIES, options)
        .await
        .map_err(failed)?;
    let account = "the Compute Engine built-in service account";
    match status {
        200..=299 => {}
        403 => {
            return Err(failed(format!(
                "A Forbidden error was returned while attempting to retrieve an access token \
                 for {account}. This may be because the Compute Engine instance does not have \
                 the correct permission scopes specified: HTTP 403 {}",
                body.trim()
            )))
        }
        404 => {
            return Err(failed(format!(
                "A Not Found error was returned while attempting to retrieve an access token \
                 for {account}. This may be because the Compute Engine instance does not have \
                 any permission scopes specified: HTTP 404 {}",
                body.trim()
            )))
        }
        other => return Err(failed(format!("HTTP {other} {}", body.trim()))),
    }
    check_flavor(&headers).map_err(failed)?;
    let doc: Value =
        serde_json::from_str(&body).map_err(|e| failed(format!("the answer is not JSON ({e})")))?;
    let token = doc
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| failed("the answer has no access_token".into()))?;
    let lifetime = doc
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    Ok((token.to_string(), lifetime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_address_takes_a_host_or_a_url() {
        assert_eq!(
            base_of("169.254.169.254"),
            "http://169.254.169.254/computeMetadata/v1"
        );
        assert_eq!(
            base_of("127.0.0.1:8080"),
            "http://127.0.0.1:8080/computeMetadata/v1"
        );
        assert_eq!(
            base_of("https://metadata.example/some/path"),
            "https://metadata.example/computeMetadata/v1"
        );
        assert_eq!(
            base_of(SECONDARY_HOST_ADDRESS),
            "http://metadata.google.internal./computeMetadata/v1"
        );
    }

    #[test]
    fn answers_must_carry_the_google_flavor() {
        let mut h = HeaderMap::new();
        assert!(check_flavor(&h).unwrap_err().ends_with("got no header"));
        h.insert("metadata-flavor", "Other".parse().unwrap());
        assert!(check_flavor(&h).unwrap_err().ends_with("got 'Other'"));
        h.insert("metadata-flavor", "Google".parse().unwrap());
        assert!(check_flavor(&h).is_ok());
    }
}
