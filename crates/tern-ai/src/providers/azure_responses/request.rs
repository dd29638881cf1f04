//! The Azure request: the Responses body with the deployment as `model`, tool-call ids of
//! Azure's own history kept, the prompt-cache key whatever the retention, `strict` on tools by
//! default; the key in `api-key`, else a Microsoft Entra ID token as `Authorization: Bearer`
//! ([`super::entra`]); the API version in the query.

use serde_json::{json, Value};

use super::config::{api_version, base_url, deployment_name};
use super::entra::{self, Auth};
use crate::model::Model;
use crate::providers::constrained;
use crate::providers::driver::{Built, ErrorText, Variant, VariantStream, WireApi};
use crate::providers::http::{HttpFailure, HttpRequest};
use crate::providers::model_options::{compat, merge_headers, stream_body};
use crate::providers::openai_responses::request::{
    convert_messages, grammar_tools, insert_limits_and_tools, insert_reasoning,
    stream_grammar_inputs, Limits, TOOL_CALL_PROVIDERS,
};
use crate::providers::openai_responses::stream::State as ResponsesState;
use crate::providers::openai_sdk::http_error_message;
use crate::stream_fn::{Context, StreamOptions};
use crate::transcript::collapse_system_messages;

/// The Responses mapper, with Azure's wording for a stream that never stopped and without
/// service-tier pricing.
pub(crate) type State = VariantStream<super::AzureResponses>;

impl Variant for super::AzureResponses {
    type Base = ResponsesState;
    const NO_STOP_REASON: &'static str =
        "Azure OpenAI Responses stream ended without a stop reason";
    const ERROR_TEXT: ErrorText = crate::providers::openai_responses::stream::error_text;

    fn base() -> ResponsesState {
        let mut responses = ResponsesState::default();
        responses.flat_tier_pricing = true;
        responses
    }
}

fn flag(model: &Model, key: &str, default: bool) -> bool {
    compat(model, key)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

impl WireApi for super::AzureResponses {
    // The OpenAI SDK's stream swallows the abort and just ends.
    const ABORT_ENDS_BODY: bool = true;

    type Stream = State;

    fn check(model: &Model, options: &StreamOptions) -> Result<(), String> {
        entra::auth(model, options)?;
        base_url(model, options).map(|_| ())
    }

    async fn authorize(
        model: &Model,
        options: &StreamOptions,
    ) -> Result<Vec<(String, String)>, String> {
        match entra::auth(model, options)? {
            Auth::Key(_) => Ok(Vec::new()),
            Auth::Entra(source) => {
                let token = entra::token(source, options).await?;
                Ok(vec![("authorization".into(), format!("Bearer {token}"))])
            }
        }
    }

    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let messages = if flag(model, "supportsMidConvoSystemMessages", false) {
            context.messages.to_vec()
        } else {
            collapse_system_messages(&context.messages)
        };
        let mut providers = TOOL_CALL_PROVIDERS.to_vec();
        providers.push("azure");
        let grammar_tools = grammar_tools(model);
        let grammar_inputs = constrained::grammar_inputs(&messages, grammar_tools)?;
        let mut body = stream_body(
            &deployment_name(model, options),
            "input",
            convert_messages(model, &messages, &providers, &grammar_inputs)?,
        );
        let key_mode = compat(model, "promptCacheKeyMode").and_then(Value::as_str);
        if let (Some(session), false) = (&options.session_id, key_mode == Some("disabled")) {
            body.insert(
                "prompt_cache_key".into(),
                json!(session.chars().take(64).collect::<String>()),
            );
        }
        let limits = Limits {
            max_output_tokens: true,
            strict: flag(model, "supportsStrictMode", true),
            grammar_tools,
        };
        insert_limits_and_tools(&mut body, model, context, options, &messages, limits)?;
        if model.reasoning {
            insert_reasoning(&mut body, model, options, true);
        }

        let mut headers = Vec::new();
        // Without a key, `authorize` adds the Entra ID token instead.
        if let Ok(Auth::Key(key)) = entra::auth(model, options) {
            headers.push(("api-key".to_string(), key));
        }
        headers.push(("content-type".to_string(), "application/json".to_string()));
        merge_headers(&mut headers, model.headers.as_ref());
        merge_headers(&mut headers, Some(&options.headers));
        let base = base_url(model, options).unwrap_or_default();
        Ok(HttpRequest {
            url: format!("{base}/responses?api-version={}", api_version(options)),
            headers,
            body: Value::Object(body),
            ignore_retry_headers: false,
        })
    }

    fn new_stream(model: &Model, context: &Context) -> State {
        let mut base = <Self as Variant>::base();
        base.grammar_inputs = stream_grammar_inputs(
            model,
            &context.messages,
            flag(model, "supportsMidConvoSystemMessages", false),
        );
        State::with_base(base)
    }

    fn status_message(_model: &Model, f: &HttpFailure) -> String {
        http_error_message(f, Some("Azure OpenAI API error"))
    }
}
