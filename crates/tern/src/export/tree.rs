//! The session tree: every message entry, branches and all, as pi's `/tree` shows them. A run
//! of entries without a fork stays at one level; at a fork each branch starts a line of that
//! level and goes on in a list nested below it. An entry on
//! the active branch links to its message below; an entry of another branch holds its message
//! folded, so every branch can be read without a script.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::escape::push;

/// What the tree says of a message: its role and the start of its text.
fn label(m: &Value) -> String {
    let role = m["role"].as_str().unwrap_or("entry");
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_string),
                Some("toolCall") => b["name"].as_str().map(|n| format!("[{n}]")),
                _ => None,
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let role = match role {
        "toolResult" => format!("result: {}", m["toolName"].as_str().unwrap_or("tool")),
        "bashExecution" => format!("$ {}", m["command"].as_str().unwrap_or_default()),
        r => r.to_string(),
    };
    let short = crate::terminal_text::truncate(first.trim(), 80);
    if short.is_empty() {
        role
    } else {
        format!("{role}: {short}")
    }
}

/// The tree of `entries` (the file's, header left out); `active` holds the ids of the
/// active branch; `message` renders a message folded under an off-branch node.
pub fn render_tree(
    out: &mut String,
    entries: &[Value],
    active: &HashSet<String>,
    message: &dyn Fn(&mut String, &Value),
) {
    let ids: HashSet<&str> = entries.iter().filter_map(|e| e["id"].as_str()).collect();
    let mut children: HashMap<Option<&str>, Vec<&Value>> = HashMap::new();
    for e in entries {
        let Some(id) = e["id"].as_str() else { continue };
        // A parent the file lacks (or the entry itself) makes a root, as pi's tree does.
        let parent = e["parentId"]
            .as_str()
            .filter(|p| *p != id && ids.contains(p));
        children.entry(parent).or_default().push(e);
    }
    let mut seen = HashSet::new();
    let mut inner = String::new();
    let forks = render_level(&mut inner, &children, None, active, message, &mut seen);
    out.push_str("<details id=\"session-tree\"");
    if forks {
        out.push_str(" open");
    }
    out.push_str("><summary>Session tree");
    if forks {
        out.push_str(" (branches)");
    }
    out.push_str("</summary>\n");
    out.push_str(&inner);
    out.push_str("</details>\n");
}

/// The message entries that show under `parent`: its children, with non-message entries
/// (model changes, records) passed through to theirs.
fn shown_children<'a>(
    children: &HashMap<Option<&'a str>, Vec<&'a Value>>,
    parent: Option<&'a str>,
    seen: &mut HashSet<&'a str>,
) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut stack: Vec<&Value> = children.get(&parent).cloned().unwrap_or_default();
    stack.reverse();
    while let Some(e) = stack.pop() {
        let Some(id) = e["id"].as_str() else { continue };
        if !seen.insert(id) {
            continue;
        }
        if e["type"] == "message" {
            out.push(e);
        } else {
            let mut next = children.get(&Some(id)).cloned().unwrap_or_default();
            next.reverse();
            stack.extend(next);
        }
    }
    out
}

/// Renders the entries under `parent`; true when a fork was among them.
fn render_level<'a>(
    out: &mut String,
    children: &HashMap<Option<&'a str>, Vec<&'a Value>>,
    parent: Option<&'a str>,
    active: &HashSet<String>,
    message: &dyn Fn(&mut String, &Value),
    seen: &mut HashSet<&'a str>,
) -> bool {
    let mut level = shown_children(children, parent, seen);
    if level.is_empty() {
        return false;
    }
    out.push_str("<ul class=\"tree\">\n");
    // A linear run stays on this level; a fork nests each branch.
    while level.len() == 1 {
        let e = level[0];
        node(out, e, active, message);
        out.push_str("</li>\n");
        level = shown_children(children, e["id"].as_str(), seen);
    }
    let mut forks = level.len() > 1;
    for e in level {
        node(out, e, active, message);
        forks |= render_level(out, children, e["id"].as_str(), active, message, seen);
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    forks
}

fn node(
    out: &mut String,
    e: &Value,
    active: &HashSet<String>,
    message: &dyn Fn(&mut String, &Value),
) {
    let id = e["id"].as_str().unwrap_or_default();
    let text = label(&e["message"]);
    if active.contains(id) {
        out.push_str("<li class=\"active\"><a href=\"#entry-");
        push(out, id);
        out.push_str("\">");
        push(out, &text);
        out.push_str("</a>");
    } else {
        out.push_str("<li class=\"off-branch\"><details><summary>");
        push(out, &text);
        out.push_str("</summary>\n");
        message(out, &e["message"]);
        out.push_str("</details>");
    }
}
