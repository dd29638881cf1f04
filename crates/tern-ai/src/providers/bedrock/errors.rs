//! How the AWS SDK turns Bedrock failures into errors, and how pi-ai words them: the
//! modeled exception names get a readable prefix (`Throttling error: ...`, which retry and
//! overflow matching rely on), unmodeled ones keep their code.

use serde_json::Value;

use crate::providers::driver::SseRecord;
use crate::providers::http::HttpFailure;

/// A failure of the stream: its message and, for the SDK's named exceptions, the code the
/// failure diagnostic reports.
#[derive(Clone, Debug)]
pub(super) struct Failure {
    pub message: String,
    pub error_code: Option<String>,
}

impl Failure {
    pub(super) fn plain(message: &str) -> Self {
        Failure {
            message: with_retention_hint(message.to_string()),
            error_code: None,
        }
    }

    /// An error named `name` (an SDK service exception when `service`).
    fn named(name: &str, message: &str, service: bool) -> Self {
        let text = if service {
            format!("{}: {message}", prefix(name))
        } else {
            message.to_string()
        };
        Failure {
            message: with_retention_hint(text),
            error_code: name.ends_with("Exception").then(|| name.to_string()),
        }
    }
}

/// pi-ai's readable prefix of a service exception name.
fn prefix(name: &str) -> &str {
    match name {
        "InternalServerException" => "Internal server error",
        "ModelStreamErrorException" => "Model stream error",
        "ValidationException" => "Validation error",
        "ThrottlingException" => "Throttling error",
        "ServiceUnavailableException" => "Service unavailable",
        other => other,
    }
}

const DATA_RETENTION_DOCS: &str =
    "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html";

/// Points at the data-retention docs when a model refuses the account's retention mode.
fn with_retention_hint(text: String) -> String {
    if text.to_ascii_lowercase().contains("data retention mode") {
        format!("{text} See {DATA_RETENTION_DOCS} for supported data retention modes.")
    } else {
        text
    }
}

/// The exceptions of the ConverseStream output union: the SDK deserializes these into
/// service exceptions; any other exception type is an error named by its type whose
/// message is the payload.
const MODELED_EXCEPTIONS: [&str; 5] = [
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
];

/// Splits one event-stream record (see `Framing::EventStream`): an event is its type and
/// payload, an exception or error message is the failure the SDK throws for it.
pub(super) fn stream_failure(record: SseRecord<'_>) -> Result<Option<(&str, &str)>, Failure> {
    let (message_type, kind) = record
        .event
        .and_then(|e| e.split_once(' '))
        .unwrap_or(("", ""));
    match message_type {
        "event" => Ok(Some((kind, record.data))),
        "exception" => {
            if MODELED_EXCEPTIONS.contains(&kind) {
                let payload: Value = serde_json::from_str(record.data).unwrap_or(Value::Null);
                let message = payload
                    .get("message")
                    .or_else(|| payload.get("Message"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                Err(Failure::named(&upper_first(kind), message, true))
            } else {
                Err(Failure::named(kind, record.data, false))
            }
        }
        "error" => {
            let message = if record.data.is_empty() {
                "UnknownError"
            } else {
                record.data
            };
            Err(Failure::named(kind, message, false))
        }
        _ => Err(Failure::plain(&format!(
            "Unrecognizable event type: {kind}"
        ))),
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The error code of an HTTP failure as the SDK reads it: the `x-amzn-errortype` header,
/// else the body's `code` or `__type`, without a `:...` suffix or a `...#` namespace.
pub(super) fn http_error_code(failure: &HttpFailure, body: &Value) -> Option<String> {
    let raw = failure
        .headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| {
            ["code", "__type"]
                .iter()
                .find_map(|k| body.get(*k).and_then(Value::as_str).map(str::to_string))
        })?;
    let code = raw.split(':').next().unwrap_or("");
    let code = code.rsplit('#').next().unwrap_or("");
    (!code.is_empty()).then(|| code.to_string())
}

/// The message and diagnostic code of an HTTP error status: every error status is a
/// service exception named by its code.
pub(super) fn http_failure(failure: &HttpFailure) -> Failure {
    let body: Value = serde_json::from_str(&failure.body).unwrap_or(Value::Null);
    let code = http_error_code(failure, &body);
    let message = body
        .get("message")
        .or_else(|| body.get("Message"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| code.clone())
        .unwrap_or_else(|| "UnknownError".to_string());
    let name = code.unwrap_or_else(|| "UnknownError".to_string());
    Failure::named(&name, &message, true)
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    fn failure(status: u16, error_type: Option<&str>, body: &str) -> HttpFailure {
        let mut headers = HeaderMap::new();
        if let Some(t) = error_type {
            headers.insert("x-amzn-errortype", HeaderValue::from_str(t).unwrap());
        }
        HttpFailure {
            status,
            status_text: String::new(),
            headers,
            body: body.into(),
        }
    }

    #[test]
    fn http_errors_are_named_by_header_then_body() {
        let f = http_failure(&failure(
            429,
            Some("ThrottlingException:http://internal.amazon.com/coral/"),
            r#"{"message":"Slow down"}"#,
        ));
        assert_eq!(f.message, "Throttling error: Slow down");
        assert_eq!(f.error_code.as_deref(), Some("ThrottlingException"));
        let f = http_failure(&failure(
            400,
            None,
            r#"{"__type":"com.amazon.bedrock#ValidationException","Message":"Bad"}"#,
        ));
        assert_eq!(f.message, "Validation error: Bad");
    }

    #[test]
    fn a_data_retention_refusal_points_at_the_docs() {
        let f = http_failure(&failure(
            400,
            Some("AccessDeniedException"),
            r#"{"message":"data retention mode 'default' is not available for this model"}"#,
        ));
        assert!(f
            .message
            .starts_with("AccessDeniedException: data retention mode"));
        assert!(f.message.ends_with(&format!(
            "See {DATA_RETENTION_DOCS} for supported data retention modes."
        )));
    }

    #[test]
    fn stream_records_fail_as_the_sdk_throws() {
        let record = |event, data| SseRecord {
            event: Some(event),
            data,
        };
        let ok = stream_failure(record("event messageStart", "{}")).unwrap();
        assert_eq!(ok, Some(("messageStart", "{}")));
        let e = stream_failure(record(
            "exception serviceUnavailableException",
            r#"{"message":"Busy"}"#,
        ))
        .unwrap_err();
        assert_eq!(e.message, "Service unavailable: Busy");
        assert_eq!(e.error_code.as_deref(), Some("ServiceUnavailableException"));
        let e = stream_failure(record("error InternalFailure", "")).unwrap_err();
        assert_eq!((e.message.as_str(), e.error_code), ("UnknownError", None));
        let e = stream_failure(record("weird x", "")).unwrap_err();
        assert_eq!(e.message, "Unrecognizable event type: x");
    }
}
