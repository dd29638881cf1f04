//! Appending to a session file. One entry per line, each fsync'd, so a crash loses at most the
//! line being written; a torn last line left by an earlier crash is cut off before the next
//! append, so the new entry starts on its own line.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tern_ai::Message;

use crate::layout::{cwd_folder, file_name};
use crate::timestamp::iso_now;
use crate::{LoadedSession, SessionError};

/// Format version written in the header.
pub const VERSION: u64 = 3;

/// An open session: where entries go, and which entry they attach to.
///
/// The file and its header are created with the first entry, so a session that never
/// records anything leaves no file behind.
///
/// ```
/// use std::path::Path;
/// use tern_session::SessionFile;
///
/// let root = tempfile::tempdir()?;
/// let mut s = SessionFile::create(root.path(), Path::new("/home/u/proj"));
/// s.append_message(&tern_ai::Message::user_text("hello")).expect("written");
/// let text = std::fs::read_to_string(s.path().expect("on disk"))?;
/// let lines: Vec<&str> = text.lines().collect();
/// assert!(lines[0].starts_with(r#"{"type":"session","version":3"#));
/// assert!(lines[1].contains(r#""type":"message""#) && lines[1].contains(r#""parentId":null"#));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct SessionFile {
    id: String,
    path: Option<PathBuf>,
    cwd: String,
    leaf: Option<String>,
    file: Option<File>,
    header_written: bool,
}

/// A new session id (a UUID, as pi's).
fn session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A new entry id: 8 hex digits, as pi's.
fn entry_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(8);
    id
}

impl SessionFile {
    /// A session kept in memory only: entries are linked but written nowhere.
    pub fn in_memory(cwd: &Path) -> Self {
        SessionFile {
            id: session_id(),
            path: None,
            cwd: cwd.to_string_lossy().to_string(),
            leaf: None,
            file: None,
            header_written: true,
        }
    }

    /// A new session file for `cwd` in its folder under `root`.
    pub fn create(root: &Path, cwd: &Path) -> Self {
        let id = session_id();
        let path = cwd_folder(root, cwd).join(file_name(&iso_now(), &id));
        Self::new_file(id, path, cwd)
    }

    /// A new session at an explicit path.
    pub fn create_at(path: &Path, cwd: &Path) -> Self {
        Self::new_file(session_id(), path.to_path_buf(), cwd)
    }

    fn new_file(id: String, path: PathBuf, cwd: &Path) -> Self {
        SessionFile {
            id,
            path: Some(path),
            cwd: cwd.to_string_lossy().to_string(),
            leaf: None,
            file: None,
            header_written: false,
        }
    }

    /// Continues a loaded session at `path`: new entries attach to its leaf.
    pub fn resume(path: &Path, loaded: &LoadedSession, cwd: &Path) -> Self {
        SessionFile {
            id: loaded.id.clone(),
            path: Some(path.to_path_buf()),
            cwd: cwd.to_string_lossy().to_string(),
            leaf: loaded.leaf.clone(),
            file: None,
            header_written: true,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The file, if the session is on disk.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The session file's path as text, if it is on disk.
    pub fn path_string(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.to_string_lossy().to_string())
    }

    /// The `session` header line, stamped now (pi's JSON mode prints it first, too).
    ///
    /// ```
    /// let s = tern_session::SessionFile::in_memory(std::path::Path::new("/p"));
    /// let h = s.header();
    /// assert_eq!((h["type"].as_str(), h["version"].as_u64()), (Some("session"), Some(3)));
    /// assert_eq!((h["id"].as_str(), h["cwd"].as_str()), (Some(s.id()), Some("/p")));
    /// ```
    pub fn header(&self) -> Value {
        json!({
            "type": "session",
            "version": VERSION,
            "id": self.id,
            "timestamp": iso_now(),
            "cwd": self.cwd,
        })
    }

    /// Appends a `message` entry (fsync'd).
    pub fn append_message(&mut self, message: &Message) -> Result<(), SessionError> {
        let m = serde_json::to_value(message).map_err(|e| self.write_error(e.into()))?;
        self.append("message", json!({ "message": m }))
    }

    /// Appends a `model_change` entry.
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<(), SessionError> {
        self.append(
            "model_change",
            json!({"provider": provider, "modelId": model_id}),
        )
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_change(&mut self, level: &str) -> Result<(), SessionError> {
        self.append("thinking_level_change", json!({ "thinkingLevel": level }))
    }

    /// Appends a `custom` entry (pi keeps it in the tree and out of the model's context).
    /// `sync: false` skips the fsync, for callers that batch their own (durable journals).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let mut s = tern_session::SessionFile::create_at(&dir.path().join("s.jsonl"), std::path::Path::new("/p"));
    /// s.append_custom("my-ext", serde_json::json!({"n": 1}), true).expect("written");
    /// let text = std::fs::read_to_string(s.path().expect("on disk"))?;
    /// assert!(text.contains(r#""customType":"my-ext","data":{"n":1}"#));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append_custom(
        &mut self,
        custom_type: &str,
        data: Value,
        sync: bool,
    ) -> Result<(), SessionError> {
        self.append_with(
            "custom",
            json!({"customType": custom_type, "data": data}),
            sync,
        )
    }

    /// Forces what was appended without a sync onto the disk.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        match self.file.as_mut() {
            Some(f) => f.sync_data().map_err(|e| self.write_error(e)),
            None => Ok(()),
        }
    }

    fn append(&mut self, kind: &str, fields: Value) -> Result<(), SessionError> {
        self.append_with(kind, fields, true)
    }

    fn append_with(&mut self, kind: &str, fields: Value, sync: bool) -> Result<(), SessionError> {
        let id = entry_id();
        let mut entry = json!({
            "type": kind,
            "id": id,
            "parentId": self.leaf,
            "timestamp": iso_now(),
        });
        if let (Some(e), Value::Object(extra)) = (entry.as_object_mut(), fields) {
            e.extend(extra);
        }
        self.leaf = Some(id);
        if self.path.is_none() {
            return Ok(());
        }
        if !self.header_written {
            let header = self.header();
            self.write_line(&header, sync)
                .map_err(|e| self.write_error(e))?;
            self.header_written = true;
        }
        self.write_line(&entry, sync)
            .map_err(|e| self.write_error(e))
    }

    fn write_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Write {
            path: self.path.clone().unwrap_or_default(),
            source,
        }
    }

    fn write_line(&mut self, value: &Value, sync: bool) -> std::io::Result<()> {
        let Some(f) = self.open()? else {
            return Ok(());
        };
        let mut line = serde_json::to_string(value)?;
        line.push('\n');
        f.write_all(line.as_bytes())?;
        if sync {
            f.sync_data()?;
        }
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<Option<&mut File>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        if self.file.is_none() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(path)?;
            cut_torn_tail(&mut f)?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut())
    }
}

/// Cuts a torn last line (no trailing newline) so the next entry starts on its own line.
fn cut_torn_tail(f: &mut File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1))?;
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let mut all = Vec::new();
    f.seek(SeekFrom::Start(0))?;
    f.read_to_end(&mut all)?;
    let keep = all
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    f.set_len(keep as u64)?;
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    #[test]
    fn a_torn_tail_is_cut_before_appending() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x\"}\n{\"type\":\"mess",
        )
        .expect("write");
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.warnings.len(), 1);
        let mut s = SessionFile::resume(&path, &loaded, Path::new("/p"));
        s.append_message(&Message::user_text("after"))
            .expect("append");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 2);
        assert!(load(&path).expect("reload").warnings.is_empty());
    }

    #[test]
    fn entries_chain_and_reload_with_their_settings() {
        let dir = tempfile::tempdir().expect("dir");
        let mut s = SessionFile::create(dir.path(), Path::new("/p"));
        s.append_message(&Message::user_text("one")).expect("1");
        s.append_model_change("openai", "gpt-4o-mini").expect("2");
        s.append_thinking_change("low").expect("3");
        s.append_message(&Message::user_text("two")).expect("4");
        let path = s.path().expect("on disk").to_path_buf();
        assert!(path.starts_with(dir.path().join("--p--")));
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.id, s.id());
        assert_eq!(loaded.cwd.as_deref(), Some("/p"));
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(
            loaded.model,
            Some(("openai".to_string(), "gpt-4o-mini".to_string()))
        );
        assert_eq!(loaded.thinking_level.as_deref(), Some("low"));
        assert_eq!(loaded.leaf.as_ref().map(String::len), Some(8));
    }

    #[test]
    fn an_in_memory_session_writes_nothing() {
        let mut s = SessionFile::in_memory(Path::new("/p"));
        s.append_message(&Message::user_text("x")).expect("ok");
        assert!(s.path().is_none());
    }

    #[test]
    fn a_write_failure_names_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, "").expect("write");
        let mut s = SessionFile::create_at(&blocker.join("s.jsonl"), Path::new("/p"));
        let err = s
            .append_message(&Message::user_text("x"))
            .expect_err("a file is in the way");
        assert!(matches!(err, SessionError::Write { .. }));
        assert!(err.to_string().contains("not-a-dir/s.jsonl"), "{err}");
    }
}
