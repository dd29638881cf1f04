//! Model descriptions: which API, provider and endpoint serve a model, and its limits and prices.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::js_number;

/// Price of a model in dollars per million tokens (written as JavaScript writes numbers:
/// `3`, not `3.0`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Input tokens.
    #[serde(default, serialize_with = "js_number")]
    pub input: f64,
    /// Output tokens.
    #[serde(default, serialize_with = "js_number")]
    pub output: f64,
    /// Cache reads.
    #[serde(default, serialize_with = "js_number")]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(default, serialize_with = "js_number")]
    pub cache_write: f64,
    /// Further pricing data (tiers, 1-hour cache writes), kept as JSON.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A model a stream function can be asked to answer with.
///
/// ```
/// use tern_ai::Model;
/// let m = Model::new("gpt-4o-mini", "openai-completions", "openai", "https://api.openai.com/v1");
/// assert_eq!(m.name, "gpt-4o-mini");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The id sent to the provider.
    pub id: String,
    /// A display name.
    #[serde(default)]
    pub name: String,
    /// The wire API (`openai-completions`, `openai-responses`, `anthropic-messages`,
    /// `google-generative-ai`, or a custom name).
    #[serde(default)]
    pub api: String,
    /// The provider id (`openai`, `anthropic`, ...), also the key for API keys.
    #[serde(default)]
    pub provider: String,
    /// Base URL of the API.
    #[serde(default)]
    pub base_url: String,
    /// Whether the model can reason.
    #[serde(default)]
    pub reasoning: bool,
    /// Input modalities (`text`, `image`).
    #[serde(default)]
    pub input: Vec<String>,
    /// Prices.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Maximum output tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// Extra HTTP headers for every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Everything else the catalog says (compat flags, thinking maps, ...), kept as JSON.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model {
    /// A model with the given id (also its name), API, provider and base URL; everything
    /// else empty.
    pub fn new(id: &str, api: &str, provider: &str, base_url: &str) -> Self {
        Model {
            id: id.to_string(),
            name: id.to_string(),
            api: api.to_string(),
            provider: provider.to_string(),
            base_url: base_url.to_string(),
            ..Model::default()
        }
    }
}
