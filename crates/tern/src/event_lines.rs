//! Agent events as pi's JSON and RPC modes write them (`docs/json.md`): one object per
//! line; `message_update` is delta-only (no cumulative `message`, no `partial` snapshots,
//! plus the latest `usage`); `agent_end` carries `willRetry`; `agent_settled` closes a
//! session-level run.

use serde_json::{json, Value};
use tern_agent::AgentEvent;
use tern_ai::ContentBlock;
use tern_durable::Limit;

use crate::auto_retry::AutoRetry;

/// The wire form of an agent event; `retry` says whether an `agent_end`'s answer will be
/// retried (`willRetry`).
pub fn event_json(event: &AgentEvent, retry: &AutoRetry) -> Value {
    match event {
        AgentEvent::MessageUpdate {
            assistant_message_event,
        } => {
            let mut inner =
                serde_json::to_value(assistant_message_event).unwrap_or_else(|_| json!({}));
            if let Some(o) = inner.as_object_mut() {
                o.remove("partial");
            }
            let index = inner.get("contentIndex").and_then(Value::as_u64);
            let (usage, call) = match assistant_message_event.partial() {
                Some(message) => message.with(|m| {
                    let call = index
                        .and_then(|i| m.content.get(i as usize))
                        .and_then(ContentBlock::as_tool_call)
                        .map(|c| (c.id.clone(), c.name.clone()));
                    (serde_json::to_value(&m.usage).unwrap_or(Value::Null), call)
                }),
                None => (Value::Null, None),
            };
            if inner.get("type").and_then(Value::as_str) == Some("toolcall_start") {
                if let (Some(o), Some((id, name))) = (inner.as_object_mut(), call) {
                    o.insert("id".into(), json!(id));
                    o.insert("toolName".into(), json!(name));
                }
            }
            json!({"type": "message_update", "usage": usage, "assistantMessageEvent": inner})
        }
        AgentEvent::AgentEnd { .. } => {
            let mut v = serde_json::to_value(event).unwrap_or_else(|_| json!({}));
            if let Some(o) = v.as_object_mut() {
                o.insert("willRetry".into(), json!(retry.will_retry(event)));
            }
            v
        }
        other => serde_json::to_value(other).unwrap_or_else(|_| json!({"type": other.kind()})),
    }
}

/// The `agent_settled` record; when a limit ended (or refused) the run, `limit` names it
/// (`maxTurns`, `sessionMaxCost`, …: [`Limit::key`]).
pub fn settled(aborted: bool, limit: Option<Limit>) -> Value {
    match limit {
        Some(l) => json!({"type": "agent_settled", "aborted": aborted, "limit": l.key()}),
        None => json!({"type": "agent_settled", "aborted": aborted}),
    }
}
