//! The first prompt: words, `@path` file includes, and piped stdin.

use std::io::Read;
use std::path::Path;

use crate::usage_error::UsageError;

/// Joins the prompt words; each `@path` word becomes the file's contents in a `<file>` block
/// (resolved against `base`). Piped stdin, when given, goes first.
pub fn build_prompt(
    words: &[String],
    base: &Path,
    stdin: Option<String>,
) -> Result<String, UsageError> {
    let mut files = Vec::new();
    let mut text = Vec::new();
    for w in words {
        match w.strip_prefix('@').filter(|p| !p.is_empty()) {
            Some(p) => {
                let path = base.join(p);
                let body = std::fs::read_to_string(&path).map_err(|e| {
                    UsageError(format!(
                        "cannot include @{p}: {e} (paths are relative to {})",
                        base.display()
                    ))
                })?;
                files.push(format!("<file name=\"{p}\">\n{body}\n</file>"));
            }
            None => text.push(w.clone()),
        }
    }
    let mut parts = Vec::new();
    if let Some(s) = stdin.filter(|s| !s.trim().is_empty()) {
        parts.push(s.trim_end().to_string());
    }
    parts.extend(files);
    let joined = text.join(" ");
    if !joined.is_empty() {
        parts.push(joined);
    }
    Ok(parts.join("\n\n"))
}

/// All of stdin, when it is not a terminal.
pub fn read_piped_stdin() -> Result<Option<String>, UsageError> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| UsageError(format!("cannot read stdin: {e}")))?;
    Ok(Some(s))
}
