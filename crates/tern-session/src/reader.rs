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
    /// Messages on the active branch, root first; after a compaction, pi's context: its
    /// summary (as the user message pi sends), the kept messages, and what followed.
    pub messages: Vec<Message>,
    /// The entry id of each of [`messages`](Self::messages) (the compaction's for its
    /// summary; empty for a version 1 file's entries, which have none).
    pub message_ids: Vec<String>,
    /// The last compaction on the branch, if any (boxed: most sessions have none).
    pub compaction: Option<Box<CompactionSummary>>,
    /// The id of the last entry on the branch (the leaf new entries attach to).
    pub leaf: Option<String>,
    /// The last `model_change` on the branch: (provider, model id).
    pub model: Option<(String, String)>,
    /// The last `thinking_level_change` on the branch.
    pub thinking_level: Option<String>,
    /// Problems found while reading (torn or malformed lines, unsupported entries).
    pub warnings: Vec<String>,
}

/// The last `compaction` entry of a branch: what the next compaction builds on.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct CompactionSummary {
    /// The entry id.
    pub id: String,
    /// The summary text.
    pub summary: String,
    /// The id of the first entry kept after it.
    pub first_kept_entry_id: String,
    /// Its `details` (pi's `readFiles` / `modifiedFiles`), unless an extension wrote it.
    pub details: Option<Value>,
    /// How many of the context's messages were kept from before it (their usage predates
    /// it).
    pub kept_messages: usize,
    /// The ids of the entries kept from before it.
    kept_ids: Vec<String>,
}

/// The text pi puts before a compaction summary in the user message it sends.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// The text pi puts after a compaction summary.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";

/// The user message pi sends for a compaction summary (its `compactionSummary` message as
/// the model sees it), stamped `timestamp_ms`.
pub fn compaction_summary_message(summary: &str, timestamp_ms: i64) -> Message {
    let text = format!("{COMPACTION_SUMMARY_PREFIX}{summary}{COMPACTION_SUMMARY_SUFFIX}");
    let mut value = json!({"role": "user", "content": [{"type": "text", "text": text}]});
    value["timestamp"] = json!(timestamp_ms);
    serde_json::from_value(value).unwrap_or_else(|_| Message::user_text(text))
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
    let context = context_entries(&branch, &mut out);
    replay(&branch, &context, path, &mut out);
    if broken {
        drop_leading_answers(path, &mut out);
    }
    if let Some(c) = out.compaction.as_mut() {
        let kept: HashSet<&str> = c.kept_ids.iter().map(String::as_str).collect();
        c.kept_messages = out
            .message_ids
            .iter()
            .filter(|id| kept.contains(id.as_str()))
            .count();
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
        let ids = first_user.min(out.message_ids.len());
        out.message_ids.drain(..ids);
        out.warnings.push(format!(
            "session file {}: dropped {first_user} message(s) at the start of the broken \
             branch that answer nothing the branch holds",
            path.display()
        ));
    }
}

/// A readable compaction entry's summary, or None (one without a summary or a first kept
/// entry is reported as not replayed).
fn compaction_of(e: &Entry) -> Option<CompactionSummary> {
    let from_hook = e.obj.get("fromHook").and_then(Value::as_bool) == Some(true);
    Some(CompactionSummary {
        id: str_field(e, "id")?.to_string(),
        summary: str_field(e, "summary")?.to_string(),
        first_kept_entry_id: str_field(e, "firstKeptEntryId")?.to_string(),
        details: e.obj.get("details").filter(|_| !from_hook).cloned(),
        kept_messages: 0,
        kept_ids: Vec::new(),
    })
}

/// The entries of the model's context (pi's `buildContextEntries`): without a compaction
/// the branch; with one, the last compaction, the entries from its first kept one up to it
/// (system messages aside), and every entry after it.
fn context_entries<'a>(branch: &[&'a Entry], out: &mut LoadedSession) -> Vec<&'a Entry> {
    let last = branch.iter().enumerate().rev().find_map(|(i, e)| {
        (str_field(e, "type") == Some("compaction"))
            .then(|| compaction_of(e).map(|c| (i, c)))
            .flatten()
    });
    let Some((at, mut compaction)) = last else {
        return branch.to_vec();
    };
    let mut context = vec![branch[at]];
    let kept_from = branch[..at]
        .iter()
        .position(|e| str_field(e, "id") == Some(compaction.first_kept_entry_id.as_str()));
    if let Some(from) = kept_from {
        context.extend(branch[from..at].iter().filter(|e| {
            !(str_field(e, "type") == Some("message")
                && e.obj
                    .get("message")
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_str)
                    == Some("system"))
        }));
    }
    compaction.kept_ids = context[1..]
        .iter()
        .filter_map(|e| str_field(e, "id"))
        .map(str::to_string)
        .collect();
    context.extend(&branch[at + 1..]);
    out.compaction = Some(Box::new(compaction));
    context
}

/// Settings of the whole branch, then the messages of its context, in order.
fn replay(branch: &[&Entry], context: &[&Entry], path: &Path, out: &mut LoadedSession) {
    for e in branch {
        match str_field(e, "type").unwrap_or_default() {
            "model_change" => {
                if let (Some(p), Some(m)) = (str_field(e, "provider"), str_field(e, "modelId")) {
                    out.model = Some((p.to_string(), m.to_string()));
                }
            }
            "thinking_level_change" => {
                out.thinking_level = str_field(e, "thinkingLevel").map(str::to_string);
            }
            _ => {}
        }
    }
    let newest_compaction = out.compaction.as_ref().map(|c| c.id.clone());
    let mut skipped_kinds: Vec<String> = Vec::new();
    for e in context {
        match str_field(e, "type").unwrap_or_default() {
            "compaction" if compaction_of(e).is_some() => {
                // Only the newest compaction speaks; older ones in its kept range are silent.
                if str_field(e, "id") == newest_compaction.as_deref() {
                    let system = e.obj.get("systemMessage").cloned();
                    if let Some(Ok(m)) = system.map(serde_json::from_value::<Message>) {
                        out.messages.push(m);
                        out.message_ids
                            .push(str_field(e, "id").unwrap_or_default().to_string());
                    }
                    let summary = str_field(e, "summary").unwrap_or_default();
                    let stamp = str_field(e, "timestamp")
                        .and_then(crate::timestamp::parse_iso_ms)
                        .unwrap_or_default();
                    out.messages
                        .push(compaction_summary_message(summary, stamp));
                    out.message_ids
                        .push(str_field(e, "id").unwrap_or_default().to_string());
                }
            }
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
                    Ok(msg) => {
                        out.messages.push(msg);
                        out.message_ids
                            .push(str_field(e, "id").unwrap_or_default().to_string());
                    }
                    Err(err) => out.warnings.push(format!(
                        "session file {}: skipped the unreadable message at line {}: {err}",
                        path.display(),
                        e.line
                    )),
                }
            }
            "model_change" | "thinking_level_change" => {}
            "custom" | "label" | "session_info" | "usage" | "context_edit" => {}
            other => {
                if !skipped_kinds.iter().any(|k| k == other) {
                    skipped_kinds.push(other.to_string());
                }
            }
        }
    }
    // Context edits that omit a message (pi's recovery omission) take it out of the context.
    let omitted: HashSet<&str> = context
        .iter()
        .filter(|e| str_field(e, "type") == Some("context_edit"))
        .filter(|e| e.obj.get("replacement").is_some_and(Value::is_null))
        .filter_map(|e| str_field(e, "targetId"))
        .collect();
    if !omitted.is_empty() && out.message_ids.len() == out.messages.len() {
        let ids = std::mem::take(&mut out.message_ids);
        let messages = std::mem::take(&mut out.messages);
        for (id, m) in ids.into_iter().zip(messages) {
            if !omitted.contains(id.as_str()) {
                out.message_ids.push(id);
                out.messages.push(m);
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

    /// What `load` makes of a file of `lines`.
    fn load_lines(lines: &[Value]) -> LoadedSession {
        let f = write(lines);
        load(f.path()).expect("load")
    }

    /// The first line of a version 3 file.
    fn header() -> Value {
        json!({"type": "session", "version": 3, "id": "s"})
    }

    /// Whether one of the load's warnings satisfies `pred`.
    fn warned(s: &LoadedSession, pred: impl Fn(&String) -> bool) -> bool {
        s.warnings.iter().any(pred)
    }

    /// Whether one of the load's warnings contains `text`.
    fn warns(s: &LoadedSession, text: &str) -> bool {
        warned(s, |w| w.contains(text))
    }

    fn user(id: &str, parent: Option<&str>, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2024-12-03T14:00:00.000Z",
               "message": {"role": "user", "content": text, "timestamp": 1}})
    }

    #[test]
    fn load_follows_the_branch_of_the_last_entry() {
        let s = load_lines(&[
            json!({"type": "session", "version": 3, "id": "s1", "cwd": "/p"}),
            user("a", None, "root"),
            user("b", Some("a"), "abandoned branch"),
            user("c", Some("a"), "active branch"),
            json!({"type": "thinking_level_change", "id": "d", "parentId": "c", "thinkingLevel": "high"}),
        ]);
        assert_eq!(texts(&s), ["\"root\"", "\"active branch\""]);
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
        let s = load_lines(&[
            header(),
            json!({"type": "compaction", "id": "a", "parentId": "b"}),
            json!({"type": "branch_summary", "id": "b", "parentId": "a"}),
        ]);
        assert!(warns(&s, "parentId cycle"));
        assert!(warned(&s, |w| w.contains("compaction")
            && w.contains("branch_summary")));
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
        for l in [header(), user("a", None, "one")] {
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
        assert!(warned(&s, |w| w.contains("line 3") && w.contains("UTF-8")));
        assert!(warned(&s, |w| w.contains("line 4") && w.contains("JSON")));
    }

    #[test]
    fn a_tail_torn_inside_a_character_is_skipped_with_a_warning() {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let mut bytes = format!("{}\n{}\n", header(), user("a", None, "one")).into_bytes();
        let torn = user("b", Some("a"), "é").to_string().into_bytes();
        let cut = torn.iter().position(|b| *b == 0xc3).expect("é") + 1;
        bytes.extend(&torn[..cut]);
        std::fs::write(f.path(), bytes).expect("write");
        let s = load(f.path()).expect("load");
        let t = texts(&s);
        assert!(t.len() == 1 && t[0].contains("one"), "{t:?}");
        assert!(warns(&s, "torn last line 3"));
    }

    #[test]
    fn a_cycle_never_makes_the_transcript_start_with_an_answer() {
        // a1 and u2 name each other as parents; walking up from u2 reaches a1 first.
        let s = load_lines(&[
            header(),
            user("u1", None, "q1"),
            assistant("a1", "u2", "r1"),
            user("u2", Some("a1"), "q2"),
        ]);
        assert!(
            matches!(s.messages.first(), Some(Message::User(_))),
            "{:?}",
            texts(&s)
        );
        assert!(warns(&s, "parentId cycle"));
        assert!(warns(&s, "dropped 1 message"), "{:?}", s.warnings);
        assert_eq!(texts(&s).len(), 1);
        assert!(texts(&s)[0].contains("q2"));
    }

    #[test]
    fn a_duplicate_id_and_a_newer_version_are_reported() {
        let s = load_lines(&[
            json!({"type": "session", "version": 9, "id": "s"}),
            user("a", None, "one"),
            user("a", None, "again"),
        ]);
        assert!(warned(&s, |w| w.contains("lines 2 and 3")
            && w.contains("same entry id a")));
        assert!(warns(&s, "format version 9"));
    }

    #[test]
    fn a_compaction_replays_its_summary_and_the_kept_messages() {
        let s = load_lines(&[
            header(),
            user("a", None, "old question"),
            assistant("b", "a", "old answer"),
            user("c", Some("b"), "kept question"),
            assistant("d", "c", "kept answer"),
            json!({"type": "compaction", "id": "e", "parentId": "d", "timestamp": "2024-12-03T14:00:00.000Z",
                   "summary": "S", "firstKeptEntryId": "c", "tokensBefore": 10,
                   "details": {"readFiles": ["x"], "modifiedFiles": []}}),
            user("f", Some("e"), "after"),
        ]);
        let t = texts(&s);
        assert_eq!(t.len(), 4, "{t:?}");
        assert!(
            t[0].contains("compacted into the following summary:\\n\\n<summary>\\nS\\n</summary>"),
            "{t:?}"
        );
        assert!(
            t[1].contains("kept question") && t[3].contains("after"),
            "{t:?}"
        );
        assert_eq!(s.message_ids, ["e", "c", "d", "f"]);
        let stamp = serde_json::to_value(&s.messages[0]).expect("json")["timestamp"].clone();
        assert_eq!(stamp, json!(1_733_234_400_000i64));
        let c = s.compaction.expect("compaction");
        assert_eq!((c.id.as_str(), c.summary.as_str()), ("e", "S"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
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
