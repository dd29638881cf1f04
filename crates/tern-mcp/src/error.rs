//! What goes wrong with MCP servers, with the server named and what to do.

use std::path::PathBuf;
use std::time::Duration;

/// An MCP failure. Tool calls turn it into an error result whose text is this message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A config file could not be read.
    #[error("cannot read MCP config {}: {source}", path.display())]
    ConfigRead {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A config file is not JSON, or `mcpServers` is not an object.
    #[error("MCP config {} is not valid: {message}", path.display())]
    ConfigSyntax {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// No configured server has this name.
    #[error("no MCP server named \"{0}\" is configured")]
    UnknownServer(String),
    /// The server could not be started or did not complete `initialize`.
    #[error(
        "MCP server \"{server}\" did not start: {message}{}; check its entry in mcp.json",
        stderr_note(stderr)
    )]
    Connect {
        /// The server.
        server: String,
        /// Why.
        message: String,
        /// The last lines it wrote to stderr (stdio servers).
        stderr: String,
    },
    /// The connection broke during a request (the server crashed or closed it).
    #[error("MCP server \"{server}\" closed the connection during {method}{}; it is restarted on the next call", stderr_note(stderr))]
    Disconnected {
        /// The server.
        server: String,
        /// The request that was in flight.
        method: &'static str,
        /// The last lines it wrote to stderr (stdio servers).
        stderr: String,
    },
    /// The server sent nothing for the whole timeout (progress renews it).
    #[error("MCP server \"{server}\" did not answer {method} within {}s; it was stopped and is restarted on the next call (raise \"timeout\" in mcp.json for slow tools)", timeout.as_secs_f64())]
    Timeout {
        /// The server.
        server: String,
        /// The request.
        method: &'static str,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// The server answered with a JSON-RPC error.
    #[error("MCP server \"{server}\" refused {method}: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// The request.
        method: &'static str,
        /// The server's error message.
        message: String,
    },
    /// The run was aborted while the call was in flight (the server was sent
    /// `notifications/cancelled`).
    #[error("MCP tool call aborted")]
    Aborted,
}

fn stderr_note(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(" (its stderr ends with: {})", stderr.trim())
    }
}
