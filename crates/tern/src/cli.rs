//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// How tern talks to its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Text: the interactive terminal UI on a terminal, else print mode.
    Text,
    /// One JSON event per line on stdout.
    Json,
    /// JSONL commands on stdin, responses and events on stdout.
    Rpc,
}

/// pi's multi-letter short flags, spelled out for clap (before `--` only).
pub const PI_SHORT_FLAGS: [(&str, &str); 6] = [
    ("-nt", "--no-tools"),
    ("-nbt", "--no-builtin-tools"),
    ("-xt", "--exclude-tools"),
    ("-nc", "--no-context-files"),
    ("-ns", "--no-skills"),
    ("-np", "--no-prompt-templates"),
];

/// `argv` with pi's multi-letter short flags (`-nt`, `-nbt`, `-xt`, `-nc`) as long ones.
pub fn expand_short_flags(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut rest = false;
    for a in argv {
        if rest {
            out.push(a);
            continue;
        }
        rest = a == "--";
        let long = PI_SHORT_FLAGS
            .iter()
            .find(|(short, _)| a == *short)
            .map(|(_, long)| (*long).into());
        out.push(long.unwrap_or(a));
    }
    out
}

/// `tern [options] [@files...] [messages...]`
#[derive(Debug, Parser)]
#[command(
    name = "tern",
    version,
    disable_version_flag = true,
    about = "A coding agent in your terminal: runs a model with tools, streams the answer, keeps sessions.",
    after_help = "Examples:\n  tern --demo                                 offline walkthrough with a scripted model\n  tern -p \"Summarize README.md\"               print the answer and exit\n  git diff | tern -p \"Review this change\"      piped stdin is prepended to the prompt\n  tern --base-url http://127.0.0.1:8080/v1 --model local \"hi\"   a local llama.cpp/Ollama/vLLM server\n  tern --mode rpc --no-session                 JSONL control protocol (pi's rpc.md)\n  tern mcp list                                connect to the MCP servers of mcp.json and list their tools\n\nDurable sessions:\n  tern --session s.jsonl --recover             finish a run that was killed, without redoing its steps\n  tern --replay s.jsonl                        re-run the recorded runs offline: identical, or the first divergence\n\nOn Temporal (one workflow per session):\n  tern worker --temporal 127.0.0.1:7233 -t all --allow bash   serve sessions\n  tern --temporal 127.0.0.1:7233 -p \"...\"    run a prompt as a workflow\n\nExit codes: 0 done, 1 provider/tool error (replay: diverged), 2 usage error, 3 limit reached (or a session limit refused the run), 130 aborted."
)]
pub struct Args {
    /// Prompt words; `@path` includes a file's contents.
    pub messages: Vec<String>,

    /// Run once and print the final answer (default when stdin or stdout is not a terminal).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output interface.
    #[arg(long, value_enum, default_value = "text")]
    pub mode: Mode,

    /// Provider id (openai, anthropic, google, openrouter, ...; any name with --base-url).
    #[arg(long)]
    pub provider: Option<String>,

    /// Model: an exact id, `provider/id`, or part of an id or name (pi's fuzzy match), with
    /// an optional `:LEVEL` thinking suffix (`sonnet:high`).
    #[arg(long)]
    pub model: Option<String>,

    /// Base URL of an OpenAI-compatible server (llama.cpp, Ollama, vLLM): uses the Chat
    /// Completions API; any model id works.
    #[arg(long)]
    pub base_url: Option<String>,

    /// API key (otherwise from the provider's environment variable, e.g. OPENAI_API_KEY).
    #[arg(long)]
    pub api_key: Option<String>,

    /// List the models whose provider has a key (optionally those a fuzzy SEARCH matches),
    /// then exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1)]
    pub list_models: Option<Option<String>>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max (overrides a
    /// `--model NAME:LEVEL` suffix).
    #[arg(long)]
    pub thinking: Option<String>,

    /// The model's context window in tokens (a --base-url model's default: 128000, pi's),
    /// or `auto`: what the server's `/models` reports (llama.cpp, vLLM, LM Studio).
    #[arg(long, value_name = "TOKENS|auto")]
    pub context_window: Option<crate::server_limits::WindowSetting>,

    /// With --base-url: the most output tokens a reply may have (default 16384, pi's); a
    /// reply cut there is an error.
    #[arg(long, value_name = "TOKENS")]
    pub max_output_tokens: Option<u64>,

    /// Compaction starts when the context exceeds the model's window minus these tokens
    /// (pi's `compaction.reserveTokens`, default 16384).
    #[arg(long, value_name = "TOKENS")]
    pub compaction_reserve_tokens: Option<u64>,

    /// Tokens of the newest messages a compaction keeps as they are (pi's
    /// `compaction.keepRecentTokens`, default 20000).
    #[arg(long, value_name = "TOKENS")]
    pub compaction_keep_recent_tokens: Option<u64>,

    /// No automatic compaction (pi's `compaction.enabled: false`); `/compact` still works.
    #[arg(long)]
    pub no_auto_compaction: bool,

    /// Sampling temperature (e.g. 0 for small local models).
    #[arg(long)]
    pub temperature: Option<f64>,

    /// System prompt, as text or the path of a file: replaces the default (else the
    /// project's `.tern/SYSTEM.md` or the user's `SYSTEM.md` in tern's config folder).
    #[arg(long, value_name = "TEXT|FILE")]
    pub system_prompt: Option<String>,

    /// Text, or a file's contents, appended to the system prompt (repeatable; else
    /// `APPEND_SYSTEM.md`, found like `SYSTEM.md`).
    #[arg(long = "append-system-prompt", value_name = "TEXT|FILE")]
    pub append_system_prompt: Vec<String>,

    /// Do not load AGENTS.md / CLAUDE.md files (short: -nc).
    #[arg(long)]
    pub no_context_files: bool,

    /// Load a skill file or folder of skills (repeatable; loaded with --no-skills too).
    #[arg(long, value_name = "PATH")]
    pub skill: Vec<PathBuf>,

    /// Do not discover skills (SKILL.md folders in the skills locations) (short: -ns).
    #[arg(long)]
    pub no_skills: bool,

    /// Load a prompt template file, or a folder's `.md` files, as `/name` commands
    /// (repeatable; loaded with --no-prompt-templates too).
    #[arg(long, value_name = "PATH")]
    pub prompt_template: Vec<PathBuf>,

    /// Do not discover prompt templates (`prompts/` folders) (short: -np).
    #[arg(long)]
    pub no_prompt_templates: bool,

    /// Comma-separated allowlist of tools (read, write, edit, bash, ls, grep, find; `*`
    /// patterns; `all`, `none`), or only `+name`/`-name` entries that edit the default
    /// selection (read, bash, edit, write). MCP tools stay unless an entry starts with mcp__.
    #[arg(short = 't', long, value_name = "LIST")]
    pub tools: Option<String>,

    /// Comma-separated tool names or `*` patterns to disable, after every other selection,
    /// MCP tools included (short: -xt).
    #[arg(long, value_name = "LIST")]
    pub exclude_tools: Option<String>,

    /// Start with every tool off, MCP tools included; a --tools list then names all there is
    /// (short: -nt).
    #[arg(long)]
    pub no_tools: bool,

    /// Start with the built-in tools off; MCP tools stay (short: -nbt).
    #[arg(long)]
    pub no_builtin_tools: bool,

    /// Working directory for tools and sessions.
    #[arg(long)]
    pub cwd: Option<PathBuf>,

    /// Allow tool calls matching `TOOL` or `TOOL:GLOB` without asking (repeatable; `TOOL`
    /// may end in `*`: `mcp__github__*`).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,

    /// Refuse tool calls matching `TOOL` or `TOOL:GLOB` (repeatable; checked before --allow).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,

    /// At most N model requests per run: the N-th is a wrap-up turn without tools, where
    /// the model answers with what it has (exit code 3).
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// After SECS seconds the next model request is the wrap-up turn (exit code 3); a run
    /// still going as long again (5 to 60 s more) is aborted.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// Once the run has cost USD dollars (at the model's catalog prices), the next request is
    /// the wrap-up turn (exit code 3).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// Once the run has used N tokens (input + output), the next request is the wrap-up
    /// turn (exit code 3).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// After N tool calls the next request is the wrap-up turn (exit code 3).
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u32>,

    /// At most N model requests over all runs of the session: the N-th is a wrap-up turn,
    /// and a later run in the session is refused (exit code 3).
    #[arg(long, value_name = "N")]
    pub session_max_turns: Option<u32>,

    /// Once the session's runs have used N tokens in all, the current run wraps up and a
    /// later one is refused (exit code 3).
    #[arg(long, value_name = "N")]
    pub session_max_tokens: Option<u64>,

    /// Once the session's runs have cost USD dollars in all, the current run wraps up and a
    /// later one is refused (exit code 3).
    #[arg(long, value_name = "USD")]
    pub session_max_cost: Option<f64>,

    /// After N tool calls over all runs of the session, the current run wraps up and a later
    /// one is refused (exit code 3).
    #[arg(long, value_name = "N")]
    pub session_max_tool_calls: Option<u32>,

    /// After SECS seconds of runs in the session (the wall time of each run, summed), the
    /// current run wraps up and a later one is refused (exit code 3).
    #[arg(long, value_name = "SECS")]
    pub session_timeout: Option<f64>,

    /// Give up on a model response after SECS seconds without a byte from the server
    /// (default 120; 0 waits forever).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<f64>,

    /// The transport of providers that speak two (OpenAI Codex): auto (a WebSocket, SSE when
    /// it fails before the answer starts), sse, websocket or websocket-cached; pi's
    /// `transport` setting.
    #[arg(long, value_name = "NAME")]
    pub transport: Option<String>,

    /// Retry a request that failed with 408, 409, 429, a 5xx or a connection error up to N
    /// times, with backoff and the server's Retry-After (default 3; 0 disables).
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,

    /// The longest server-requested retry delay tern waits, in seconds (default 60; a longer
    /// one fails the request at once; 0 removes the cap).
    #[arg(long, value_name = "SECS")]
    pub max_retry_delay: Option<f64>,

    /// How far bash commands reach: read-only, workspace-write (default) or full-access.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,

    /// Let sandboxed bash commands use the network.
    #[arg(long)]
    pub network: bool,

    /// Pass this secret-looking environment variable to bash commands all the same
    /// (repeatable; provider keys and *KEY*, *TOKEN*, *SECRET* variables are dropped otherwise).
    #[arg(long = "pass-env", value_name = "NAME")]
    pub pass_env: Vec<String>,

    /// Let the file tools use this folder outside the working directory too, and sandboxed
    /// bash write there in workspace-write (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,

    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Resume the session with this id (full or a unique prefix); without one, pick among
    /// this directory's recent sessions (on a terminal; otherwise they are listed).
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,

    /// Open a session by file path, or by full or partial id (an unknown id or a prefix
    /// several sessions share is an error); a path that does not exist yet is created (pi's
    /// session files work too).
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,

    /// Fork a session (file path, or full or partial id) into a new session of this
    /// directory: the new file holds every entry of the forked one.
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,

    /// Open this directory's session with this id, or create it with that id (letters,
    /// digits, `.`, `_`, `-`; starts and ends with a letter or digit).
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,

    /// The session's display name.
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,

    /// Keep sessions in DIR itself, every directory's together (pi's `--session-dir`;
    /// `--continue` and `-r` take this directory's by their header). Default: a folder per
    /// directory under TERN_SESSION_DIR, else the user's data dir.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Keep the session in memory only.
    #[arg(long)]
    pub no_session: bool,

    /// Finish the run that was interrupted in the session (with --session, --continue or
    /// --resume) and print its answer; steps it recorded are not sent or run again, nor are
    /// recorded permission answers asked again. It runs under the limits it was started with
    /// (recorded in the session); a limit flag given now replaces the recorded value, with a
    /// note.
    #[arg(long)]
    pub recover: bool,

    /// Re-run the recorded runs of this session file offline, against the recorded model
    /// outputs, tool results and permission answers, under each run's recorded limits (a
    /// limit flag given now replaces the recorded value, with a note); print `identical`
    /// (exit 0) or the first divergence (exit 1).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// Config file (default: tern/config.toml in the user config folder, e.g. ~/.config; or TERN_CONFIG).
    #[arg(long, value_name = "FILE", env = "TERN_CONFIG")]
    pub config: Option<PathBuf>,

    /// RPC mode: the longest command line accepted, in bytes (longer ones are answered with
    /// an error and skipped).
    #[arg(long, value_name = "BYTES", default_value_t = crate::modes::rpc::DEFAULT_MAX_LINE_BYTES)]
    pub rpc_max_line_bytes: usize,

    /// Run the session on this Temporal cluster (`HOST:PORT`) instead of in this process;
    /// `tern worker --temporal HOST:PORT [model/tool/permission flags]` serves such sessions.
    #[cfg(feature = "temporal")]
    #[arg(long, value_name = "HOST:PORT")]
    pub temporal: Option<String>,

    /// With --temporal: the namespace.
    #[cfg(feature = "temporal")]
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub namespace: String,

    /// With --temporal: the task queue the workers poll.
    #[cfg(feature = "temporal")]
    #[arg(long, value_name = "QUEUE", default_value = "tern")]
    pub task_queue: String,

    /// With --temporal: send the prompt to this session (its workflow id) instead of starting one.
    #[cfg(feature = "temporal")]
    #[arg(long, value_name = "ID")]
    pub temporal_session: Option<String>,

    /// With --temporal, in JSON and RPC modes: where workers send a model request's events
    /// while it streams (this command listens there; `off`: events arrive when each request
    /// completes). Default: 127.0.0.1 on a free port when the cluster's address is on this
    /// machine, off otherwise.
    #[cfg(feature = "temporal")]
    #[arg(long, value_name = "HOST:PORT")]
    pub temporal_live: Option<String>,

    /// Also read this mcp.json (`mcpServers`, pi's and Claude Code's format; repeatable,
    /// read after the user's and the project's `.tern/mcp.json`, so its entries win).
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,

    /// Start no MCP servers (ignore every mcp.json).
    #[arg(long)]
    pub no_mcp: bool,

    /// Set by `tern worker`: serve Temporal sessions instead of running one.
    #[arg(skip)]
    pub worker: bool,

    /// Run the built-in scripted demo (offline, no API key): the agent reads sample.ts and
    /// explains what `first([])` returns.
    #[arg(long)]
    pub demo: bool,

    /// Write the session file SESSION as an HTML page and exit; the page goes to the first
    /// message argument, else `tern-session-<name>.html` (pi's `--export <input> [output]`).
    #[arg(long, value_name = "SESSION")]
    pub export: Option<PathBuf>,

    /// Print the version and exit.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,
}
