//! Which scenarios the Temporal backend runs, and why the others are left out. A scenario is
//! run only when every part of it has a counterpart in the session workflow and its client;
//! otherwise the runner says which part is missing (exit status 4) instead of printing a
//! trace that could only differ.

use super::spec::{Scenario, Step};

/// The actions that have a session operation (`prompt`, `continue_run`, `queue_steer`,
/// `queue_follow_up`, `reset`, `set`, `clear_queues`, `abort_run`, `state`, `follow`).
pub const SESSION_ACTIONS: &[&str] = &[
    "prompt",
    "continue",
    "steer",
    "followUp",
    "reset",
    "set",
    "clearSteeringQueue",
    "clearFollowUpQueue",
    "clearAllQueues",
    "abort",
    "snapshot",
    "waitForIdle",
    // Not a session operation: the scenario's listeners run on its worker.
    "unsubscribe",
];

/// The actions a hook's rule may run through a session: its hook queues input for its
/// session or clears its queues (these travel with its answer), or unsubscribes a listener
/// (on the worker).
const HOOK_ACTIONS: &[&str] = &[
    "steer",
    "followUp",
    "clearSteeringQueue",
    "clearFollowUpQueue",
    "clearAllQueues",
    "unsubscribe",
];

/// The triggered actions a session runs besides a hook's ([`HOOK_ACTIONS`]): in the
/// worker's listener, an abort of the run (which travels with the listener's answer), a
/// wait and a snapshot.
const LISTENER_ONLY_ACTIONS: &[&str] = &[
    "abort",
    // In the listener: a wait inside the event's callback, the state the listener reads.
    "sleep", "snapshot",
];

/// The events a run's abort cannot be placed at: they are published once the model
/// request or tool call they belong to has completed, so an abort there cannot cut it.
const PUBLISHED_AFTER_THE_CALL: &[&str] = &["message_update", "tool_execution_update"];

/// Why `scenario` cannot run through a session, or `None` when it can.
pub fn unsupported(spec: &Scenario) -> Option<String> {
    if spec.agent.is_none() {
        return Some(
            "no agent: the low-level loop entry points (agentLoop, runAgentLoop, ...) are \
             functions called in process, not session operations"
                .into(),
        );
    }
    let h = &spec.hooks;
    let rules = [
        ("beforeToolCall", &h.before_tool_call),
        ("afterToolCall", &h.after_tool_call),
        ("finishTurn", &h.finish_turn),
        ("prepareRequest", &h.prepare_request),
        ("prepareNextTurn", &h.prepare_next_turn),
    ];
    for (hook, rules) in rules {
        // A hook on a worker can queue messages for its own session (they travel with its
        // answer) and reach the worker's listeners; nothing else.
        let acting = rules
            .iter()
            .flatten()
            .flat_map(|r| &r.actions)
            .find(|a| !HOOK_ACTIONS.contains(&a.do_.as_str()));
        if let Some(a) = acting {
            return Some(format!(
                "{hook} runs the action {}: a hook on a worker can only queue or clear \
                 steering and follow-up messages for its own session and unsubscribe listeners",
                a.do_
            ));
        }
    }
    let sends_updates = spec.tools.values().any(|t| {
        std::iter::once(&t.behavior)
            .chain(t.calls.values())
            .any(|b| b.steps.iter().any(|s| matches!(s, Step::Update(_))))
    });
    let slow_on_updates = spec.listeners.iter().any(|l| {
        l.delay_ms.as_ref().is_some_and(super::norm::truthy)
            && l.events
                .as_ref()
                .is_none_or(|e| e.iter().any(|k| k == "tool_execution_update"))
    });
    if sends_updates && slow_on_updates {
        return Some(
            "a slow listener on a tool's partial results while the tool runs: the partial \
             results reach the session with the tool's result"
                .into(),
        );
    }
    // What a trigger queues reaches the session when the listener's call returns, and a
    // triggered snapshot reads the session's state at the event: one at an event where a
    // trigger queued input could not show it, as the live Agent's queue does.
    // (Triggers that one event fires run in the scenario's order: only an earlier one counts.)
    let queues_before = |j: usize, event: &str| {
        spec.actions[..j].iter().any(|a| {
            a.at.as_ref().is_some_and(|at| at.event == event)
                && HOOK_ACTIONS.contains(&a.do_.as_str())
                && a.do_ != "unsubscribe"
        })
    };
    let snapshot_after_queueing = spec.actions.iter().enumerate().find_map(|(j, a)| {
        let at = a.at.as_ref().filter(|_| a.do_ == "snapshot")?;
        queues_before(j, &at.event).then(|| at.event.clone())
    });
    if let Some(event) = snapshot_after_queueing {
        return Some(format!(
            "a triggered snapshot at {event}, where an earlier trigger queues or clears input: \
             the worker's listener reads the session's state at the event, and what it \
             queued reaches the session when its call returns"
        ));
    }
    let call_hooks_act = [&h.before_tool_call, &h.after_tool_call]
        .iter()
        .any(|rules| rules.iter().flatten().any(|r| !r.actions.is_empty()));
    if call_hooks_act && spec.actions.iter().any(|a| a.do_ == "runToolCall") {
        return Some(
            "runToolCall with tool-call hooks that run actions: runToolCall runs in the \
             caller's process, where its hooks have no session call to queue input through"
                .into(),
        );
    }
    for a in &spec.actions {
        if let Some(at) = &a.at {
            // A trigger runs in the worker's listener, inside the event's callback: there
            // it can act on its session's queues and unsubscribe listeners, nothing else.
            let action = a.do_.as_str();
            if !HOOK_ACTIONS.contains(&action) && !LISTENER_ONLY_ACTIONS.contains(&action) {
                return Some(format!(
                    "a triggered {} (at {}): a trigger runs in the worker's listener, which \
                     can act on its session's queues and run, unsubscribe listeners, wait \
                     and read the state, but not send its session an update (its call holds \
                     the workflow task); the client sees events after the workflow \
                     published them, not while the loop waits in its event callback",
                    a.do_, at.event
                ));
            }
            if a.do_ == "abort" && PUBLISHED_AFTER_THE_CALL.contains(&at.event.as_str()) {
                return Some(format!(
                    "an abort at {}: a model response's deltas and a tool's partial results \
                     are published when the request or call has completed (no live \
                     delivery), so an abort there cannot cut it as in process",
                    at.event
                ));
            }
            continue;
        }
        // Not a session operation: a library function the runner calls itself.
        if a.do_ == "runToolCall" {
            continue;
        }
        if !SESSION_ACTIONS.contains(&a.do_.as_str()) {
            return Some(format!(
                "the action {}: the session API has no such operation yet",
                a.do_
            ));
        }
        if !a.wait {
            return Some(
                "a detached prompt: the runner drives a session one prompt at a time".into(),
            );
        }
    }
    for tool in spec.tools.values() {
        let behaviours = std::iter::once(&tool.behavior).chain(tool.calls.values());
        for b in behaviours {
            for step in &b.steps {
                // A tool on a worker can queue input for its own session, nothing else.
                if let Step::Do(a) = step {
                    if !matches!(a.do_.as_str(), "steer" | "followUp") {
                        return Some(format!(
                            "the tool {} runs the action {} from inside its execution: a tool \
                             on a worker can only queue steering and follow-up messages for \
                             its own session",
                            tool.name, a.do_
                        ));
                    }
                }
            }
        }
    }
    None
}
