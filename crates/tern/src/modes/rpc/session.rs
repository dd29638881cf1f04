//! The session commands: stats, entries, tree, fork, clone, switch, name, export.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tern_ai::{ContentBlock, Message, StopReason};

use super::entries;
use super::handler::Rpc;

const BUSY: &str = "Wait for the current response to finish (or send abort) first";

impl Rpc {
    fn session_path(&self) -> Option<PathBuf> {
        self.rt
            .recorder
            .lock()
            .session()
            .path()
            .map(Path::to_path_buf)
    }

    /// The entries of the session file, or of the session kept in memory (none before the
    /// first entry).
    fn all_entries(&self) -> Result<Vec<Value>, String> {
        match self.session_path() {
            Some(p) => {
                entries::read(&p).map_err(|e| format!("cannot read session {}: {e}", p.display()))
            }
            None => Ok(self
                .rt
                .recorder
                .lock()
                .session()
                .memory_entries()
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()),
        }
    }

    /// The id of the entry new ones attach to: the last one written.
    fn leaf(body: &[Value]) -> Value {
        body.iter()
            .rev()
            .find_map(|e| e["id"].as_str())
            .map_or(Value::Null, |id| json!(id))
    }

    /// `get_entries`.
    pub(super) fn get_entries(&self, since: Option<&str>) -> Result<Value, String> {
        let body = entries::body(&self.all_entries()?);
        let leaf = Self::leaf(&body);
        Ok(json!({"entries": entries::since(body, since)?, "leafId": leaf}))
    }

    /// `get_tree`.
    pub(super) fn get_tree(&self) -> Result<Value, String> {
        let body = entries::body(&self.all_entries()?);
        Ok(json!({"tree": entries::tree(&body), "leafId": Self::leaf(&body)}))
    }

    fn active_branch(&self) -> Result<Vec<Value>, String> {
        let body = entries::body(&self.all_entries()?);
        let leaf = Self::leaf(&body);
        Ok(entries::branch(&body, leaf.as_str()))
    }

    /// `get_fork_messages`.
    pub(super) fn fork_messages(&self) -> Result<Value, String> {
        Ok(json!({"messages": entries::fork_messages(&self.active_branch()?)}))
    }

    fn file_for_branching(&self) -> Result<PathBuf, String> {
        if self.running() {
            return Err(BUSY.into());
        }
        self.session_path()
            .filter(|p| p.exists())
            .ok_or_else(|| "Nothing to fork yet: the session has no file (start tern without --no-session and send a prompt)".into())
    }

    /// `fork`: a new session holding the branch before the user message `entry_id`; answers
    /// with that message's text.
    pub(super) fn fork(&self, entry_id: &str) -> Result<Value, String> {
        let source = self.file_for_branching()?;
        let body = entries::body(&self.all_entries()?);
        let entry = body.iter().find(|e| e["id"] == entry_id).ok_or_else(|| {
            format!("Entry not found: {entry_id} (pass an entryId from get_fork_messages)")
        })?;
        let text = entries::user_text(entry).ok_or_else(|| {
            format!("Entry {entry_id} is not a user message; fork from one of get_fork_messages")
        })?;
        let kept = entries::branch(&body, entry["parentId"].as_str());
        let path = entries::write_session(&source, &self.rt.cwd, &kept)?;
        self.rt.open_session(&path)?;
        Ok(json!({"text": text, "cancelled": false}))
    }

    /// `clone`: a new session holding the active branch.
    pub(super) fn clone_session(&self) -> Result<Value, String> {
        let source = self.file_for_branching()?;
        let path = entries::write_session(&source, &self.rt.cwd, &self.active_branch()?)?;
        self.rt.open_session(&path)?;
        Ok(json!({"cancelled": false}))
    }

    /// `switch_session`.
    pub(super) fn switch_session(&self, path: &str) -> Result<Value, String> {
        if self.running() {
            return Err(BUSY.into());
        }
        let path = self.rt.cwd.join(path);
        self.rt.open_session(&path)?;
        Ok(json!({"cancelled": false}))
    }

    /// `set_session_name`.
    pub(super) fn set_session_name(&self, name: &str) -> Result<(), String> {
        let name = name.trim();
        if name.is_empty() {
            return Err("Session name cannot be empty".into());
        }
        self.rt
            .recorder
            .lock()
            .session_mut()
            .append_session_info(name)
            .map_err(|e| e.to_string())?;
        *self.session_name.lock() = Some(name.to_string());
        Ok(())
    }

    /// The session's name: the last `session_info` entry of its file, or the one set here.
    pub(super) fn session_name(&self) -> Option<String> {
        let from_file = self.all_entries().ok().and_then(|all| {
            all.iter()
                .rev()
                .find(|e| e["type"] == "session_info")
                .and_then(|e| e["name"].as_str().map(str::to_string))
        });
        from_file.or_else(|| self.session_name.lock().clone())
    }

    /// `export_html`.
    pub(super) fn export_html(&self, output: Option<&str>) -> Result<Value, String> {
        let system = self.rt.agent.system_prompt();
        let out = output.map(|o| self.rt.cwd.join(o));
        let path = crate::export::export_session(
            self.session_path().as_deref(),
            out.as_deref(),
            Some(&system),
        )
        .map_err(|e| e.to_string())?;
        Ok(json!({"path": path}))
    }

    /// `get_session_stats`, as pi counts them.
    pub(super) fn session_stats(&self) -> Value {
        let st = self.rt.agent.state();
        let (mut user, mut assistant, mut calls, mut results) = (0, 0, 0, 0);
        let (mut input, mut output, mut cache_read, mut cache_write, mut cost) = (0, 0, 0, 0, 0.0);
        for m in &st.messages {
            match m {
                Message::User(_) => user += 1,
                Message::Assistant(a) => {
                    assistant += 1;
                    calls += a
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                        .count();
                    input += a.usage.input;
                    output += a.usage.output;
                    cache_read += a.usage.cache_read;
                    cache_write += a.usage.cache_write;
                    cost += a.usage.cost.total;
                }
                Message::ToolResult(r) => {
                    results += 1;
                    if let Some(u) = &r.usage {
                        input += u.input;
                        output += u.output;
                        cache_read += u.cache_read;
                        cache_write += u.cache_write;
                        cost += u.cost.total;
                    }
                }
                _ => {}
            }
        }
        let mut data = json!({
            "sessionId": self.rt.session_id(),
            "userMessages": user,
            "assistantMessages": assistant,
            "toolCalls": calls,
            "toolResults": results,
            "totalMessages": st.messages.len(),
            "tokens": {"input": input, "output": output, "cacheRead": cache_read,
                       "cacheWrite": cache_write, "total": input + output + cache_read + cache_write},
            "cost": cost,
        });
        if let Some(file) = self.rt.session_file() {
            data["sessionFile"] = json!(file);
        }
        if st.model.context_window > 0 {
            let tokens = context_tokens(&st.messages);
            let percent = tokens as f64 / st.model.context_window as f64 * 100.0;
            data["contextUsage"] = json!({
                "tokens": tokens, "contextWindow": st.model.context_window, "percent": percent,
            });
        }
        data
    }
}

/// pi's context estimate: the last successful response's reported tokens, plus a
/// characters-over-four estimate of every message after it.
fn context_tokens(messages: &[Message]) -> u64 {
    let last = messages.iter().rposition(|m| {
        m.as_assistant()
            .is_some_and(|a| !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error))
    });
    let (base, rest) = match last {
        Some(i) => {
            let u = messages[i].as_assistant().map(|a| &a.usage);
            let reported = u.map_or(0, |u| {
                if u.total_tokens > 0 {
                    u.total_tokens
                } else {
                    u.input + u.output + u.cache_read + u.cache_write
                }
            });
            (reported, &messages[i + 1..])
        }
        None => (0, messages),
    };
    base + rest.iter().map(estimate_tokens).sum::<u64>()
}

fn estimate_tokens(m: &Message) -> u64 {
    let chars = m.content_json().to_string().len() as u64;
    chars.div_ceil(4)
}
