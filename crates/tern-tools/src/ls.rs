//! `ls`: a directory's entries.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult};

use crate::cancel::{blocking, ABORTED};
use crate::config::ToolConfig;
use crate::confine::resolve_path;
use crate::truncate::{format_size, truncate_head};

/// Entries listed when the model gives no limit.
pub const LS_DEFAULT_LIMIT: usize = 500;

/// Arguments of `ls`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Directory to list (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The `ls` tool (parallel).
///
/// ```
/// let tool = tern_tools::ls_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.name(), "ls");
/// ```
pub fn ls_tool(config: &ToolConfig) -> AgentTool {
    let config = Arc::new(config.clone());
    let description = format!(
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to {LS_DEFAULT_LIMIT} entries or {} (whichever is hit first).",
        format_size(config.max_output_bytes)
    );
    AgentTool::typed("ls", &description, move |args: LsArgs, call| {
        let config = config.clone();
        async move {
            let arg = args.path.clone().unwrap_or_else(|| ".".to_string());
            let resolved = resolve_path(&config, &arg)?;
            let limit = args.limit.unwrap_or(LS_DEFAULT_LIMIT).max(1);
            let max_bytes = config.max_output_bytes;
            let out = blocking(&call.signal, move |token| {
                list(&resolved.real, &resolved.display, limit, max_bytes, &token)
            })
            .await?;
            Ok(out)
        }
    })
    .with_execution_mode(ToolExecutionMode::Parallel)
}

fn list(
    dir: &std::path::Path,
    display: &str,
    limit: usize,
    max_bytes: usize,
    token: &tokio_util::sync::CancellationToken,
) -> Result<ToolResult, String> {
    let meta = std::fs::metadata(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("Path not found: {display}"),
        _ => format!("Cannot read {display}: {e}"),
    })?;
    if !meta.is_dir() {
        return Err(format!("Not a directory: {display}"));
    }
    let reader = std::fs::read_dir(dir).map_err(|e| format!("Cannot read directory: {e}"))?;
    let mut names: Vec<String> = Vec::new();
    for entry in reader.flatten() {
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by_key(|n| n.to_lowercase());

    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        // Follows symlinks, as pi's stat does; an entry that cannot be stat'ed is skipped.
        let Ok(meta) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        results.push(if meta.is_dir() {
            format!("{name}/")
        } else {
            name
        });
    }
    if results.is_empty() {
        return Ok(ToolResult::text("(empty directory)"));
    }
    let truncation = truncate_head(&results.join("\n"), usize::MAX, max_bytes);
    let mut text = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if limit_reached {
        notices.push(format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit * 2
        ));
        details.insert("entryLimitReached".into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(max_bytes)));
        details.insert("truncation".into(), json!(truncation));
    }
    if !notices.is_empty() {
        text = format!("{text}\n\n[{}]", notices.join(". "));
    }
    let mut result = ToolResult::text(text);
    if !details.is_empty() {
        result.details = Some(Value::Object(details));
    }
    Ok(result)
}
