//! Finding the npm MCP servers that `.ci/run` installs, and calling agent tools directly.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tern_agent::{AgentTool, ToolCallInput, ToolOutput, ToolUpdater};
use tern_mcp::config::{McpConfig, ServerConfig};
use tokio_util::sync::CancellationToken;

/// `tests/node`, which must hold the installed servers: a missing install fails the test
/// with what to run, it never skips.
pub fn node_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything").is_dir(),
        "the MCP test servers are not installed: run `npm ci --prefix crates/tern-mcp/tests/node` (.ci/run does)"
    );
    dir
}

/// A script or package entry point under `tests/node`.
pub fn node_path(rel: &str) -> String {
    node_dir().join(rel).to_string_lossy().into_owned()
}

/// `node <script> args...` as a stdio server.
pub fn node_server(script: &str, args: &[&str]) -> ServerConfig {
    let mut all = vec![node_path(script)];
    all.extend(args.iter().map(|a| a.to_string()));
    ServerConfig::stdio("node", all)
}

/// server-everything over stdio.
pub fn everything() -> ServerConfig {
    node_server(
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        &["stdio"],
    )
}

/// A config of named servers.
pub fn config(servers: Vec<(&str, ServerConfig)>) -> McpConfig {
    McpConfig {
        servers: servers
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect(),
        errors: Vec::new(),
    }
}

/// The tool named `name`, or a failure listing the names there are.
pub fn find(tools: &[AgentTool], name: &str) -> AgentTool {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| {
            let names: Vec<_> = tools.iter().map(|t| t.name().to_string()).collect();
            panic!("no tool {name}; there are {names:?}")
        })
}

/// Runs a tool as the loop would, with `signal`.
pub async fn call(tool: &AgentTool, args: Value, signal: CancellationToken) -> ToolOutput {
    let run = tool.execute(ToolCallInput {
        tool_call_id: "call-1".into(),
        args: args.into(),
        signal,
        updater: ToolUpdater::noop(),
    });
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the tool call finished within 60s")
}

/// Runs the tool named `name` of `tools` with a signal that never fires.
pub async fn call_named(tools: &[AgentTool], name: &str, args: Value) -> ToolOutput {
    call(&find(tools, name), args, CancellationToken::new()).await
}

/// The text blocks of a result, joined.
pub fn text(output: &ToolOutput) -> String {
    match output {
        Ok(r) => r
            .content()
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("error: {e}"),
    }
}
