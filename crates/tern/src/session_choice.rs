//! Which session a run uses: in memory, a new file, or an existing one (`--continue`,
//! `--resume`, `--session PATH|ID`, `--fork`, `--session-id`), where new sessions go, and
//! the command that resumes one.

use std::path::{Path, PathBuf};

use tern_session::{LoadedSession, SessionError};

use crate::cli::Args;
use crate::secrets::eprintln_redacted;
use crate::usage_error::UsageError;

/// The default session root: `TERN_SESSION_DIR`, else `<data dir>/tern/sessions`; each
/// working directory's sessions go in a folder of their own under it, as pi keeps them under
/// `~/.pi/agent/sessions`.
pub fn default_root() -> Option<PathBuf> {
    match std::env::var_os("TERN_SESSION_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => data_root(),
    }
}

/// `<data dir>/tern/sessions`.
fn data_root() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("tern").join("sessions"))
}

/// Where this run's sessions are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// A folder per working directory under this root (the default root).
    PerDirectory(PathBuf),
    /// Every directory's sessions in this folder itself (pi's `--session-dir`); a
    /// directory's own are told by the `cwd` of their header.
    Flat(PathBuf),
}

impl Store {
    /// `--session-dir`, else the default root.
    pub fn of(args: &Args, cwd: &Path) -> Store {
        match &args.session_dir {
            Some(dir) => Store::Flat(cwd.join(dir)),
            None => {
                Store::PerDirectory(default_root().unwrap_or_else(|| cwd.join(".tern-sessions")))
            }
        }
    }

    /// The folder ids are looked up under.
    pub fn root(&self) -> &Path {
        match self {
            Store::PerDirectory(p) | Store::Flat(p) => p,
        }
    }

    /// The folder new sessions of `cwd` go in.
    pub fn folder(&self, cwd: &Path) -> PathBuf {
        match self {
            Store::PerDirectory(root) => tern_session::cwd_folder(root, cwd),
            Store::Flat(dir) => dir.clone(),
        }
    }

    /// The sessions of `cwd`, most recently modified first.
    pub fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        match self {
            Store::PerDirectory(_) => tern_session::sessions_in(&self.folder(cwd), None),
            Store::Flat(dir) => tern_session::sessions_in(dir, Some(cwd)),
        }
    }
}

/// Where a run's session comes from.
pub enum SessionSource {
    /// In memory.
    None,
    /// A new file in this folder.
    New(PathBuf),
    /// A new file in this folder with this id (`--session-id`).
    NewWithId(PathBuf, String),
    /// A new file at this path.
    NewAt(PathBuf),
    /// An existing file.
    Existing(PathBuf, LoadedSession),
}

/// The folder session ids are looked up under: `--session-dir`, else the default root.
pub fn root(args: &Args, cwd: &Path) -> PathBuf {
    Store::of(args, cwd).root().to_path_buf()
}

/// Whether a `--session`/`--fork` value names a file rather than an id (pi's rule).
fn looks_like_path(value: &str) -> bool {
    value.contains('/') || value.contains('\\') || value.ends_with(".jsonl")
}

/// The file a `--session`/`--fork` value names, and whether it exists: a path as it is
/// (resolved against `cwd`), or an id or id prefix looked up under `root` (not found or
/// ambiguous: a usage error).
fn resolve(
    flag: &str,
    value: &str,
    root: &Path,
    cwd: &Path,
) -> Result<(PathBuf, bool), UsageError> {
    if looks_like_path(value) {
        let path = cwd.join(value);
        let exists = path.exists();
        return Ok((path, exists));
    }
    match tern_session::find_by_id(root, value) {
        Ok(p) => Ok((p, true)),
        Err(SessionError::NoSuchId { .. }) | Err(SessionError::ListSessions { .. }) => {
            Err(UsageError(format!(
                "{flag} {value}: no session found matching '{value}' under {} (a file path \
                 needs a `/` or the .jsonl ending; list sessions with `ls {}/*`)",
                root.display(),
                root.display()
            )))
        }
        Err(e) => Err(UsageError(format!("{flag} {value}: {e}"))),
    }
}

/// pi's checks of `--fork` and `--session-id` against the other session flags.
fn check_flags(args: &Args) -> Result<(), UsageError> {
    let named = |pairs: &[(bool, &'static str)]| -> Vec<&'static str> {
        pairs.iter().filter(|(b, _)| *b).map(|(_, n)| *n).collect()
    };
    if args.fork.is_some() {
        let conflicts = named(&[
            (args.session.is_some(), "--session"),
            (args.continue_session, "--continue"),
            (args.resume.is_some(), "--resume"),
            (args.no_session, "--no-session"),
        ]);
        if !conflicts.is_empty() {
            return Err(UsageError(format!(
                "--fork cannot be combined with {}",
                conflicts.join(", ")
            )));
        }
    }
    if let Some(id) = &args.session_id {
        let conflicts = named(&[
            (args.session.is_some(), "--session"),
            (args.continue_session, "--continue"),
            (args.resume.is_some(), "--resume"),
        ]);
        if !conflicts.is_empty() {
            return Err(UsageError(format!(
                "--session-id cannot be combined with {}",
                conflicts.join(", ")
            )));
        }
        if !tern_session::valid_session_id(id) {
            return Err(UsageError(format!(
                "--session-id {id}: session id must be non-empty, contain only alphanumeric \
                 characters, '-', '_', and '.', and start and end with an alphanumeric character"
            )));
        }
    }
    let chosen = [
        args.no_session,
        args.continue_session,
        args.resume.is_some(),
        args.session.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if chosen > 1 {
        return Err(UsageError(
            "choose one of --no-session, --continue, --resume and --session".into(),
        ));
    }
    if let Some(name) = &args.name {
        if name.trim().is_empty() {
            return Err(UsageError("--name requires a non-empty value".into()));
        }
    }
    Ok(())
}

/// Loads an existing session; its warnings go to stderr.
fn load(path: PathBuf) -> Result<SessionSource, UsageError> {
    let loaded = tern_session::load(&path)?;
    for w in &loaded.warnings {
        eprintln_redacted!("tern: warning: {w}");
    }
    Ok(SessionSource::Existing(path, loaded))
}

/// Picks the session from the flags. Warnings of a loaded file go to stderr.
pub fn session_source(args: &Args, cwd: &Path) -> Result<SessionSource, UsageError> {
    check_flags(args)?;
    let store = Store::of(args, cwd);
    let root = store.root().to_path_buf();
    if args.no_session {
        return Ok(SessionSource::None);
    }
    if let Some(value) = &args.fork {
        let id = args.session_id.as_deref();
        if let Some(id) = id {
            if tern_session::find_exact_in(&store.folder(cwd), id).is_some() {
                return Err(UsageError(format!(
                    "--session-id {id}: session already exists with id '{id}'"
                )));
            }
        }
        let (source, exists) = resolve("--fork", value, &root, cwd)?;
        if !exists {
            return Err(UsageError(format!(
                "--fork {value}: no session file at {}",
                source.display()
            )));
        }
        let forked = tern_session::fork_into(&source, &store.folder(cwd), cwd, id)
            .map_err(|e| UsageError(format!("--fork {value}: {e}")))?;
        return load(forked);
    }
    if args.continue_session {
        return match store.sessions(cwd).into_iter().next() {
            Some(p) => load(p),
            None => {
                eprintln_redacted!(
                    "tern: no earlier session in {} (looked in {}); starting a new one",
                    cwd.display(),
                    root.display()
                );
                Ok(SessionSource::New(store.folder(cwd)))
            }
        };
    }
    match &args.resume {
        Some(Some(id)) => return load(tern_session::find_by_id(&root, id)?),
        Some(None) => return load(crate::session_picker::pick(&store, cwd)?),
        None => {}
    }
    if let Some(value) = &args.session {
        let (path, exists) = resolve("--session", value, &root, cwd)?;
        return if exists {
            load(path)
        } else {
            Ok(SessionSource::NewAt(path))
        };
    }
    if let Some(id) = &args.session_id {
        if let Some(p) = tern_session::find_exact_in(&store.folder(cwd), id) {
            return load(p);
        }
        eprintln_redacted!(
            "tern: warning: no project session found with id '{id}'; creating a new session \
             with that id"
        );
        return Ok(SessionSource::NewWithId(store.folder(cwd), id.clone()));
    }
    Ok(SessionSource::New(store.folder(cwd)))
}

/// pi's quoting of a shell word: as it is when plain, else in single quotes.
fn quote(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./~:@".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// The command that resumes the session in `file` (pi's `formatResumeCommand`): by id when
/// the file is under the session root (naming the root when it is not the default), else by
/// its path.
pub fn resume_command(file: &Path, id: &str, root: &Path) -> String {
    if !file.starts_with(root) {
        return format!("tern --session {}", quote(&file.to_string_lossy()));
    }
    // The data folder's root needs no naming; TERN_SESSION_DIR's does, as the command may
    // run where the variable is not set.
    let dir = if data_root().as_deref() == Some(root) {
        String::new()
    } else {
        format!("--session-dir {} ", quote(&root.to_string_lossy()))
    };
    format!("tern {dir}--session {id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_names_the_root_or_the_file() {
        let root = Path::new("/data/s");
        assert_eq!(
            resume_command(Path::new("/data/s/--p--/t_ab.jsonl"), "ab", root),
            "tern --session-dir /data/s --session ab"
        );
        assert_eq!(
            resume_command(Path::new("/w/my run.jsonl"), "ab", root),
            "tern --session '/w/my run.jsonl'"
        );
    }
}
