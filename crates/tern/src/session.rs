//! Session files in pi's format (`docs/session-format.md`, version 3): JSONL, a `session`
//! header line, then entries linked by `id`/`parentId`. tern appends one `message` entry per
//! finished message and fsyncs it, so a crash loses at most the line being written; a torn
//! last line is skipped with a warning when the file is read, and cut off before the next
//! append.
//!
//! Files live in `<session dir>/--<cwd with / replaced by ->--/<timestamp>_<id>.jsonl`, as
//! pi lays them out under `~/.pi/agent/sessions`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use tern_ai::Message;

/// Format version written in the header.
pub const VERSION: u64 = 3;

/// A session read from disk.
#[derive(Debug, Default)]
pub struct LoadedSession {
    /// The header's session id.
    pub id: String,
    /// The header's working directory.
    pub cwd: Option<String>,
    /// Messages on the active branch (leaf to root, replayed in order).
    pub messages: Vec<Message>,
    /// The id of the last entry (the leaf new entries attach to).
    pub leaf: Option<String>,
    /// The last `model_change` on the branch: (provider, model id).
    pub model: Option<(String, String)>,
    /// The last `thinking_level_change` on the branch.
    pub thinking_level: Option<String>,
    /// Problems found while reading (torn or malformed lines, unsupported entries).
    pub warnings: Vec<String>,
}

/// An open session: where entries go, and which entry they attach to.
#[derive(Debug)]
pub struct SessionFile {
    /// Session id.
    pub id: String,
    /// File path (None: in memory only).
    pub path: Option<PathBuf>,
    cwd: String,
    leaf: Option<String>,
    file: Option<File>,
    header_written: bool,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a Unix time in milliseconds.
pub fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

fn entry_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// The folder of a working directory's sessions inside `root` (pi's naming).
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

/// The default session root: `<data dir>/tern/sessions`.
pub fn default_root() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("tern").join("sessions"))
}

/// The most recently modified session file of `cwd`, if any.
pub fn latest_for_cwd(root: &Path, cwd: &Path) -> Option<PathBuf> {
    let dir = cwd_folder(root, cwd);
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(UNIX_EPOCH);
        if best
            .as_ref()
            .is_none_or(|(t, p)| (modified, &path) > (*t, p))
        {
            best = Some((modified, path));
        }
    }
    best.map(|(_, p)| p)
}

/// Finds a session file under `root` whose id starts with `id`.
pub fn find_by_id(root: &Path, id: &str) -> Result<PathBuf, String> {
    let mut found = Vec::new();
    let dirs = std::fs::read_dir(root)
        .map_err(|e| format!("cannot list sessions in {}: {e}", root.display()))?;
    for dir in dirs.flatten() {
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for f in files.flatten() {
            let name = f.file_name().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".jsonl") else {
                continue;
            };
            let file_id = stem.rsplit('_').next().unwrap_or(stem);
            if file_id.starts_with(id) {
                found.push(f.path());
            }
        }
    }
    match found.len() {
        0 => Err(format!(
            "no session with id {id} under {} (list them with `ls {}/*`)",
            root.display(),
            root.display()
        )),
        1 => Ok(found.remove(0)),
        n => Err(format!(
            "{n} sessions match id {id}; give more characters of the id"
        )),
    }
}

/// Reads a session file, tolerating a torn last line and unknown entries.
pub fn load(path: &Path) -> Result<LoadedSession, String> {
    let mut text = String::new();
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("cannot read session file {}: {e}", path.display()))?;
    let mut out = LoadedSession::default();
    let mut entries: Vec<Map<String, Value>> = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let last_index = lines.iter().rposition(|l| !l.trim().is_empty());
    for (i, line) in lines.iter().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => entries.push(o),
            _ if Some(i) == last_index => out.warnings.push(format!(
                "session file {}: skipped a torn last line ({} bytes), probably cut by a crash; \
                 every complete entry before it was kept",
                path.display(),
                line.len()
            )),
            _ => out.warnings.push(format!(
                "session file {}: skipped malformed line {}",
                path.display(),
                i + 1
            )),
        }
    }
    let mut iter = entries.into_iter();
    let header = iter.next().ok_or_else(|| {
        format!(
            "session file {} is empty or has no header; start a new session instead",
            path.display()
        )
    })?;
    if header.get("type").and_then(Value::as_str) != Some("session") {
        return Err(format!(
            "{} is not a session file (its first line is not a `session` header)",
            path.display()
        ));
    }
    out.id = header
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    out.cwd = header
        .get("cwd")
        .and_then(Value::as_str)
        .map(str::to_string);
    let version = header.get("version").and_then(Value::as_u64).unwrap_or(1);

    let body: Vec<Map<String, Value>> = iter.collect();
    // Version 1 files are linear; later ones form a tree: walk from the last entry up.
    let path_entries: Vec<&Map<String, Value>> = if version < 2 {
        body.iter().collect()
    } else {
        let by_id: std::collections::HashMap<&str, &Map<String, Value>> = body
            .iter()
            .filter_map(|e| e.get("id").and_then(Value::as_str).map(|id| (id, e)))
            .collect();
        let mut chain = Vec::new();
        let mut cursor = body
            .iter()
            .rev()
            .find(|e| e.get("id").and_then(Value::as_str).is_some());
        let mut guard = 0;
        while let Some(e) = cursor {
            chain.push(e);
            guard += 1;
            if guard > body.len() {
                out.warnings
                    .push("session file has a parentId cycle; using what was read".into());
                break;
            }
            cursor = e
                .get("parentId")
                .and_then(Value::as_str)
                .and_then(|p| by_id.get(p).copied());
        }
        chain.reverse();
        chain
    };
    out.leaf = path_entries
        .last()
        .and_then(|e| e.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut skipped_kinds: Vec<String> = Vec::new();
    for e in path_entries {
        let kind = e.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "message" => {
                let Some(m) = e.get("message") else { continue };
                let mut m = m.clone();
                // Version 2 called the custom role `hookMessage`.
                if m.get("role").and_then(Value::as_str) == Some("hookMessage") {
                    m["role"] = json!("custom");
                }
                match serde_json::from_value::<Message>(m) {
                    Ok(msg) => out.messages.push(msg),
                    Err(err) => out
                        .warnings
                        .push(format!("skipped an unreadable message: {err}")),
                }
            }
            "model_change" => {
                let p = e.get("provider").and_then(Value::as_str);
                let m = e.get("modelId").and_then(Value::as_str);
                if let (Some(p), Some(m)) = (p, m) {
                    out.model = Some((p.to_string(), m.to_string()));
                }
            }
            "thinking_level_change" => {
                out.thinking_level = e
                    .get("thinkingLevel")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            "custom" | "label" | "session_info" | "usage" | "context_edit" => {}
            other => {
                if !skipped_kinds.iter().any(|k| k == other) {
                    skipped_kinds.push(other.to_string());
                }
            }
        }
    }
    if !skipped_kinds.is_empty() {
        out.warnings.push(format!(
            "session entries tern does not replay yet were ignored: {}",
            skipped_kinds.join(", ")
        ));
    }
    Ok(out)
}

impl SessionFile {
    /// A session kept in memory only.
    pub fn in_memory(cwd: &Path) -> Self {
        SessionFile {
            id: uuid::Uuid::new_v4().to_string(),
            path: None,
            cwd: cwd.to_string_lossy().to_string(),
            leaf: None,
            file: None,
            header_written: true,
        }
    }

    /// A new session file under `root` for `cwd` (created with the first entry).
    pub fn create(root: &Path, cwd: &Path) -> Self {
        let id = uuid::Uuid::new_v4().to_string();
        let stamp = iso_time(now_ms()).replace([':', '.'], "-");
        let path = cwd_folder(root, cwd).join(format!("{stamp}_{id}.jsonl"));
        SessionFile {
            id,
            path: Some(path),
            cwd: cwd.to_string_lossy().to_string(),
            leaf: None,
            file: None,
            header_written: false,
        }
    }

    /// A new session at an explicit path.
    pub fn create_at(path: &Path, cwd: &Path) -> Self {
        let mut s = Self::create(Path::new("."), cwd);
        s.path = Some(path.to_path_buf());
        s
    }

    /// Continues a loaded session: new entries attach to its leaf.
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

    /// The session file's path as text, if it is on disk.
    pub fn path_string(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.to_string_lossy().to_string())
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

    fn write_line(&mut self, value: &Value) -> std::io::Result<()> {
        if !self.header_written {
            let header = json!({
                "type": "session",
                "version": VERSION,
                "id": self.id,
                "timestamp": iso_time(now_ms()),
                "cwd": self.cwd,
            });
            self.header_written = true;
            self.write_line(&header)?;
        }
        let Some(f) = self.open()? else {
            return Ok(());
        };
        let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
        line.push('\n');
        f.write_all(line.as_bytes())?;
        f.sync_data()
    }

    fn append(&mut self, kind: &str, fields: Value) -> std::io::Result<()> {
        let id = entry_id();
        let mut entry = json!({
            "type": kind,
            "id": id,
            "parentId": self.leaf,
            "timestamp": iso_time(now_ms()),
        });
        if let (Some(e), Value::Object(extra)) = (entry.as_object_mut(), fields) {
            e.extend(extra);
        }
        self.leaf = Some(id);
        if self.path.is_none() {
            return Ok(());
        }
        self.write_line(&entry)
    }

    /// Appends a `message` entry (fsync'd).
    pub fn append_message(&mut self, message: &Message) -> std::io::Result<()> {
        let m = serde_json::to_value(message).map_err(std::io::Error::other)?;
        self.append("message", json!({ "message": m }))
    }

    /// Appends a `model_change` entry.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> std::io::Result<()> {
        self.append(
            "model_change",
            json!({"provider": provider, "modelId": model_id}),
        )
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_change(&mut self, level: &str) -> std::io::Result<()> {
        self.append("thinking_level_change", json!({ "thinkingLevel": level }))
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

    #[test]
    fn iso_time_formats_known_instants() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_733_234_400_000), "2024-12-03T14:00:00.000Z");
    }

    #[test]
    fn cwd_folder_follows_pi() {
        let p = cwd_folder(Path::new("/r"), Path::new("/home/u/proj"));
        assert_eq!(p, Path::new("/r/--home-u-proj--"));
    }

    fn write(lines: &[Value]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(f.path(), text).expect("write");
        f
    }

    fn user(id: &str, parent: Option<&str>, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2024-12-03T14:00:00.000Z",
               "message": {"role": "user", "content": text, "timestamp": 1}})
    }

    #[test]
    fn load_follows_the_branch_of_the_last_entry() {
        let f = write(&[
            json!({"type": "session", "version": 3, "id": "s1", "cwd": "/p"}),
            user("a", None, "root"),
            user("b", Some("a"), "abandoned branch"),
            user("c", Some("a"), "active branch"),
            json!({"type": "thinking_level_change", "id": "d", "parentId": "c", "thinkingLevel": "high"}),
        ]);
        let s = load(f.path()).expect("load");
        let texts: Vec<String> = s
            .messages
            .iter()
            .map(|m| m.content_json().to_string())
            .collect();
        assert_eq!(texts, ["\"root\"", "\"active branch\""]);
        assert_eq!(s.leaf.as_deref(), Some("d"));
        assert_eq!(s.thinking_level.as_deref(), Some("high"));
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn version_1_files_are_linear() {
        let f = write(&[
            json!({"type": "session", "id": "old"}),
            json!({"type": "message", "message": {"role": "user", "content": "one", "timestamp": 1}}),
            json!({"type": "message", "message": {"role": "user", "content": "two", "timestamp": 2}}),
        ]);
        assert_eq!(load(f.path()).expect("load").messages.len(), 2);
    }

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
}
