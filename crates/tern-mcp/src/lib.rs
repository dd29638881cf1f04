//! MCP servers' tools as tern agent tools, on the official Rust SDK ([`rmcp`]).
//!
//! - [`config`]: the `mcpServers` file format (`mcp.json`) that pi, Claude Code and codex read.
//! - [`McpServer`]: one server over stdio or streamable HTTP; started on first use and
//!   restarted on the next call after it crashed or hung; tools, resources and prompts.
//! - [`McpHub`]: every configured server, and their tools as [`tern_agent::AgentTool`]s named
//!   `mcp__<server>__<tool>`, with a change signal for `notifications/tools/list_changed`.
//! - [`content`]: `CallToolResult` → content blocks; [`naming`]: tool names.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_mcp::McpError> {
//! use tern_mcp::{config::McpConfig, McpHub};
//! let config = McpConfig::load(&["mcp.json".into()])?;
//! let hub = McpHub::new(&config);
//! for (server, error) in hub.connect_all().await {
//!     eprintln!("{server}: {error}");
//! }
//! let tools = hub.tools(); // give them to the Agent; re-read them when hub.subscribe() changes
//! # Ok(()) }
//! ```

pub mod config;
pub mod content;
mod error;
mod hub;
pub mod naming;
pub mod output_limit;
mod server;
mod tools;

pub use error::McpError;
pub use hub::McpHub;
/// The SDK, for its model types (`Tool`, `Resource`, `Prompt`, ...).
pub use rmcp;
pub use server::McpServer;
pub use tools::agent_tool;
