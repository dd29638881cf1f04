//! The `mcpServers` file format that pi, Claude Code, Cursor and codex (in JSON) share.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
//!     "docs": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${DOCS_TOKEN}" } }
//!   }
//! }
//! ```
//!
//! Each entry is validated on its own (a file is a trust boundary): an invalid entry is
//! reported and skipped, the others still load. Later files replace earlier entries of the
//! same name; an entry without `command`, `url` or `type` only overrides `enabled` of the
//! entry it names (pi's project override).
//!
//! ```
//! use tern_mcp::config::{McpConfig, Transport};
//! let text = r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["."]}, "bad name": {}}}"#;
//! let mut config = McpConfig::default();
//! config.merge_json("mcp.json", text).unwrap();
//! assert!(matches!(config.servers["fs"].transport, Transport::Stdio { .. }));
//! assert_eq!(config.errors, ["mcp.json: invalid server name \"bad name\" (use letters, digits, \"_\" and \"-\")"]);
//! ```

mod expand;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

pub use expand::expand_vars;

use crate::error::McpError;

/// The per-request timeout when an entry sets none (pi's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How tern reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// The executable (not a shell command line).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to tern's environment for it (`${VAR}` already expanded).
        env: BTreeMap<String, String>,
        /// Its working directory (`None`: tern's).
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint URL (`http` or `https`).
        url: String,
        /// Headers sent with every request (`${VAR}` already expanded).
        headers: BTreeMap<String, String>,
    },
}

/// One valid `mcpServers` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// How to reach it.
    pub transport: Transport,
    /// `false` keeps the entry without connecting.
    pub enabled: bool,
    /// What the server offers, in a sentence.
    pub description: Option<String>,
    /// Per-request timeout; progress notifications renew it.
    pub timeout: Duration,
    /// The file the entry came from.
    pub source: PathBuf,
}

impl ServerConfig {
    /// A stdio server entry (enabled, default timeout), for hosts that build configs in code.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ServerConfig {
            transport: Transport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            enabled: true,
            description: None,
            timeout: DEFAULT_TIMEOUT,
            source: PathBuf::new(),
        }
    }

    /// A streamable-HTTP server entry (enabled, default timeout).
    pub fn http(url: impl Into<String>) -> Self {
        ServerConfig {
            transport: Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            enabled: true,
            description: None,
            timeout: DEFAULT_TIMEOUT,
            source: PathBuf::new(),
        }
    }

    /// Sets the per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The servers of one or more `mcp.json` files, and the entries that were skipped.
#[derive(Clone, Debug, Default)]
pub struct McpConfig {
    /// Valid entries by server name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Why entries were skipped, each prefixed with its file.
    pub errors: Vec<String>,
}

impl McpConfig {
    /// Reads each existing file in order (later files win); a missing file is skipped, an
    /// unreadable or malformed one is an error.
    pub fn load(paths: &[PathBuf]) -> Result<McpConfig, McpError> {
        let mut config = McpConfig::default();
        for path in paths {
            match std::fs::read_to_string(path) {
                Ok(text) => config.merge_json(path, &text)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(McpError::ConfigRead {
                        path: path.clone(),
                        source,
                    })
                }
            }
        }
        Ok(config)
    }

    /// Adds the entries of one file's text; `path` names it in errors and resolves a
    /// relative `cwd`.
    pub fn merge_json(&mut self, path: impl AsRef<Path>, text: &str) -> Result<(), McpError> {
        let path = path.as_ref();
        let parsed: Value = serde_json::from_str(text).map_err(|e| McpError::ConfigSyntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let servers = match parsed.get("mcpServers") {
            None => return Ok(()),
            Some(Value::Object(servers)) => servers.clone(),
            Some(_) => {
                return Err(McpError::ConfigSyntax {
                    path: path.to_path_buf(),
                    message: "\"mcpServers\" must be an object".into(),
                })
            }
        };
        for (name, entry) in servers {
            let overrides = entry.as_object().filter(|e| is_override(e));
            if let Some(fields) = overrides.filter(|_| validate::is_server_name(&name)) {
                self.apply_override(path, &name, fields);
                continue;
            }
            match validate::server_config(&name, &entry, path) {
                Ok(server) => {
                    self.servers.insert(name, server);
                }
                Err(message) => self.errors.push(format!("{}: {message}", path.display())),
            }
        }
        Ok(())
    }

    fn apply_override(&mut self, path: &Path, name: &str, fields: &Map<String, Value>) {
        let Some(server) = self.servers.get_mut(name) else {
            self.errors.push(format!(
                "{}: server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)",
                path.display()
            ));
            return;
        };
        match fields.get("enabled") {
            None => {}
            Some(Value::Bool(enabled)) => server.enabled = *enabled,
            Some(_) => self.errors.push(format!(
                "{}: server \"{name}\": enabled must be a boolean",
                path.display()
            )),
        }
    }
}

/// An entry without `command`, `url` or `type` overrides a server defined elsewhere.
fn is_override(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command") && !entry.contains_key("url") && !entry.contains_key("type")
}

#[cfg(test)]
mod tests;
