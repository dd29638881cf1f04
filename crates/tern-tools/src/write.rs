//! `write`: create or replace a file atomically.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult};

use crate::cancel::blocking_to_completion;
use crate::config::ToolConfig;
use crate::confine::resolve_path;

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Path to the file to write (relative or absolute)
    pub path: String,
    /// Content to write to the file
    pub content: String,
}

/// The `write` tool (sequential).
///
/// ```
/// let tool = tern_tools::write_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.execution_mode(), Some(tern_agent::ToolExecutionMode::Sequential));
/// ```
pub fn write_tool(config: &ToolConfig) -> AgentTool {
    let config = Arc::new(config.clone());
    AgentTool::typed(
        "write",
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
        move |args: WriteArgs, call| {
            let config = config.clone();
            async move {
                let resolved = resolve_path(&config, &args.path)?;
                let bytes = args.content.len();
                let display = resolved.display.clone();
                blocking_to_completion(&call.signal, move || {
                    write_atomic(&resolved.real, args.content.as_bytes())
                        .map_err(|e| format!("Could not write {}: {e}", resolved.display))
                })
                .await?;
                Ok(ToolResult::text(format!("Successfully wrote {bytes} bytes to {display}"))
                    .with_details(json!({ "bytes": bytes })))
            }
        },
    )
    .with_execution_mode(ToolExecutionMode::Sequential)
}

/// Writes `data` to `path` through a temporary file in the same folder and a rename, so a
/// reader sees the old content or the new, never half. Creates missing parent folders and
/// keeps an existing file's permissions.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the path has no parent folder"))?;
    std::fs::create_dir_all(parent)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tern-write-")
        .tempfile_in(parent)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
