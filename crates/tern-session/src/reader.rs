//! Reading a session file: the header, then the active branch (the chain of `parentId`s from
//! the last entry up), replayed as messages. Damage is tolerated: a torn last line (a crash
//! mid-write) and malformed lines are skipped, and entry kinds tern does not replay yet are
//! ignored, each with a warning.

use std::collections::{HashMap, HashSet};
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

/// One parsed line: its JSON object and its line number (for warnings).
struct Entry {
    line: usize,
    obj: Map<String, Value>,
}

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
    let bytes = std::fs::read(path).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = LoadedSession::default();
    let mut entries = parse_lines(&bytes, path, &mut out.warnings).into_iter();
    let header = entries.next().ok_or_else(|| SessionError::NoHeader {
        path: path.to_path_buf(),
    })?;
    let header = header.obj;
    if header.get("type").and_then(Value::as_str) != Some("session") {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
        });
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
    if version > crate::VERSION {
        out.warnings.push(format!(
            "session file {}: format version {version} is newer than the version {} tern \
             reads; entries it does not know are reported below",
            path.display(),
            crate::VERSION
        ));
    }

    let body: Vec<Entry> = entries.collect();
    // Version 1 files are linear; later ones form a tree.
    let (branch, broken) = if version < 2 {
        (body.iter().collect(), false)
    } else {
        active_branch(&body, path, &mut out.warnings)
    };
    out.leaf = branch
        .last()
        .and_then(|e| str_field(e, "id"))
        .map(str::to_string);
    replay(&branch, path, &mut out);
    if broken {
        drop_leading_answers(path, &mut out);
    }
    Ok(out)
}

fn str_field<'a>(e: &'a Entry, key: &str) -> Option<&'a str> {
    e.obj.get(key).and_then(Value::as_str)
}

/// The JSON objects of the file's lines; bad lines become warnings that name them. Lines are
/// split on bytes, so one line of invalid UTF-8 costs only that line.
fn parse_lines(bytes: &[u8], path: &Path, warnings: &mut Vec<String>) -> Vec<Entry> {
    let mut entries = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
    let last_index = lines.iter().rposition(|l| !blank(l));
    // A last line with no newline after it may have been cut by a crash mid-write.
    let unterminated = !bytes.ends_with(b"\n");
    for (i, line) in lines.iter().enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if blank(line) {
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|_| "is not valid UTF-8")
            .and_then(|t| serde_json::from_str::<Value>(t).map_err(|_| "is not valid JSON"));
        match parsed {
            Ok(Value::Object(obj)) => entries.push(Entry { line: i + 1, obj }),
            _ if Some(i) == last_index && unterminated => warnings.push(format!(
                "session file {}: skipped a torn last line {} ({} bytes), probably cut by a \
                 crash; every complete entry before it was kept",
                path.display(),
                i + 1,
                line.len()
            )),
            Ok(_) => warnings.push(format!(
                "session file {}: skipped line {}: it is not a JSON object",
                path.display(),
                i + 1
            )),
            Err(why) => warnings.push(format!(
                "session file {}: skipped malformed line {}: it {why}; the entries around it \
                 were kept",
                path.display(),
                i + 1
            )),
        }
    }
    entries
}

/// The entries from the root to the last entry with an id, following `parentId` (pi's
/// active branch), and whether the chain was broken (a cycle, or a parent that is missing).
fn active_branch<'a>(
    body: &'a [Entry],
    path: &Path,
    warnings: &mut Vec<String>,
) -> (Vec<&'a Entry>, bool) {
    let mut by_id: HashMap<&str, &Entry> = HashMap::new();
    for e in body {
        if let Some(id) = str_field(e, "id") {
            // The later entry wins, as in pi's id map; the earlier one is named.
            if let Some(earlier) = by_id.insert(id, e) {
                warnings.push(format!(
                    "session file {}: lines {} and {} have the same entry id {id}; line {} is \
                     off the active branch",
                    path.display(),
                    earlier.line,
                    e.line,
                    earlier.line
                ));
            }
        }
    }
    let mut chain: Vec<&Entry> = Vec::new();
    let mut seen: HashSet<*const Entry> = HashSet::new();
    let mut broken = false;
    let mut cursor = body.iter().rev().find(|e| str_field(e, "id").is_some());
    while let Some(e) = cursor {
        if !seen.insert(e as *const Entry) {
            warnings.push(format!(
                "session file {}: a parentId cycle at line {}; the branch was cut there",
                path.display(),
                e.line
            ));
            broken = true;
            break;
        }
        chain.push(e);
        cursor = match str_field(e, "parentId") {
            Some(p) => match by_id.get(p) {
                Some(parent) => Some(*parent),
                None => {
                    warnings.push(format!(
                        "session file {}: line {} names a parent {p} that is not in the file; \
                         the branch starts there",
                        path.display(),
                        e.line
                    ));
                    broken = true;
                    None
                }
            },
            None => None,
        };
    }
    chain.reverse();
    (chain, broken)
}

/// A broken branch can start mid-exchange; a transcript starts with what the user said, so
/// answers before the first user message are dropped (and named).
fn drop_leading_answers(path: &Path, out: &mut LoadedSession) {
    let first_user = out
        .messages
        .iter()
        .position(|m| {
            matches!(
                m,
                Message::User(_) | Message::System(_) | Message::Custom(_)
            )
        })
        .unwrap_or(out.messages.len());
    if first_user > 0 {
        out.messages.drain(..first_user);
        out.warnings.push(format!(
            "session file {}: dropped {first_user} message(s) at the start of the broken \
             branch that answer nothing the branch holds",
            path.display()
        ));
    }
}

/// Messages and settings of the branch, in order.
fn replay(branch: &[&Entry], path: &Path, out: &mut LoadedSession) {
    let mut skipped_kinds: Vec<String> = Vec::new();
    for e in branch {
        match str_field(e, "type").unwrap_or_default() {
            "message" => {
                let Some(m) = e.obj.get("message") else {
                    out.warnings.push(format!(
                        "session file {}: skipped line {}: a message entry without a message",
                        path.display(),
                        e.line
                    ));
                    continue;
                };
                let mut m = m.clone();
                // Version 2 called the custom role `hookMessage`.
                if m.get("role").and_then(Value::as_str) == Some("hookMessage") {
                    m["role"] = json!("custom");
                }
                match serde_json::from_value::<Message>(m) {
                    Ok(msg) => out.messages.push(msg),
                    Err(err) => out.warnings.push(format!(
                        "session file {}: skipped the unreadable message at line {}: {err}",
                        path.display(),
                        e.line
                    )),
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

    fn texts(s: &LoadedSession) -> Vec<String> {
        s.messages
            .iter()
            .map(|m| m.content_json().to_string())
            .collect()
    }

    fn assistant(id: &str, parent: &str, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent,
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                           "api": "x", "provider": "x", "model": "x", "stopReason": "stop",
                           "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                           "timestamp": 2}})
    }

    #[test]
    fn a_bad_line_in_the_middle_is_named_and_the_rest_is_kept() {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let mut bytes = Vec::new();
        for l in [
            json!({"type": "session", "version": 3, "id": "s"}),
            user("a", None, "one"),
        ] {
            bytes.extend(format!("{l}\n").into_bytes());
        }
        bytes.extend(b"{\"type\":\"message\",\"id\":\"\xff\xfe\"}\n");
        bytes.extend(b"not json\n");
        bytes.extend(format!("{}\n", user("b", Some("a"), "two")).into_bytes());
        std::fs::write(f.path(), bytes).expect("write");
        let s = load(f.path()).expect("load");
        let t = texts(&s);
        assert!(
            t.len() == 2 && t[0].contains("one") && t[1].contains("two"),
            "{t:?}"
        );
        assert!(s
            .warnings
            .iter()
            .any(|w| w.contains("line 3") && w.contains("UTF-8")));
        assert!(s
            .warnings
            .iter()
            .any(|w| w.contains("line 4") && w.contains("JSON")));
    }

    #[test]
    fn a_tail_torn_inside_a_character_is_skipped_with_a_warning() {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let mut bytes = format!(
            "{}\n{}\n",
            json!({"type": "session", "version": 3, "id": "s"}),
            user("a", None, "one")
        )
        .into_bytes();
        let torn = user("b", Some("a"), "é").to_string().into_bytes();
        let cut = torn.iter().position(|b| *b == 0xc3).expect("é") + 1;
        bytes.extend(&torn[..cut]);
        std::fs::write(f.path(), bytes).expect("write");
        let s = load(f.path()).expect("load");
        let t = texts(&s);
        assert!(t.len() == 1 && t[0].contains("one"), "{t:?}");
        assert!(s.warnings.iter().any(|w| w.contains("torn last line 3")));
    }

    #[test]
    fn a_cycle_never_makes_the_transcript_start_with_an_answer() {
        // a1 and u2 name each other as parents; walking up from u2 reaches a1 first.
        let f = write(&[
            json!({"type": "session", "version": 3, "id": "s"}),
            user("u1", None, "q1"),
            assistant("a1", "u2", "r1"),
            user("u2", Some("a1"), "q2"),
        ]);
        let s = load(f.path()).expect("load");
        assert!(
            matches!(s.messages.first(), Some(Message::User(_))),
            "{:?}",
            texts(&s)
        );
        assert!(s.warnings.iter().any(|w| w.contains("parentId cycle")));
        assert!(
            s.warnings.iter().any(|w| w.contains("dropped 1 message")),
            "{:?}",
            s.warnings
        );
        assert_eq!(texts(&s).len(), 1);
        assert!(texts(&s)[0].contains("q2"));
    }

    #[test]
    fn a_duplicate_id_and_a_newer_version_are_reported() {
        let f = write(&[
            json!({"type": "session", "version": 9, "id": "s"}),
            user("a", None, "one"),
            user("a", None, "again"),
        ]);
        let s = load(f.path()).expect("load");
        assert!(s
            .warnings
            .iter()
            .any(|w| w.contains("lines 2 and 3") && w.contains("same entry id a")));
        assert!(s.warnings.iter().any(|w| w.contains("format version 9")));
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
