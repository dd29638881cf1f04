//! A tool's constrained-sampling config, typed (pi-ai's `ConstrainedSamplingConfig`).
//!
//! [`ToolDeclaration::constrained_sampling`](super::ToolDeclaration::constrained_sampling)
//! keeps the config as the JSON it was declared with, so a transcript round-trips unchanged
//! whatever it holds; [`ConstrainedSampling`] is the typed view of the two forms the
//! providers act on, and converts into that JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How much a JSON-schema tool wants the provider's strict mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strictness {
    /// Strict where the provider supports strict tools and the schema fits the strict
    /// subset; as declared otherwise.
    Prefer,
    /// Strict, or the request fails (`Tool "x" requires JSON-schema constrained sampling,
    /// but ...`).
    Require,
}

/// One tool input language in each provider grammar format (pi-ai's `GrammarVariants`); a
/// provider uses the first variant it supports that is not blank.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrammarVariants {
    /// An OpenAI Lark grammar (custom tools' `syntax: "lark"`); preferred over the regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_lark: Option<String>,
    /// An OpenAI regular expression (custom tools' `syntax: "regex"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_regex: Option<String>,
}

/// A tool's constrained-sampling config.
///
/// ```
/// use serde_json::json;
/// use tern_ai::message::{ConstrainedSampling, GrammarVariants, Strictness};
///
/// let strict = ConstrainedSampling::JsonSchema { strict: Strictness::Prefer };
/// assert_eq!(json!(strict), json!({"type": "json_schema", "strict": "prefer"}));
///
/// // A grammar tool: its parameters must have exactly one required string property,
/// // which carries the text the grammar constrains.
/// let grammar = ConstrainedSampling::Grammar {
///     variants: GrammarVariants {
///         openai_lark: Some("start: \"SELECT \" /[a-z]+/".into()),
///         openai_regex: None,
///     },
/// };
/// let config = serde_json::Value::from(grammar.clone());
/// assert_eq!(config["type"], "grammar");
/// assert_eq!(ConstrainedSampling::from_json(&config), Some(grammar));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConstrainedSampling {
    /// `{"type": "json_schema", "strict": ...}`: the provider's strict mode (the schema
    /// rewritten to the strict subset) on every API that has one.
    JsonSchema {
        /// Whether strict mode is wanted or required.
        strict: Strictness,
    },
    /// `{"type": "grammar", "variants": {...}}`: on a model whose compat sets
    /// `supportsOpenAIGrammarTools` (OpenAI Responses, Azure, Codex, Chat Completions), the
    /// tool goes as an OpenAI custom tool constrained by the grammar, and its calls carry
    /// the text as the one required string property of its parameters; elsewhere it goes
    /// as an ordinary function tool.
    Grammar {
        /// The grammar in each format the caller provides.
        variants: GrammarVariants,
    },
}

impl ConstrainedSampling {
    /// The typed view of a declared config; `None` for JSON of neither form (`false`, an
    /// unknown type, a misspelt field).
    pub fn from_json(config: &Value) -> Option<Self> {
        serde_json::from_value(config.clone()).ok()
    }
}

impl From<ConstrainedSampling> for Value {
    fn from(config: ConstrainedSampling) -> Value {
        serde_json::to_value(config).unwrap_or(Value::Null)
    }
}
