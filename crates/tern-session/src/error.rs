//! What can go wrong with a session file, with the text that says what to do about it.

use std::path::PathBuf;

/// A session file could not be found, read or written.
///
/// Reading tolerates damage inside a file (a torn last line, malformed lines, entries it does
/// not replay): those become warnings on the [`LoadedSession`](crate::LoadedSession). These
/// errors are the cases where there is no session to work with.
///
/// ```
/// let err = tern_session::load(std::path::Path::new("/nowhere/s.jsonl")).unwrap_err();
/// assert!(matches!(err, tern_session::SessionError::Read { .. }));
/// assert!(err.to_string().starts_with("cannot read session file /nowhere/s.jsonl"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The file could not be opened or read.
    #[error("cannot read session file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds no complete line, so no header.
    #[error("session file {} is empty or has no header; start a new session instead", path.display())]
    NoHeader {
        /// The file.
        path: PathBuf,
    },
    /// The first line is not a `session` header.
    #[error("{} is not a session file (its first line is not a `session` header)", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
    },
    /// The session folder could not be listed.
    #[error("cannot list sessions in {}: {source}", root.display())]
    ListSessions {
        /// The session root.
        root: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No session file has this id (or id prefix).
    #[error("no session with id {id} under {} (list them with `ls {}/*`)", root.display(), root.display())]
    NoSuchId {
        /// The id or prefix asked for.
        id: String,
        /// The session root searched.
        root: PathBuf,
    },
    /// Several session files start with this id prefix.
    #[error("{count} sessions match id {id}; give more characters of the id")]
    AmbiguousId {
        /// The prefix asked for.
        id: String,
        /// How many files matched.
        count: usize,
    },
    /// Another process holds the file's writer lock (it is appending to this session).
    #[error("session file {} is in use by another tern process; wait for it to finish, or pass --no-session or another --session file", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// An entry could not be appended.
    #[error("cannot write the session file {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
