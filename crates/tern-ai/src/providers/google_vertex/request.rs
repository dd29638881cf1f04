//! The Vertex request: the Gemini body, the Vertex URL for the credentials at hand, and the
//! Gemini stream mapper with Vertex's wording for a stream that never finished.

use serde_json::Value;

use crate::model::Model;
use crate::providers::driver::{Built, ErrorText, Variant, VariantStream, WireApi};
use crate::providers::google::request::{request_body, sdk_error_message};
use crate::providers::google::stream::State as GeminiState;
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::model_options::{api_key, merge_headers};
use crate::stream_fn::{Context, StreamOptions};

/// The API key the options name, unless it is the ADC marker or a `<placeholder>`.
fn vertex_api_key(model: &Model, options: &StreamOptions) -> Option<String> {
    let key = api_key(model, options)?;
    let key = key.trim();
    let placeholder = key.len() > 2 && key.starts_with('<') && key.ends_with('>');
    (!key.is_empty() && key != "gcp-vertex-credentials" && !placeholder).then(|| key.to_string())
}

/// The model's base URL when it is a concrete one (no `{location}` to fill in).
fn custom_base_url(model: &Model) -> Option<&str> {
    let base = model.base_url.trim();
    (!base.is_empty() && !base.contains("{location}")).then_some(base)
}

/// Whether a path segment of `base` is an API version (`v1`, `v1beta1`).
fn names_api_version(base: &str) -> bool {
    let path = reqwest::Url::parse(base)
        .map(|u| u.path().to_string())
        .unwrap_or_else(|_| base.to_string());
    path.split('/').any(|part| {
        let Some(rest) = part.strip_prefix('v') else {
            return false;
        };
        let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        digits.len() < rest.len()
            && (digits.is_empty()
                || digits
                    .strip_prefix("beta")
                    .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit())))
    })
}

/// The project and location a run without an API key needs, or the reference's words for
/// the first one missing.
fn project_and_location(options: &StreamOptions) -> Result<(String, String), String> {
    let project = options
        .env_var("GOOGLE_CLOUD_PROJECT")
        .or_else(|| options.env_var("GCLOUD_PROJECT"))
        .ok_or("Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.")?;
    let location = options.env_var("GOOGLE_CLOUD_LOCATION").ok_or(
        "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.",
    )?;
    Ok((project, location))
}

/// Where the model's collection is: a concrete base URL (with `/v1` unless it names a
/// version), else Vertex's regional host for the project and location (or the global one
/// when there is an API key and no project).
fn collection_url(model: &Model, keyed: bool, options: &StreamOptions) -> String {
    match custom_base_url(model) {
        Some(base) if names_api_version(base) => base.trim_end_matches('/').to_string(),
        Some(base) => format!("{}/v1", base.trim_end_matches('/')),
        None => match (keyed, project_and_location(options)) {
            (false, Ok((project, location))) => {
                let host = match location.as_str() {
                    "global" => "aiplatform.googleapis.com".to_string(),
                    l => format!("{l}-aiplatform.googleapis.com"),
                };
                format!("https://{host}/v1/projects/{project}/locations/{location}")
            }
            _ => "https://aiplatform.googleapis.com/v1".to_string(),
        },
    }
}

/// The Gemini mapper, with Vertex's wording for a stream without a finish reason.
pub(crate) type State = VariantStream<super::Vertex>;

impl Variant for super::Vertex {
    type Base = GeminiState;
    const NO_STOP_REASON: &'static str = "Google Vertex stream ended without a finish reason";
    const ERROR_TEXT: ErrorText = crate::providers::google::stream::error_text;
}

impl WireApi for super::Vertex {
    // The Gemini SDK's fetch fails with the signal's own error.
    const ABORT_MESSAGE: &'static str = "This operation was aborted";

    type Stream = State;

    fn check(model: &Model, options: &StreamOptions) -> Result<(), String> {
        match vertex_api_key(model, options) {
            Some(_) => Ok(()),
            None => project_and_location(options).map(|_| ()),
        }
    }

    async fn authorize(
        model: &Model,
        options: &StreamOptions,
    ) -> Result<Vec<(String, String)>, String> {
        match vertex_api_key(model, options) {
            Some(_) => Ok(Vec::new()),
            None => super::adc::authorization(options).await,
        }
    }

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let body = request_body(model, context, options)?;
        let key = vertex_api_key(model, options);
        let base = collection_url(model, key.is_some(), options);
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(key) = key {
            headers.push(("x-goog-api-key".into(), key));
        }
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        Ok(HttpRequest {
            url: format!(
                "{base}/publishers/google/models/{}:streamGenerateContent?alt=sse",
                model.id
            ),
            headers,
            body: Value::Object(body),
            // The Gemini SDK's errors carry no headers.
            ignore_retry_headers: true,
        })
    }

    fn sdk_message(f: &HttpFailure) -> String {
        sdk_error_message(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_in_the_base_url_are_recognized() {
        assert!(names_api_version("https://x.example/v1"));
        assert!(names_api_version("http://127.0.0.1:9/api/v1beta1/"));
        assert!(!names_api_version("http://127.0.0.1:9/vertex"));
        assert!(!names_api_version("http://127.0.0.1:9/"));
    }
}
