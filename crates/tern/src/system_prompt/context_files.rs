//! `AGENTS.md` / `CLAUDE.md` discovery, as pi's `loadProjectContextFiles`: the user's global
//! file first, then one file per folder from the filesystem root down to the working
//! directory (the first of [`CANDIDATES`] each folder holds), each path once.
//!
//! In a git worktree nested inside its main checkout, the worktree's own file shadows the
//! main checkout's (pi's rule, `worktree.rs`).
//!
//! The global files are tern's (`<config dir>/tern/`, where pi has `~/.pi/agent/`) and pi's
//! own when present (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent/`).

use std::path::{Path, PathBuf};

use crate::secrets::eprintln_redacted;

/// The file names looked for in a folder, in pi's order of preference.
pub const CANDIDATES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// A loaded context file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was read.
    pub path: PathBuf,
    /// Its text (a leading byte-order mark removed).
    pub content: String,
}

/// The text of a file, without a UTF-8 byte-order mark.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// The first candidate file of `dir`; an unreadable one is a warning and the next is tried.
pub fn from_dir(dir: &Path) -> Option<ContextFile> {
    for name in CANDIDATES {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        match read_text(&path) {
            Ok(content) => return Some(ContextFile { path, content }),
            Err(e) => eprintln_redacted!("tern: warning: cannot read {}: {e}", path.display()),
        }
    }
    None
}

/// pi's agent folder, when there is one.
pub fn pi_agent_dir() -> Option<PathBuf> {
    match std::env::var_os("PI_CODING_AGENT_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => dirs::home_dir().map(|h| h.join(".pi").join("agent")),
    }
}

/// The global folders, tern's first.
pub fn global_dirs() -> Vec<PathBuf> {
    crate::config::config_dir()
        .into_iter()
        .chain(pi_agent_dir().filter(|d| d.is_dir()))
        .collect()
}

/// The context files for `cwd`: the global ones of `globals`, then the folders from the
/// root down to `cwd`.
pub fn discover(cwd: &Path, globals: &[PathBuf]) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = Vec::new();
    for dir in globals {
        if let Some(f) = from_dir(dir) {
            if !files.iter().any(|x| x.path == f.path) {
                files.push(f);
            }
        }
    }
    let mut ancestors: Vec<ContextFile> = Vec::new();
    let shadowed = super::worktree::shadowed_context_file(cwd);
    for dir in cwd.ancestors() {
        if let Some(f) = from_dir(dir) {
            // Compared through the folder's real path: a worktree file that links to the main
            // one resolves to the shadowed path itself.
            let real = std::fs::canonicalize(dir)
                .ok()
                .zip(f.path.file_name())
                .map(|(d, n)| d.join(n));
            let is_shadowed = shadowed.is_some() && real == shadowed;
            if !is_shadowed && !files.iter().chain(&ancestors).any(|x| x.path == f.path) {
                ancestors.push(f);
            }
        }
    }
    ancestors.reverse();
    files.extend(ancestors);
    files
}

/// The `project_context` section's text (pi's wording).
pub fn render(files: &[ContextFile]) -> String {
    std::iter::once("Project-specific instructions and guidelines:".to_string())
        .chain(files.iter().map(|f| {
            format!(
                "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
                f.path.display(),
                f.content
            )
        }))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_folders_come_first_and_each_folder_gives_its_preferred_file() {
        let root = tempfile::tempdir().expect("dir");
        let global = root.path().join("global");
        let inner = root.path().join("repo").join("sub");
        std::fs::create_dir_all(&inner).expect("mkdir");
        std::fs::create_dir_all(&global).expect("mkdir");
        std::fs::write(global.join("AGENTS.md"), "global").expect("write");
        std::fs::write(root.path().join("repo").join("CLAUDE.md"), "\u{feff}repo").expect("w");
        std::fs::write(inner.join("CLAUDE.md"), "claude").expect("write");
        std::fs::write(inner.join("AGENTS.md"), "agents").expect("write");
        let found = discover(&inner, std::slice::from_ref(&global));
        let texts: Vec<&str> = found.iter().map(|f| f.content.as_str()).collect();
        // Folders above the temp dir may hold files of their own: look at the tail.
        assert_eq!(texts.first(), Some(&"global"));
        assert_eq!(texts[texts.len() - 2..], ["repo", "agents"]);
        assert_eq!(
            found.last().map(|f| f.path.clone()),
            Some(inner.join("AGENTS.md"))
        );
    }
}
