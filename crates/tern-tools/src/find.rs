//! `find`: files by glob, respecting `.gitignore`.

use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use tern_agent::{AgentTool, ToolResult};
use tokio_util::sync::CancellationToken;

use crate::cancel::ABORTED;
use crate::config::ToolConfig;
use crate::confine::ResolvedPath;
use crate::dir_tool::{dir_tool, Notices};
use crate::fs::{display_name, Kind};
use crate::grep::strip_dot_slash;
use crate::policy::PathRules;
use crate::truncate::{format_size, truncate_head};
use crate::walk::{relative, walker};

/// Results returned when the model gives no limit.
pub const FIND_DEFAULT_LIMIT: usize = 1000;

/// Arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindArgs {
    /// Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth
    pub pattern: String,
    /// Directory to search in (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Maximum number of results (default: 1000)
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The `find` tool (parallel).
///
/// A pattern without `/` matches entry names at any depth; one with `/` matches the path
/// relative to the search directory. An all-lowercase pattern matches case-insensitively (fd's
/// smart case, as in pi). Directories are listed with a trailing `/`.
///
/// ```
/// let tool = tern_tools::find_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.name(), "find");
/// ```
pub fn find_tool(config: &ToolConfig) -> AgentTool {
    let description = format!(
        "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to {FIND_DEFAULT_LIMIT} results or {} (whichever is hit first).",
        format_size(config.max_output_bytes)
    );
    dir_tool(config, "find", &description, find)
}

fn find(
    resolved: &ResolvedPath,
    rules: Option<PathRules>,
    args: &FindArgs,
    max_bytes: usize,
    token: &CancellationToken,
) -> Result<ToolResult, String> {
    let display = resolved.display.as_str();
    let root = &resolved.real;
    let handle = resolved.open_root()?;
    match handle.stat(&resolved.relative) {
        Ok(Some(id)) if id.kind() == Kind::Dir => {}
        Ok(Some(_)) => return Err(format!("Not a directory: {display}")),
        _ => return Err(format!("Path not found: {display}")),
    }
    let pattern = strip_dot_slash(&args.pattern);
    let by_path = pattern.contains('/');
    let glob = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .case_insensitive(pattern == pattern.to_lowercase())
        .build()
        .map_err(|e| format!("Invalid glob pattern {:?}: {e}", args.pattern))?
        .compile_matcher();
    let limit = args.limit.unwrap_or(FIND_DEFAULT_LIMIT).max(1);

    let mut results: Vec<String> = Vec::new();
    let mut limit_reached = false;
    for entry in walker(root, rules).build() {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let rel = relative(root, entry.path());
        let subject = if by_path {
            rel.clone()
        } else {
            display_name(entry.file_name())
        };
        if !glob.is_match(&subject) {
            continue;
        }
        // Reported only if it is there beneath the root handle, with no symlink on the way
        // (the walker lists by path; a folder swapped meanwhile must not leak names).
        let Ok(inner) = entry.path().strip_prefix(root) else {
            continue;
        };
        if !matches!(handle.stat(&resolved.relative.join(inner)), Ok(Some(_))) {
            continue;
        }
        if results.len() == limit {
            limit_reached = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        results.push(if is_dir { format!("{rel}/") } else { rel });
    }

    if results.is_empty() {
        return Ok(ToolResult::text("No files found matching pattern"));
    }
    let truncation = truncate_head(&results.join("\n"), usize::MAX, max_bytes);
    let mut notices = Notices::default();
    notices.limit(
        limit_reached,
        limit,
        "results",
        ", or refine pattern",
        "resultLimitReached",
    );
    notices.truncation(&truncation, max_bytes);
    Ok(notices.into_result(truncation.content))
}
