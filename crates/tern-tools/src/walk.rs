//! The directory walk `grep` and `find` share: ripgrep's `ignore` walker, with every entry
//! it yields checked again (or opened) through the root's handle.

use std::path::Path;

use ignore::WalkBuilder;

use crate::fs::display_path;
use crate::policy::{Decision, PathRules};

/// A walker over `root` that respects `.gitignore` (also outside a git repository, like pi's
/// `find`), `.ignore` and git's excludes, includes dotfiles (pi passes `--hidden`), never
/// descends into `.git`, does not follow symlinks (so a walk stays inside the confinement),
/// skips entries and subtrees the path rules do not allow, and yields entries in a stable
/// order.
///
/// The walker lists by path; a folder swapped for a symlink while it runs could list names
/// from elsewhere, so callers open or stat each entry beneath the root's handle (which
/// refuses symlinks on the way) before using or reporting it.
pub(crate) fn walker(root: &Path, rules: Option<PathRules>) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    let rules = rules.filter(|r| !r.is_empty());
    b.hidden(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            e.file_name() != ".git"
                && (e.depth() == 0
                    || rules
                        .as_ref()
                        .is_none_or(|r| r.decide(e.path()) == Decision::Allow))
        });
    b
}

/// `path` relative to `root`, with `/` separators, in the lossless display form.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    display_path(path.strip_prefix(root).unwrap_or(path))
}
