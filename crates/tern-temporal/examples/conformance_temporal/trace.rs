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
//!
//! A tool call's partial results are published with its result, so an entry made inside a
//! call (a nested call's hooks, an action the tool runs) after it sent n of them is placed
//! after the n-th of its `tool_execution_update` events, as in process.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::norm::norm_event;

struct Placed {
    offset: usize,
    made: usize,
    entry: Value,
    /// Made inside a tool call after it sent this many partial results (call id, count):
    /// the entry goes after the call's `tool_execution_update` of that number.
    after_update: Option<(String, usize)>,
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
        self.place_in_call(offset, None, entry);
    }

    /// Places an entry made inside the tool call `call_id` (which started at `offset`)
    /// after it had sent `updates` partial results: a call's partial results are published
    /// with its result, so the entry goes after the one it followed.
    pub fn place_after_update(&self, offset: usize, call_id: &str, updates: usize, entry: Value) {
        let after = (updates > 0).then(|| (call_id.to_string(), updates));
        self.place_in_call(offset, after, entry);
    }

    fn place_in_call(&self, offset: usize, after_update: Option<(String, usize)>, entry: Value) {
        let mut t = self.0.lock();
        let made = t.placed.len();
        t.placed.push(Placed {
            offset,
            made,
            entry,
            after_update,
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
        };
        // A nested call's execution (no start event of its own) keeps its place.
        let is_execute = |p: &Placed| p.entry["kind"] == "execute" && start_of(p).is_some();
        let mut placed: Vec<(usize, &Placed)> = t
            .placed
            .iter()
            .map(|p| (offset_of(&t.events, p), p))
            .collect();
        placed.sort_by_key(|(offset, p)| (*offset, p.made));
        for group in placed.chunk_by_mut(|a, b| a.0 == b.0) {
            let slots: Vec<usize> = (0..group.len())
                .filter(|&i| is_execute(group[i].1))
                .collect();
            let mut executes: Vec<(usize, &Placed)> = slots.iter().map(|&i| group[i]).collect();
            executes.sort_by_key(|(_, p)| (start_of(p), p.made));
            for (slot, p) in slots.into_iter().zip(executes) {
                group[slot] = p;
            }
        }
        let mut out = Vec::with_capacity(t.events.len() + placed.len());
        let mut next = placed.into_iter().peekable();
        for (i, event) in t.events.iter().enumerate() {
            while let Some((_, p)) = next.next_if(|(offset, _)| *offset <= i) {
                out.push(p.entry.clone());
            }
            out.push(event.clone());
        }
        out.extend(next.map(|(_, p)| p.entry.clone()));
        out
    }
}

/// Where an entry goes: its offset, or, made after a call's n-th partial result, after that
/// update's event.
fn offset_of(events: &[Value], p: &Placed) -> usize {
    let Some((id, n)) = &p.after_update else {
        return p.offset;
    };
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "tool_execution_update" && e["toolCallId"] == id.as_str())
        .nth(n - 1)
        .map_or(p.offset, |(index, _)| p.offset.max(index + 1))
}
