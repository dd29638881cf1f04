//! tern's side of an MCP session: who it is, and what it does with the server's
//! notifications.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{ClientCapabilities, ClientInfo, Implementation};
use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient};

/// Runs `on_tools_changed` when the server sends `notifications/tools/list_changed`.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) on_tools_changed: Arc<dyn Fn() + Send + Sync>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            ClientCapabilities::default(),
            Implementation::new("tern", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        // The refresh is a request of its own: it runs elsewhere, so the session's message
        // loop that delivered this notification is free to deliver its answer.
        (self.on_tools_changed)();
        std::future::ready(())
    }
}
