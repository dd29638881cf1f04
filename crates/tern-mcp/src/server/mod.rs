//! One configured MCP server: its session (started on first use, restarted after a crash
//! or a hang), its tools, and the requests tern sends it.

mod connection;
mod handler;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, GetPromptRequestParams,
    GetPromptResult, Prompt, ReadResourceRequestParams, ReadResourceResult, Request, Resource,
    ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::error::McpError;
use connection::{Connection, StderrTail};
use handler::Handler;

/// A server from the config. Cheap to share (`Arc`); every method may be called at any time:
/// a request on a server that is not running starts it first.
pub struct McpServer {
    name: String,
    config: ServerConfig,
    connection: tokio::sync::Mutex<Option<Connection>>,
    tools: parking_lot::Mutex<Arc<Vec<Tool>>>,
    instructions: parking_lot::Mutex<Option<String>>,
    sessions: AtomicU64,
    changed: Arc<watch::Sender<u64>>,
    me: Weak<McpServer>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Lists the tools again off the session's message loop; a failure leaves the old list (the
/// next call reports the broken session).
fn refresh_in_background(server: Arc<McpServer>) {
    tokio::spawn(async move {
        let _ = server.refresh_tools().await;
    });
}

/// A live session's peer, with what identifies it.
struct Live {
    peer: Peer<RoleClient>,
    stderr: StderrTail,
    id: u64,
}

impl McpServer {
    /// A server that is not started yet; `changed` is bumped whenever its tool list changes.
    pub fn new(
        name: impl Into<String>,
        config: ServerConfig,
        changed: Arc<watch::Sender<u64>>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| McpServer {
            name: name.into(),
            config,
            connection: tokio::sync::Mutex::new(None),
            tools: parking_lot::Mutex::new(Arc::new(Vec::new())),
            instructions: parking_lot::Mutex::new(None),
            sessions: AtomicU64::new(0),
            changed,
            me: me.clone(),
        })
    }

    /// The name from the config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entry from the config.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The tools of the last `tools/list` (empty before the first connection).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools.lock().clone()
    }

    /// The instructions the server sent in `initialize`.
    pub fn instructions(&self) -> Option<String> {
        self.instructions.lock().clone()
    }

    /// Whether a session is open now.
    pub async fn is_connected(&self) -> bool {
        self.connection
            .lock()
            .await
            .as_ref()
            .is_some_and(|c| !c.service.is_closed())
    }

    /// Starts the server if it is not running, and lists its tools.
    pub async fn connect(&self) -> Result<(), McpError> {
        self.live().await.map(|_| ())
    }

    /// Stops the server (closes its stdin and kills its process group, or ends the HTTP
    /// session). A later request starts it again.
    pub async fn close(&self) {
        if let Some(mut c) = self.connection.lock().await.take() {
            let _ = c
                .service
                .close_with_timeout(std::time::Duration::from_secs(2))
                .await;
        }
    }

    /// Calls a tool once (a `tools/call` is never retried: the server may have acted).
    /// Returns the `CallToolResult` as JSON. When `signal` fires the server is sent
    /// `notifications/cancelled` and the call ends with [`McpError::Aborted`].
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        signal: &CancellationToken,
    ) -> Result<Value, McpError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => Map::from_iter([("value".to_string(), other)]),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        match self.request("tools/call", request, Some(signal)).await? {
            ServerResult::CallToolResult(result) => {
                Ok(serde_json::to_value(result).unwrap_or(Value::Null))
            }
            other => Err(self.unexpected("tools/call", &other)),
        }
    }

    /// Every resource the server lists (all pages).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, McpError> {
        let live = self.live().await?;
        self.bounded(&live, "resources/list", live.peer.list_all_resources())
            .await
    }

    /// Reads one resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let request = ClientRequest::ReadResourceRequest(Request::new(
            ReadResourceRequestParams::new(uri.to_string()),
        ));
        match self.request("resources/read", request, None).await? {
            ServerResult::ReadResourceResult(r) => Ok(r),
            other => Err(self.unexpected("resources/read", &other)),
        }
    }

    /// Every prompt the server lists (all pages).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, McpError> {
        let live = self.live().await?;
        self.bounded(&live, "prompts/list", live.peer.list_all_prompts())
            .await
    }

    /// Fills a prompt's arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, McpError> {
        let params = GetPromptRequestParams::new(name.to_string()).with_arguments(arguments);
        let request = ClientRequest::GetPromptRequest(Request::new(params));
        match self.request("prompts/get", request, None).await? {
            ServerResult::GetPromptResult(r) => Ok(r),
            other => Err(self.unexpected("prompts/get", &other)),
        }
    }

    /// Lists the tools again (after `notifications/tools/list_changed`).
    pub async fn refresh_tools(&self) -> Result<(), McpError> {
        let live = self.live().await?;
        let tools = self
            .bounded(&live, "tools/list", live.peer.list_all_tools())
            .await?;
        self.set_tools(tools);
        Ok(())
    }

    fn set_tools(&self, tools: Vec<Tool>) {
        let mut current = self.tools.lock();
        if **current != tools {
            *current = Arc::new(tools);
            drop(current);
            self.changed.send_modify(|generation| *generation += 1);
        }
    }

    /// The open session, started (and its tools listed) when there is none.
    async fn live(&self) -> Result<Live, McpError> {
        let mut slot = self.connection.lock().await;
        let open =
            |c: &&Connection| !c.service.is_closed() && !c.service.peer().is_transport_closed();
        if let Some(c) = slot.as_ref().filter(open) {
            return Ok(Live {
                peer: c.service.peer().clone(),
                stderr: c.stderr.clone(),
                id: c.id,
            });
        }
        *slot = None;
        let me = self.me.clone();
        let handler = Handler {
            on_tools_changed: Arc::new(move || {
                if let Some(server) = me.upgrade() {
                    refresh_in_background(server);
                }
            }),
        };
        let id = self.sessions.fetch_add(1, Ordering::SeqCst);
        let connection = connection::open(&self.name, &self.config, handler, id).await?;
        let live = Live {
            peer: connection.service.peer().clone(),
            stderr: connection.stderr.clone(),
            id,
        };
        *self.instructions.lock() = connection
            .service
            .peer_info()
            .and_then(|info| info.instructions.clone());
        *slot = Some(connection);
        drop(slot);
        let listed = self
            .bounded(&live, "tools/list", live.peer.list_all_tools())
            .await;
        match listed {
            Ok(tools) => self.set_tools(tools),
            Err(e) => {
                return Err(McpError::Connect {
                    server: self.name.clone(),
                    message: e.to_string(),
                    stderr: live.stderr.text(),
                })
            }
        }
        Ok(live)
    }

    /// Awaits a request the SDK sends itself, within the entry's timeout.
    async fn bounded<T>(
        &self,
        live: &Live,
        method: &'static str,
        request: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let error = match tokio::time::timeout(self.config.timeout, request).await {
            Ok(Ok(r)) => return Ok(r),
            Ok(Err(e)) => e,
            Err(_) => ServiceError::Timeout {
                timeout: self.config.timeout,
            },
        };
        Err(self.failed(live, method, error).await)
    }

    /// Sends one request on the open session (starting one if needed), with the entry's
    /// timeout renewed by progress; `signal` cancels it.
    async fn request(
        &self,
        method: &'static str,
        request: ClientRequest,
        signal: Option<&CancellationToken>,
    ) -> Result<ServerResult, McpError> {
        let live = self.live().await?;
        let options =
            PeerRequestOptions::with_timeout(self.config.timeout).reset_timeout_on_progress();
        let handle = match live.peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(e) => return Err(self.failed(&live, method, e).await),
        };
        let id = handle.id.clone();
        let response = handle.await_response();
        let never = CancellationToken::new();
        let signal = signal.unwrap_or(&never);
        tokio::select! {
            r = response => match r {
                Ok(r) => Ok(r),
                Err(e) => Err(self.failed(&live, method, e).await),
            },
            () = signal.cancelled() => {
                let _ = live
                    .peer
                    .notify_cancelled(CancelledNotificationParam {
                        request_id: id,
                        reason: Some("The user aborted the request.".into()),
                    })
                    .await;
                Err(McpError::Aborted)
            }
        }
    }

    /// The error for a failed request; a broken or hung session is dropped, so the next
    /// request starts the server again.
    async fn failed(&self, live: &Live, method: &'static str, error: ServiceError) -> McpError {
        let error = match error {
            ServiceError::McpError(data) => {
                return McpError::Protocol {
                    server: self.name.clone(),
                    method,
                    message: data.message.to_string(),
                }
            }
            ServiceError::Timeout { timeout } => McpError::Timeout {
                server: self.name.clone(),
                method,
                timeout,
            },
            ServiceError::Cancelled { .. } => McpError::Aborted,
            _ => McpError::Disconnected {
                server: self.name.clone(),
                method,
                stderr: live.stderr.text(),
            },
        };
        self.drop_session(live.id).await;
        error
    }

    /// Forgets session `id` (not a newer one) so the next request starts the server again;
    /// ending it (which kills a stdio server's process group) goes on in the background.
    async fn drop_session(&self, id: u64) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| c.id == id) {
            if let Some(mut c) = slot.take() {
                tokio::spawn(async move {
                    let _ = c
                        .service
                        .close_with_timeout(std::time::Duration::from_secs(1))
                        .await;
                });
            }
        }
    }

    fn unexpected(&self, method: &'static str, got: &ServerResult) -> McpError {
        McpError::Protocol {
            server: self.name.clone(),
            method,
            message: format!(
                "unexpected answer {}",
                serde_json::to_string(got).unwrap_or_default()
            ),
        }
    }
}
