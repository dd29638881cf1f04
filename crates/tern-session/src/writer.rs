//! Appending to a session file. One entry per line, each fsync'd, so a crash loses at most the
//! line being written. Before the first append, a torn last line left by an earlier crash (one
//! that does not parse) is cut off; a complete last line that only lacks its newline gets one,
//! so the new entry starts on its own line and nothing complete is lost. While a process
//! appends, it holds an advisory lock on the file, so a second writer is refused.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};
use tern_ai::environment::Environment;
use tern_ai::{Message, SystemMessage};

use crate::layout::{cwd_folder, file_name};
use crate::timestamp::Stamp;
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
    secrets: Arc<[String]>,
    /// The clock and id source of every stamp and id (see [`with_environment`](Self::with_environment)).
    env: Environment,
    /// The last timestamp formatted: entries in the same millisecond reuse it.
    stamp: Stamp,
    /// How the id and the path were made, while nothing is written: a new environment makes
    /// them again.
    naming: Naming,
    /// The line being built, kept between appends so an entry allocates nothing.
    line: Vec<u8>,
    /// The entry id of each message of the model's context, in order (a compaction's own id
    /// stands for its summary): what a compaction names as its first kept entry.
    context_ids: Vec<String>,
    /// A session kept in memory: its entries' lines, as a file would hold them (pi's
    /// in-memory sessions keep their entries too).
    memory: Option<Vec<String>>,
}

/// Where a session's id and path came from.
#[derive(Debug, Clone)]
enum Naming {
    /// Given (a resumed session), or already written: never changed.
    Fixed,
    /// Drawn here; the path is given.
    At,
    /// Drawn here; the path is `<folder>/<timestamp>_<id>.jsonl`.
    InFolder(PathBuf),
}

/// What a `compaction` entry holds (pi's `CompactionEntry` without the head fields).
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// The summary of what was compacted away.
    pub summary: String,
    /// The id of the first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// The estimated context size, in tokens, before compaction.
    pub tokens_before: u64,
    /// pi's `CompactionDetails` (`readFiles`, `modifiedFiles`), as JSON.
    pub details: Option<Value>,
    /// The usage of the summary request, as pi's `Usage` JSON.
    pub usage: Option<Value>,
    /// The system message in force when the compaction was made (pi's `systemMessage`: what
    /// all system messages of the context amount to). A resume starts from it, since the
    /// system messages among the compacted and kept entries are left out; it is written with
    /// the entry's timestamp.
    pub system_message: Option<SystemMessage>,
}

/// Writes each of `fields` with its leading comma.
fn write_fields(line: &mut Vec<u8>, fields: &Map<String, Value>) -> serde_json::Result<()> {
    for (k, v) in fields {
        line.push(b',');
        serde_json::to_writer(&mut *line, k)?;
        line.push(b':');
        serde_json::to_writer(&mut *line, v)?;
    }
    Ok(())
}

/// A new entry id from `env`: 8 hex digits, as pi's.
fn entry_id(env: &Environment) -> String {
    format!("{:08x}", env.next_id() as u32)
}

impl SessionFile {
    /// A session kept in memory only: entries are linked but written nowhere.
    pub fn in_memory(cwd: &Path) -> Self {
        let mut s = Self::blank(None, cwd, Naming::At);
        s.header_written = true;
        s.memory = Some(Vec::new());
        s
    }

    /// The entry lines of a session kept in memory ([`in_memory`](Self::in_memory)), in
    /// append order, as a file would hold them after its header; empty for a file.
    ///
    /// ```
    /// let mut s = tern_session::SessionFile::in_memory(std::path::Path::new("/p"));
    /// s.append_message(&tern_ai::Message::user_text("hi")).expect("kept");
    /// assert!(s.memory_entries()[0].contains(r#""type":"message""#));
    /// ```
    pub fn memory_entries(&self) -> &[String] {
        self.memory.as_deref().unwrap_or_default()
    }

    /// A new session file for `cwd` in its folder under `root`.
    pub fn create(root: &Path, cwd: &Path) -> Self {
        Self::create_in(&cwd_folder(root, cwd), cwd)
    }

    /// A new session file for `cwd` in `folder` itself (pi's `--session-dir`).
    pub fn create_in(folder: &Path, cwd: &Path) -> Self {
        Self::blank(None, cwd, Naming::InFolder(folder.to_path_buf()))
    }

    /// A new session file for `cwd` in its folder under `root`, with a chosen id (pi's
    /// `--session-id`; check it with [`valid_session_id`](crate::valid_session_id) first).
    ///
    /// ```
    /// let root = tempfile::tempdir()?;
    /// let s = tern_session::SessionFile::create_with_id(root.path(), std::path::Path::new("/p"), "review-1");
    /// assert_eq!(s.id(), "review-1");
    /// assert!(s.path().expect("in the folder").to_string_lossy().ends_with("_review-1.jsonl"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn create_with_id(root: &Path, cwd: &Path, id: &str) -> Self {
        Self::create_with_id_in(&cwd_folder(root, cwd), cwd, id)
    }

    /// [`create_with_id`](Self::create_with_id) in `folder` itself (pi's `--session-dir`).
    pub fn create_with_id_in(folder: &Path, cwd: &Path, id: &str) -> Self {
        let mut s = Self::blank(None, cwd, Naming::Fixed);
        s.id = id.to_string();
        let now = s.stamp.iso(s.env.now_ms()).to_string();
        s.path = Some(folder.join(file_name(&now, id)));
        s
    }

    /// A new session at an explicit path.
    pub fn create_at(path: &Path, cwd: &Path) -> Self {
        Self::blank(Some(path.to_path_buf()), cwd, Naming::At)
    }

    /// A session with a new id (and, in a folder, the path named after it).
    fn blank(path: Option<PathBuf>, cwd: &Path, naming: Naming) -> Self {
        let mut s = SessionFile {
            id: String::new(),
            path,
            cwd: cwd.to_string_lossy().to_string(),
            leaf: None,
            file: None,
            header_written: false,
            secrets: Arc::from([]),
            env: Environment::system(),
            stamp: Stamp::default(),
            naming,
            line: Vec::new(),
            context_ids: Vec::new(),
            memory: None,
        };
        s.name();
        s
    }

    /// Draws the id (and the path in a folder) from the environment.
    fn name(&mut self) {
        self.id = self.env.uuid();
        if let Naming::InFolder(folder) = &self.naming {
            let now = self.stamp.iso(self.env.now_ms()).to_string();
            self.path = Some(folder.join(file_name(&now, &self.id)));
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
            secrets: Arc::from([]),
            env: Environment::system(),
            stamp: Stamp::default(),
            naming: Naming::Fixed,
            line: Vec::new(),
            context_ids: loaded.message_ids.clone(),
            memory: None,
        }
    }

    /// Takes every timestamp and id of this session from `env` (default:
    /// [`Environment::system`]). A new session that has written nothing draws its session id
    /// (and, from [`create`](Self::create), its file name) again from `env`, so a fixed clock
    /// and a deterministic id source give the same file, byte for byte, on every run.
    ///
    /// ```
    /// use tern_ai::environment::Environment;
    /// let dir = tempfile::tempdir()?;
    /// let write = |name: &str| {
    ///     let path = dir.path().join(name);
    ///     let mut s = tern_session::SessionFile::create_at(&path, std::path::Path::new("/p"))
    ///         .with_environment(Environment::fixed(1_733_234_400_000, 42));
    ///     s.append_message(&tern_ai::Message::user_text("hi")).expect("written");
    ///     std::fs::read(&path)
    /// };
    /// let (a, b) = (write("a.jsonl")?, write("b.jsonl")?);
    /// let text = String::from_utf8_lossy(&a);
    /// assert!(text.contains(r#""timestamp":"2024-12-03T14:00:00.000Z""#));
    /// // The user message's own timestamp is the caller's; everything the writer adds is the same.
    /// let first_line = |v: &[u8]| v.split(|b| *b == b'\n').next().map(<[u8]>::to_vec);
    /// assert_eq!(first_line(&a), first_line(&b));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_environment(mut self, env: Environment) -> Self {
        self.env = env;
        self.stamp = Stamp::default();
        if !matches!(self.naming, Naming::Fixed) && self.leaf.is_none() && self.file.is_none() {
            self.name();
        }
        self
    }

    /// The clock and id source this session stamps with.
    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// Keys that must never reach the file: each is replaced by `[redacted]` in every line
    /// written (an API key echoed in a provider's error, a key the model was shown).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let mut s = tern_session::SessionFile::create(dir.path(), std::path::Path::new("/p"))
    ///     .with_secrets(vec!["sk-live-123456".to_string()].into());
    /// s.append_message(&tern_ai::Message::user_text("my key is sk-live-123456")).expect("written");
    /// let text = std::fs::read_to_string(s.path().expect("on disk"))?;
    /// assert!(!text.contains("sk-live-123456") && text.contains("my key is [redacted]"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_secrets(mut self, secrets: Arc<[String]>) -> Self {
        self.secrets = crate::redact::ordered(secrets.to_vec()).into();
        self
    }

    /// The keys this session redacts (see [`with_secrets`](Self::with_secrets)).
    pub fn secrets(&self) -> Arc<[String]> {
        self.secrets.clone()
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
            "timestamp": crate::iso_time(self.env.now_ms()),
            "cwd": self.cwd,
        })
    }

    /// Opens the file now and takes its writer lock, if the file exists (a resumed session):
    /// a caller learns at once that another process is writing it, rather than at the first
    /// append. A file that does not exist yet is created and locked with the first entry.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s.jsonl");
    /// std::fs::write(&path, "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n")?;
    /// let loaded = tern_session::load(&path).expect("a session");
    /// let cwd = std::path::Path::new("/p");
    /// let mut first = tern_session::SessionFile::resume(&path, &loaded, cwd);
    /// first.lock_existing().expect("free");
    /// let mut second = tern_session::SessionFile::resume(&path, &loaded, cwd);
    /// let err = second.lock_existing().unwrap_err();
    /// assert!(matches!(err, tern_session::SessionError::Locked { .. }));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lock_existing(&mut self) -> Result<(), SessionError> {
        match &self.path {
            Some(p) if p.exists() => self.open().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Appends a `message` entry (fsync'd).
    pub fn append_message(&mut self, message: &Message) -> Result<(), SessionError> {
        self.append_entry("message", true, |line, _| {
            line.extend_from_slice(br#","message":"#);
            serde_json::to_writer(line, message)
        })?;
        self.context_ids.extend(self.leaf.clone());
        Ok(())
    }

    /// Appends a `compaction` entry (pi's `CompactionEntry`) and returns its id and its
    /// timestamp (Unix ms). From here on
    /// the context is the summary (this entry) and the messages from `first_kept_entry_id`
    /// on.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s.jsonl");
    /// let mut s = tern_session::SessionFile::create_at(&path, std::path::Path::new("/p"));
    /// s.append_message(&tern_ai::Message::user_text("old")).expect("written");
    /// s.append_message(&tern_ai::Message::user_text("recent")).expect("written");
    /// let kept = s.context_ids()[1].clone();
    /// let c = tern_session::writer::Compaction {
    ///     summary: "## Goal\nTest".into(), first_kept_entry_id: kept, tokens_before: 9,
    ///     details: None, usage: None, system_message: None,
    /// };
    /// let (id, _) = s.append_compaction(&c).expect("written");
    /// drop(s);
    /// let loaded = tern_session::load(&path).expect("readable");
    /// assert_eq!(loaded.messages.len(), 2); // the summary and "recent"
    /// assert_eq!(loaded.message_ids[0], id);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append_compaction(&mut self, c: &Compaction) -> Result<(String, u64), SessionError> {
        let mut fields = Map::new();
        fields.insert("summary".into(), json!(c.summary));
        fields.insert("firstKeptEntryId".into(), json!(c.first_kept_entry_id));
        fields.insert("tokensBefore".into(), json!(c.tokens_before));
        if let Some(d) = &c.details {
            fields.insert("details".into(), d.clone());
        }
        if let Some(u) = &c.usage {
            fields.insert("usage".into(), u.clone());
        }
        fields.insert("fromHook".into(), json!(false));
        let system = c.system_message.as_ref();
        self.append_entry("compaction", true, |line, ms| {
            write_fields(line, &fields)?;
            if let Some(system) = system {
                let mut system = system.clone();
                system.timestamp = ms;
                line.extend_from_slice(br#","systemMessage":"#);
                serde_json::to_writer(&mut *line, &Message::from(system))?;
            }
            Ok(())
        })?;
        let id = self.leaf.clone().unwrap_or_default();
        let from = self
            .context_ids
            .iter()
            .position(|i| *i == c.first_kept_entry_id)
            .unwrap_or(self.context_ids.len());
        let mut ids = vec![id.clone()];
        ids.extend(self.context_ids.drain(from..));
        self.context_ids = ids;
        Ok((id, self.stamp.ms.unwrap_or_default()))
    }

    /// Appends a `context_edit` entry that omits the message entry `target_id` from the
    /// model's context (pi's recovery omission of a failed attempt: `replacement: null`).
    pub fn append_context_omission(&mut self, target_id: &str) -> Result<(), SessionError> {
        self.append(
            "context_edit",
            json!({"targetId": target_id, "replacement": null}),
        )?;
        self.context_ids.retain(|i| i != target_id);
        Ok(())
    }

    /// The entry id of each message of the model's context, in order (for a compacted
    /// session the first is the compaction's, standing for its summary).
    pub fn context_ids(&self) -> &[String] {
        &self.context_ids
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

    /// Appends a `session_info` entry: the session's display name (pi's `--name`).
    pub fn append_session_info(&mut self, name: &str) -> Result<(), SessionError> {
        self.append("session_info", json!({ "name": name }))
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

    /// [`append_custom`](Self::append_custom) with `data` already serialized as compact JSON
    /// (`serde_json::to_string`): spliced into the entry as it is, without building a `Value`
    /// of it. A `data` with a line break is parsed and written as `append_custom` would.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let mut s = tern_session::SessionFile::create_at(&dir.path().join("s.jsonl"), std::path::Path::new("/p"));
    /// s.append_custom_json("my-ext", r#"{"n":1}"#, false).expect("written");
    /// let text = std::fs::read_to_string(s.path().expect("on disk"))?;
    /// assert!(text.ends_with("\"customType\":\"my-ext\",\"data\":{\"n\":1}}\n"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append_custom_json(
        &mut self,
        custom_type: &str,
        data: &str,
        sync: bool,
    ) -> Result<(), SessionError> {
        if data.contains('\n') {
            let v = serde_json::from_str(data).map_err(|e| self.write_error(e.into()))?;
            return self.append_custom(custom_type, v, sync);
        }
        self.append_entry("custom", sync, |line, _| {
            custom_type_field(line, custom_type)?;
            line.extend_from_slice(data.as_bytes());
            Ok(())
        })
    }

    /// [`append_custom`](Self::append_custom) with `data` serialized straight into the
    /// entry's line (compact JSON has no line break), with no `Value` or `String` of it.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let mut s = tern_session::SessionFile::create_at(&dir.path().join("s.jsonl"), std::path::Path::new("/p"));
    /// s.append_custom_serialized("my-ext", &[1, 2], false).expect("written");
    /// let text = std::fs::read_to_string(s.path().expect("on disk"))?;
    /// assert!(text.ends_with("\"customType\":\"my-ext\",\"data\":[1,2]}\n"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn append_custom_serialized<T: Serialize + ?Sized>(
        &mut self,
        custom_type: &str,
        data: &T,
        sync: bool,
    ) -> Result<(), SessionError> {
        self.append_entry("custom", sync, |line, _| {
            custom_type_field(line, custom_type)?;
            serde_json::to_writer(line, data)
        })
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
        let Value::Object(fields) = fields else {
            return Ok(());
        };
        self.append_entry(kind, sync, |line, _| write_fields(line, &fields))
    }

    /// Builds one entry's line in the kept buffer: the head (`type`, `id`, `parentId`,
    /// `timestamp`, in pi's order) written by hand, then `rest` (each field with its leading
    /// comma; it is given the entry's timestamp in Unix ms), then the closing brace; and
    /// appends it.
    fn append_entry(
        &mut self,
        kind: &str,
        sync: bool,
        rest: impl FnOnce(&mut Vec<u8>, u64) -> serde_json::Result<()>,
    ) -> Result<(), SessionError> {
        let id = entry_id(&self.env);
        let ms = self.env.now_ms();
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let built = (|| {
            line.extend_from_slice(br#"{"type":"#);
            serde_json::to_writer(&mut line, kind)?;
            line.extend_from_slice(br#","id":""#);
            line.extend_from_slice(id.as_bytes());
            line.extend_from_slice(br#"","parentId":"#);
            serde_json::to_writer(&mut line, &self.leaf)?;
            line.extend_from_slice(br#","timestamp":""#);
            line.extend_from_slice(self.stamp.iso(ms).as_bytes());
            line.push(b'"');
            rest(&mut line, ms)?;
            line.push(b'}');
            Ok::<(), serde_json::Error>(())
        })();
        let result = match built {
            Ok(()) => self.append_line(id, &mut line, sync),
            Err(e) => Err(self.write_error(e.into())),
        };
        self.line = line;
        result
    }

    /// Writes one entry's line (after the header, for the first), then makes it the leaf.
    fn append_line(
        &mut self,
        id: String,
        line: &mut Vec<u8>,
        sync: bool,
    ) -> Result<(), SessionError> {
        if self.path.is_some() {
            if !self.header_written {
                let mut header =
                    serde_json::to_vec(&self.header()).map_err(|e| self.write_error(e.into()))?;
                // Not synced on its own: the entry's sync right after covers both lines.
                self.write_line(&mut header, false)?;
                self.header_written = true;
            }
            self.write_line(line, sync)?;
        } else if self.memory.is_some() {
            self.redact_line(line)?;
            let text = String::from_utf8_lossy(line).into_owned();
            if let Some(m) = &mut self.memory {
                m.push(text);
            }
        }
        // Only a written entry becomes the leaf: the next one must not name a parent that
        // is not in the file; and the id and path are now the file's.
        self.leaf = Some(id);
        self.naming = Naming::Fixed;
        Ok(())
    }

    fn write_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Write {
            path: self.path.clone().unwrap_or_default(),
            source,
        }
    }

    /// Takes the session's secrets out of `line`.
    fn redact_line(&self, line: &mut Vec<u8>) -> Result<(), SessionError> {
        if !self.secrets.is_empty() {
            // serde_json writes UTF-8, so the check only fails on a caller's broken `data`.
            let text = std::str::from_utf8(line)
                .map_err(|e| self.write_error(std::io::Error::other(e)))?;
            if let std::borrow::Cow::Owned(redacted) = crate::redact::redact(&self.secrets, text) {
                *line = redacted.into_bytes();
            }
        }
        Ok(())
    }

    fn write_line(&mut self, line: &mut Vec<u8>, sync: bool) -> Result<(), SessionError> {
        self.redact_line(line)?;
        let result = match self.open()? {
            // The line and its newline in one write.
            Some(f) => {
                line.push(b'\n');
                f.write_all(line)
                    .and_then(|()| if sync { f.sync_data() } else { Ok(()) })
            }
            None => Ok(()),
        };
        result.map_err(|e| self.write_error(e))
    }

    fn open(&mut self) -> Result<Option<&mut File>, SessionError> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        if self.file.is_none() {
            let write_error = |source| SessionError::Write {
                path: path.clone(),
                source,
            };
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(write_error)?;
            }
            let mut f = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(path)
                .map_err(write_error)?;
            // Taken before the tail is looked at: the other writer may be mid-line.
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .map_err(|_| SessionError::Locked { path: path.clone() })?;
            end_on_a_newline(&mut f).map_err(write_error)?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut())
    }
}

/// `,"customType":<custom_type>,"data":`, the fields before a custom entry's data.
fn custom_type_field(line: &mut Vec<u8>, custom_type: &str) -> serde_json::Result<()> {
    line.extend_from_slice(br#","customType":"#);
    serde_json::to_writer(&mut *line, custom_type)?;
    line.extend_from_slice(br#","data":"#);
    Ok(())
}

/// Makes the file end with a newline so the next entry starts on its own line: a last line
/// that does not parse (torn by a crash) is cut off; a complete one only gets its newline.
fn end_on_a_newline(f: &mut File) -> std::io::Result<()> {
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
    let start = all
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    let tail = &all[start..];
    let tail = tail.strip_suffix(b"\r").unwrap_or(tail);
    if serde_json::from_slice::<Value>(tail).is_ok() {
        // Append mode: the newline goes at the end whatever the position.
        f.write_all(b"\n")?;
    } else {
        f.set_len(start as u64)?;
    }
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
    fn a_complete_last_line_without_its_newline_is_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.jsonl");
        let mut s = SessionFile::create_at(&path, Path::new("/p"));
        s.append_message(&Message::user_text("one")).expect("1");
        s.append_message(&Message::user_text("two")).expect("2");
        drop(s);
        // `truncate -s -1`: the last entry is whole, only its newline is gone.
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.trim_end_matches('\n')).expect("cut");
        let loaded = load(&path).expect("load");
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let mut s = SessionFile::resume(&path, &loaded, Path::new("/p"));
        s.append_message(&Message::user_text("three")).expect("3");
        let reloaded = load(&path).expect("reload");
        assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
        let texts: Vec<String> = reloaded
            .messages
            .iter()
            .map(|m| m.content_json().to_string())
            .collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        for (t, want) in texts.iter().zip(["one", "two", "three"]) {
            assert!(t.contains(want), "{t} is not {want}");
        }
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.jsonl");
        let mut first = SessionFile::create_at(&path, Path::new("/p"));
        first.append_message(&Message::user_text("one")).expect("1");
        let loaded = load(&path).expect("load");
        let mut second = SessionFile::resume(&path, &loaded, Path::new("/p"));
        let err = second
            .append_message(&Message::user_text("two"))
            .expect_err("locked");
        assert!(matches!(err, SessionError::Locked { .. }), "{err}");
        assert!(err.to_string().contains("s.jsonl"), "{err}");
        drop(first);
        second
            .append_message(&Message::user_text("two"))
            .expect("free again");
        assert_eq!(load(&path).expect("reload").messages.len(), 2);
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
