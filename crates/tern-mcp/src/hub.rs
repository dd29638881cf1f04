//! Every configured server, and their tools as one agent tool set.

use std::collections::HashSet;
use std::sync::Arc;

use tern_agent::AgentTool;
use tokio::sync::watch;

use crate::config::McpConfig;
use crate::error::McpError;
use crate::naming::mcp_tool_name;
use crate::server::McpServer;
use crate::tools::agent_tool;

/// The enabled servers of a config. Servers start on [`connect_all`](Self::connect_all) or
/// on their first call.
pub struct McpHub {
    servers: Vec<Arc<McpServer>>,
    changed: Arc<watch::Sender<u64>>,
}

impl McpHub {
    /// The hub of the config's enabled servers (none started yet).
    pub fn new(config: &McpConfig) -> McpHub {
        let changed = Arc::new(watch::channel(0).0);
        let servers = config
            .servers
            .iter()
            .filter(|(_, c)| c.enabled)
            .map(|(name, c)| McpServer::new(name.clone(), c.clone(), changed.clone()))
            .collect();
        McpHub { servers, changed }
    }

    /// Starts every server at once; returns the ones that failed, with why (the others are
    /// usable; a failed one is tried again on its next call).
    pub async fn connect_all(&self) -> Vec<(String, McpError)> {
        let attempts = self
            .servers
            .iter()
            .map(|s| async move { s.connect().await.err().map(|e| (s.name().to_string(), e)) });
        futures::future::join_all(attempts)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The servers, by name.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// One server.
    pub fn server(&self, name: &str) -> Result<&Arc<McpServer>, McpError> {
        self.servers
            .iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| McpError::UnknownServer(name.to_string()))
    }

    /// The tools of every server as last listed, named `mcp__<server>__<tool>` (a name two
    /// tools would share gets a hash suffix).
    pub fn tools(&self) -> Vec<AgentTool> {
        let mut taken = HashSet::new();
        let mut out = Vec::new();
        for server in &self.servers {
            for tool in server.tools().iter() {
                let name = mcp_tool_name(server.name(), &tool.name, |n| taken.contains(n));
                taken.insert(name.clone());
                out.push(agent_tool(server, tool, &name));
            }
        }
        out
    }

    /// Changes whenever a server's tool list changes (first listing, `list_changed`,
    /// restart): read [`tools`](Self::tools) again and give them to the agent.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Stops every server.
    pub async fn close(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.close())).await;
    }
}
