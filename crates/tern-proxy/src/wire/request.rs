//! The request body: `POST {proxyUrl}/api/stream` with `{"model", "context", "options"}`,
//! as the reference's `streamProxy` sends it.
//!
//! ```
//! use tern_ai::{Context, Message, Model, StreamOptions};
//! use tern_proxy::wire::{ProxyRequest, ProxyRequestOptions};
//! let options = StreamOptions { max_tokens: Some(64), ..StreamOptions::default() };
//! let request = ProxyRequest {
//!     model: Model::new("m", "openai-completions", "openai", ""),
//!     context: Context::new(vec![Message::user_text("hi")]),
//!     options: ProxyRequestOptions::from_stream_options(&options),
//! };
//! let body = serde_json::to_value(&request).unwrap();
//! assert_eq!(body["options"], serde_json::json!({"maxTokens": 64}));
//! assert_eq!(body["context"]["messages"][0]["role"], "user");
//! ```

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use tern_ai::{Context, Message, Model, StreamOptions, ThinkingBudgets, ThinkingLevel};
use tokio_util::sync::CancellationToken;

/// The body of one proxied request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProxyRequest {
    /// The model to answer with, as the client describes it.
    pub model: Model,
    /// The transcript (`{"messages": [...]}`).
    #[serde(with = "context_json")]
    pub context: Context,
    /// The serializable stream options.
    #[serde(default)]
    pub options: ProxyRequestOptions,
}

/// The options the reference forwards (`buildProxyRequestOptions`), in its order. Absent
/// options are left out of the JSON. The signal, the API key and the timeouts stay local.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyRequestOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sampling parameters (`SamplingParams`, kept as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_params: Option<Value>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Requested reasoning level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ThinkingLevel>,
    /// Prompt-cache retention (`none`, `short`, `long`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_retention: Option<String>,
    /// Session id for cache-aware backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Whether the provider may not continue a previous response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_continuation: Option<bool>,
    /// Extra HTTP headers for the provider request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Request metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Transport preference (`sse`, `websocket`, `websocket-cached`, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Per-level thinking budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<Budgets>,
    /// Cap on server-requested retry delays, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u64>,
}

/// Per-level thinking token budgets as JSON (`{"minimal"?, "low"?, "medium"?, "high"?}`):
/// tern's own [`ThinkingBudgets`], whose serde form is pi's.
pub type Budgets = ThinkingBudgets;

impl ProxyRequestOptions {
    /// The forwarded part of `options`. tern's [`StreamOptions`] has no sampling parameters or
    /// continuation switch; set those fields on the result when needed.
    pub fn from_stream_options(options: &StreamOptions) -> Self {
        ProxyRequestOptions {
            temperature: options.temperature,
            sampling_params: None,
            max_tokens: options.max_tokens,
            reasoning: options.reasoning,
            cache_retention: options.cache_retention.clone(),
            session_id: options.session_id.clone(),
            disable_continuation: None,
            // tern's "no headers" is an empty map; the reference's is an absent key.
            headers: (!options.headers.is_empty()).then(|| options.headers.clone()),
            metadata: options.metadata.clone(),
            transport: options.transport.map(|t| t.as_str().to_string()),
            thinking_budgets: options.thinking_budgets.clone(),
            max_retry_delay_ms: options.max_retry_delay_ms,
        }
    }

    /// Stream options for the upstream request, cancelled by `signal`. `samplingParams` and
    /// `disableContinuation` have no place in tern's [`StreamOptions`] and are not passed on;
    /// a `transport` tern does not know is dropped.
    pub fn into_stream_options(self, signal: CancellationToken) -> StreamOptions {
        StreamOptions {
            reasoning: self.reasoning,
            signal,
            session_id: self.session_id,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            headers: self.headers.unwrap_or_default(),
            max_retry_delay_ms: self.max_retry_delay_ms,
            thinking_budgets: self.thinking_budgets,
            cache_retention: self.cache_retention,
            metadata: self.metadata,
            transport: self
                .transport
                .as_deref()
                .and_then(tern_ai::Transport::parse),
            ..StreamOptions::default()
        }
    }
}

/// `Context` as the reference's `TranscriptContext` JSON: `{"messages": [...]}`.
mod context_json {
    use super::*;

    #[derive(Serialize)]
    struct View<'a> {
        messages: &'a [Message],
    }

    #[derive(Deserialize)]
    struct Owned {
        messages: Vec<Message>,
    }

    pub fn serialize<S: Serializer>(context: &Context, s: S) -> Result<S::Ok, S::Error> {
        View {
            messages: &context.messages,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Context, D::Error> {
        let owned = Owned::deserialize(d)?;
        Ok(Context {
            messages: Arc::new(owned.messages),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_keep_the_reference_order_and_omit_absent_keys() {
        let mut headers = Map::new();
        headers.insert("x-a".into(), json!("1"));
        let options = StreamOptions {
            temperature: Some(0.5),
            max_tokens: Some(10),
            reasoning: Some(ThinkingLevel::High),
            cache_retention: Some("long".into()),
            session_id: Some("s".into()),
            headers,
            thinking_budgets: Some(ThinkingBudgets {
                low: Some(5),
                ..ThinkingBudgets::default()
            }),
            max_retry_delay_ms: Some(7),
            api_key: Some("secret".into()),
            transport: Some(tern_ai::Transport::Sse),
            ..StreamOptions::default()
        };
        let wire = ProxyRequestOptions::from_stream_options(&options);
        assert_eq!(
            serde_json::to_string(&wire).unwrap(),
            r#"{"temperature":0.5,"maxTokens":10,"reasoning":"high","cacheRetention":"long","sessionId":"s","headers":{"x-a":"1"},"transport":"sse","thinkingBudgets":{"low":5},"maxRetryDelayMs":7}"#
        );
        let back = wire.into_stream_options(CancellationToken::new());
        assert_eq!(back.transport, Some(tern_ai::Transport::Sse));
        assert_eq!(back.reasoning, Some(ThinkingLevel::High));
        assert_eq!(back.headers["x-a"], "1");
        assert_eq!(back.thinking_budgets.and_then(|b| b.low), Some(5));
        // The key stays on the client.
        assert!(back.api_key.is_none());
    }

    #[test]
    fn a_request_reads_back_what_it_wrote() {
        let request = ProxyRequest {
            model: Model::new("m", "a", "p", "http://x"),
            context: Context::new(vec![Message::user_text("hi")]),
            options: ProxyRequestOptions::default(),
        };
        let text = serde_json::to_string(&request).unwrap();
        assert!(text.contains(r#""options":{}"#));
        let back: ProxyRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, request);
    }
}
