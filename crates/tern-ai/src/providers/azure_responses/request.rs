//! The Azure request: the Responses body with the deployment as `model`, tool-call ids of
//! Azure's own history kept, the prompt-cache key whatever the retention, `strict` on tools by
//! default; the key in `api-key`; the API version in the query.

use serde_json::{json, Map, Value};

use super::config::{api_version, base_url, deployment_name};
use crate::model::Model;
use crate::providers::driver::{
    settle_stop_reason, Credentials, Framing, SseRecord, WireApi, WireStream,
};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::model_options::{api_key, compat, merge_headers, resolve_max_tokens};
use crate::providers::openai_responses::request::{
    convert_messages, insert_reasoning, insert_tools, TOOL_CALL_PROVIDERS,
};
use crate::providers::openai_responses::stream::State as ResponsesState;
use crate::providers::openai_sdk::http_error_message;
use crate::providers::output::Output;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::collapse_system_messages;

/// The Responses mapper, with Azure's wording for a stream that never stopped and without
/// service-tier pricing.
pub(crate) struct State(ResponsesState);

impl Default for State {
    fn default() -> Self {
        let mut responses = ResponsesState::default();
        responses.flat_tier_pricing = true;
        State(responses)
    }
}

impl WireStream for State {
    const FRAMING: Framing = ResponsesState::FRAMING;

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        self.0.record(out, record)
    }

    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        self.0.end_of_stream(out)
    }

    fn on_failure(&mut self, out: &mut Output<'_>) {
        self.0.on_failure(out);
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(
            out,
            "Azure OpenAI Responses stream ended without a stop reason",
            |m| m.error_message.clone(),
        )
    }
}

fn flag(model: &Model, key: &str, default: bool) -> bool {
    compat(model, key)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

impl WireApi for super::AzureResponses {
    const CREDENTIALS: Credentials = Credentials::ApiKey;
    // The OpenAI SDK's stream swallows the abort and just ends.
    const ABORT_ENDS_BODY: bool = true;

    type Stream = State;

    fn check(model: &Model, _options: &StreamOptions) -> Result<(), String> {
        base_url(model).map(|_| ())
    }

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> HttpRequest {
        let messages = if flag(model, "supportsMidConvoSystemMessages", false) {
            context.messages.to_vec()
        } else {
            collapse_system_messages(&context.messages)
        };
        let mut providers = TOOL_CALL_PROVIDERS.to_vec();
        providers.push("azure");
        let mut body = Map::new();
        body.insert("model".into(), json!(deployment_name(model)));
        body.insert(
            "input".into(),
            Value::Array(convert_messages(model, &messages, &providers)),
        );
        body.insert("stream".into(), json!(true));
        let key_mode = compat(model, "promptCacheKeyMode").and_then(Value::as_str);
        if let (Some(session), false) = (&options.session_id, key_mode == Some("disabled")) {
            body.insert(
                "prompt_cache_key".into(),
                json!(session.chars().take(64).collect::<String>()),
            );
        }
        body.insert("store".into(), json!(false));
        let max_tokens = resolve_max_tokens(model, context, options);
        if max_tokens > 0 {
            body.insert("max_output_tokens".into(), json!(max_tokens.max(16)));
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        insert_tools(
            &mut body,
            &messages,
            flag(model, "supportsStrictMode", true),
        );
        if let Some(choice) = &options.tool_choice {
            body.insert("tool_choice".into(), choice.clone());
        }
        if model.reasoning {
            insert_reasoning(&mut body, model, options, true);
        }

        let key = api_key(model, options).unwrap_or_default();
        let mut headers = vec![
            ("api-key".to_string(), key),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        let base = base_url(model).unwrap_or_default();
        HttpRequest {
            url: format!("{base}/responses?api-version={}", api_version()),
            headers,
            body: Value::Object(body),
            ignore_retry_headers: false,
        }
    }

    fn status_message(_model: &Model, f: &HttpFailure) -> String {
        http_error_message(f, Some("Azure OpenAI API error"))
    }
}
