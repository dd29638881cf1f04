//! A session as one self-contained HTML page (pi's `--export`, `/export`, RPC
//! `export_html`): the header, the session tree with every branch, then the active branch's
//! messages with their tool calls and results, thinking folded away. Every piece of session text is escaped and the page holds
//! no script, so nothing a model or a tool wrote can run in the browser that opens it.
//!
//! - `page.rs`: the page, from entries.
//! - `tree.rs`: the session tree, every branch.
//! - `markdown.rs`: an assistant's text as Markdown, raw markup kept as text.
//! - `escape.rs`: HTML escaping.
//! - `style.css`: the page's style, inlined.

mod escape;
mod markdown;
mod page;
mod tree;

use std::path::{Path, PathBuf};

pub use page::render;

/// Why a session could not be exported.
#[derive(Debug)]
pub enum ExportError {
    /// The session lives in memory only.
    InMemory,
    /// The session file does not exist yet.
    Empty,
    /// The input file does not exist.
    NotFound(PathBuf),
    /// Reading the session or writing the page failed.
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // pi's words, and what to do instead.
            ExportError::InMemory => f.write_str(
                "Cannot export in-memory session to HTML (start tern without --no-session)",
            ),
            ExportError::Empty => f.write_str("Nothing to export yet - start a conversation first"),
            ExportError::NotFound(p) => write!(f, "File not found: {}", p.display()),
            ExportError::Io { what, path, source } => {
                write!(f, "{what} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ExportError {}

/// pi's default page name for a session file: `tern-session-<file stem>.html`.
pub fn default_output(session: &Path) -> PathBuf {
    let stem = session
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    PathBuf::from(format!("tern-session-{stem}.html"))
}

/// Writes the page of the session file `input` to `output` (default: [`default_output`]);
/// returns where it went. `system_prompt` is shown when given (a live session's).
///
/// `tern --export s.jsonl` is `export_file("s.jsonl", None, None)`, then prints
/// `Exported to: tern-session-s.html`.
pub fn export_file(
    input: &Path,
    output: Option<&Path>,
    system_prompt: Option<&str>,
) -> Result<PathBuf, ExportError> {
    if !input.exists() {
        return Err(ExportError::NotFound(input.to_path_buf()));
    }
    let entries = crate::session_entries::read(input).map_err(|source| ExportError::Io {
        what: "cannot read session",
        path: input.to_path_buf(),
        source,
    })?;
    let html = render(&entries, system_prompt);
    let out = output.map_or_else(|| default_output(input), Path::to_path_buf);
    std::fs::write(&out, html).map_err(|source| ExportError::Io {
        what: "cannot write",
        path: out.clone(),
        source,
    })?;
    Ok(out)
}

/// [`export_file`] for a live session: its file, if it has one and it exists.
pub fn export_session(
    session: Option<&Path>,
    output: Option<&Path>,
    system_prompt: Option<&str>,
) -> Result<PathBuf, ExportError> {
    let file = session.ok_or(ExportError::InMemory)?;
    if !file.exists() {
        return Err(ExportError::Empty);
    }
    export_file(file, output, system_prompt)
}
