//! # tern-session
//!
//! Pi's session files (`docs/session-format.md` of `@earendil-works/pi-coding-agent`,
//! version 3) without the CLI: a service can read a session pi or tern wrote, continue it,
//! and record an agent into it.
//!
//! A file is JSONL: a `session` header (`id`, `timestamp`, `cwd`), then entries linked by
//! `id`/`parentId` into a tree whose active branch runs from the last entry up.
//!
//! | module | holds |
//! |---|---|
//! | [`reader`] | [`load`]: the header and the active branch as messages (after a compaction, its summary and the kept messages), with warnings for damage ([`LoadedSession`]) |
//! | [`writer`] | [`SessionFile`]: appends fsync'd entries (`message`, `model_change`, `thinking_level_change`, `session_info`, `compaction`) |
//! | [`recorder`] | [`Recorder`]: subscribes to an [`Agent`](tern_agent::Agent) and writes its finished messages |
//! | [`redact`] | [`redact::redact`]: known keys out of any text (the writer applies it to every line) |
//! | [`layout`] | where files live: [`cwd_folder`], [`latest_for_cwd`], [`find_by_id`], [`find_exact_in_cwd`], [`valid_session_id`] |
//! | [`fork`] | [`fork_from`]: a session copied into a new one of another directory |
//! | [`timestamp`] | [`iso_time`]: pi's ISO timestamps |
//! | [`error`] | [`SessionError`] |
//!
//! ```
//! use std::path::Path;
//! use tern_session::{load, SessionFile};
//!
//! let root = tempfile::tempdir()?;
//! let mut s = SessionFile::create(root.path(), Path::new("/home/u/proj"));
//! s.append_message(&tern_ai::Message::user_text("hello")).expect("written");
//! let path = s.path().expect("on disk").to_path_buf();
//! drop(s); // releases the file's writer lock
//!
//! // Later, or in another process: continue where it left off.
//! let loaded = load(&path).expect("readable");
//! let mut s = SessionFile::resume(&path, &loaded, Path::new("/home/u/proj"));
//! s.append_message(&tern_ai::Message::user_text("again")).expect("written");
//! assert_eq!(load(&path).expect("readable").messages.len(), 2);
//! # Ok::<(), std::io::Error>(())
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod fork;
pub mod layout;
pub mod reader;
pub mod recorder;
pub mod redact;
pub mod timestamp;
pub mod writer;

pub use error::SessionError;
pub use fork::{fork_from, fork_into};
pub use layout::{
    cwd_folder, find_by_id, find_exact_in, find_exact_in_cwd, header_cwd, latest_for_cwd,
    sessions_in, valid_session_id,
};
pub use reader::{compaction_summary_message, load, CompactionSummary, LoadedSession};
pub use recorder::{Recorder, WriteFailure};
pub use timestamp::{iso_now, iso_time};
pub use writer::{Compaction, SessionFile, VERSION};
