//! Forking a session (pi's `SessionManager.forkFrom`): a new file in the target directory's
//! folder, with a new header (a new id, the target `cwd`, `parentSession` naming the source)
//! and every entry of the source copied as it is, so the fork has the whole tree.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tern_ai::environment::Environment;

use crate::layout::file_name;
use crate::{cwd_folder, SessionError};

/// Forks `source` into a new session of `cwd` under `root`, with id `id` (else a new one);
/// returns the new file's path. The source must be a session file (a header first).
///
/// ```
/// use std::path::Path;
/// let dir = tempfile::tempdir()?;
/// let mut s = tern_session::SessionFile::create(dir.path(), Path::new("/a"));
/// s.append_message(&tern_ai::Message::user_text("hello")).expect("written");
/// let source = s.path().expect("on disk").to_path_buf();
/// drop(s);
/// let fork = tern_session::fork_from(&source, dir.path(), Path::new("/b"), None).expect("forked");
/// let loaded = tern_session::load(&fork).expect("readable");
/// assert_eq!(loaded.messages.len(), 1);
/// assert_eq!(loaded.cwd.as_deref(), Some("/b"));
/// assert_ne!(loaded.id, tern_session::load(&source).expect("readable").id);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn fork_from(
    source: &Path,
    root: &Path,
    cwd: &Path,
    id: Option<&str>,
) -> Result<PathBuf, SessionError> {
    fork_into(source, &cwd_folder(root, cwd), cwd, id)
}

/// [`fork_from`] into `folder` itself (pi's `--session-dir`, where every directory's
/// sessions share one folder).
pub fn fork_into(
    source: &Path,
    folder: &Path,
    cwd: &Path,
    id: Option<&str>,
) -> Result<PathBuf, SessionError> {
    let read_err = |e| SessionError::Read {
        path: source.to_path_buf(),
        source: e,
    };
    let file = std::fs::File::open(source).map_err(read_err)?;
    let mut lines = std::io::BufReader::new(file).lines();
    let first = match lines.next() {
        Some(l) => l.map_err(read_err)?,
        None => {
            return Err(SessionError::NoHeader {
                path: source.to_path_buf(),
            })
        }
    };
    let header: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
    if header["type"] != "session" {
        return Err(SessionError::NotASession {
            path: source.to_path_buf(),
        });
    }
    let env = Environment::system();
    let id = id.map(str::to_string).unwrap_or_else(|| env.uuid());
    let now = crate::iso_time(env.now_ms());
    let path = folder.join(file_name(&now, &id));
    let write_err = |e| SessionError::Write {
        path: path.clone(),
        source: e,
    };
    std::fs::create_dir_all(folder).map_err(write_err)?;
    let source_abs = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let new_header = json!({
        "type": "session",
        "version": header.get("version").cloned().unwrap_or(json!(crate::VERSION)),
        "id": id,
        "timestamp": now,
        "cwd": cwd.to_string_lossy(),
        "parentSession": source_abs.to_string_lossy(),
    });
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(write_err)?;
    let mut text = format!("{new_header}\n");
    for line in lines {
        let line = line.map_err(read_err)?;
        if !line.trim().is_empty() {
            text.push_str(&line);
            text.push('\n');
        }
    }
    out.write_all(text.as_bytes()).map_err(write_err)?;
    out.sync_all().map_err(write_err)?;
    Ok(path)
}
