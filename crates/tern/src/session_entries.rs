//! A session's entries as JSON (RPC's `get_entries`, `get_tree`, `get_fork_messages`), and
//! new sessions cut from its branch (RPC's `fork` and `clone`, interactive `/fork`).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use tern_ai::environment::Environment;

use crate::runtime::Runtime;

/// The entries of a session file, header first: lines that do not parse are left out.
/// A missing file has none: a new session has no file until its first entry.
pub fn read(path: &Path) -> std::io::Result<Vec<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect())
}

/// The entries without the header.
pub fn body(all: &[Value]) -> Vec<Value> {
    all.iter()
        .filter(|e| e["type"] != "session")
        .cloned()
        .collect()
}

fn id_of(e: &Value) -> Option<&str> {
    e["id"].as_str()
}

/// The entries after `since` (all of them without it); an unknown `since` is an error.
pub fn since(entries: Vec<Value>, since: Option<&str>) -> Result<Vec<Value>, String> {
    let Some(since) = since else {
        return Ok(entries);
    };
    let at = entries
        .iter()
        .position(|e| id_of(e) == Some(since))
        .ok_or_else(|| format!("Entry not found: {since} (pass an id from get_entries)"))?;
    Ok(entries.into_iter().skip(at + 1).collect())
}

/// The entries from the root to `leaf`, root first.
pub fn branch(entries: &[Value], leaf: Option<&str>) -> Vec<Value> {
    let by_id: HashMap<&str, &Value> = entries
        .iter()
        .filter_map(|e| Some((id_of(e)?, e)))
        .collect();
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut at = leaf;
    while let Some(id) = at {
        let Some(e) = by_id.get(id) else { break };
        if !seen.insert(id) {
            break;
        }
        path.push((*e).clone());
        at = e["parentId"].as_str();
    }
    path.reverse();
    path
}

/// The text of a user message entry.
pub fn user_text(e: &Value) -> Option<String> {
    let m = &e["message"];
    if e["type"] != "message" || m["role"] != "user" {
        return None;
    }
    Some(content_text(&m["content"], ""))
}

/// The text of a message's JSON content: a string, or its text blocks joined by `sep` (pi's
/// `contentText`, on an entry as the session file holds it).
pub fn content_text(content: &Value, sep: &str) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(sep),
        _ => String::new(),
    }
}

/// `get_fork_messages`: the user messages of the branch, `{entryId, text}`.
pub fn fork_messages(branch: &[Value]) -> Vec<Value> {
    branch
        .iter()
        .filter_map(|e| Some(json!({"entryId": id_of(e)?, "text": user_text(e)?})))
        .collect()
}

/// `get_tree`: `{entry, children, label?, labelTimestamp?}` nodes; entries whose parent is
/// missing are roots. Labels come from `label` entries (the last one for a target wins).
pub fn tree(entries: &[Value]) -> Vec<Value> {
    let mut labels: HashMap<&str, (&Value, &Value)> = HashMap::new();
    for e in entries.iter().filter(|e| e["type"] == "label") {
        if let Some(target) = e["targetId"].as_str() {
            labels.insert(target, (&e["label"], &e["timestamp"]));
        }
    }
    let ids: HashSet<&str> = entries.iter().filter_map(id_of).collect();
    let mut children: HashMap<&str, Vec<&Value>> = HashMap::new();
    let mut roots = Vec::new();
    for e in entries {
        match e["parentId"].as_str().filter(|p| ids.contains(p)) {
            Some(p) => children.entry(p).or_default().push(e),
            None => roots.push(e),
        }
    }
    fn node(
        e: &Value,
        children: &HashMap<&str, Vec<&Value>>,
        labels: &HashMap<&str, (&Value, &Value)>,
        depth: usize,
    ) -> Value {
        let id = id_of(e).unwrap_or_default();
        // A cycle in parent links cannot nest forever.
        let kids: Vec<Value> = if depth > 10_000 {
            Vec::new()
        } else {
            children
                .get(id)
                .map(|c| {
                    c.iter()
                        .map(|k| node(k, children, labels, depth + 1))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut n = Map::new();
        n.insert("entry".into(), e.clone());
        n.insert("children".into(), Value::Array(kids));
        if let Some((label, ts)) = labels.get(id).filter(|(l, _)| !l.is_null()) {
            n.insert("label".into(), (*label).clone());
            n.insert("labelTimestamp".into(), (*ts).clone());
        }
        Value::Object(n)
    }
    roots
        .into_iter()
        .map(|e| node(e, &children, &labels, 0))
        .collect()
}

/// The entries of `rt`'s session: its file's, or those kept in memory (`--no-session`);
/// none before the first entry.
pub fn of_session(rt: &Runtime) -> Result<Vec<Value>, String> {
    match session_path(rt) {
        Some(p) => read(&p).map_err(|e| format!("cannot read session {}: {e}", p.display())),
        None => Ok(rt
            .recorder
            .lock()
            .session()
            .memory_entries()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
    }
}

/// The file of `rt`'s session, when it has one.
pub fn session_path(rt: &Runtime) -> Option<PathBuf> {
    rt.recorder.lock().session().path().map(Path::to_path_buf)
}

/// The id of the entry new ones attach to: the last one written.
pub fn leaf(body: &[Value]) -> Value {
    body.iter()
        .rev()
        .find_map(|e| e["id"].as_str())
        .map_or(Value::Null, |id| json!(id))
}

/// The active branch of `rt`'s session, root first.
pub fn active_branch(rt: &Runtime) -> Result<Vec<Value>, String> {
    let body = body(&of_session(rt)?);
    let leaf = leaf(&body);
    Ok(branch(&body, leaf.as_str()))
}

/// The file a fork or a clone of `rt`'s session starts from.
fn file_for_branching(rt: &Runtime) -> Result<PathBuf, String> {
    session_path(rt).filter(|p| p.exists()).ok_or_else(|| {
        "Nothing to fork yet: the session has no file (start tern without --no-session and \
         send a prompt)"
            .into()
    })
}

/// Forks `rt`'s session before the user message `entry_id`: a new session holding the
/// branch up to it becomes the current one; returns that message's text (to edit and send
/// again).
pub fn fork(rt: &Runtime, entry_id: &str) -> Result<String, String> {
    let source = file_for_branching(rt)?;
    let body = body(&of_session(rt)?);
    let entry = body.iter().find(|e| e["id"] == entry_id).ok_or_else(|| {
        format!("Entry not found: {entry_id} (pass an entryId from get_fork_messages)")
    })?;
    let text = user_text(entry).ok_or_else(|| {
        format!("Entry {entry_id} is not a user message; fork from one of get_fork_messages")
    })?;
    let kept = branch(&body, entry["parentId"].as_str());
    let path = write_session(&source, &rt.cwd, &kept)?;
    rt.open_session(&path)?;
    Ok(text)
}

/// Clones `rt`'s active branch into a new session, which becomes the current one.
pub fn clone_session(rt: &Runtime) -> Result<(), String> {
    let source = file_for_branching(rt)?;
    let path = write_session(&source, &rt.cwd, &active_branch(rt)?)?;
    rt.open_session(&path)
}

/// Writes a new session next to `source` holding `entries` (a branch, root first), its
/// header naming `source` as the parent; returns the new file.
pub fn write_session(source: &Path, cwd: &Path, entries: &[Value]) -> Result<PathBuf, String> {
    let env = Environment::system();
    let id = env.uuid();
    let now = tern_session::iso_time(env.now_ms());
    let folder = source.parent().unwrap_or(Path::new("."));
    let path = folder.join(format!("{}_{id}.jsonl", now.replace([':', '.'], "-")));
    let header = json!({
        "type": "session",
        "version": tern_session::VERSION,
        "id": id,
        "timestamp": now,
        "cwd": cwd.to_string_lossy(),
        "parentSession": source.to_string_lossy(),
    });
    let mut text = header.to_string();
    text.push('\n');
    for e in entries {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create_new(&path)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    write().map_err(|e| format!("cannot write session {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(id: &str, parent: Option<&str>, text: &str) -> Value {
        json!({"type": "message", "id": id, "parentId": parent,
               "message": {"role": "user", "content": text}})
    }

    #[test]
    fn branches_trees_and_cursors() {
        let all = vec![
            e("a", None, "one"),
            e("b", Some("a"), "two"),
            e("c", Some("a"), "three"),
            json!({"type": "label", "id": "l", "parentId": "c", "targetId": "b", "label": "x", "timestamp": "t"}),
        ];
        let b = branch(&all, Some("c"));
        assert_eq!(
            fork_messages(&b),
            vec![
                json!({"entryId": "a", "text": "one"}),
                json!({"entryId": "c", "text": "three"})
            ]
        );
        let t = tree(&all);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0]["children"][0]["label"], "x");
        assert_eq!(t[0]["children"][1]["children"][0]["entry"]["id"], "l");
        assert_eq!(since(all.clone(), Some("b")).map(|v| v.len()), Ok(2));
        assert!(since(all, Some("zz")).is_err());
    }
}
