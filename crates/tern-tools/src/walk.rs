//! The directory walk `grep` and `find` share: ripgrep's `ignore` walker.

use std::path::Path;

use ignore::WalkBuilder;

/// A walker over `root` that respects `.gitignore` (also outside a git repository, like pi's
/// `find`), `.ignore` and git's excludes, includes dotfiles (pi passes `--hidden`), never
/// descends into `.git`, does not follow symlinks (so a walk stays inside the confinement),
/// and yields entries in a stable order.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

/// `path` relative to `root`, with `/` separators.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
