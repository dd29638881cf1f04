//! MCP servers from `mcp.json`: their tools beside the built-in ones, kept current when a
//! server's tool list changes, and `tern mcp list`.
//!
//! Files, later ones winning: `<user config>/tern/mcp.json` (e.g. `~/.config/tern/mcp.json`),
//! the project's `.tern/mcp.json`, then each `--mcp-config FILE`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Parser;
use tern_agent::{Agent, AgentTool};
use tern_mcp::config::{McpConfig, Transport};
use tern_mcp::McpHub;

use crate::durable::Current;
use crate::secrets::eprintln_redacted;
use crate::usage_error::UsageError;

/// The `mcp.json` files read for `cwd`, in order; `explicit` files must exist.
pub fn config_paths(cwd: &Path, explicit: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut paths: Vec<PathBuf> = dirs::config_dir()
        .map(|d| d.join("tern").join("mcp.json"))
        .into_iter()
        .collect();
    paths.push(cwd.join(".tern").join("mcp.json"));
    for file in explicit {
        let full = cwd.join(file);
        if !full.is_file() {
            return Err(UsageError(format!(
                "--mcp-config {}: no such file",
                file.display()
            )));
        }
        paths.push(full);
    }
    Ok(paths)
}

/// The config of `paths`; its skipped entries are reported on stderr.
fn load(paths: &[PathBuf]) -> Result<McpConfig, UsageError> {
    let config = McpConfig::load(paths).map_err(|e| UsageError(e.to_string()))?;
    for error in &config.errors {
        eprintln_redacted!("tern: skipped an MCP server: {error}");
    }
    Ok(config)
}

/// The configured servers, started; `None` when none is configured. A server that fails
/// to start is reported and tried again on its first call.
pub async fn start(paths: &[PathBuf]) -> Result<Option<Arc<McpHub>>, UsageError> {
    let config = load(paths)?;
    let hub = McpHub::new(&config);
    if hub.servers().is_empty() {
        return Ok(None);
    }
    for (server, error) in hub.connect_all().await {
        eprintln_redacted!("tern: MCP server {server}: {error}");
    }
    Ok(Some(Arc::new(hub)))
}

/// Gives `agent` the built-in tools and the hub's current tools that `declared` selects
/// whenever a server's list changes; the core then declares the change in the transcript
/// before the next request.
pub fn follow_tool_changes(
    hub: Arc<McpHub>,
    agent: Agent,
    current: Current,
    builtins: Vec<AgentTool>,
    declared: impl Fn(&str) -> bool + Send + 'static,
) {
    let mut changes = hub.subscribe();
    changes.borrow_and_update();
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let mut tools = builtins.clone();
            tools.extend(hub.tools().into_iter().filter(|t| declared(t.name())));
            agent.set_tools(current.tools(tools));
        }
    });
}

/// `tern mcp list`: connect to every enabled server and print its state and tools.
#[derive(Debug, Parser)]
#[command(name = "tern mcp", about = "Inspect the MCP servers of mcp.json.")]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, clap::Subcommand)]
enum McpCommand {
    /// Connect to every enabled server and print its state, tools and errors; exit 1 when an
    /// entry is invalid or an enabled server does not connect.
    List {
        /// Also read this mcp.json (repeatable; read last, so its entries win).
        #[arg(long = "mcp-config", value_name = "FILE")]
        mcp_config: Vec<PathBuf>,
        /// The project folder whose `.tern/mcp.json` is read.
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
}

/// Runs `tern mcp ...`; returns the exit code.
pub async fn run_command(args: McpArgs) -> Result<i32, UsageError> {
    let McpCommand::List { mcp_config, cwd } = args.command;
    let cwd = match cwd {
        Some(d) => d,
        None => std::env::current_dir()
            .map_err(|e| UsageError(format!("cannot read the current directory: {e}")))?,
    };
    let paths = config_paths(&cwd, &mcp_config)?;
    let config = McpConfig::load(&paths).map_err(|e| UsageError(e.to_string()))?;
    let hub = McpHub::new(&config);
    let failures = hub.connect_all().await;
    if config.servers.is_empty() && config.errors.is_empty() {
        println!(
            "No MCP servers configured. Add them to {}.",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        );
    }
    for (name, entry) in &config.servers {
        let state = if !entry.enabled {
            "disabled".to_string()
        } else if failures.iter().any(|(n, _)| n == name) {
            "failed".to_string()
        } else {
            let n = hub.server(name).map(|s| s.tools().len()).unwrap_or(0);
            format!("connected, {n} tool{}", if n == 1 { "" } else { "s" })
        };
        println!("{name}: {state} ({})", entry.source.display());
        match &entry.transport {
            Transport::Stdio { command, args, .. } => {
                println!(
                    "  stdio: {}",
                    std::iter::once(command)
                        .chain(args)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
            Transport::Http { url, .. } => println!("  http: {url}"),
        }
        if let Ok(server) = hub.server(name) {
            let tools: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
            if !tools.is_empty() {
                println!("  tools: {}", tools.join(", "));
            }
        }
        if let Some((_, error)) = failures.iter().find(|(n, _)| n == name) {
            println!("  {error}");
        }
    }
    for error in &config.errors {
        println!("invalid: {error}");
    }
    hub.close().await;
    Ok(if failures.is_empty() && config.errors.is_empty() {
        0
    } else {
        1
    })
}
