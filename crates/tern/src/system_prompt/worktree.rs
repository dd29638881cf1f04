//! pi's rule for a git worktree nested inside its main checkout: the main checkout's context
//! file and the worktree's own copy cover the same repository, so the worktree's shadows the
//! main one (loading both would apply that context twice).

use std::path::{Path, PathBuf};

/// The folder holding `.git` at or above `cwd`, and the common git folder (a linked
/// worktree's `.git` file names its git folder, whose `commondir` names the main one).
fn git_paths(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in cwd.ancestors() {
        let git = dir.join(".git");
        if git.is_dir() {
            return git.join("HEAD").exists().then(|| (dir.to_path_buf(), git));
        }
        if git.is_file() {
            let text = std::fs::read_to_string(&git).ok()?;
            let git_dir = dir.join(text.trim().strip_prefix("gitdir: ")?.trim());
            if !git_dir.join("HEAD").exists() {
                return None;
            }
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(c) => git_dir.join(c.trim()),
                Err(_) => git_dir,
            };
            return Some((dir.to_path_buf(), common));
        }
    }
    None
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The main checkout's context file that the nested worktree's own shadows, canonical; `None`
/// for an ordinary repository, a sibling worktree, a bare layout or a submodule.
pub fn shadowed_context_file(cwd: &Path) -> Option<PathBuf> {
    let (worktree, common) = git_paths(cwd)?;
    let (worktree, common) = (canonical(&worktree), canonical(&common));
    let main = common.parent()?.to_path_buf();
    if worktree == main || !worktree.starts_with(&main) {
        return None;
    }
    if canonical(&main.join(".git")) != common {
        return None;
    }
    let own = super::context_files::from_dir(&worktree)?;
    Some(main.join(own.path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_worktree_shadows_the_main_checkouts_file() {
        let dir = tempfile::tempdir().expect("dir");
        let main = canonical(dir.path());
        let feat = main.join("wt").join("feat");
        let git = main.join(".git");
        let linked = git.join("worktrees").join("feat");
        std::fs::create_dir_all(&linked).expect("mkdir");
        std::fs::create_dir_all(&feat).expect("mkdir");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(linked.join("HEAD"), "ref: refs/heads/feat\n").expect("write");
        std::fs::write(linked.join("commondir"), "../..\n").expect("write");
        std::fs::write(feat.join(".git"), format!("gitdir: {}\n", linked.display())).expect("w");
        std::fs::write(main.join("AGENTS.md"), "main copy").expect("write");
        assert_eq!(shadowed_context_file(&feat), None, "no copy of its own yet");
        std::fs::write(feat.join("AGENTS.md"), "worktree copy").expect("write");
        assert_eq!(shadowed_context_file(&feat), Some(main.join("AGENTS.md")));
        let found = super::super::context_files::discover(&feat, &[]);
        let texts: Vec<&str> = found.iter().map(|f| f.content.as_str()).collect();
        assert!(
            texts.contains(&"worktree copy") && !texts.contains(&"main copy"),
            "{texts:?}"
        );
        assert_eq!(
            shadowed_context_file(&main),
            None,
            "the main checkout itself"
        );
    }
}
