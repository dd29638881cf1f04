//! The trace as the caller of a session sees it: the events it reads from the session, and
//! the entries made elsewhere (the runner's actions; the worker's model requests, tool
//! executions and hook calls), each placed at the event offset it was made at.
//!
//! The worker learns that offset from the call it runs (`activities::current_call`): the
//! workflow records how many events it had published when the loop made the request. Entries
//! at the same offset keep the order they were made in (the loop awaits each hook, so a hook
//! call is made after what the loop did before it), except tool executions, which follow
//! the order of their calls' `tool_execution_start` events (a batch's calls start on the
//! worker concurrently; the loop starts them in source order).

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::norm::norm_event;

struct Placed {
    offset: usize,
    made: usize,
    entry: Value,
}

#[derive(Default)]
struct Inner {
    events: Vec<Value>,
    placed: Vec<Placed>,
    /// The event index of each call's `tool_execution_start`.
    starts: HashMap<String, usize>,
    /// The Agent's `errorMessage`: cleared when a run starts, set by a turn that ended with
    /// an error.
    error_message: Option<String>,
}

/// The trace of one scenario.
#[derive(Default)]
pub struct Trace(Mutex<Inner>);

impl Trace {
    /// Appends an event read from the session.
    pub fn event(&self, raw: &Value) {
        let mut t = self.0.lock();
        let index = t.events.len();
        match raw["type"].as_str() {
            Some("agent_start") => t.error_message = None,
            Some("tool_execution_start") => {
                if let Some(id) = raw["toolCallId"].as_str() {
                    t.starts.insert(id.to_string(), index);
                }
            }
            Some("turn_end") if raw["message"]["role"] == "assistant" => {
                if let Some(e) = raw["message"]["errorMessage"].as_str() {
                    if !e.is_empty() {
                        t.error_message = Some(e.to_string());
                    }
                }
            }
            _ => {}
        }
        let mut e = Map::new();
        e.insert("kind".into(), json!("event"));
        if let Value::Object(fields) = norm_event(raw) {
            e.extend(fields);
        }
        t.events.push(Value::Object(e));
    }

    /// How many events have been read.
    pub fn event_count(&self) -> usize {
        self.0.lock().events.len()
    }

    /// Places an entry made when the session had published `offset` events.
    pub fn place(&self, offset: usize, entry: Value) {
        let mut t = self.0.lock();
        let made = t.placed.len();
        t.placed.push(Placed {
            offset,
            made,
            entry,
        });
    }

    /// Places an entry after every event read so far.
    pub fn here(&self, entry: Value) {
        let offset = self.event_count();
        self.place(offset, entry);
    }

    /// The session was reset: the Agent's `errorMessage` with it.
    pub fn reset(&self) {
        self.0.lock().error_message = None;
    }

    /// The Agent's `errorMessage` after the events read so far.
    pub fn error_message(&self) -> Option<String> {
        self.0.lock().error_message.clone()
    }

    /// The entries in trace order: by offset, then as made, except that the tool
    /// executions of one offset take their slots among its entries in the order of their
    /// calls' `tool_execution_start` events.
    pub fn entries(&self) -> Vec<Value> {
        let t = self.0.lock();
        let start_of = |p: &Placed| {
            p.entry["toolCallId"]
                .as_str()
                .and_then(|id| t.starts.get(id).copied())
                .unwrap_or(0)
        };
        let is_execute = |p: &Placed| p.entry["kind"] == "execute";
        let mut placed: Vec<&Placed> = t.placed.iter().collect();
        placed.sort_by_key(|p| (p.offset, p.made));
        for group in placed.chunk_by_mut(|a, b| a.offset == b.offset) {
            let slots: Vec<usize> = (0..group.len()).filter(|&i| is_execute(group[i])).collect();
            let mut executes: Vec<&Placed> = slots.iter().map(|&i| group[i]).collect();
            executes.sort_by_key(|p| (start_of(p), p.made));
            for (slot, p) in slots.into_iter().zip(executes) {
                group[slot] = p;
            }
        }
        let mut out = Vec::with_capacity(t.events.len() + placed.len());
        let mut next = placed.into_iter().peekable();
        for (i, event) in t.events.iter().enumerate() {
            while let Some(p) = next.next_if(|p| p.offset <= i) {
                out.push(p.entry.clone());
            }
            out.push(event.clone());
        }
        out.extend(next.map(|p| p.entry.clone()));
        out
    }
}
