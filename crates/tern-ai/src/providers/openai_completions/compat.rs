//! Compatibility settings of an OpenAI-compatible host: detected from the provider and base
//! URL, overridden by `model.compat` (the reference's `getCompat`).

use serde_json::Value;

use crate::model::Model;
use crate::providers::model_options::compat;

/// Compatibility settings detected from provider and base URL, overridden by `model.compat`.
#[derive(Clone, Debug)]
pub(crate) struct Compat {
    /// Send `store: false`.
    pub(crate) supports_store: bool,
    /// Use the `developer` role for instructions on reasoning models.
    pub(crate) supports_developer_role: bool,
    /// Send `reasoning_effort`.
    pub(crate) supports_reasoning_effort: bool,
    /// Send `stream_options.include_usage`.
    pub(crate) supports_usage_in_streaming: bool,
    /// The host always sends a finish reason.
    pub(crate) supports_finish_reason: bool,
    /// `max_tokens` or `max_completion_tokens`.
    pub(crate) max_tokens_field: String,
    /// Tool results carry `name`.
    pub(crate) requires_tool_result_name: bool,
    /// A synthetic assistant turn between tool results and a user turn.
    pub(crate) requires_assistant_after_tool_result: bool,
    /// Assistant content is `""` rather than `null`.
    pub(crate) requires_non_null_assistant_content: bool,
    /// Thinking replayed as text.
    pub(crate) requires_thinking_as_text: bool,
    /// Assistant messages always carry `reasoning_content` (DeepSeek).
    pub(crate) requires_reasoning_content_on_assistant_messages: bool,
    /// `openai`, `openrouter`, `deepseek`, `zai`, `together`, `qwen`, ...
    pub(crate) thinking_format: String,
    /// Send `strict` on tools.
    pub(crate) supports_strict_mode: bool,
    /// Grammar tools go as OpenAI custom tools (`supportsOpenAIGrammarTools`, default off).
    pub(crate) supports_openai_grammar_tools: bool,
    /// Send session-affinity headers.
    pub(crate) send_session_affinity_headers: bool,
    /// `openrouter` or `openai` header names.
    pub(crate) session_affinity_format: String,
    /// Long cache retention is accepted.
    pub(crate) supports_long_cache_retention: bool,
    /// `auto`, `enabled` or `disabled`.
    pub(crate) prompt_cache_key_mode: String,
}

/// Detects the compatibility settings of a model (the reference's `getCompat`).
pub(crate) fn get_compat(model: &Model) -> Compat {
    let p = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = p == "zai"
        || p == "zai-coding-cn"
        || url.contains("api.z.ai")
        || url.contains("open.bigmodel.cn");
    let is_together =
        p == "together" || url.contains("api.together.ai") || url.contains("api.together.xyz");
    let is_moonshot = p == "moonshotai" || p == "moonshotai-cn" || url.contains("api.moonshot.");
    let is_openrouter = p == "openrouter" || url.contains("openrouter.ai");
    let is_cf_workers = p == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway = p == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let is_nvidia = p == "nvidia" || url.contains("integrate.api.nvidia.com");
    let is_ant_ling = p == "ant-ling" || url.contains("api.ant-ling.com");
    let is_cerebras = p == "cerebras" || url.contains("cerebras.ai");
    let is_deepseek = p == "deepseek" || url.to_lowercase().contains("deepseek.com");
    let is_grok = p == "xai" || url.contains("api.x.ai");
    let non_standard = is_nvidia
        || is_cerebras
        || is_grok
        || is_together
        || url.contains("chutes.ai")
        || is_deepseek
        || is_zai
        || is_moonshot
        || p == "opencode"
        || url.contains("opencode.ai")
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling;
    let use_max_tokens = url.contains("chutes.ai")
        || is_deepseek
        || is_moonshot
        || is_cf_gateway
        || is_together
        || is_nvidia
        || is_ant_ling
        || is_zai;
    let is_openai = p == "openai" || url.contains("api.openai.com");
    let b = |k: &str, d: bool| compat(model, k).and_then(Value::as_bool).unwrap_or(d);
    let s = |k: &str, d: &str| {
        compat(model, k)
            .and_then(Value::as_str)
            .unwrap_or(d)
            .to_string()
    };
    let thinking_format = if is_deepseek {
        "deepseek"
    } else if is_zai {
        "zai"
    } else if is_together {
        "together"
    } else if is_ant_ling {
        "ant-ling"
    } else if is_openrouter {
        "openrouter"
    } else {
        "openai"
    };
    Compat {
        supports_store: b("supportsStore", !non_standard),
        supports_developer_role: b("supportsDeveloperRole", is_openai),
        supports_reasoning_effort: b(
            "supportsReasoningEffort",
            !is_grok
                && !is_zai
                && !is_moonshot
                && !is_together
                && !is_cf_gateway
                && !is_nvidia
                && !is_ant_ling,
        ),
        supports_usage_in_streaming: b("supportsUsageInStreaming", true),
        supports_finish_reason: b("supportsFinishReason", true),
        max_tokens_field: s(
            "maxTokensField",
            if use_max_tokens {
                "max_tokens"
            } else {
                "max_completion_tokens"
            },
        ),
        requires_tool_result_name: b("requiresToolResultName", false),
        requires_assistant_after_tool_result: b("requiresAssistantAfterToolResult", false),
        requires_non_null_assistant_content: b("requiresNonNullAssistantContent", false),
        requires_thinking_as_text: b("requiresThinkingAsText", false),
        requires_reasoning_content_on_assistant_messages: b(
            "requiresReasoningContentOnAssistantMessages",
            is_deepseek,
        ),
        thinking_format: s("thinkingFormat", thinking_format),
        supports_strict_mode: b("supportsStrictMode", false),
        supports_openai_grammar_tools: b("supportsOpenAIGrammarTools", false),
        send_session_affinity_headers: b("sendSessionAffinityHeaders", is_openrouter),
        session_affinity_format: s(
            "sessionAffinityFormat",
            if is_openrouter {
                "openrouter"
            } else {
                "openai"
            },
        ),
        supports_long_cache_retention: b(
            "supportsLongCacheRetention",
            !(is_together || is_cf_workers || is_cf_gateway || is_nvidia || is_ant_ling),
        ),
        prompt_cache_key_mode: s("promptCacheKeyMode", "auto"),
    }
}
