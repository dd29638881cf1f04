//! The request half of `bedrock-converse-stream`: endpoint and region, authentication (a
//! bearer token, or SigV4 with the environment's keys or the AWS credential chain's), the
//! caller's headers (never over the signed ones), the body, and how the SDK words HTTP
//! failures.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::credentials::{self, Env};
use super::errors::{http_error_code, http_failure};
use super::region::{target, REGION_MISSING};
use super::sigv4::{host_header, sign, uri_encode, AwsCredentials, Scope, Signable};
use super::stream::diagnostic_value;
use crate::message::AssistantMessage;
use crate::model::Model;
use crate::providers::driver::{Attempt, BuiltWith, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::output::append_diagnostic;
use crate::providers::strict_limits;
use crate::stream_fn::{Context, StreamOptions};

/// The SDK's signing name of Bedrock runtime.
const SIGNING_SERVICE: &str = "bedrock";

/// How a request authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Auth {
    /// `Authorization: Bearer` (the `bearerToken` option, the `apiKey` option or
    /// `AWS_BEARER_TOKEN_BEDROCK`).
    Bearer(String),
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
    /// SigV4 with what the credential chain resolves (see [`credentials`]).
    Chain,
}

fn skip_auth(options: &StreamOptions) -> bool {
    options.env_var("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1")
}

/// The environment the credential chain reads for a request: the process's, under the
/// request's `env`, with the `profile` option as its `AWS_PROFILE`.
fn request_env(options: &StreamOptions) -> Env {
    let env = options
        .env
        .iter()
        .fold(Env::from_process(), |env, (k, v)| env.with(k, v));
    match option_profile(options) {
        Some(profile) => env.with("AWS_PROFILE", &profile),
        None => env,
    }
}

/// A profile the request names (the `profile` option, else its `env`'s `AWS_PROFILE`): it
/// wins over the environment's keys (pi-ai's #6957).
fn option_profile(options: &StreamOptions) -> Option<String> {
    options
        .bedrock
        .profile
        .clone()
        .filter(|p| !p.is_empty())
        .or_else(|| {
            options
                .env
                .get("AWS_PROFILE")
                .filter(|p| !p.is_empty())
                .cloned()
        })
}

/// The environment's choice, as pi-ai makes it: no auth (dummy keys), a bearer token, the
/// environment's keys (which win over `AWS_PROFILE`: pi-ai hands them to the client, but
/// not over the `profile` option), else the SDK's default chain.
fn auth(options: &StreamOptions, chain: &Env) -> Auth {
    if skip_auth(options) {
        // Proxies that need no authentication still get a signed request.
        return Auth::SigV4(AwsCredentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        });
    }
    let bearer = [&options.bedrock.bearer_token, &options.api_key]
        .into_iter()
        .find_map(|t| t.clone().filter(|t| !t.is_empty()))
        .or_else(|| options.env_var("AWS_BEARER_TOKEN_BEDROCK"));
    if let Some(token) = bearer {
        return Auth::Bearer(token);
    }
    match credentials::env_keys(chain).filter(|_| option_profile(options).is_none()) {
        Some(fresh) => Auth::SigV4(fresh.credentials),
        None => Auth::Chain,
    }
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

    async fn authorize(
        model: &Model,
        options: &StreamOptions,
    ) -> Result<Vec<(String, String)>, String> {
        // Files and endpoints are read here, off the synchronous build; `build_request`
        // takes what this kept.
        let chain = request_env(options);
        let needs_chain = auth(options, &chain) == Auth::Chain;
        credentials::prepare(&chain, needs_chain, options).await?;
        if target(model, options, credentials::profile_region(&chain)).missing {
            return Err(REGION_MISSING.into());
        }
        Ok(Vec::new())
    }

    fn build_request_with(model: &Model, context: &Context, attempt: Attempt<'_>) -> BuiltWith {
        let Attempt {
            options,
            preferred_strict_off,
        } = attempt;
        let chain = request_env(options);
        let target = target(model, options, credentials::profile_region(&chain));
        let path = format!("/model/{}/converse-stream", uri_encode(&model.id));
        let url = format!("{}{path}", target.endpoint);
        let (body, preferred_strict) =
            super::body::converse_body(model, context, options, preferred_strict_off)?;
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        for (k, v) in &options.headers {
            if !reserved(k) {
                headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
                headers.push((k.clone(), header_text(v)));
            }
        }
        let signing = match auth(options, &chain) {
            Auth::Bearer(token) => {
                headers.push(("authorization".into(), format!("Bearer {token}")));
                None
            }
            Auth::SigV4(keys) => Some(keys),
            // `authorize` resolved them (or failed the run).
            Auth::Chain => credentials::credentials(&chain),
        };
        if let Some(keys) = signing {
            // The bytes signed are the bytes sent (the sender serializes the same way).
            let payload = serde_json::to_vec(&body).unwrap_or_default();
            let parsed = reqwest::Url::parse(&url).ok();
            let host = parsed.as_ref().and_then(host_header).unwrap_or_default();
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
                &keys,
                &Scope {
                    region: &target.region,
                    service: SIGNING_SERVICE,
                    at: SystemTime::now(),
                },
                true,
            );
            headers.extend(signature.headers);
        }
        let request = HttpRequest {
            url,
            headers,
            body,
            ignore_retry_headers: false,
        };
        Ok((request, preferred_strict))
    }

    /// A `ValidationException` whose message names one of Claude's strict-tool limits.
    fn strict_limit_rejection(f: &HttpFailure) -> Option<(&'static str, String)> {
        let body: Value = serde_json::from_str(&f.body).unwrap_or(Value::Null);
        if http_error_code(f, &body).as_deref() != Some("ValidationException") {
            return None;
        }
        let message = body
            .get("message")
            .or_else(|| body.get("Message"))
            .and_then(Value::as_str)
            .unwrap_or("ValidationException");
        strict_limits::is_limit_message(message)
            .then(|| ("bedrock_strict_tools_fallback", message.to_string()))
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
