//! The session commands: stats, entries, tree, fork, clone, switch, name, export.

use serde_json::{json, Value};
use tern_ai::{ContentBlock, Message, StopReason};

use super::handler::Rpc;
use crate::session_entries as entries;

const BUSY: &str = "Wait for the current response to finish (or send abort) first";

impl Rpc {
    fn all_entries(&self) -> Result<Vec<Value>, String> {
        entries::of_session(&self.rt)
    }

    /// `get_entries`.
    pub(super) fn get_entries(&self, since: Option<&str>) -> Result<Value, String> {
        let body = entries::body(&self.all_entries()?);
        let leaf = entries::leaf(&body);
        Ok(json!({"entries": entries::since(body, since)?, "leafId": leaf}))
    }

    /// `get_tree`.
    pub(super) fn get_tree(&self) -> Result<Value, String> {
        let body = entries::body(&self.all_entries()?);
        Ok(json!({"tree": entries::tree(&body), "leafId": entries::leaf(&body)}))
    }

    /// `get_fork_messages`.
    pub(super) fn fork_messages(&self) -> Result<Value, String> {
        Ok(json!({"messages": entries::fork_messages(&entries::active_branch(&self.rt)?)}))
    }

    /// `fork`: a new session holding the branch before the user message `entry_id`; answers
    /// with that message's text.
    pub(super) fn fork(&self, entry_id: &str) -> Result<Value, String> {
        if self.running() {
            return Err(BUSY.into());
        }
        let text = entries::fork(&self.rt, entry_id)?;
        Ok(json!({"text": text, "cancelled": false}))
    }

    /// `clone`: a new session holding the active branch.
    pub(super) fn clone_session(&self) -> Result<Value, String> {
        if self.running() {
            return Err(BUSY.into());
        }
        entries::clone_session(&self.rt)?;
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
            entries::session_path(&self.rt).as_deref(),
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
