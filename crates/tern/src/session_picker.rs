//! `-r` / `--resume` without an id: this directory's recent sessions, newest first, each with
//! its name (or first prompt), age and message count. On a terminal the user picks one by
//! number; otherwise the list is the error message, with the command that opens each.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::session_choice::{resume_command, Store};
use crate::usage_error::UsageError;

/// How many sessions the list shows.
const SHOWN: usize = 20;

/// What the list says of one session file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The file.
    pub path: PathBuf,
    /// The header's id.
    pub id: String,
    /// The last `session_info` name, else the first prompt's first line.
    pub title: String,
    /// The `message` entries.
    pub messages: usize,
}

/// The text of a user message's content (a string, or its text parts).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Reads what the list shows of `path` (None: no session header).
pub fn summary(path: &Path) -> Option<Summary> {
    let file = std::fs::File::open(path).ok()?;
    let mut lines = std::io::BufReader::new(file).lines().map_while(Result::ok);
    let header: Value = serde_json::from_str(&lines.next()?).ok()?;
    if header["type"] != "session" {
        return None;
    }
    let (mut name, mut prompt, mut messages) = (None, None, 0);
    for line in lines {
        let Ok(entry) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match entry["type"].as_str() {
            Some("session_info") => name = entry["name"].as_str().map(str::to_string),
            Some("message") => {
                messages += 1;
                if prompt.is_none() && entry["message"]["role"] == "user" {
                    prompt = Some(text_of(&entry["message"]["content"]));
                }
            }
            _ => {}
        }
    }
    let title = name
        .filter(|n| !n.trim().is_empty())
        .or(prompt)
        .unwrap_or_default();
    let title = title.lines().next().unwrap_or_default().trim();
    let title = crate::terminal_text::truncate(title, 60);
    Some(Summary {
        path: path.to_path_buf(),
        id: header["id"].as_str().unwrap_or_default().to_string(),
        title: if title.is_empty() {
            "(no prompt yet)".into()
        } else {
            title
        },
        messages,
    })
}

/// `modified` as pi's session list words an age: `just now`, `5m ago`, `3h ago`, `2d ago`.
fn age(path: &Path) -> String {
    let secs = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map_or(0, |d| d.as_secs());
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

/// The numbered lines of the list.
pub fn lines(sessions: &[Summary]) -> Vec<String> {
    sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{:>3}. {}  {}  ({} messages, {})",
                i + 1,
                s.id,
                s.title,
                s.messages,
                age(&s.path)
            )
        })
        .collect()
}

/// The session `-r` opens: picked on a terminal, else an error listing them.
pub fn pick(store: &Store, cwd: &Path) -> Result<PathBuf, UsageError> {
    let sessions: Vec<Summary> = store
        .sessions(cwd)
        .iter()
        .filter_map(|p| summary(p))
        .take(SHOWN)
        .collect();
    if sessions.is_empty() {
        return Err(UsageError(format!(
            "-r: no sessions of {} to resume (looked in {})",
            cwd.display(),
            store.folder(cwd).display()
        )));
    }
    let listed = lines(&sessions);
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let open = resume_command(&sessions[0].path, &sessions[0].id, store.root());
        return Err(UsageError(format!(
            "-r without an id picks a session on a terminal; this directory's sessions, \
             newest first:\n{}\nopen one by its id: {open}",
            listed.join("\n")
        )));
    }
    let mut err = std::io::stderr();
    let _ = writeln!(err, "Sessions of {}, newest first:", cwd.display());
    for l in &listed {
        let _ = writeln!(err, "{l}");
    }
    let mut input = std::io::stdin().lock();
    loop {
        let _ = write!(
            err,
            "Resume which? [1-{}, Enter: 1, q: cancel] ",
            sessions.len()
        );
        let _ = err.flush();
        let mut answer = String::new();
        if input.read_line(&mut answer).unwrap_or(0) == 0 {
            return Err(UsageError("-r: no session picked".into()));
        }
        match answer.trim() {
            "" => return Ok(sessions[0].path.clone()),
            "q" | "Q" => return Err(UsageError("-r: no session picked".into())),
            n => match n.parse::<usize>() {
                Ok(i) if (1..=sessions.len()).contains(&i) => {
                    return Ok(sessions[i - 1].path.clone())
                }
                _ => {
                    let _ = writeln!(err, "{n} is not one of 1-{}", sessions.len());
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_takes_the_name_else_the_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let header = r#"{"type":"session","version":3,"id":"abc-1","timestamp":"t","cwd":"/p"}"#;
        let user = r#"{"type":"message","id":"1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"Fix the parser\nplease"}],"timestamp":0}}"#;
        let answer = r#"{"type":"message","id":"2","parentId":"1","timestamp":"t","message":{"role":"assistant","content":[],"timestamp":0}}"#;
        std::fs::write(&path, format!("{header}\n{user}\n{answer}\n")).unwrap();
        let s = summary(&path).unwrap();
        assert_eq!(
            (s.id.as_str(), s.title.as_str(), s.messages),
            ("abc-1", "Fix the parser", 2)
        );
        let info = r#"{"type":"session_info","id":"3","parentId":"2","timestamp":"t","name":"parser work"}"#;
        std::fs::write(&path, format!("{header}\n{user}\n{answer}\n{info}\n")).unwrap();
        assert_eq!(summary(&path).unwrap().title, "parser work");
        std::fs::write(&path, "not a session\n").unwrap();
        assert_eq!(summary(&path), None);
    }
}
