//! Which session a run uses: in memory, a new file, or an existing one (`--continue`,
//! `--resume`, `--session`), and where new sessions go.

use std::path::{Path, PathBuf};

use tern_session::LoadedSession;

use crate::cli::Args;
use crate::secrets::eprintln_redacted;
use crate::usage_error::UsageError;

/// The default session root: `<data dir>/tern/sessions`.
pub fn default_root() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("tern").join("sessions"))
}

/// Where a run's session comes from.
pub enum SessionSource {
    /// In memory.
    None,
    /// A new file under this root.
    New(PathBuf),
    /// A new file at this path.
    NewAt(PathBuf),
    /// An existing file.
    Existing(PathBuf, LoadedSession),
}

/// Picks the session from the flags. Warnings of a loaded file go to stderr.
pub fn session_source(args: &Args, cwd: &Path) -> Result<SessionSource, UsageError> {
    let root = args
        .session_dir
        .clone()
        .or_else(default_root)
        .unwrap_or_else(|| cwd.join(".tern-sessions"));
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
    let load = |path: PathBuf| -> Result<SessionSource, UsageError> {
        let loaded = tern_session::load(&path)?;
        for w in &loaded.warnings {
            eprintln_redacted!("tern: warning: {w}");
        }
        Ok(SessionSource::Existing(path, loaded))
    };
    if args.no_session {
        return Ok(SessionSource::None);
    }
    if args.continue_session {
        return match tern_session::latest_for_cwd(&root, cwd) {
            Some(p) => load(p),
            None => {
                eprintln_redacted!(
                    "tern: no earlier session in {} (looked in {}); starting a new one",
                    cwd.display(),
                    root.display()
                );
                Ok(SessionSource::New(root))
            }
        };
    }
    if let Some(id) = &args.resume {
        return load(tern_session::find_by_id(&root, id)?);
    }
    if let Some(path) = &args.session {
        if path.exists() {
            return load(path.clone());
        }
        return Ok(SessionSource::NewAt(path.clone()));
    }
    Ok(SessionSource::New(root))
}
