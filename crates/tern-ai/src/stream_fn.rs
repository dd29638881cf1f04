//! The stream-function contract: how the agent loop reaches a model.
//!
//! A stream function takes a model, a transcript and options and returns an
//! [`AssistantMessageEventStream`]. Provider failures are values: the stream ends with a
//! message whose `stopReason` is `error` or `aborted`. An `Err` is reserved for a stream
//! function that cannot start at all (the reference's "the stream function threw").

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::message::{Message, ThinkingLevel};
use crate::model::Model;
use crate::stream::AssistantMessageEventStream;

/// Boxed error type used where the reference lets a callback throw anything.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What [`StreamFn::stream`] returns: the response's event stream, or why it could not start.
pub type StreamStart = Result<AssistantMessageEventStream, BoxError>;

/// The transcript a provider receives: system messages in place, no custom roles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// The messages, shared so that building a request never copies the transcript.
    pub messages: Arc<Vec<Message>>,
}

impl Context {
    /// A context over these messages.
    pub fn new(messages: Vec<Message>) -> Self {
        Context {
            messages: Arc::new(messages),
        }
    }
}

/// Per-level thinking token budgets for token-budget providers. As JSON (pi's
/// `thinkingBudgets`), the levels set: `{"minimal"?, "low"?, "medium"?, "high"?}`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimal: Option<u64>,
    /// Budget for `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<u64>,
    /// Budget for `medium`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<u64>,
    /// Budget for `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<u64>,
}

/// Options of one request (the reference's `SimpleStreamOptions`).
#[derive(Clone, Debug)]
pub struct StreamOptions {
    /// Requested reasoning level; `None` means off.
    pub reasoning: Option<ThinkingLevel>,
    /// API key; providers fall back to the environment.
    pub api_key: Option<String>,
    /// Cancels the request.
    pub signal: CancellationToken,
    /// Session id for cache-aware backends.
    pub session_id: Option<String>,
    /// Output token limit.
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Extra HTTP headers (`null` removes a default header).
    pub headers: Map<String, Value>,
    /// Cap on server-requested retry delays, in ms (default 60 000; 0 disables the cap).
    pub max_retry_delay_ms: Option<u64>,
    /// Per-level thinking budgets.
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// Request timeout in ms.
    pub timeout_ms: Option<u64>,
    /// Longest silence allowed from the server, in ms: waiting for the response head and
    /// between two body chunks. `None` means the default (120 000); `Some(0)` disables it.
    /// A stall past it ends the stream with an error saying so.
    pub idle_timeout_ms: Option<u64>,
    /// Maximum client-side retries.
    pub max_retries: Option<u32>,
    /// Tool choice sent to the provider (`auto`, `none`, `required`, or a provider object).
    pub tool_choice: Option<Value>,
    /// Prompt-cache retention: `none`, `short` (default) or `long`.
    pub cache_retention: Option<String>,
    /// Request metadata (Anthropic uses `user_id`).
    pub metadata: Option<Map<String, Value>>,
    /// What only Amazon Bedrock reads (pi-ai's `BedrockOptions`).
    pub bedrock: BedrockOptions,
    /// What only Azure OpenAI reads (pi-ai's `AzureOpenAIResponsesOptions`).
    pub azure: AzureOptions,
    /// Environment values for this request, read before the process environment's (pi-ai's
    /// `env`): API keys (`OPENAI_API_KEY`, ...), Azure's `AZURE_OPENAI_*`, Vertex's
    /// `GOOGLE_CLOUD_*` and `GOOGLE_APPLICATION_CREDENTIALS`, Bedrock's `AWS_*`. An empty
    /// value counts as unset.
    pub env: std::collections::BTreeMap<String, String>,
    /// The transport of a provider that has more than one (pi-ai's `transport`; only
    /// `openai-codex-responses` does, WebSocket or SSE). `None` is the reference's unset
    /// option: a WebSocket first, like [`Transport::Auto`], but each request sends the whole
    /// context; `Auto` and `WebSocketCached` continue from the socket's previous response.
    pub transport: Option<Transport>,
    /// How long a WebSocket handshake may take, in ms (pi-ai's `websocketConnectTimeoutMs`;
    /// `None` means 15 000, `Some(0)` waits as long as the connection does).
    pub websocket_connect_timeout_ms: Option<u64>,
}

/// The transport of a provider that has more than one (pi-ai's `Transport`).
///
/// ```
/// use tern_ai::Transport;
/// assert_eq!(Transport::parse("websocket-cached"), Some(Transport::WebSocketCached));
/// assert_eq!(Transport::Sse.as_str(), "sse");
/// assert_eq!(Transport::default(), Transport::Auto);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A WebSocket, falling back to SSE when it fails before the stream starts; a socket
    /// reused within a session continues from its previous response.
    #[default]
    Auto,
    /// A WebSocket (the same fallback to SSE), sending the whole context each time.
    WebSocket,
    /// A WebSocket continuing from the socket's previous response, as `Auto` does.
    WebSocketCached,
    /// Server-sent events over HTTP only.
    Sse,
}

impl Transport {
    /// The option's wire name: `auto`, `websocket`, `websocket-cached` or `sse`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Auto => "auto",
            Transport::WebSocket => "websocket",
            Transport::WebSocketCached => "websocket-cached",
            Transport::Sse => "sse",
        }
    }

    /// The transport a wire name names; `None` for anything else.
    pub fn parse(name: &str) -> Option<Transport> {
        [
            Transport::Auto,
            Transport::WebSocket,
            Transport::WebSocketCached,
            Transport::Sse,
        ]
        .into_iter()
        .find(|t| t.as_str() == name)
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions::for_signal(CancellationToken::new())
    }
}

impl StreamOptions {
    /// Whether these options behave as the defaults do. The signal does not count: a caller
    /// that gives every request a signal of its own (the agent loop) reads none of it.
    ///
    /// ```
    /// let mut options = tern_ai::StreamOptions::default();
    /// assert!(options.is_default());
    /// options.max_tokens = Some(64);
    /// assert!(!options.is_default());
    /// ```
    pub fn is_default(&self) -> bool {
        // Every field by name (no `..`): a new field must be weighed here too.
        let StreamOptions {
            reasoning,
            api_key,
            signal: _,
            session_id,
            max_tokens,
            temperature,
            headers,
            max_retry_delay_ms,
            thinking_budgets,
            timeout_ms,
            idle_timeout_ms,
            max_retries,
            tool_choice,
            cache_retention,
            metadata,
            bedrock,
            azure,
            env,
            transport,
            websocket_connect_timeout_ms,
        } = self;
        reasoning.is_none()
            && api_key.is_none()
            && session_id.is_none()
            && max_tokens.is_none()
            && temperature.is_none()
            && headers.is_empty()
            && max_retry_delay_ms.is_none()
            && thinking_budgets.is_none()
            && timeout_ms.is_none()
            && idle_timeout_ms.is_none()
            && max_retries.is_none()
            && tool_choice.is_none()
            && cache_retention.is_none()
            && metadata.is_none()
            && *bedrock == BedrockOptions::default()
            && *azure == AzureOptions::default()
            && env.is_empty()
            && transport.is_none()
            && websocket_connect_timeout_ms.is_none()
    }

    /// The default options, answering to `signal` (no token of their own is made).
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let run = CancellationToken::new();
    /// let options = tern_ai::StreamOptions::for_signal(run.clone());
    /// run.cancel();
    /// assert!(options.signal.is_cancelled() && options.api_key.is_none());
    /// ```
    pub fn for_signal(signal: CancellationToken) -> StreamOptions {
        StreamOptions {
            reasoning: None,
            api_key: None,
            signal,
            session_id: None,
            max_tokens: None,
            temperature: None,
            headers: Map::new(),
            max_retry_delay_ms: None,
            thinking_budgets: None,
            timeout_ms: None,
            idle_timeout_ms: None,
            max_retries: None,
            tool_choice: None,
            cache_retention: None,
            metadata: None,
            bedrock: BedrockOptions::default(),
            azure: AzureOptions::default(),
            env: Default::default(),
            transport: None,
            websocket_connect_timeout_ms: None,
        }
    }

    /// A copy of these options that answers to `signal` instead of their own. Cloning a
    /// cancellation token takes its tree's lock (and dropping the clone takes it again), so a
    /// caller that replaces the signal anyway, as the agent loop does for every request,
    /// copies the rest with this.
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let base = tern_ai::StreamOptions { max_tokens: Some(64), ..Default::default() };
    /// let run = CancellationToken::new();
    /// let request = base.with_signal(run.clone());
    /// run.cancel();
    /// assert!(request.signal.is_cancelled() && !base.signal.is_cancelled());
    /// assert_eq!(request.max_tokens, Some(64));
    /// ```
    pub fn with_signal(&self, signal: CancellationToken) -> StreamOptions {
        // A literal without `..`: a new field must be copied here too.
        StreamOptions {
            reasoning: self.reasoning,
            api_key: self.api_key.clone(),
            signal,
            session_id: self.session_id.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            headers: self.headers.clone(),
            max_retry_delay_ms: self.max_retry_delay_ms,
            thinking_budgets: self.thinking_budgets.clone(),
            timeout_ms: self.timeout_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            max_retries: self.max_retries,
            tool_choice: self.tool_choice.clone(),
            cache_retention: self.cache_retention.clone(),
            metadata: self.metadata.clone(),
            bedrock: self.bedrock.clone(),
            azure: self.azure.clone(),
            env: self.env.clone(),
            transport: self.transport,
            websocket_connect_timeout_ms: self.websocket_connect_timeout_ms,
        }
    }

    /// A provider setting: this request's [`env`](Self::env) value, else the process
    /// environment's; empty counts as unset (pi-ai's `getProviderEnvValue`).
    ///
    /// ```
    /// let mut options = tern_ai::StreamOptions::default();
    /// options.env.insert("TERN_DOC_EXAMPLE_KEY".into(), "scoped".into());
    /// assert_eq!(options.env_var("TERN_DOC_EXAMPLE_KEY").as_deref(), Some("scoped"));
    /// assert_eq!(options.env_var("TERN_DOC_EXAMPLE_UNSET"), None);
    /// ```
    pub fn env_var(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// A request option unless it is empty, else the variable `name` ([`env_var`]): how
    /// every provider option that has an environment variable is read.
    ///
    /// [`env_var`]: Self::env_var
    pub(crate) fn option_or_env(&self, option: &Option<String>, name: &str) -> Option<String> {
        option
            .clone()
            .filter(|v| !v.is_empty())
            .or_else(|| self.env_var(name))
    }
}

/// Options of one request that only `azure-openai-responses` reads (pi-ai's
/// `AzureOpenAIResponsesOptions`). Like [`BedrockOptions`], pi-ai takes them in its `stream`
/// function only; tern honours them whenever they are set. Each comes before its
/// environment variable.
///
/// ```
/// use tern_ai::{AzureOptions, StreamOptions};
/// let options = StreamOptions {
///     azure: AzureOptions {
///         resource_name: Some("my-resource".into()),
///         deployment_name: Some("gpt-4-1-prod".into()),
///         ..AzureOptions::default()
///     },
///     ..StreamOptions::default()
/// };
/// assert!(options.azure.api_version.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AzureOptions {
    /// The `api-version` query parameter (before `AZURE_OPENAI_API_VERSION`; default `v1`).
    pub api_version: Option<String>,
    /// The resource whose `https://NAME.openai.azure.com/openai/v1` is the base URL (before
    /// `AZURE_OPENAI_RESOURCE_NAME`).
    pub resource_name: Option<String>,
    /// The base URL (before `AZURE_OPENAI_BASE_URL`, the resource name and the model's).
    pub base_url: Option<String>,
    /// The deployment (before `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` and the model id).
    pub deployment_name: Option<String>,
    /// A Microsoft Entra ID access token, sent as `Authorization: Bearer` when there is no
    /// API key (neither `api_key` nor `AZURE_OPENAI_API_KEY`). A tern addition: pi-ai sends
    /// API keys only.
    pub ad_token: Option<String>,
    /// Called before each request for a Microsoft Entra ID access token (the `openai`
    /// package's `azureADTokenProvider`), when there is no API key and no
    /// [`ad_token`](Self::ad_token). Caching is the provider's business. A tern addition.
    pub ad_token_provider: Option<AzureTokenProvider>,
}

/// An async source of Microsoft Entra ID access tokens for Azure OpenAI
/// ([`AzureOptions::ad_token_provider`]); clones share the closure.
///
/// ```
/// use tern_ai::{AzureOptions, AzureTokenProvider};
/// let provider = AzureTokenProvider::new(|| async {
///     // Ask your identity library for a token for https://cognitiveservices.azure.com/.default.
///     Ok::<_, tern_ai::BoxError>("eyJ0eXAi...".to_string())
/// });
/// let options = AzureOptions {
///     ad_token_provider: Some(provider.clone()),
///     ..AzureOptions::default()
/// };
/// assert_eq!(options.ad_token_provider, Some(provider));
/// ```
#[derive(Clone)]
pub struct AzureTokenProvider(
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<String, BoxError>> + Send + Sync>,
);

impl AzureTokenProvider {
    /// Wraps a closure returning a future of the token.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, BoxError>> + Send + 'static,
    {
        AzureTokenProvider(Arc::new(move || Box::pin(f())))
    }

    /// A fresh token (the closure's answer).
    pub async fn token(&self) -> Result<String, BoxError> {
        (self.0)().await
    }
}

impl std::fmt::Debug for AzureTokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AzureTokenProvider(..)")
    }
}

impl PartialEq for AzureTokenProvider {
    /// The same closure (a clone of the same provider).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Options of one request that only `bedrock-converse-stream` reads (pi-ai's
/// `BedrockOptions`). pi-ai takes them in its `stream` function only (its `streamSimple`, the
/// one agents use, drops them); tern's providers honour them whenever they are set, and
/// leave them unset otherwise.
///
/// ```
/// use tern_ai::{BedrockOptions, StreamOptions};
/// let options = StreamOptions {
///     bedrock: BedrockOptions {
///         region: Some("eu-west-1".into()),
///         profile: Some("prod".into()),
///         ..BedrockOptions::default()
///     },
///     ..StreamOptions::default()
/// };
/// assert_eq!(options.bedrock.region.as_deref(), Some("eu-west-1"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BedrockOptions {
    /// The region to sign for and send to, before `AWS_REGION` / `AWS_DEFAULT_REGION` (an
    /// inference-profile ARN's region still wins).
    pub region: Option<String>,
    /// The AWS profile whose credentials sign, before `AWS_PROFILE`; it also wins over the
    /// environment's `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
    pub profile: Option<String>,
    /// A Bedrock API key sent as `Authorization: Bearer`, before `api_key` and
    /// `AWS_BEARER_TOKEN_BEDROCK`.
    pub bearer_token: Option<String>,
    /// Key-value pairs sent as the request's `requestMetadata` (cost allocation tags).
    pub request_metadata: Option<Map<String, Value>>,
    /// How Claude returns its thinking (default: summarized; not sent on GovCloud).
    pub thinking_display: Option<ThinkingDisplay>,
    /// Whether budget-based Claude thinks between tool calls (the interleaved-thinking beta;
    /// default on).
    pub interleaved_thinking: Option<bool>,
}

/// How Claude on Bedrock returns its thinking (pi-ai's `BedrockThinkingDisplay`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThinkingDisplay {
    /// Thinking blocks hold summarized thinking text.
    #[default]
    Summarized,
    /// Thinking text is left out; the signature still travels back for the next turn.
    Omitted,
}

impl ThinkingDisplay {
    /// The wire value: `summarized` or `omitted`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingDisplay::Summarized => "summarized",
            ThinkingDisplay::Omitted => "omitted",
        }
    }
}

/// A function that streams one assistant response.
///
/// The options are lent: a loop asks with the same options turn after turn, and a function
/// that keeps them past the call (a provider's request task) clones what it keeps.
///
/// Closures work:
///
/// ```
/// use std::sync::Arc;
/// use tern_ai::{assistant_stream, StreamFn, Context, Model, StreamOptions};
/// let f: Arc<dyn StreamFn> = Arc::new(|_m: &Model, _c: Context, _o: &StreamOptions| {
///     let (_tx, rx) = assistant_stream();
///     Ok(rx)
/// });
/// ```
pub trait StreamFn: Send + Sync {
    /// Starts a request. `Err` only when it cannot start; failures after that are events.
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart;
}

impl<F> StreamFn for F
where
    F: Fn(&Model, Context, &StreamOptions) -> StreamStart + Send + Sync,
{
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        self(model, context, options)
    }
}
