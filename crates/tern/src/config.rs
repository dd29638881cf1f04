//! The user's config file: defaults for the command-line options, in TOML.
//!
//! ```toml
//! # ~/.config/tern/config.toml
//! provider = "openai"
//! model = "gpt-4o-mini"
//! # base_url = "http://127.0.0.1:8080/v1"
//! # context_window = 128000     # a base_url model's (pi's default), or "auto": the server's
//! # max_output_tokens = 16384   # a base_url model's (pi's default)
//! thinking = "low"
//! tools = "read,grep,find,ls"   # the default selection (or "+ls,-bash" edits of pi's)
//! allow = ["bash:git status*"]
//! deny = ["bash:rm *"]
//! max_turns = 30
//! # timeout = 600        # seconds
//! # max_cost = 0.50      # dollars
//! # max_tokens = 200000
//! # max_tool_calls = 100
//! # session_max_turns = 200     # over all runs of a session
//! # session_max_tokens = 2000000
//! # session_max_cost = 5.00
//! # session_max_tool_calls = 1000
//! # session_timeout = 3600      # seconds of runs, summed
//! idle_timeout = 120      # seconds; 0 waits forever
//! max_retries = 3         # 0 disables retries
//! max_retry_delay = 60    # seconds
//! # transport = "auto"  # "sse", "websocket", "websocket-cached": for providers with two
//!                       # (OpenAI Codex), pi's `transport` setting
//! sandbox = "workspace-write"
//! network = false
//! pass_env = ["NPM_TOKEN"]
//! add_dirs = ["../shared-docs"]   # folders outside the working directory the tools may use
//!
//! # An answer that failed with a transient error (overloaded, rate limit, 5xx, ...) is
//! # retried after a wait that doubles each time (pi's `retry.*` settings).
//! [retry]
//! enabled = true
//! max_retries = 3
//! base_delay = 2          # seconds
//! max_delay = 60          # seconds
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Defaults read from the config file; every field is optional and a command-line option
/// wins over it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Provider id.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server.
    pub base_url: Option<String>,
    /// API key (prefer the provider's environment variable).
    pub api_key: Option<String>,
    /// Thinking level.
    pub thinking: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// A `base_url` model's context window, in tokens, or `"auto"` (the server's `/models`).
    pub context_window: Option<crate::server_limits::WindowSetting>,
    /// A `base_url` model's output limit, in tokens.
    pub max_output_tokens: Option<u64>,
    /// Tools, comma-separated.
    pub tools: Option<String>,
    /// System prompt.
    pub system_prompt: Option<String>,
    /// Allow rules.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Deny rules.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Turn limit.
    pub max_turns: Option<u32>,
    /// Timeout in seconds.
    pub timeout: Option<f64>,
    /// Cost limit in dollars.
    pub max_cost: Option<f64>,
    /// Token limit.
    pub max_tokens: Option<u64>,
    /// Tool-call limit.
    pub max_tool_calls: Option<u32>,
    /// Turn limit over a session's runs.
    pub session_max_turns: Option<u32>,
    /// Token limit over a session's runs.
    pub session_max_tokens: Option<u64>,
    /// Cost limit over a session's runs, in dollars.
    pub session_max_cost: Option<f64>,
    /// Tool-call limit over a session's runs.
    pub session_max_tool_calls: Option<u32>,
    /// Wall-time limit over a session's runs, in seconds.
    pub session_timeout: Option<f64>,
    /// Idle timeout of a model response, in seconds (0: none).
    pub idle_timeout: Option<f64>,
    /// Preferred transport of providers with two (`auto`, `sse`, `websocket`,
    /// `websocket-cached`).
    pub transport: Option<String>,
    /// Retries of a failed request.
    pub max_retries: Option<u32>,
    /// Cap on a server-requested retry delay, in seconds (0: none).
    pub max_retry_delay: Option<f64>,
    /// The bash sandbox mode.
    pub sandbox: Option<String>,
    /// Network for sandboxed bash commands.
    pub network: Option<bool>,
    /// Secret-looking variables passed to bash all the same.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Folders outside the working directory the tools may use (relative to it).
    #[serde(default)]
    pub add_dirs: Vec<PathBuf>,
    /// Automatic retry of answers that failed with a transient error.
    #[serde(default)]
    pub retry: RetryConfig,
}

/// The `[retry]` table: pi's `retry.enabled`, `retry.maxRetries`, `retry.baseDelayMs` and
/// `retry.maxAgentDelayMs`, times in seconds as elsewhere in the file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Whether failed answers are retried (default true).
    pub enabled: Option<bool>,
    /// Retries after the first attempt (default 3).
    pub max_retries: Option<u32>,
    /// The first wait, in seconds (default 2); each next one doubles.
    pub base_delay: Option<f64>,
    /// The longest wait, in seconds (default 60).
    pub max_delay: Option<f64>,
}

/// tern's folder in the user config folder (`~/.config/tern`): the config file, and the
/// global `AGENTS.md`, `SYSTEM.md` and `APPEND_SYSTEM.md` (pi's `~/.pi/agent`).
pub fn config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("tern"))
}

/// The default config path: `<config dir>/tern/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("config.toml"))
}

/// Loads the config file. A missing default file is an empty config; a missing explicit file
/// or a malformed one is an error that names the file.
pub fn load(explicit: Option<&Path>) -> Result<Config, String> {
    let (path, required) = match explicit {
        Some(p) => (p.to_path_buf(), true),
        None => match default_path() {
            Some(p) => (p, false),
            None => return Ok(Config::default()),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(Config::default())
        }
        Err(e) => return Err(format!("cannot read config file {}: {e}", path.display())),
    };
    toml::from_str(&text).map_err(|e| {
        format!(
            "config file {} is not valid: {e}\n(fix the file, or pass --config with another one)",
            path.display()
        )
    })
}
