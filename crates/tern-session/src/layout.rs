//! Where session files live: `<root>/--<cwd with / replaced by ->--/<timestamp>_<id>.jsonl`,
//! as pi lays them out under `~/.pi/agent/sessions`.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::SessionError;

/// The folder of a working directory's sessions inside `root` (pi's naming).
///
/// ```
/// use std::path::Path;
/// let dir = tern_session::cwd_folder(Path::new("/r"), Path::new("/home/u/proj"));
/// assert_eq!(dir, Path::new("/r/--home-u-proj--"));
/// ```
pub fn cwd_folder(root: &Path, cwd: &Path) -> PathBuf {
    let s = cwd.to_string_lossy();
    let trimmed = s.trim_start_matches(['/', '\\']);
    let name: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    root.join(format!("--{name}--"))
}

/// The file name of a new session: its start time (`:` and `.` made file-safe) and its id.
pub(crate) fn file_name(iso_time: &str, id: &str) -> String {
    format!("{}_{id}.jsonl", iso_time.replace([':', '.'], "-"))
}

/// The most recently modified session file of `cwd` under `root`, if any.
///
/// ```
/// let root = tempfile::tempdir()?;
/// let cwd = std::path::Path::new("/home/u/proj");
/// assert_eq!(tern_session::latest_for_cwd(root.path(), cwd), None);
/// let dir = tern_session::cwd_folder(root.path(), cwd);
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("2024-12-03T14-00-00-000Z_abc.jsonl"), "")?;
/// assert!(tern_session::latest_for_cwd(root.path(), cwd).is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn latest_for_cwd(root: &Path, cwd: &Path) -> Option<PathBuf> {
    sessions_in(&cwd_folder(root, cwd), None).into_iter().next()
}

/// The `cwd` a session file's header names (its first line), if it has one.
pub fn header_cwd(path: &Path) -> Option<PathBuf> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let header: serde_json::Value = serde_json::from_str(&first).ok()?;
    (header["type"] == "session")
        .then(|| header["cwd"].as_str().map(PathBuf::from))
        .flatten()
}

/// The session files directly in `folder`, most recently modified first; with `cwd`, only
/// those whose header names that working directory (pi's filter for a `--session-dir`
/// every directory shares).
pub fn sessions_in(folder: &Path, cwd: Option<&Path>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut found: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .map(|e| {
            (
                e.metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(UNIX_EPOCH),
                e.path(),
            )
        })
        .filter(|(_, p)| p.is_file() && p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .filter(|(_, p)| cwd.is_none_or(|c| header_cwd(p).as_deref() == Some(c)))
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found.into_iter().map(|(_, p)| p).collect()
}

/// Whether `id` is a session id pi accepts for `--session-id`: letters, digits, `.`, `_` and
/// `-`, starting and ending with a letter or digit.
///
/// ```
/// assert!(tern_session::valid_session_id("review-1.b"));
/// assert!(!tern_session::valid_session_id("-x") && !tern_session::valid_session_id("a/b"));
/// ```
pub fn valid_session_id(id: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    id.chars().all(ok) && ends(id.chars().next()) && ends(id.chars().last())
}

/// The id in a session file's name (`<timestamp>_<id>.jsonl`).
fn file_id(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".jsonl")?;
    Some(stem.split_once('_').map(|(_, id)| id).unwrap_or(stem))
}

/// The session file of `cwd` under `root` whose id is exactly `id`.
///
/// ```
/// let root = tempfile::tempdir()?;
/// let cwd = std::path::Path::new("/home/u/proj");
/// let dir = tern_session::cwd_folder(root.path(), cwd);
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("2024-12-03T14-00-00-000Z_review-1.jsonl"), "")?;
/// assert!(tern_session::find_exact_in_cwd(root.path(), cwd, "review-1").is_some());
/// assert!(tern_session::find_exact_in_cwd(root.path(), cwd, "review").is_none());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn find_exact_in_cwd(root: &Path, cwd: &Path, id: &str) -> Option<PathBuf> {
    find_exact_in(&cwd_folder(root, cwd), id)
}

/// The session file directly in `folder` whose id is exactly `id`.
pub fn find_exact_in(folder: &Path, id: &str) -> Option<PathBuf> {
    std::fs::read_dir(folder)
        .ok()?
        .flatten()
        .map(|f| f.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(file_id)
                .is_some_and(|f| f == id)
        })
}

/// The session file under `root` (in any working directory's folder, or in `root` itself as
/// pi's `--session-dir` keeps them) whose id is `id`, or else the one whose id starts with
/// `id`; several such files are an error, as is none.
///
/// ```
/// let root = tempfile::tempdir()?;
/// let dir = root.path().join("--p--");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("2024-12-03T14-00-00-000Z_3f2a9c1e-0000.jsonl"), "")?;
/// let found = tern_session::find_by_id(root.path(), "3f2a").expect("one match");
/// assert!(found.ends_with("2024-12-03T14-00-00-000Z_3f2a9c1e-0000.jsonl"));
/// assert!(tern_session::find_by_id(root.path(), "zz").is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn find_by_id(root: &Path, id: &str) -> Result<PathBuf, SessionError> {
    let mut found = Vec::new();
    let mut exact = Vec::new();
    let dirs = std::fs::read_dir(root).map_err(|source| SessionError::ListSessions {
        root: root.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in dirs.flatten() {
        let path = entry.path();
        match std::fs::read_dir(&path) {
            Ok(inner) => files.extend(inner.flatten().map(|f| f.path())),
            Err(_) => files.push(path),
        }
    }
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Some(file_id) = file_id(&name) else {
            continue;
        };
        if file_id == id {
            exact.push(f);
        } else if file_id.starts_with(id) {
            found.push(f);
        }
    }
    if !exact.is_empty() {
        found = exact;
    }
    match found.len() {
        0 => Err(SessionError::NoSuchId {
            id: id.to_string(),
            root: root.to_path_buf(),
        }),
        1 => Ok(found.remove(0)),
        count => Err(SessionError::AmbiguousId {
            id: id.to_string(),
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_folder_follows_pi() {
        let p = cwd_folder(Path::new("/r"), Path::new("/home/u/proj"));
        assert_eq!(p, Path::new("/r/--home-u-proj--"));
    }

    #[test]
    fn a_flat_folder_lists_by_header_cwd_and_finds_ids() {
        let dir = tempfile::tempdir().unwrap();
        let header =
            |cwd: &str| format!("{{\"type\":\"session\",\"id\":\"x\",\"cwd\":\"{cwd}\"}}\n");
        let old = dir.path().join("2024-01-01T00-00-00-000Z_aaa1.jsonl");
        let new = dir.path().join("2024-01-02T00-00-00-000Z_bbb2.jsonl");
        let other = dir.path().join("2024-01-03T00-00-00-000Z_ccc3.jsonl");
        std::fs::write(&old, header("/p")).unwrap();
        std::fs::write(&new, header("/p")).unwrap();
        std::fs::write(&other, header("/q")).unwrap();
        let t = |secs| UNIX_EPOCH + std::time::Duration::from_secs(secs);
        for (p, at) in [(&old, 100), (&new, 200), (&other, 300)] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(t(at))
                .unwrap();
        }
        assert_eq!(
            sessions_in(dir.path(), Some(Path::new("/p"))),
            [new.clone(), old]
        );
        assert_eq!(sessions_in(dir.path(), None)[0], other);
        assert_eq!(find_by_id(dir.path(), "bbb").unwrap(), new);
        assert_eq!(find_exact_in(dir.path(), "ccc3"), Some(other));
    }

    #[test]
    fn file_names_are_file_safe() {
        assert_eq!(
            file_name("2024-12-03T14:00:00.000Z", "abc"),
            "2024-12-03T14-00-00-000Z_abc.jsonl"
        );
    }

    #[test]
    fn an_ambiguous_prefix_says_how_many_match() {
        let root = tempfile::tempdir().expect("dir");
        let dir = root.path().join("--p--");
        std::fs::create_dir_all(&dir).expect("mkdir");
        for id in ["ab12", "ab34"] {
            std::fs::write(dir.join(format!("t_{id}.jsonl")), "").expect("write");
        }
        let err = find_by_id(root.path(), "ab").expect_err("two match");
        assert!(matches!(err, SessionError::AmbiguousId { count: 2, .. }));
        assert!(find_by_id(root.path(), "ab3").is_ok());
        // An exact id wins over the longer ids it is a prefix of; ids may hold `_`.
        std::fs::write(dir.join("t_ab.jsonl"), "").expect("write");
        std::fs::write(dir.join("t_run_2.jsonl"), "").expect("write");
        let exact = find_by_id(root.path(), "ab").expect("the exact one");
        assert!(exact.ends_with("t_ab.jsonl"));
        assert!(find_by_id(root.path(), "run_2").is_ok());
    }
}
