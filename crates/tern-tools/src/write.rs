//! `write`: create or replace a file atomically.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult};

use crate::cancel::blocking_to_completion;
use crate::config::{config_tool, ToolConfig};
use crate::confine::{enforce_path_rules, resolve_path, ResolvedPath};
use crate::fs::{replace_file, Expect, ReplaceError};

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
    config_tool(
        config,
        "write",
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
        |config, args: WriteArgs, call| {
            async move {
                let resolved = resolve_path(&config, &args.path)?;
                let display = resolved.display.clone();
                if resolved.trailing_slash {
                    return Err(format!(
                        "Could not write {display}: the path ends with '/', so it names a folder, not a file. Give a file name, for example {display}file.txt."
                    )
                    .into());
                }
                enforce_path_rules(&config, "write", &resolved)?;
                let bytes = args.content.len();
                blocking_to_completion(&call.signal, move || {
                    write_file(&resolved, args.content.as_bytes())
                        .map_err(|e| e.describe("write", &resolved.display))
                })
                .await?;
                Ok(ToolResult::text(format!("Successfully wrote {bytes} bytes to {display}"))
                    .with_details(json!({ "bytes": bytes })))
            }
        },
    )
    .with_execution_mode(ToolExecutionMode::Sequential)
}

/// Writes `data` to the resolved path through a temporary file in the same folder handle and
/// a `renameat`, so a reader sees the old content or the new, never half. Creates missing
/// parent folders and keeps an existing file's permissions. Fails with
/// [`ReplaceError::Conflict`] when the file changed (or appeared) while the call ran.
pub fn write_file(resolved: &ResolvedPath, data: &[u8]) -> Result<(), ReplaceError> {
    let root = resolved
        .open_root()
        .map_err(|e| ReplaceError::Io(std::io::Error::other(e)))?;
    // A missing parent (or any failure here) means "nothing there yet": the replace itself
    // then reports what is really wrong.
    let before = root.stat(&resolved.relative).ok().flatten();
    replace_file(
        &root,
        &resolved.relative,
        true,
        Expect::State(before),
        |out| out.write_all(data),
    )
}
