//! `ls`: a directory's entries.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use schemars::JsonSchema;
use serde::Deserialize;
use tern_agent::{AgentTool, ToolResult};

use crate::cancel::ABORTED;
use crate::config::ToolConfig;
use crate::confine::{real_path, ResolvedPath};
use crate::dir_tool::{dir_tool, Notices};
use crate::fs::{display_name, Kind, OpenError, Root};
use crate::policy::{Decision, PathRules};
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
    let description = format!(
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to {LS_DEFAULT_LIMIT} entries or {} (whichever is hit first).",
        format_size(config.max_output_bytes)
    );
    dir_tool(config, "ls", &description, list_args)
}

fn list_args(
    resolved: &ResolvedPath,
    rules: Option<PathRules>,
    args: &LsArgs,
    max_bytes: usize,
    token: &tokio_util::sync::CancellationToken,
) -> Result<ToolResult, String> {
    let rules = rules.filter(|r| !r.is_empty());
    let limit = args.limit.unwrap_or(LS_DEFAULT_LIMIT).max(1);
    list(resolved, rules, limit, max_bytes, token)
}

fn list(
    resolved: &ResolvedPath,
    rules: Option<PathRules>,
    limit: usize,
    max_bytes: usize,
    token: &tokio_util::sync::CancellationToken,
) -> Result<ToolResult, String> {
    let display = resolved.display.as_str();
    let root = resolved.open_root()?;
    let dir = root.open_listing(&resolved.relative).map_err(|e| match e {
        OpenError::NotFound => format!("Path not found: {display}"),
        OpenError::NotDirectory => format!("Not a directory: {display}"),
        other => other.describe(display),
    })?;
    let reader =
        rustix::fs::Dir::read_from(&dir).map_err(|e| format!("Cannot read directory: {e}"))?;
    let mut names: Vec<(String, OsString)> = Vec::new();
    for entry in reader.flatten() {
        let raw = OsStr::from_bytes(entry.file_name().to_bytes());
        if raw == "." || raw == ".." {
            continue;
        }
        names.push((display_name(raw), raw.to_os_string()));
    }
    names.sort_by_key(|(n, _)| n.to_lowercase());

    let mut results = Vec::new();
    let mut limit_reached = false;
    for (name, raw) in names {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        let rel = resolved.relative.join(&raw);
        if let Some(rules) = &rules {
            if rules.decide(&resolved.real.join(&raw)) != Decision::Allow {
                continue;
            }
        }
        // An entry that cannot be stat'ed is skipped (as pi does).
        let Ok(Some(id)) = root.stat(&rel) else {
            continue;
        };
        let is_dir = match id.kind() {
            Kind::Dir => true,
            // pi's stat follows symlinks: a dangling link is skipped, a link shows `/` when
            // it leads to a folder (looked at only beneath the same root, never outside).
            Kind::Symlink => match symlink_target(resolved, &root, &raw) {
                Target::Missing => continue,
                Target::Dir => true,
                Target::Other => false,
            },
            _ => false,
        };
        results.push(if is_dir { format!("{name}/") } else { name });
    }
    if results.is_empty() {
        return Ok(ToolResult::text("(empty directory)"));
    }
    let truncation = truncate_head(&results.join("\n"), usize::MAX, max_bytes);
    let mut notices = Notices::default();
    notices.limit(limit_reached, limit, "entries", "", "entryLimitReached");
    notices.truncation(&truncation, max_bytes);
    Ok(notices.into_result(truncation.content))
}

enum Target {
    Missing,
    Dir,
    Other,
}

/// Where the symlink `name` in the listed folder leads (a target outside the root is not
/// looked at: `Other`).
fn symlink_target(resolved: &ResolvedPath, root: &Root, name: &OsStr) -> Target {
    let Ok(target) = real_path(&resolved.real.join(name)) else {
        return Target::Missing;
    };
    let Ok(inner) = target.strip_prefix(root.path()) else {
        return Target::Other;
    };
    match root.stat(inner) {
        Ok(Some(id)) if id.kind() == Kind::Dir => Target::Dir,
        Ok(Some(_)) => Target::Other,
        _ => Target::Missing,
    }
}
