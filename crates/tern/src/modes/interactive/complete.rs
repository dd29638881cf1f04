//! Tab completion of the input line: a slash command as the line's first word, and a path
//! after `@` (pi's file references), from the working directory.

use std::path::Path;

/// The slash commands, for completion.
pub const COMMANDS: &[&str] = &[
    "/compact",
    "/copy",
    "/export",
    "/follow",
    "/fork",
    "/help",
    "/model",
    "/name",
    "/new",
    "/quit",
    "/recover",
    "/resume",
    "/session",
    "/steer",
    "/thinking",
    "/tools",
];

/// What Tab offers for `word` (the word before the cursor; `first`: the line's first word),
/// sorted; each a whole replacement of the word.
pub fn candidates(word: &str, first: bool, cwd: &Path, extra: &[String]) -> Vec<String> {
    if first && word.starts_with('/') {
        let mut found: Vec<String> = COMMANDS
            .iter()
            .map(|c| c.to_string())
            .chain(extra.iter().cloned())
            .filter(|c| c.starts_with(word))
            .collect();
        found.sort();
        found.dedup();
        return found;
    }
    match word.strip_prefix('@') {
        Some(path) => paths(path, cwd)
            .into_iter()
            .map(|p| format!("@{p}"))
            .collect(),
        None => Vec::new(),
    }
}

/// Entries of the folder `typed` names (up to its last `/`) that start with what follows;
/// folders end with `/`. Hidden ones only when asked for with a leading `.`.
fn paths(typed: &str, cwd: &Path) -> Vec<String> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let folder = if dir.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let slash = if e.file_type().ok()?.is_dir() {
                "/"
            } else {
                ""
            };
            Some(format!("{dir}{name}{slash}"))
        })
        .take(200)
        .collect();
    found.sort();
    found
}

/// The longest start all of `words` share.
pub fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut end = first.len();
    for w in &words[1..] {
        end = first
            .char_indices()
            .zip(w.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_complete_as_the_first_word_only() {
        let cwd = Path::new("/");
        assert_eq!(candidates("/mo", true, cwd, &[]), ["/model"]);
        assert_eq!(candidates("/n", true, cwd, &[]), ["/name", "/new"]);
        assert_eq!(
            candidates("/re", true, cwd, &["/review".into()]),
            ["/recover", "/resume", "/review"]
        );
        assert!(candidates("/mo", false, cwd, &[]).is_empty());
        assert!(candidates("mo", true, cwd, &[]).is_empty());
    }

    #[test]
    fn files_complete_after_an_at_sign() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("src")).expect("src");
        std::fs::write(dir.path().join("src/main.rs"), "").expect("file");
        std::fs::write(dir.path().join("src/mod.rs"), "").expect("file");
        std::fs::write(dir.path().join(".hidden"), "").expect("file");
        let c = |w: &str| candidates(w, false, dir.path(), &[]);
        assert_eq!(c("@s"), ["@src/"]);
        assert_eq!(c("@src/m"), ["@src/main.rs", "@src/mod.rs"]);
        assert_eq!(c("@"), ["@src/"], "hidden files only when asked for");
        assert_eq!(c("@.h"), ["@.hidden"]);
        assert!(c("@nowhere/x").is_empty());
        assert_eq!(common_prefix(&c("@src/m")), "@src/m");
        assert_eq!(common_prefix(&["@é1".into(), "@é2".into()]), "@é");
    }
}
