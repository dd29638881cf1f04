//! Reading a session file: the header, then the active branch (the chain of `parentId`s from
//! the last entry up), replayed as messages. Damage is tolerated: a torn last line (a crash
//! mid-write) and malformed lines are skipped, and entry kinds tern does not replay yet are
//! ignored, each with a warning.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Map, Value};
use tern_ai::Message;

use crate::SessionError;

/// A session read from disk.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LoadedSession {
    /// The header's session id.
    pub id: String,
    /// The header's working directory.
    pub cwd: Option<String>,
    /// Messages on the active branch, root first.
    pub messages: Vec<Message>,
    /// The id of the last entry on the branch (the leaf new entries attach to).
    pub leaf: Option<String>,
    /// The last `model_change` on the branch: (provider, model id).
    pub model: Option<(String, String)>,
    /// The last `thinking_level_change` on the branch.
    pub thinking_level: Option<String>,
    /// Problems found while reading (torn or malformed lines, unsupported entries).
    pub warnings: Vec<String>,
}

type Entry = Map<String, Value>;

/// Reads a session file (any version pi wrote), tolerating a torn last line and unknown
/// entries.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("s.jsonl");
/// std::fs::write(&path, concat!(
///     r#"{"type":"session","version":3,"id":"s1","cwd":"/p"}"#, "\n",
///     r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
///     r#"{"type":"mess"#, // a torn last line
/// ))?;
/// let s = tern_session::load(&path).expect("a session");
/// assert_eq!((s.id.as_str(), s.messages.len(), s.leaf.as_deref()), ("s1", 1, Some("a")));
/// assert!(s.warnings[0].contains("torn last line"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = LoadedSession::default();
    let mut entries = parse_lines(&text, path, &mut out.warnings).into_iter();
    let header = entries.next().ok_or_else(|| SessionError::NoHeader {
        path: path.to_path_buf(),
    })?;
    if header.get("type").and_then(Value::as_str) != Some("session") {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
        });
    }
    out.id = str_field(&header, "id").unwrap_or_default().to_string();
    out.cwd = str_field(&header, "cwd").map(str::to_string);
    let version = header.get("version").and_then(Value::as_u64).unwrap_or(1);

    let body: Vec<Entry> = entries.collect();
    // Version 1 files are linear; later ones form a tree.
    let branch: Vec<&Entry> = if version < 2 {
        body.iter().collect()
    } else {
        active_branch(&body, &mut out.warnings)
    };
    out.leaf = branch
        .last()
        .and_then(|e| str_field(e, "id"))
        .map(str::to_string);
    replay(&branch, &mut out);
    Ok(out)
}

fn str_field<'a>(e: &'a Entry, key: &str) -> Option<&'a str> {
    e.get(key).and_then(Value::as_str)
}

/// The JSON objects of the file's lines; bad lines become warnings.
fn parse_lines(text: &str, path: &Path, warnings: &mut Vec<String>) -> Vec<Entry> {
    let mut entries = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let last_index = lines.iter().rposition(|l| !l.trim().is_empty());
    for (i, line) in lines.iter().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => entries.push(o),
            _ if Some(i) == last_index => warnings.push(format!(
                "session file {}: skipped a torn last line ({} bytes), probably cut by a crash; \
                 every complete entry before it was kept",
                path.display(),
                line.len()
            )),
            _ => warnings.push(format!(
                "session file {}: skipped malformed line {}",
                path.display(),
                i + 1
            )),
        }
    }
    entries
}

/// The entries from the root to the last entry with an id, following `parentId` (pi's
/// active branch).
fn active_branch<'a>(body: &'a [Entry], warnings: &mut Vec<String>) -> Vec<&'a Entry> {
    let by_id: HashMap<&str, &Entry> = body
        .iter()
        .filter_map(|e| str_field(e, "id").map(|id| (id, e)))
        .collect();
    let mut chain = Vec::new();
    let mut cursor = body.iter().rev().find(|e| str_field(e, "id").is_some());
    while let Some(e) = cursor {
        chain.push(e);
        if chain.len() > body.len() {
            warnings.push("session file has a parentId cycle; using what was read".into());
            break;
        }
        cursor = str_field(e, "parentId").and_then(|p| by_id.get(p).copied());
    }
    chain.reverse();
    chain
}

/// Messages and settings of the branch, in order.
fn replay(branch: &[&Entry], out: &mut LoadedSession) {
    let mut skipped_kinds: Vec<String> = Vec::new();
    for e in branch {
        match str_field(e, "type").unwrap_or_default() {
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
                if let (Some(p), Some(m)) = (str_field(e, "provider"), str_field(e, "modelId")) {
                    out.model = Some((p.to_string(), m.to_string()));
                }
            }
            "thinking_level_change" => {
                out.thinking_level = str_field(e, "thinkingLevel").map(str::to_string);
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn unknown_entries_and_a_cycle_are_warnings_not_errors() {
        let f = write(&[
            json!({"type": "session", "version": 3, "id": "s"}),
            json!({"type": "compaction", "id": "a", "parentId": "b"}),
            json!({"type": "branch_summary", "id": "b", "parentId": "a"}),
        ]);
        let s = load(f.path()).expect("load");
        assert!(s.warnings.iter().any(|w| w.contains("parentId cycle")));
        assert!(s
            .warnings
            .iter()
            .any(|w| w.contains("compaction") && w.contains("branch_summary")));
    }

    #[test]
    fn a_file_without_a_header_is_an_error() {
        let empty = write(&[]);
        assert!(matches!(
            load(empty.path()),
            Err(SessionError::NoHeader { .. })
        ));
        let other = write(&[json!({"type": "message"})]);
        assert!(matches!(
            load(other.path()),
            Err(SessionError::NotASession { .. })
        ));
    }
}
