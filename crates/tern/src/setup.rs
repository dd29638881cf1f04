//! From arguments and config to a ready agent: the model, tools, permission policy, limits
//! and the session recorder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tern_agent::hooks::{BeforeToolCallResult, TurnDecision};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool, Hooks, Subscription};
use tern_ai::providers::{catalog, Providers};
use tern_ai::{Message, Model, StreamFn, StreamOptions, ThinkingLevel};
use tern_tools::policy::{Action, AskFn, PermissionGate, Policy, Rule};
use tern_tools::ToolConfig;

use crate::cli::Args;
use crate::config::Config;
use crate::session::{self, LoadedSession, SessionFile};

/// A usage problem (exit code 2), with the text that tells the user what to do.
#[derive(Debug)]
pub struct UsageError(pub String);

/// Every built-in tool name, in pi's order.
pub const TOOL_NAMES: [&str; 7] = ["read", "write", "edit", "bash", "ls", "grep", "find"];
/// The default tools: the read-only ones.
pub const DEFAULT_TOOLS: &str = "read,grep,find,ls";

/// The model selection, resolved.
#[derive(Clone, Debug)]
pub struct ModelChoice {
    /// The model.
    pub model: Model,
    /// Explicit API key (`--api-key` or config), if any.
    pub api_key: Option<String>,
}

/// Providers tried, in order, when neither `--provider` nor `--model` names one, with their
/// default model.
const DEFAULT_MODELS: [(&str, &str); 4] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-4o-mini"),
    ("google", "gemini-2.5-flash"),
    ("openrouter", "anthropic/claude-sonnet-4.5"),
];

/// A model served by an OpenAI-compatible server that the catalog does not know.
pub fn on_the_fly_model(id: &str, provider: &str, base_url: &str) -> Model {
    let mut m = Model::new(id, "openai-completions", provider, base_url);
    m.input = vec!["text".into()];
    m.context_window = 8192;
    m.max_tokens = 2048;
    m.extra.insert(
        "compat".into(),
        json!({"supportsStore": false, "maxTokensField": "max_tokens"}),
    );
    m
}

/// The text telling a user how to configure a provider.
pub fn provider_help() -> String {
    "  export ANTHROPIC_API_KEY=...   (or OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY, ...)\n  \
     tern --provider openai --model gpt-4o-mini --api-key KEY \"prompt\"\n  \
     tern --base-url http://127.0.0.1:8080/v1 --model local \"prompt\"   (llama.cpp, Ollama, vLLM)\n  \
     tern --demo                     (offline walkthrough with a scripted model)\n  \
     defaults can go in the config file: provider, model, base_url (see `tern --help`)"
        .to_string()
}

/// Resolves provider, model, base URL and key from arguments, config and environment.
pub fn resolve_model(args: &Args, config: &Config) -> Result<ModelChoice, UsageError> {
    let mut provider = args.provider.clone().or(config.provider.clone());
    let mut id = args.model.clone().or(config.model.clone());
    let base_url = args.base_url.clone().or(config.base_url.clone());
    let api_key = args.api_key.clone().or(config.api_key.clone());
    let providers = catalog::providers();
    if provider.is_none() {
        if let Some((p, rest)) = id.as_deref().and_then(|m| m.split_once('/')) {
            if providers.iter().any(|x| x == p) {
                provider = Some(p.to_string());
                id = Some(rest.to_string());
            }
        }
    }
    if let Some(url) = base_url {
        let provider = provider.unwrap_or_else(|| "local".to_string());
        let id = id.unwrap_or_else(|| "local".to_string());
        let model = match catalog::get_model(&provider, &id) {
            Some(mut m) => {
                m.base_url = url;
                m
            }
            None => on_the_fly_model(&id, &provider, &url),
        };
        return Ok(ModelChoice { model, api_key });
    }
    let has_key = |p: &str| api_key.is_some() || catalog::env_api_key(p).is_some();
    let model = match (provider, id) {
        (Some(p), Some(id)) => catalog::get_model(&p, &id).ok_or_else(|| {
            UsageError(format!(
                "unknown model {p}/{id}; for a server the catalog does not list, pass --base-url"
            ))
        })?,
        (None, Some(id)) => {
            let mut found: Vec<&Model> = catalog::models().iter().filter(|m| m.id == id).collect();
            found.sort_by_key(|m| !has_key(&m.provider));
            found.first().map(|m| (*m).clone()).ok_or_else(|| {
                UsageError(format!(
                    "unknown model {id}; name its provider with --provider, or pass --base-url for a local server"
                ))
            })?
        }
        (Some(p), None) => {
            let preferred = DEFAULT_MODELS
                .iter()
                .find(|(dp, _)| *dp == p)
                .and_then(|(dp, di)| catalog::get_model(dp, di));
            preferred
                .or_else(|| catalog::models().iter().find(|m| m.provider == p).cloned())
                .ok_or_else(|| {
                    UsageError(format!(
                        "unknown provider {p}; known providers: {}",
                        providers.join(", ")
                    ))
                })?
        }
        (None, None) => DEFAULT_MODELS
            .iter()
            .find(|(p, _)| has_key(p))
            .and_then(|(p, id)| catalog::get_model(p, id))
            .ok_or_else(|| {
                UsageError(format!(
                    "no API key found and no --base-url given, so there is no model to run.\n{}",
                    provider_help()
                ))
            })?,
    };
    if !has_key(&model.provider) {
        let vars = catalog::env_api_key_vars(&model.provider);
        let var = vars
            .last()
            .copied()
            .unwrap_or("the provider's API key variable");
        return Err(UsageError(format!(
            "no API key for provider {} (set {var} or pass --api-key), so nothing was run.\n{}",
            model.provider,
            provider_help()
        )));
    }
    Ok(ModelChoice { model, api_key })
}

/// Parses a thinking level name.
pub fn parse_thinking(s: &str) -> Result<ThinkingLevel, UsageError> {
    ThinkingLevel::parse(s).ok_or_else(|| {
        UsageError(format!(
            "unknown thinking level {s}; use off, minimal, low, medium, high, xhigh or max"
        ))
    })
}

/// Builds the selected tools.
pub fn select_tools(spec: &str, config: &ToolConfig) -> Result<Vec<AgentTool>, UsageError> {
    let mut names: Vec<&str> = Vec::new();
    for raw in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if raw == "all" {
            names.extend(TOOL_NAMES);
        } else if raw == "none" {
            continue;
        } else if TOOL_NAMES.contains(&raw) {
            names.push(raw);
        } else {
            return Err(UsageError(format!(
                "unknown tool {raw}; choose from {} (or `all`, `none`)",
                TOOL_NAMES.join(", ")
            )));
        }
    }
    let mut tools: Vec<AgentTool> = Vec::new();
    for name in TOOL_NAMES {
        if !names.contains(&name) {
            continue;
        }
        tools.push(match name {
            "read" => tern_tools::read_tool(config),
            "write" => tern_tools::write_tool(config),
            "edit" => tern_tools::edit_tool(config),
            "bash" => tern_tools::bash_tool(config),
            "ls" => tern_tools::ls_tool(config),
            "grep" => tern_tools::grep_tool(config),
            _ => tern_tools::find_tool(config),
        });
    }
    Ok(tools)
}

/// Parses `TOOL` or `TOOL:GLOB` into a rule.
pub fn parse_rule(spec: &str, action: Action) -> Result<Rule, UsageError> {
    let (tool, glob) = match spec.split_once(':') {
        Some((t, g)) => (t, Some(g)),
        None => (spec, None),
    };
    let rule = Rule::new(tool, action);
    match glob {
        Some(g) => rule
            .matching_glob(g)
            .map_err(|e| UsageError(format!("bad pattern in rule {spec}: {e}"))),
        None => Ok(rule),
    }
}

/// The permission policy: `--deny` rules, then `--allow` rules, then (when someone can be
/// asked) an ask rule for the tools that change things, else allow.
pub fn build_policy(
    allow: &[String],
    deny: &[String],
    ask_for_mutations: bool,
    cwd: &Path,
) -> Result<Policy, UsageError> {
    let mut policy = Policy::new(Action::Allow).with_cwd(cwd);
    for d in deny {
        policy = policy.rule(parse_rule(d, Action::Deny)?);
    }
    for a in allow {
        policy = policy.rule(parse_rule(a, Action::Allow)?);
    }
    if ask_for_mutations {
        for t in ["write", "edit", "bash"] {
            policy = policy.rule(Rule::ask(t));
        }
    }
    Ok(policy)
}

/// The default system prompt.
pub fn default_system_prompt(cwd: &Path, tools: &[AgentTool]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    format!(
        "You are tern, a coding assistant. The working directory is {}; give tool paths \
         relative to it (e.g. `src/main.rs`). Use the tools ({}) to look at files before \
         answering questions about them; never invent file contents. To read a whole file, \
         call read with only its path (offset and limit are for files too long to read at \
         once). Answer concisely, from what the tools returned.",
        cwd.display(),
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}

/// Run limits and what happened to them.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// Turns of the current run.
    pub turns: Arc<AtomicU32>,
    /// The turn limit ended the run.
    pub turn_limit_hit: Arc<AtomicBool>,
    /// The timeout aborted the run.
    pub timed_out: Arc<AtomicBool>,
    /// The user aborted the run.
    pub user_aborted: Arc<AtomicBool>,
}

impl Limits {
    /// Clears the per-run state.
    pub fn reset_run(&self) {
        self.turns.store(0, Ordering::SeqCst);
        self.turn_limit_hit.store(false, Ordering::SeqCst);
        self.timed_out.store(false, Ordering::SeqCst);
        self.user_aborted.store(false, Ordering::SeqCst);
    }

    /// Starts the timeout timer for a run (abort the agent when it fires).
    pub fn start_timer(&self, agent: &Agent) -> Option<tokio::task::JoinHandle<()>> {
        let timeout = self.timeout?;
        let agent = agent.clone();
        let flag = self.timed_out.clone();
        Some(tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            flag.store(true, Ordering::SeqCst);
            agent.abort();
        }))
    }
}

/// Appends finished messages to the session file.
pub struct Recorder {
    /// The session.
    pub session: SessionFile,
    /// Messages to write before the next one (the leading system message of a new file).
    pub prefix: Vec<Message>,
    warned: bool,
}

impl Recorder {
    /// A recorder for `session`.
    pub fn new(session: SessionFile, prefix: Vec<Message>) -> Self {
        Recorder {
            session,
            prefix,
            warned: false,
        }
    }

    /// Writes a finished message (and any pending prefix).
    pub fn record(&mut self, message: &Message) {
        let mut pending: Vec<Message> = std::mem::take(&mut self.prefix);
        pending.push(message.clone());
        for m in &pending {
            if let Err(e) = self.session.append_message(m) {
                self.warn(&e);
            }
        }
    }

    /// Reports a write failure once.
    pub fn warn(&mut self, e: &std::io::Error) {
        if !self.warned {
            self.warned = true;
            eprintln!(
                "tern: warning: cannot write the session file {}: {e} (the run goes on; pass --no-session to silence this)",
                self.session.path_string().unwrap_or_default()
            );
        }
    }
}

/// Everything a mode needs.
pub struct Runtime {
    /// The agent.
    pub agent: Agent,
    /// Limits.
    pub limits: Limits,
    /// The session recorder.
    pub recorder: Arc<Mutex<Recorder>>,
    /// Where new sessions go (None: in memory).
    pub session_root: Option<PathBuf>,
    /// Working directory.
    pub cwd: PathBuf,
    _recording: Subscription,
}

/// How the permission gate asks (interactive mode), if anyone can.
pub type Asker = Option<AskFn>;

/// Where a run's session comes from.
pub enum SessionSource {
    /// In memory.
    None,
    /// A new file under this root.
    New(PathBuf),
    /// A new file at this path.
    NewAt(PathBuf),
    /// An existing file.
    Existing(PathBuf, LoadedSession),
}

/// Picks the session from the flags. Warnings of a loaded file go to stderr.
pub fn session_source(args: &Args, cwd: &Path) -> Result<SessionSource, UsageError> {
    let root = args
        .session_dir
        .clone()
        .or_else(session::default_root)
        .unwrap_or_else(|| cwd.join(".tern-sessions"));
    let chosen = [
        args.no_session,
        args.continue_session,
        args.resume.is_some(),
        args.session.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if chosen > 1 {
        return Err(UsageError(
            "choose one of --no-session, --continue, --resume and --session".into(),
        ));
    }
    let load = |path: PathBuf| -> Result<SessionSource, UsageError> {
        let loaded = session::load(&path).map_err(UsageError)?;
        for w in &loaded.warnings {
            eprintln!("tern: warning: {w}");
        }
        Ok(SessionSource::Existing(path, loaded))
    };
    if args.no_session {
        return Ok(SessionSource::None);
    }
    if args.continue_session {
        return match session::latest_for_cwd(&root, cwd) {
            Some(p) => load(p),
            None => {
                eprintln!(
                    "tern: no earlier session in {} (looked in {}); starting a new one",
                    cwd.display(),
                    root.display()
                );
                Ok(SessionSource::New(root))
            }
        };
    }
    if let Some(id) = &args.resume {
        return load(session::find_by_id(&root, id).map_err(UsageError)?);
    }
    if let Some(path) = &args.session {
        if path.exists() {
            return load(path.clone());
        }
        return Ok(SessionSource::NewAt(path.clone()));
    }
    Ok(SessionSource::New(root))
}

/// Inputs of [`build`] that depend on the mode.
pub struct BuildOptions {
    /// The stream function (providers, or the scripted demo).
    pub stream_fn: Arc<dyn StreamFn>,
    /// The model.
    pub model: Model,
    /// Explicit API key.
    pub api_key: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Tools.
    pub tools: Vec<AgentTool>,
    /// Policy.
    pub policy: Policy,
    /// Who answers `ask` verdicts.
    pub asker: Asker,
    /// System prompt.
    pub system_prompt: String,
    /// Thinking level.
    pub thinking: ThinkingLevel,
    /// Limits.
    pub limits: Limits,
    /// The session.
    pub session: SessionSource,
    /// Working directory.
    pub cwd: PathBuf,
}

/// Builds the agent and wires the hooks and the session recorder.
pub fn build(o: BuildOptions) -> Runtime {
    let mut gate = PermissionGate::new(o.policy);
    if let Some(ask) = o.asker {
        gate = gate.with_ask(ask);
    }
    let gate = Arc::new(gate);
    let limits = o.limits.clone();
    let (model, thinking) = (o.model, o.thinking);
    let (messages, session_root, session_file) = match o.session {
        SessionSource::None => (Vec::new(), None, SessionFile::in_memory(&o.cwd)),
        SessionSource::New(root) => (
            Vec::new(),
            Some(root.clone()),
            SessionFile::create(&root, &o.cwd),
        ),
        SessionSource::NewAt(path) => (
            Vec::new(),
            path.parent().map(Path::to_path_buf),
            SessionFile::create_at(&path, &o.cwd),
        ),
        SessionSource::Existing(path, loaded) => {
            let file = SessionFile::resume(&path, &loaded, &o.cwd);
            (loaded.messages, path.parent().map(Path::to_path_buf), file)
        }
    };
    let fresh = messages.is_empty();
    let stream_options = StreamOptions {
        api_key: o.api_key,
        temperature: o.temperature,
        session_id: Some(session_file.id.clone()),
        ..Default::default()
    };
    let turn_limits = limits.clone();
    let agent = Agent::new(AgentOptions {
        system_prompt: Some(o.system_prompt),
        model: Some(model.into()),
        thinking_level: thinking,
        tools: o.tools,
        messages,
        stream_fn: Some(o.stream_fn),
        stream_options,
        hooks: Hooks::default()
            .before_tool_call(move |ctx, signal| {
                let gate = gate.clone();
                async move {
                    let verdict = gate.evaluate(&ctx.tool_call.name, &ctx.args, &signal).await;
                    Ok(verdict.block.then_some(BeforeToolCallResult {
                        block: true,
                        reason: verdict.reason,
                        terminate: false,
                    }))
                }
            })
            .finish_turn(move |turn, _signal| {
                let l = turn_limits.clone();
                async move {
                    let n = l.turns.fetch_add(1, Ordering::SeqCst) + 1;
                    if let Some(max) = l.max_turns {
                        if n >= max && turn.message.tool_calls().next().is_some() {
                            l.turn_limit_hit.store(true, Ordering::SeqCst);
                            return Ok(Some(TurnDecision::End));
                        }
                    }
                    Ok(None)
                }
            }),
        ..Default::default()
    });
    let prefix = if fresh {
        agent.with_messages(|m| {
            m.iter()
                .take_while(|m| matches!(m, Message::System(_)))
                .cloned()
                .collect()
        })
    } else {
        Vec::new()
    };
    let recorder = Arc::new(Mutex::new(Recorder::new(session_file, prefix)));
    let rec = recorder.clone();
    let recording = agent.subscribe_sync(move |event| {
        if let AgentEvent::MessageEnd { message } = event {
            rec.lock().record(message);
        }
    });
    Runtime {
        agent,
        limits,
        recorder,
        session_root,
        cwd: o.cwd,
        _recording: recording,
    }
}

impl Runtime {
    /// Starts a new session (RPC `new_session`): clears the conversation, keeps the prompt
    /// and tools, and opens a new file.
    pub fn new_session(&self) -> Result<(), String> {
        self.agent.reset().map_err(|e| e.to_string())?;
        let file = match &self.session_root {
            Some(root) if self.recorder.lock().session.path.is_some() => {
                SessionFile::create(root, &self.cwd)
            }
            _ => SessionFile::in_memory(&self.cwd),
        };
        let prefix = self.agent.with_messages(|m| m.to_vec());
        *self.recorder.lock() = Recorder::new(file, prefix);
        Ok(())
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.recorder.lock().session.id.clone()
    }

    /// The session file path.
    pub fn session_file(&self) -> Option<String> {
        self.recorder.lock().session.path_string()
    }
}

/// The model of `--demo`: labelled as scripted.
pub fn demo_model() -> Model {
    Model::new("scripted-demo", "scripted", "tern-demo", "")
}

/// The built-in providers.
pub fn providers() -> Arc<dyn StreamFn> {
    Arc::new(Providers)
}
