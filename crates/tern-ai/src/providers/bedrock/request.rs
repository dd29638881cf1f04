//! The request half of `bedrock-converse-stream`: endpoint and region, authentication (a
//! bearer token, or SigV4 with the environment's AWS credentials), the caller's headers
//! (never over the signed ones), the body, and how the SDK words HTTP failures.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::errors::http_failure;
use super::region::{env, target};
use super::sigv4::{sign, uri_encode, AwsCredentials, Scope, Signable};
use super::stream::diagnostic_value;
use crate::message::AssistantMessage;
use crate::model::Model;
use crate::providers::driver::WireApi;
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::output::append_diagnostic;
use crate::stream_fn::{Context, StreamOptions};

/// The SDK's signing name of Bedrock runtime.
const SIGNING_SERVICE: &str = "bedrock";

/// How a request authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Auth {
    /// `Authorization: Bearer` (the `apiKey` option or `AWS_BEARER_TOKEN_BEDROCK`).
    Bearer(String),
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
}

fn skip_auth() -> bool {
    env("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1")
}

fn auth(options: &StreamOptions) -> Option<Auth> {
    if skip_auth() {
        // Proxies that need no authentication still get a signed request.
        return Some(Auth::SigV4(AwsCredentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        }));
    }
    let bearer = options
        .api_key
        .clone()
        .filter(|k| !k.is_empty())
        .or_else(|| env("AWS_BEARER_TOKEN_BEDROCK"));
    if let Some(token) = bearer {
        return Some(Auth::Bearer(token));
    }
    Some(Auth::SigV4(AwsCredentials {
        access_key_id: env("AWS_ACCESS_KEY_ID")?,
        secret_access_key: env("AWS_SECRET_ACCESS_KEY")?,
        session_token: env("AWS_SESSION_TOKEN"),
    }))
}

/// Header names signing and authentication own.
fn reserved(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("x-amz-") || n == "authorization" || n == "host"
}

fn header_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl WireApi for super::Bedrock {
    // The AWS SDK's standard retry strategy: three attempts, whatever the options say.
    const MAX_RETRIES: Option<u32> = Some(2);
    const ABORT_MESSAGE: &'static str = "aborted";

    type Stream = super::stream::State;

    fn check(_model: &Model, options: &StreamOptions) -> Result<(), String> {
        match auth(options) {
            Some(_) => Ok(()),
            // The SDK would read the profile; tern reads environment credentials only.
            None if env("AWS_PROFILE").is_some() => Err(
                "Could not load credentials from any providers (AWS_PROFILE is set, but tern \
                 reads no AWS profiles: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
                 AWS_BEARER_TOKEN_BEDROCK)"
                    .into(),
            ),
            None => Err("Could not load credentials from any providers".into()),
        }
    }

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> HttpRequest {
        let target = target(model);
        let path = format!("/model/{}/converse-stream", uri_encode(&model.id));
        let url = format!("{}{path}", target.endpoint);
        let body = super::body::converse_body(model, context, options);
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        for (k, v) in &options.headers {
            if !reserved(k) {
                headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
                headers.push((k.clone(), header_text(v)));
            }
        }
        match auth(options) {
            Some(Auth::Bearer(token)) => {
                headers.push(("authorization".into(), format!("Bearer {token}")));
            }
            Some(Auth::SigV4(credentials)) => {
                // The bytes signed are the bytes sent (the sender serializes the same way).
                let payload = serde_json::to_vec(&body).unwrap_or_default();
                let parsed = reqwest::Url::parse(&url).ok();
                let host = parsed
                    .as_ref()
                    .and_then(|u| {
                        let host = u.host_str()?;
                        Some(match u.port() {
                            Some(p) => format!("{host}:{p}"),
                            None => host.to_string(),
                        })
                    })
                    .unwrap_or_default();
                let request_path = parsed.as_ref().map_or(path.as_str(), |u| u.path());
                let signature = sign(
                    &Signable {
                        method: "POST",
                        host: &host,
                        path: request_path,
                        query: "",
                        headers: &headers,
                        payload: &payload,
                    },
                    &credentials,
                    &Scope {
                        region: &target.region,
                        service: SIGNING_SERVICE,
                        at: SystemTime::now(),
                    },
                    true,
                );
                headers.extend(signature.headers);
            }
            None => {}
        }
        HttpRequest {
            url,
            headers,
            body,
            ignore_retry_headers: false,
        }
    }

    fn sdk_message(failure: &HttpFailure) -> String {
        http_failure(failure).message
    }

    fn on_status_failure(failure: &HttpFailure, message: &mut AssistantMessage) {
        let mut details = serde_json::Map::new();
        details.insert("status".into(), json!(failure.status));
        if let Some(code) = http_failure(failure).error_code {
            details.insert("errorCode".into(), json!(code));
        }
        let id = failure
            .headers
            .get("x-amzn-requestid")
            .and_then(|v| v.to_str().ok());
        if let Some(id) = diagnostic_value(id) {
            details.insert("requestId".into(), json!(id));
        }
        append_diagnostic(message, "bedrock_response_failure", Value::Object(details));
    }
}
