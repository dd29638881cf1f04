//! `grep`: regex search of file contents, respecting `.gitignore`.

use std::path::PathBuf;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tern_agent::{AgentTool, ToolResult};
use tokio_util::sync::CancellationToken;

use crate::cancel::ABORTED;
use crate::config::ToolConfig;
use crate::confine::ResolvedPath;
use crate::dir_tool::{dir_tool, Notices};
use crate::fs::{display_name, Kind};
use crate::policy::PathRules;
use crate::truncate::{format_size, truncate_head, truncate_line, GREP_MAX_LINE_CHARS};
use crate::walk::{relative, walker};

/// Matches returned when the model gives no limit.
pub const GREP_DEFAULT_LIMIT: usize = 100;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    /// Search pattern (regex or literal string)
    pub pattern: String,
    /// Directory or file to search (default: current directory)
    #[serde(default)]
    pub path: Option<String>,
    /// Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth
    #[serde(default)]
    pub glob: Option<String>,
    /// Case-insensitive search (default: false)
    #[serde(default)]
    pub ignore_case: Option<bool>,
    /// Treat pattern as literal string instead of regex (default: false)
    #[serde(default)]
    pub literal: Option<bool>,
    /// Number of lines to show before and after each match (default: 0)
    #[serde(default)]
    pub context: Option<usize>,
    /// Maximum number of matches to return (default: 100)
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The `grep` tool (parallel).
///
/// Output lines are `path:line: text` for matches and `path-line- text` for context, paths
/// relative to the searched directory.
///
/// ```
/// let tool = tern_tools::grep_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.parameters()["required"], serde_json::json!(["pattern"]));
/// ```
pub fn grep_tool(config: &ToolConfig) -> AgentTool {
    let description = format!(
        "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to {GREP_DEFAULT_LIMIT} matches or {} (whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_CHARS} chars.",
        format_size(config.max_output_bytes)
    );
    dir_tool(config, "grep", &description, search)
}

struct State {
    lines: Vec<String>,
    stored_bytes: usize,
    line_count: usize,
    matches: usize,
    limit: usize,
    more: bool,
    lines_truncated: bool,
    max_bytes: usize,
}

impl State {
    fn push(&mut self, path: &str, line_no: u64, bytes: &[u8], is_match: bool) {
        let raw = String::from_utf8_lossy(bytes);
        let text = raw
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&raw);
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_CHARS);
        self.lines_truncated |= cut;
        let line = if is_match {
            format!("{path}:{line_no}: {text}")
        } else {
            format!("{path}-{line_no}- {text}")
        };
        // Past the byte cap lines are counted, not kept: head truncation drops them anyway.
        if self.stored_bytes <= self.max_bytes {
            self.stored_bytes += line.len() + 1;
            self.lines.push(line);
        }
        self.line_count += 1;
    }
}

struct Collector<'a> {
    path: &'a str,
    state: &'a mut State,
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.state.matches >= self.state.limit {
            self.state.more = true;
            return Ok(false);
        }
        let line_no = m.line_number().unwrap_or(0);
        for (i, line) in m.lines().enumerate() {
            self.state.push(self.path, line_no + i as u64, line, true);
        }
        self.state.matches += 1;
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        // Lines before a match past the limit are not shown; those after the last shown are.
        if self.state.matches >= self.state.limit && *c.kind() == SinkContextKind::Before {
            return Ok(true);
        }
        let line_no = c.line_number().unwrap_or(0);
        self.state.push(self.path, line_no, c.bytes(), false);
        Ok(true)
    }
}

fn build_matcher(args: &GrepArgs) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case.unwrap_or(false))
        .fixed_strings(args.literal.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| format!("Invalid pattern {:?}: {e}", args.pattern))
}

fn search(
    resolved: &ResolvedPath,
    rules: Option<PathRules>,
    args: &GrepArgs,
    max_bytes: usize,
    token: &CancellationToken,
) -> Result<ToolResult, String> {
    let display = resolved.display.as_str();
    let root_dir = &resolved.real;
    let root = resolved.open_root()?;
    let is_dir = match root.stat(&resolved.relative) {
        Ok(Some(id)) => id.kind() == Kind::Dir,
        _ => return Err(format!("Path not found: {display}")),
    };
    let matcher = build_matcher(args)?;
    let context = args.context.unwrap_or(0);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let limit = args.limit.unwrap_or(GREP_DEFAULT_LIMIT).max(1);
    let mut state = State {
        lines: Vec::new(),
        stored_bytes: 0,
        line_count: 0,
        matches: 0,
        limit,
        more: false,
        lines_truncated: false,
        max_bytes,
    };

    // (path beneath the root handle, path shown)
    let files: Box<dyn Iterator<Item = (PathBuf, String)>> = if is_dir {
        let mut builder = walker(root_dir, rules);
        if let Some(glob) = args.glob.as_deref().filter(|g| !g.is_empty()) {
            let glob = strip_dot_slash(glob);
            let mut ob = OverrideBuilder::new(root_dir);
            ob.add(&glob)
                .map_err(|e| format!("Invalid glob {glob:?}: {e}"))?;
            let overrides = ob
                .build()
                .map_err(|e| format!("Invalid glob {glob:?}: {e}"))?;
            builder.overrides(overrides);
        }
        let base = resolved.relative.clone();
        let walk_root = root_dir.clone();
        Box::new(builder.build().filter_map(move |entry| match entry {
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                let inner = e.path().strip_prefix(&walk_root).ok()?.to_path_buf();
                Some((base.join(&inner), relative(&walk_root, e.path())))
            }
            _ => None,
        }))
    } else {
        let name = root_dir
            .file_name()
            .map(display_name)
            .unwrap_or_else(|| display.to_string());
        Box::new(std::iter::once((resolved.relative.clone(), name)))
    };

    for (path, rel) in files {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        // Opened beneath the root handle: a folder swapped for a symlink since the walker
        // listed it fails here. A file that cannot be opened (permissions, vanished, not a
        // regular file) is skipped, as ripgrep does; a single named file reports why.
        let file = match root.open_regular(&path) {
            Ok((file, _)) => file,
            Err(e) if !is_dir => return Err(e.describe(display)),
            Err(_) => continue,
        };
        let mut sink = Collector {
            path: &rel,
            state: &mut state,
        };
        let reader = Abortable { inner: file, token };
        let _ = searcher.search_reader(&matcher, reader, &mut sink);
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        if state.more {
            break;
        }
    }

    if state.matches == 0 {
        return Ok(ToolResult::text("No matches found"));
    }
    let mut truncation = truncate_head(&state.lines.join("\n"), usize::MAX, max_bytes);
    truncation.total_lines = state.line_count;
    let mut notices = Notices::default();
    notices.limit(
        state.more,
        limit,
        "matches",
        ", or refine pattern",
        "matchLimitReached",
    );
    notices.truncation(&truncation, max_bytes);
    if state.lines_truncated {
        let notice = format!(
            "Some lines truncated to {GREP_MAX_LINE_CHARS} chars. Use read tool to see full lines"
        );
        notices.add(notice, "linesTruncated", json!(true));
    }
    Ok(notices.into_result(truncation.content))
}

/// Drops a leading `./` (a walker path never has one), keeping a leading `!`.
pub(crate) fn strip_dot_slash(glob: &str) -> String {
    let (neg, mut rest) = match glob.strip_prefix('!') {
        Some(r) => ("!", r),
        None => ("", glob),
    };
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    format!("{neg}{rest}")
}

/// A reader that fails once the call is aborted, so a search stops inside a large file.
struct Abortable<'a, R> {
    inner: R,
    token: &'a CancellationToken,
}

impl<R: std::io::Read> std::io::Read for Abortable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.token.is_cancelled() {
            return Err(std::io::Error::other(ABORTED));
        }
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aborted_search_stops_reading_the_file() {
        struct Endless(usize);
        impl std::io::Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.0 += 1;
                buf.fill(b'x');
                Ok(buf.len())
            }
        }
        let token = CancellationToken::new();
        token.cancel();
        let mut source = Endless(0);
        let reader = Abortable {
            inner: &mut source,
            token: &token,
        };
        let matcher = RegexMatcherBuilder::new().build("y").unwrap();
        let mut state = State {
            lines: Vec::new(),
            stored_bytes: 0,
            line_count: 0,
            matches: 0,
            limit: 1,
            more: false,
            lines_truncated: false,
            max_bytes: 1,
        };
        let mut sink = Collector {
            path: "f",
            state: &mut state,
        };
        let result = Searcher::new().search_reader(&matcher, reader, &mut sink);
        assert!(result.is_err());
        assert_eq!(source.0, 0, "the file was read after the abort");
    }
}
