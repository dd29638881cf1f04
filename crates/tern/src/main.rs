//! `tern`: a coding agent on the command line. See the crate README and `tern --help`.
//!
//! From the command line to a running mode:
//!
//! | module | holds |
//! |---|---|
//! | [`cli`] | the arguments (clap) |
//! | [`config`] | the config file's defaults |
//! | [`input`] | the first prompt: words, `@file` includes, piped stdin |
//! | [`prompt_templates`] | `/name args` prompts from `prompts/*.md` (pi's prompt templates) |
//! | [`model_choice`] | which model runs, its key, the thinking level |
//! | [`models_file`] | pi's `models.json`: custom providers and models, overrides of built-in ones |
//! | [`server_limits`] | `--context-window auto`: the window and output limit a server's `/models` reports |
//! | [`model_lookup`] | `--model PATTERN` as pi resolves it (fuzzy, `:thinking`), `--list-models` |
//! | [`tool_selection`] | which tools are declared: `--tools`, `--exclude-tools`, `--no-tools`, `--no-builtin-tools` |
//! | [`tool_choice`] | the selected built-in tools, the permission policy, the bash sandbox |
//! | [`system_prompt`] | pi's sectioned system prompt: `--system-prompt`, `--append-system-prompt`, `SYSTEM.md`, `AGENTS.md` |
//! | [`session_choice`] | which session: none, new, `--continue`, `--resume`, `--session`; where they are kept |
//! | [`session_picker`] | `-r` without an id: this directory's recent sessions, picked on a terminal |
//! | [`limits`] | `--max-turns`, `--timeout`, `--max-cost`, `--max-tokens`, `--max-tool-calls`, their `--session-*` twins, and how a run ended |
//! | [`runtime`] | the wired agent: permission gate, session recorder, the current durable run |
//! | [`durable`] | the agent's model and tools as steps of the current durable run, the journal, the budget |
//! | [`permissions`] | the permission gate's answers as decision steps of the current durable run |
//! | [`runs`] | a prompt, a `--recover` and steering through the durable run |
//! | [`replay`] | `--replay FILE`: the recorded runs re-run offline |
//! | [`modes`] | print and JSON ([`modes::print`](mod@modes::print)), RPC ([`modes::rpc`]), the terminal UI ([`modes::interactive`]) |
//! | [`event_lines`] | agent events as pi's JSON lines (JSON and RPC modes) |
//! | [`secrets`] | the known keys, redacted from everything tern writes |
//! | [`signals`] | SIGINT, SIGTERM, SIGHUP: each aborts the run |
//! | [`terminal_text`] | styles, truncation and cleaning of text for the terminal |
//! | `temporal` | `--temporal`: sessions as Temporal workflows, `tern worker` (feature `temporal`) |
//! | [`demo`] | `--demo`: the scripted model and its fixture |
//! | [`usage_error`] | the error that ends tern before anything runs (exit code 2) |
//! | [`user_bash`] | commands the person runs (RPC `bash`, `!cmd`), kept for the model's context |
//!
//! Session files themselves (format, reader, writer, recorder) are the `tern-session` crate.

mod auto_retry;
mod cli;
mod compaction;
mod config;
mod demo;
mod durable;
mod event_lines;
mod export;
mod images;
mod input;
mod limits;
mod mcp;
mod model_choice;
mod model_lookup;
mod models_file;
mod modes;
mod permissions;
mod prompt_templates;
mod replay;
mod runs;
mod runtime;
mod secrets;
mod server_limits;
mod session_choice;
mod session_entries;
mod session_picker;
mod signals;
mod system_prompt;
mod telemetry;
#[cfg(feature = "temporal")]
mod temporal;
mod terminal_text;
mod tool_choice;
mod tool_selection;
mod usage_error;
mod user_bash;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use cli::{Args, Mode};
use limits::Limits;
use modes::{interactive, print};
use runtime::{BuildOptions, RequestSettings};
use secrets::eprintln_redacted;
use session_choice::SessionSource;
use tool_selection::{NoTools, ToolFlags, ToolSelection};
use usage_error::UsageError;

/// Exit codes.
pub mod exit {
    /// The run finished.
    pub const OK: i32 = 0;
    /// A provider or tool error ended the run.
    pub const ERROR: i32 = 1;
    /// Bad arguments or configuration.
    pub const USAGE: i32 = 2;
    /// A limit (`--max-turns`, `--timeout`, `--max-cost`, `--max-tokens`,
    /// `--max-tool-calls`) ended the run.
    pub const LIMIT: i32 = 3;
    /// The user aborted the run.
    pub const ABORTED: i32 = 130;
}

fn main() {
    let mut argv = cli::expand_short_flags(std::env::args_os().collect());
    // `tern worker ...`: the command line of a worker, with the same flags.
    let worker = cfg!(feature = "temporal") && argv.get(1).is_some_and(|a| a == "worker");
    if worker {
        argv.remove(1);
    }
    // `tern mcp list ...`: inspect the MCP servers, then exit.
    if argv.get(1).is_some_and(|a| a == "mcp") {
        std::process::exit(run_mcp_command(argv.split_off(1)));
    }
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let args = Args { worker, ..args };
    // Before the runtime: the exporter's HTTP client must not live inside it.
    let (traces, export_guard) = telemetry::start();
    let runtime = match async_runtime() {
        Some(r) => r,
        None => std::process::exit(exit::ERROR),
    };
    let code = runtime.block_on(async move {
        match run(args, traces).await {
            Ok(code) => code,
            Err(UsageError(msg)) => {
                eprintln_redacted!("tern: {msg}");
                exit::USAGE
            }
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    // Flushes the spans of the run (exit skips destructors).
    drop(export_guard);
    std::process::exit(code);
}

/// The CLI's async runtime (two workers: a run is mostly waiting); `None`, said on stderr,
/// when the system refuses it.
fn async_runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| eprintln_redacted!("tern: cannot start the async runtime: {e}"))
        .ok()
}

/// `tern mcp ...` (its own arguments); returns the exit code.
fn run_mcp_command(argv: Vec<std::ffi::OsString>) -> i32 {
    let args = match mcp::McpArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
        }
    };
    let runtime = match async_runtime() {
        Some(r) => r,
        None => return exit::ERROR,
    };
    let code = runtime.block_on(async move {
        mcp::run_command(args)
            .await
            .unwrap_or_else(|UsageError(msg)| {
                eprintln_redacted!("tern: {msg}");
                exit::USAGE
            })
    });
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

/// Retries of a transient model failure when neither flag nor config says (pi's
/// `retry.maxRetries`).
const DEFAULT_RETRIES: u32 = 3;

/// A flag's seconds as milliseconds: 0 is allowed (it disables), negative or not finite is a
/// usage error in the flag's name.
fn seconds_ms(flag: &str, secs: Option<f64>) -> Result<Option<u64>, UsageError> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some((s * 1000.0).round() as u64)),
        Some(s) => Err(UsageError(format!(
            "{flag} must be a number of seconds, 0 or more, not {s}"
        ))),
    }
}

/// The config's `[retry]` table over pi's defaults; `--max-retries 0` turns every retry
/// off, this one too.
fn retry_settings(
    c: &config::RetryConfig,
    request_retries: Option<u32>,
) -> Result<auto_retry::Settings, UsageError> {
    let d = auto_retry::Settings::default();
    Ok(auto_retry::Settings {
        enabled: c.enabled.unwrap_or(d.enabled) && request_retries != Some(0),
        max_retries: c.max_retries.unwrap_or(d.max_retries),
        base_delay_ms: seconds_ms("retry.base_delay", c.base_delay)?.unwrap_or(d.base_delay_ms),
        max_delay_ms: seconds_ms("retry.max_delay", c.max_delay)?.unwrap_or(d.max_delay_ms),
    })
}

/// A limit's seconds: positive and finite, or a usage error in the flag's name.
fn positive_secs(flag: &str, secs: Option<f64>) -> Result<Option<Duration>, UsageError> {
    match secs {
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(UsageError(format!(
            "{flag} must be a positive number of seconds, not {s}"
        ))),
        None => Ok(None),
    }
}

/// A turn limit: 1 or more.
fn at_least_one(flag: &str, n: Option<u32>) -> Result<Option<u32>, UsageError> {
    match n {
        Some(0) => Err(UsageError(format!("{flag} must be at least 1"))),
        n => Ok(n),
    }
}

/// A cost limit: finite, 0 or more.
fn dollars(flag: &str, usd: Option<f64>) -> Result<Option<f64>, UsageError> {
    match usd {
        Some(c) if !c.is_finite() || c < 0.0 => Err(UsageError(format!(
            "{flag} must be a number of dollars, 0 or more, not {c}"
        ))),
        c => Ok(c),
    }
}

/// `--recover` and `--replay` take no prompt and go with the flags that make sense for them.
fn check_recover_and_replay(args: &Args) -> Result<(), UsageError> {
    if args.recover {
        if args.no_session {
            return Err(UsageError(
                "--recover needs a session file (--session FILE, --continue or --resume), \
                 not --no-session"
                    .into(),
            ));
        }
        if args.session.is_none() && !args.continue_session && args.resume.is_none() {
            return Err(UsageError(
                "--recover needs the session to recover: pass --session FILE, --continue or \
                 --resume ID"
                    .into(),
            ));
        }
        if args.mode == Mode::Rpc {
            return Err(UsageError(
                "in RPC mode send a `recover` command instead of passing --recover".into(),
            ));
        }
    }
    if args.replay.is_some()
        && (args.recover
            || args.no_session
            || args.continue_session
            || args.resume.is_some()
            || args.session.is_some()
            || args.fork.is_some()
            || args.session_id.is_some()
            || args.demo)
    {
        return Err(UsageError(
            "--replay FILE names its session itself: drop --session, --fork, --session-id, \
             --continue, --resume, --no-session, --recover and --demo"
                .into(),
        ));
    }
    if (args.recover || args.replay.is_some()) && !args.messages.is_empty() {
        let flag = if args.recover {
            "--recover"
        } else {
            "--replay"
        };
        return Err(UsageError(format!(
            "{flag} takes no prompt; drop the prompt words"
        )));
    }
    Ok(())
}

/// Whether the session runs on Temporal (`--temporal`, or `tern worker`).
fn on_temporal(args: &Args) -> bool {
    #[cfg(feature = "temporal")]
    {
        args.temporal.is_some() || args.worker
    }
    #[cfg(not(feature = "temporal"))]
    {
        args.worker
    }
}

#[cfg(feature = "temporal")]
fn temporal_target(args: &Args) -> Result<temporal::Target, UsageError> {
    let Some(address) = args.temporal.clone() else {
        return Err(UsageError(
            "tern worker needs the cluster: --temporal HOST:PORT".into(),
        ));
    };
    let url = tern_temporal::parse_address(&address).map_err(|e| UsageError(e.to_string()))?;
    let live = match args.temporal_live.as_deref() {
        Some("off") => None,
        Some(a) => Some(a.to_string()),
        // Workers reach a caller on this machine when the cluster is on it too.
        None => url
            .host_str()
            .is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]")
            .then(|| "127.0.0.1:0".to_string()),
    };
    Ok(temporal::Target {
        address,
        namespace: args.namespace.clone(),
        task_queue: args.task_queue.clone(),
        live,
    })
}

async fn run(
    mut args: Args,
    traces: Option<tern_telemetry::TraceOptions>,
) -> Result<i32, UsageError> {
    let config = config::load(args.config.as_deref()).map_err(UsageError)?;
    let registry = models_file::init(&models_file::paths()).map_err(UsageError)?;
    // Before anything is printed or written: every key known from here on is redacted.
    let mut known: Vec<Option<&str>> = vec![args.api_key.as_deref(), config.api_key.as_deref()];
    known.extend(registry.keys().map(Some));
    let secrets = secrets::init(&known);
    let cwd = match &args.cwd {
        Some(d) => d
            .canonicalize()
            .map_err(|e| UsageError(format!("--cwd {}: {e}", d.display())))?,
        None => std::env::current_dir()
            .map_err(|e| UsageError(format!("cannot read the current directory: {e}")))?,
    };
    if let Some(input) = &args.export {
        // pi's `--export <input> [output]`: the output is the first message argument.
        let output = args.messages.first().map(|o| cwd.join(o));
        return Ok(
            match export::export_file(&cwd.join(input), output.as_deref(), None) {
                Ok(out) => {
                    println!("Exported to: {}", out.display());
                    exit::OK
                }
                Err(e) => {
                    eprintln_redacted!("Error: {e}");
                    exit::ERROR
                }
            },
        );
    }
    if let Some(search) = &args.list_models {
        let api_key = args.api_key.is_some() || config.api_key.is_some();
        let usable = |p: &str| models_file::has_key(p, api_key);
        println!("{}", model_lookup::list(search.as_deref(), &usable));
        return Ok(exit::OK);
    }
    let interactive_tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let interactive = args.mode == Mode::Text
        && !args.print
        && interactive_tty
        && !args.demo
        && !args.recover
        && args.replay.is_none();

    // The demo runs in a temp folder holding the lesson's file.
    let demo_dir = if args.demo {
        Some(
            demo::materialize()
                .map_err(|e| UsageError(format!("cannot create the demo's temp folder: {e}")))?,
        )
    } else {
        None
    };
    let tool_cwd: PathBuf = demo_dir
        .as_ref()
        .map(|d| d.path().to_path_buf())
        .unwrap_or_else(|| cwd.clone());

    // A resumed session keeps its model and thinking level unless the command line names them.
    // The demo keeps its scripted transcript out of this directory's sessions (so a later
    // --continue does not pick it up) unless --session names a file.
    check_recover_and_replay(&args)?;
    let session =
        if (args.demo && args.session.is_none()) || args.replay.is_some() || on_temporal(&args) {
            SessionSource::None
        } else {
            session_choice::session_source(&args, &cwd)?
        };
    if args.recover && !matches!(session, SessionSource::Existing(..)) {
        let what = args
            .session
            .as_ref()
            .map(|p| format!("session file {p} does not exist"))
            .unwrap_or_else(|| "there is no session to recover".into());
        return Err(UsageError(format!("--recover: {what}")));
    }
    // Nothing to recover needs no model: said before one is looked for.
    let mut recorded_asks = false;
    if let (true, SessionSource::Existing(path, _)) = (args.recover, &session) {
        let records = tern_durable::journal::session_file::read_step_records(path)
            .map_err(|e| UsageError(format!("cannot recover {}: {e}", path.display())))?;
        let last = tern_durable::RecordedRun::last(&records);
        if !last.as_ref().is_some_and(|r| r.interrupted()) {
            print::nothing_to_recover(&path.display().to_string());
            return Ok(exit::OK);
        }
        recorded_asks = last.is_some_and(|r| !r.decisions.is_empty());
    }
    // A replay runs the tools its session declared, unless --tools names them.
    let replayed = match &args.replay {
        Some(path) => Some(replay::load(path)?),
        None => None,
    };
    let mut session_thinking = None;
    if let SessionSource::Existing(_, loaded) = &session {
        let named = args.model.is_some() || args.provider.is_some();
        if let (false, Some((p, id))) = (named, &loaded.model) {
            let catalog = models_file::get_model(p, id).is_some();
            // A --base-url model the catalog does not know (provider `local` or another
            // name): its id comes back when the server is named again.
            let served = args.base_url.is_some() || config.base_url.is_some();
            let on_the_fly = !models_file::providers().iter().any(|x| x == p);
            if (catalog && !served) || (served && on_the_fly) {
                args.provider = Some(p.clone());
                args.model = Some(id.clone());
            }
        }
        session_thinking = loaded.thinking_level.clone();
    }

    let (stream_fn, model, api_key, suffix_thinking) = if args.demo {
        (demo::stream_fn(), demo::model(), None, None)
    } else if let Some(r) = &replayed {
        // A replay sends nothing: the session's model, with no key needed.
        (model_choice::providers(), r.model(), None, None)
    } else {
        let choice = model_choice::resolve_model(&args, &config).await?;
        let m = choice.model;
        (
            model_choice::providers(),
            m,
            choice.api_key,
            choice.thinking,
        )
    };
    // pi's order: --thinking, then a `--model NAME:LEVEL` suffix, then the session's; then
    // clamped to what the model supports, as pi does.
    let asked = match (args.thinking.as_deref(), suffix_thinking) {
        (None, Some(level)) => level,
        (flag, _) => match flag
            .or(session_thinking.as_deref())
            .or(config.thinking.as_deref())
        {
            Some(t) => model_choice::parse_thinking(t)?,
            None => Default::default(),
        },
    };
    let thinking = tern_ai::providers::clamp_thinking_level(&model, asked);
    if thinking != asked && (args.thinking.is_some() || suffix_thinking.is_some()) {
        eprintln_redacted!(
            "tern: note: {}/{} has no thinking level {}; using {}",
            model.provider,
            model.id,
            asked.as_str(),
            thinking.as_str()
        );
    }
    let mut allow = config.allow.clone();
    allow.extend(args.allow.iter().cloned());
    let mut deny = config.deny.clone();
    deny.extend(args.deny.iter().cloned());
    // A replay or a recovery asks as the recorded runs did: when they hold permission
    // answers, the interactive rules (write, edit and bash ask) apply, and the recorded
    // answers reply.
    let asks =
        interactive || recorded_asks || replayed.as_ref().is_some_and(replay::Replayed::asked);
    let policy = tool_choice::build_policy(&allow, &deny, asks, &tool_cwd)?;
    let mut sandbox = tool_choice::sandbox_policy(&args, &config)?;
    let added = tool_choice::added_dirs(&args, &config, &tool_cwd)?;
    sandbox.writable.extend(added.iter().cloned());
    // The file tools also apply the path rules to the paths they really open.
    let mut tool_config = tern_tools::ToolConfig::new(&tool_cwd)
        .with_path_policy(policy.clone())
        .with_sandbox(sandbox.clone());
    for dir in added {
        tool_config = tool_config.with_allowed_root(dir);
    }
    let tools_spec = args
        .tools
        .clone()
        .or(replayed.as_ref().and_then(replay::Replayed::tool_spec))
        .or(match (&session, args.recover) {
            // A recovery runs the tools its session declared, unless --tools names them.
            (SessionSource::Existing(_, loaded), true) => replay::declared_tools(&loaded.messages),
            _ => None,
        });
    let selection = ToolSelection::resolve(&ToolFlags {
        tools: tools_spec.as_deref(),
        defaults: config.tools.as_deref(),
        exclude: args.exclude_tools.as_deref(),
        no_tools: match (args.no_tools, args.no_builtin_tools) {
            (true, _) => NoTools::All,
            (false, true) => NoTools::Builtin,
            _ => NoTools::Keep,
        },
    })?;
    let mut tools = tool_choice::select_tools(&selection, &tool_config);
    tool_choice::note_sandbox_support(&sandbox, &tools);
    let speaks_once = matches!(args.mode, Mode::Text | Mode::Json) && !interactive;
    if speaks_once && !args.demo && args.replay.is_none() && !on_temporal(&args) {
        tool_choice::note_unasked_mutations(&selection, &allow, &deny);
    }
    let builtin_tools = tools.clone();
    let mcp_hub = if args.no_mcp || args.demo || args.replay.is_some() {
        None
    } else {
        mcp::start(&mcp::config_paths(&cwd, &args.mcp_config)?).await?
    };
    let selection = std::sync::Arc::new(selection);
    if let Some(hub) = &mcp_hub {
        tools.extend(
            hub.tools()
                .into_iter()
                .filter(|t| selection.declares_mcp(t.name())),
        );
    }
    let (system_sections, skills) =
        system_prompt::for_run(&args, &config, &tool_cwd, &tools, !args.demo)?;
    let system_prompt = system_prompt::text(&system_sections);
    #[cfg(feature = "temporal")]
    let temporal_setup =
        |stream_fn, model, api_key, tools, policy, system_prompt| temporal::Setup {
            stream_fn,
            model,
            api_key,
            temperature: args.temperature.or(config.temperature),
            tools,
            policy,
            system_prompt,
            thinking,
        };
    #[cfg(feature = "temporal")]
    if args.worker {
        let target = temporal_target(&args)?;
        let setup = temporal_setup(stream_fn, model, api_key, tools, policy, system_prompt);
        return Ok(temporal::run_worker(&target, setup).await);
    }
    let timeout = positive_secs("--timeout", args.timeout.or(config.timeout))?;
    let session_timeout = positive_secs(
        "--session-timeout",
        args.session_timeout.or(config.session_timeout),
    )?;
    let requests = RequestSettings {
        max_retries: Some(
            args.max_retries
                .or(config.max_retries)
                .unwrap_or(DEFAULT_RETRIES),
        ),
        max_retry_delay_ms: seconds_ms(
            "--max-retry-delay",
            args.max_retry_delay.or(config.max_retry_delay),
        )?,
        idle_timeout_ms: seconds_ms("--idle-timeout", args.idle_timeout.or(config.idle_timeout))?,
        transport: match args.transport.as_deref().or(config.transport.as_deref()) {
            None => None,
            Some(name) => Some(tern_ai::Transport::parse(name).ok_or_else(|| {
                UsageError(format!(
                    "--transport: unknown transport {name:?}; use auto, sse, websocket or \
                     websocket-cached"
                ))
            })?),
        },
    };
    let max_turns = at_least_one("--max-turns", args.max_turns.or(config.max_turns))?;
    let max_cost = dollars("--max-cost", args.max_cost.or(config.max_cost))?;
    let session_max_turns = at_least_one(
        "--session-max-turns",
        args.session_max_turns.or(config.session_max_turns),
    )?;
    let session_max_cost = dollars(
        "--session-max-cost",
        args.session_max_cost.or(config.session_max_cost),
    )?;
    let priced = model.cost.input != 0.0 || model.cost.output != 0.0;
    for (flag, cost) in [
        ("--max-cost", max_cost),
        ("--session-max-cost", session_max_cost),
    ] {
        if cost.is_some_and(|c| c > 0.0) && !priced {
            eprintln_redacted!(
                "tern: warning: the catalog has no prices for {}/{}, so its runs cost $0 and \
                 {flag} never ends one",
                model.provider,
                model.id
            );
        }
    }
    let (max_tokens, max_tool_calls) = (
        args.max_tokens.or(config.max_tokens),
        args.max_tool_calls.or(config.max_tool_calls),
    );
    let (session_max_tokens, session_max_tool_calls) = (
        args.session_max_tokens.or(config.session_max_tokens),
        args.session_max_tool_calls
            .or(config.session_max_tool_calls),
    );
    let limits = Limits {
        budgets: tern_durable::Budgets {
            run: durable::budget(max_turns, timeout, max_cost, max_tokens, max_tool_calls),
            session: durable::budget(
                session_max_turns,
                session_timeout,
                session_max_cost,
                session_max_tokens,
                session_max_tool_calls,
            ),
        },
        // Only the command line replaces a recorded limit: the config is there every time.
        flags: tern_durable::Budgets {
            run: durable::budget(
                args.max_turns.and(max_turns),
                args.timeout.and(timeout),
                args.max_cost.and(max_cost),
                args.max_tokens,
                args.max_tool_calls,
            ),
            session: durable::budget(
                args.session_max_turns.and(session_max_turns),
                args.session_timeout.and(session_timeout),
                args.session_max_cost.and(session_max_cost),
                args.session_max_tokens,
                args.session_max_tool_calls,
            ),
        },
        ..Default::default()
    };

    let templates = if args.demo || args.replay.is_some() {
        Vec::new()
    } else {
        prompt_templates::discover(
            &cwd,
            &system_prompt::context_files::global_dirs(),
            &args.prompt_template,
            !args.no_prompt_templates,
        )
    };
    // The first prompts (not in RPC mode, where prompts come as commands).
    let mut prompts = if args.mode == Mode::Rpc || args.recover || args.replay.is_some() {
        if args.messages.iter().any(|m| m.starts_with('@')) {
            return Err(UsageError(
                "RPC mode takes no @file arguments; send prompts as `prompt` commands".into(),
            ));
        }
        input::Prompts::default()
    } else if args.demo {
        demo::announce();
        input::Prompts {
            text: demo::PROMPT.to_string(),
            ..Default::default()
        }
    } else {
        let stdin = if interactive {
            None
        } else {
            input::read_piped_stdin()?
        };
        input::build_prompts(&args.messages, &cwd, stdin)?
    };
    let promptless = args.mode == Mode::Rpc || args.recover || args.replay.is_some();
    if prompts.is_empty() && !interactive && !promptless {
        return Err(UsageError(
            "no prompt given; pass it as an argument (tern -p \"...\") or on stdin".into(),
        ));
    }
    prompts.fit_model(&model);
    let expand = |t: &str| prompt_templates::expand(t, &templates, &skills);
    let prompt = expand(&prompts.text);

    #[cfg(feature = "temporal")]
    if on_temporal(&args) {
        if args.recover || args.replay.is_some() || args.demo {
            return Err(UsageError(
                "--temporal runs the session on the cluster: drop --recover, --replay and --demo"
                    .into(),
            ));
        }
        if interactive {
            return Err(UsageError(
                "--temporal has no interactive mode yet: give a prompt (tern --temporal ADDR \
                 -p \"...\") or drive the session with --mode rpc"
                    .into(),
            ));
        }
        let target = temporal_target(&args)?;
        let setup = temporal_setup(stream_fn, model, api_key, tools, policy, system_prompt);
        let session = args.temporal_session.clone();
        if args.mode == Mode::Rpc {
            let handle = match temporal::open_session(&target, &setup, session).await {
                Ok(h) => h,
                Err(e) => {
                    eprintln_redacted!("tern: {e}");
                    return Ok(exit::ERROR);
                }
            };
            let live = temporal::live_listener(&target, &handle).await;
            let commands = modes::rpc::slash_commands(&templates, &skills);
            let max = args.rpc_max_line_bytes;
            return Ok(modes::rpc::temporal::run(handle, live, max, expand, commands).await);
        }
        let json = args.mode == Mode::Json;
        // Every prompt, in order, as a local run sends them.
        let messages = prompts.into_messages(expand);
        return Ok(temporal::run_client(&target, setup, session, messages, json).await);
    }
    let (asker, questions) = if interactive {
        let (ask, rx) = interactive::asker();
        (Some(ask), Some(rx))
    } else {
        (None, None)
    };
    let rt = runtime::build(BuildOptions {
        stream_fn,
        model,
        api_key,
        temperature: args.temperature.or(config.temperature),
        tools,
        policy,
        asker,
        system_prompt: system_sections,
        // A recovery finishes the recorded run as it started.
        record_prompt_change: !args.recover,
        thinking,
        limits,
        session,
        cwd: cwd.clone(),
        secrets,
        requests,
        name: args.name.clone(),
        id_root: session_choice::root(&args, &cwd),
        templates,
        skills,
        compaction: compaction::Settings::from_args(&args),
        retry: retry_settings(&config.retry, requests.max_retries)?,
    })?;
    if let Some(r) = replayed {
        return Ok(replay::run(&rt, r).await);
    }
    let _traces = traces.map(|options| tern_telemetry::attach(&rt.agent, options));
    if let Some(hub) = mcp_hub {
        let declared = selection.clone();
        mcp::follow_tool_changes(
            hub,
            rt.agent.clone(),
            rt.current.clone(),
            builtin_tools,
            move |name| declared.declares_mcp(name),
        );
    }
    let rt_session_file = if args.demo { rt.session_file() } else { None };
    let first_messages = if prompts.is_empty() {
        Vec::new()
    } else {
        prompts.into_messages(|t| rt.expand_template(t))
    };
    let start = if args.recover {
        print::Start::Recover
    } else {
        print::Start::Prompts(first_messages.clone())
    };
    let code = match args.mode {
        Mode::Rpc => modes::rpc::run(rt, args.rpc_max_line_bytes).await,
        Mode::Json => print::run(&rt, start, print::Output::Json).await,
        Mode::Text if interactive => match questions {
            Some(q) => interactive::run(rt, prompt, first_messages, q).await,
            None => exit::USAGE,
        },
        Mode::Text if args.demo => print::run(&rt, start, print::Output::Stream).await,
        Mode::Text => print::run(&rt, start, print::Output::Print).await,
    };
    if let Some(dir) = &demo_dir {
        demo::farewell(dir.path(), rt_session_file);
    }
    drop(demo_dir);
    Ok(code)
}
