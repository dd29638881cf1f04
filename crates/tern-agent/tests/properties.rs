//! Property test: random scenarios against the stateful [`Agent`].
//!
//! A scenario is a script of model replies (text, thinking, tool calls to known and unknown
//! tools with valid or invalid arguments, every stop reason, errors), an outcome for every
//! tool call (result, error, `isError`, delay, updates, terminate, panic), hook decisions
//! (`before_tool_call`, `after_tool_call`, `finish_turn`, including hook errors), and
//! steering, follow-ups and aborts fired from the listener at random event numbers, in
//! parallel or sequential tool mode, with instant or streamed model output.
//!
//! Invariants checked on every run (see `check`): no panic and no hang; exactly one
//! `agent_end` and it is the last event; `turn_start`/`turn_end` alternate and balance; each
//! tool call of an assistant message that did not fail gets exactly one tool result, in
//! source order, right after it; `tool_execution_start` precedes its single end; the
//! transcript equals the initial messages followed by the `message_end` messages; after
//! `wait_for_idle`, `is_streaming` is false and no tool call is pending; no listener runs
//! after the run has ended; the agent accepts a second prompt afterwards.
//!
//! Cases: 64 by default; set `PROPTEST_CASES` for more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use proptest::prelude::*;
use serde_json::{json, Value};
use tern_agent::hooks::{
    after_tool_call, before_tool_call, finish_turn, AfterToolCallResult, BeforeToolCallResult,
    TurnDecision,
};
use tern_agent::{
    Agent, AgentEvent, AgentOptions, AgentTool, QueueMode, ToolExecutionMode, ToolResult,
};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{
    ContentBlock, Message, Model, StopReason, StreamFn, ThinkingContent, ToolCall, Usage,
};

const KNOWN_TOOLS: [&str; 3] = ["alpha", "beta", "gamma"];

#[derive(Clone, Debug)]
enum Block {
    Text(String),
    Thinking(String),
    /// Tool index (3 = an unknown tool) and whether the arguments match the schema.
    Call(usize, bool),
}

#[derive(Clone, Debug)]
struct Reply {
    blocks: Vec<Block>,
    stop: StopReason,
}

#[derive(Clone, Debug)]
enum ToolKind {
    Ok,
    Err,
    IsError,
    Terminate,
    Panic,
}

#[derive(Clone, Debug)]
struct ToolPlan {
    kind: ToolKind,
    delay_ms: u8,
    updates: u8,
    /// Whether the tool stops early when the signal fires.
    cooperative: bool,
}

#[derive(Clone, Debug)]
enum Before {
    Allow,
    Block,
    BlockTerminate,
    Fail,
}

#[derive(Clone, Debug)]
enum After {
    Keep,
    Replace,
    MarkError,
    Terminate,
    Fail,
}

#[derive(Clone, Debug)]
enum Finish {
    Default,
    Continue,
    End,
    Fail,
}

#[derive(Clone, Debug)]
enum Action {
    Steer,
    FollowUp,
    Abort,
}

#[derive(Clone, Debug)]
struct Scenario {
    replies: Vec<Reply>,
    /// Indexed by the global tool-call number (ids are `call-<n>`), cycled.
    tools: Vec<ToolPlan>,
    before: Vec<Before>,
    after: Vec<After>,
    finish: Vec<Finish>,
    actions: Vec<(usize, Action)>,
    parallel: bool,
    streamed: bool,
    hooks: bool,
    one_at_a_time: bool,
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        "[a-z ]{0,12}".prop_map(Block::Text),
        "[a-z ]{0,12}".prop_map(Block::Thinking),
        (0usize..4, proptest::bool::weighted(0.85)).prop_map(|(t, v)| Block::Call(t, v)),
        (0usize..4, proptest::bool::weighted(0.85)).prop_map(|(t, v)| Block::Call(t, v)),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        proptest::collection::vec(block(), 0..5),
        prop_oneof![
            6 => Just(StopReason::ToolUse),
            3 => Just(StopReason::Stop),
            1 => Just(StopReason::Length),
            1 => Just(StopReason::Error),
            1 => Just(StopReason::Aborted),
        ],
    )
        .prop_map(|(blocks, stop)| Reply { blocks, stop })
}

fn tool_plan(panics: bool) -> impl Strategy<Value = ToolPlan> {
    let panic_weight = if panics { 1 } else { 0 };
    (
        prop_oneof![
            8 => Just(ToolKind::Ok),
            2 => Just(ToolKind::Err),
            2 => Just(ToolKind::IsError),
            2 => Just(ToolKind::Terminate),
            panic_weight => Just(ToolKind::Panic),
        ],
        prop_oneof![3 => Just(0u8), 1 => 1u8..6],
        0u8..3,
        any::<bool>(),
    )
        .prop_map(|(kind, delay_ms, updates, cooperative)| ToolPlan {
            kind,
            delay_ms,
            updates,
            cooperative,
        })
}

fn scenario(panics: bool) -> impl Strategy<Value = Scenario> {
    (
        proptest::collection::vec(reply(), 0..6),
        proptest::collection::vec(tool_plan(panics), 1..8),
        proptest::collection::vec(
            prop_oneof![
                8 => Just(Before::Allow),
                2 => Just(Before::Block),
                1 => Just(Before::BlockTerminate),
                1 => Just(Before::Fail),
            ],
            1..6,
        ),
        proptest::collection::vec(
            prop_oneof![
                8 => Just(After::Keep),
                1 => Just(After::Replace),
                1 => Just(After::MarkError),
                1 => Just(After::Terminate),
                1 => Just(After::Fail),
            ],
            1..6,
        ),
        proptest::collection::vec(
            prop_oneof![
                6 => Just(Finish::Default),
                2 => Just(Finish::Continue),
                2 => Just(Finish::End),
                1 => Just(Finish::Fail),
            ],
            1..6,
        ),
        proptest::collection::vec(
            (
                0usize..40,
                prop_oneof![
                    Just(Action::Steer),
                    Just(Action::FollowUp),
                    Just(Action::Abort)
                ],
            ),
            0..4,
        ),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(replies, tools, before, after, finish, actions, (parallel, streamed, hooks, one))| {
                Scenario {
                    replies,
                    tools,
                    before,
                    after,
                    finish,
                    actions,
                    parallel,
                    streamed,
                    hooks,
                    one_at_a_time: one,
                }
            },
        )
}

/// The faux replies of a scenario; tool-call ids are numbered across the whole script.
fn faux_replies(s: &Scenario) -> Vec<FauxResponse> {
    let mut n = 0;
    s.replies
        .iter()
        .map(|r| {
            let content = r
                .blocks
                .iter()
                .map(|b| match b {
                    Block::Text(t) => ContentBlock::text(t.as_str()),
                    Block::Thinking(t) => ContentBlock::Thinking(ThinkingContent {
                        thinking: t.clone(),
                        ..Default::default()
                    }),
                    Block::Call(tool, valid) => {
                        n += 1;
                        ContentBlock::tool_call(ToolCall {
                            id: tern_ai::Name::unique(&format!("call-{n}")),
                            name: KNOWN_TOOLS
                                .get(*tool)
                                .copied()
                                .unwrap_or("unknown_tool")
                                .into(),
                            arguments: if *valid {
                                json!({"n": n})
                            } else {
                                json!({"n": "not a number"})
                            },
                            ..Default::default()
                        })
                    }
                })
                .collect();
            let error_message = matches!(r.stop, StopReason::Error | StopReason::Aborted)
                .then(|| "scripted failure".to_string());
            FauxResponse {
                content,
                stop_reason: r.stop,
                error_message,
                usage: Usage::default(),
            }
        })
        .collect()
}

fn call_number(id: &str) -> usize {
    id.trim_start_matches("call-").parse().unwrap_or(0)
}

fn tools(s: &Scenario) -> Vec<AgentTool> {
    let plans = Arc::new(s.tools.clone());
    KNOWN_TOOLS
        .iter()
        .map(|name| {
            let plans = plans.clone();
            AgentTool::dynamic(
                name,
                "test tool",
                json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}),
                move |call| {
                    let plan = plans[call_number(&call.tool_call_id) % plans.len()].clone();
                    async move {
                        for i in 0..plan.updates {
                            call.updater
                                .update(ToolResult::text(format!("progress {i}")));
                        }
                        if plan.delay_ms > 0 {
                            let sleep =
                                tokio::time::sleep(Duration::from_millis(plan.delay_ms.into()));
                            if plan.cooperative {
                                tokio::select! {
                                    _ = sleep => {}
                                    _ = call.signal.cancelled() => {
                                        return Err("cancelled".into());
                                    }
                                }
                            } else {
                                sleep.await;
                            }
                        }
                        match plan.kind {
                            ToolKind::Ok => Ok(ToolResult::text(format!("ok {}", call.args))),
                            ToolKind::Err => Err("tool failed".into()),
                            ToolKind::IsError => Ok(ToolResult {
                                is_error: Some(true),
                                ..ToolResult::text("soft error")
                            }),
                            ToolKind::Terminate => Ok(ToolResult {
                                terminate: Some(true),
                                ..ToolResult::text("done, stop")
                            }),
                            ToolKind::Panic => panic!("tool panicked on purpose"),
                        }
                    }
                },
            )
        })
        .collect()
}

fn options(s: &Scenario, stream_fn: Arc<dyn StreamFn>) -> AgentOptions {
    let mut o = AgentOptions {
        system_prompt: Some("You are a test.".into()),
        model: Some(Model::new("faux", "faux", "faux", "").into()),
        tools: tools(s),
        stream_fn: Some(stream_fn),
        tool_execution: if s.parallel {
            ToolExecutionMode::Parallel
        } else {
            ToolExecutionMode::Sequential
        },
        steering_mode: if s.one_at_a_time {
            QueueMode::OneAtATime
        } else {
            QueueMode::All
        },
        ..AgentOptions::default()
    };
    if s.hooks {
        let before = Arc::new(s.before.clone());
        o.hooks.before_tool_call = Some(before_tool_call(move |c, _| {
            let d = before[call_number(&c.tool_call.id) % before.len()].clone();
            async move {
                match d {
                    Before::Allow => Ok(None),
                    Before::Block => Ok(Some(BeforeToolCallResult::block("blocked by test"))),
                    Before::BlockTerminate => Ok(Some(BeforeToolCallResult {
                        terminate: true,
                        ..BeforeToolCallResult::block("blocked, terminate")
                    })),
                    Before::Fail => Err("before hook failed".into()),
                }
            }
        }));
        let after = Arc::new(s.after.clone());
        o.hooks.after_tool_call = Some(after_tool_call(move |c, _| {
            let d = after[call_number(&c.tool_call.id) % after.len()].clone();
            async move {
                match d {
                    After::Keep => Ok(None),
                    After::Replace => Ok(Some(AfterToolCallResult {
                        content: Some(vec![ContentBlock::text("replaced")]),
                        ..Default::default()
                    })),
                    After::MarkError => Ok(Some(AfterToolCallResult {
                        is_error: Some(true),
                        ..Default::default()
                    })),
                    After::Terminate => Ok(Some(AfterToolCallResult {
                        terminate: Some(true),
                        ..Default::default()
                    })),
                    After::Fail => Err("after hook failed".into()),
                }
            }
        }));
        let finish = Arc::new(s.finish.clone());
        let turn = Arc::new(AtomicUsize::new(0));
        o.hooks.finish_turn = Some(finish_turn(move |_, _| {
            let d = finish[turn.fetch_add(1, Ordering::SeqCst) % finish.len()].clone();
            async move {
                match d {
                    Finish::Default => Ok(None),
                    Finish::Continue => Ok(Some(TurnDecision::Continue)),
                    Finish::End => Ok(Some(TurnDecision::End)),
                    Finish::Fail => Err("finish hook failed".into()),
                }
            }
        }));
    }
    o
}

struct Recorder {
    events: Mutex<Vec<AgentEvent>>,
    ended: AtomicBool,
    late: AtomicUsize,
}

fn json_of(m: &Message) -> Value {
    serde_json::to_value(m).expect("message serializes")
}

/// Checks the invariants on the events of one run and the agent after it.
fn check(events: &[AgentEvent], initial: &[Message], agent: &Agent) -> Result<(), String> {
    let kinds: Vec<&str> = events.iter().map(AgentEvent::kind).collect();
    let ends = kinds.iter().filter(|k| **k == "agent_end").count();
    if ends != 1 || kinds.last() != Some(&"agent_end") {
        return Err(format!("agent_end count {ends}, events {kinds:?}"));
    }
    if kinds.first() != Some(&"agent_start") {
        return Err(format!("first event {:?}", kinds.first()));
    }
    let mut depth = 0i32;
    for k in &kinds {
        match *k {
            "turn_start" => depth += 1,
            "turn_end" => depth -= 1,
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("turns nest or underflow: {kinds:?}"));
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced turns: {kinds:?}"));
    }
    // Tool execution start/end pairing.
    let mut started: HashMap<tern_ai::Name, usize> = HashMap::new();
    let mut ended: HashMap<tern_ai::Name, usize> = HashMap::new();
    for e in events {
        match e {
            AgentEvent::ToolExecutionStart { tool_call } => {
                *started.entry(tool_call.id.clone()).or_default() += 1;
            }
            AgentEvent::ToolExecutionEnd { tool_call, .. } => {
                if !started.contains_key(&tool_call.id) {
                    return Err(format!("end before start for {}", tool_call.id));
                }
                *ended.entry(tool_call.id.clone()).or_default() += 1;
            }
            AgentEvent::ToolExecutionUpdate { tool_call, .. }
                if !started.contains_key(&tool_call.id) || ended.contains_key(&tool_call.id) =>
            {
                return Err(format!("update outside execution of {}", tool_call.id));
            }
            _ => {}
        }
    }
    for (id, n) in &started {
        if *n != 1 || ended.get(id) != Some(&1) {
            return Err(format!("{id}: {n} starts, {:?} ends", ended.get(id)));
        }
    }
    // Transcript = initial + message_end messages.
    let ended_messages: Vec<Message> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let state = agent.state();
    let expected: Vec<Value> = initial
        .iter()
        .chain(ended_messages.iter())
        .map(json_of)
        .collect();
    let actual: Vec<Value> = state.messages.iter().map(json_of).collect();
    if expected != actual {
        return Err(format!(
            "transcript differs from message_end sequence:\n expected {expected:#?}\n actual {actual:#?}"
        ));
    }
    // Every tool call of an assistant message that did not fail gets one result, in order,
    // right after it.
    for (i, m) in ended_messages.iter().enumerate() {
        let Message::Assistant(a) = m else { continue };
        let calls: Vec<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
        let results: Vec<&str> = ended_messages[i + 1..]
            .iter()
            .map_while(|m| match m {
                Message::ToolResult(r) => Some(r.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let failed = matches!(a.stop_reason, StopReason::Error | StopReason::Aborted);
        let want: Vec<&str> = if failed { Vec::new() } else { calls };
        if results != want {
            return Err(format!(
                "assistant message {i} ({:?}): tool calls {want:?}, results {results:?}",
                a.stop_reason
            ));
        }
    }
    if state.is_streaming {
        return Err("is_streaming after wait_for_idle".into());
    }
    if !state.pending_tool_calls.is_empty() {
        return Err(format!("pending tool calls {:?}", state.pending_tool_calls));
    }
    Ok(())
}

fn run_scenario(s: &Scenario) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let faux = FauxModel::new(faux_replies(s));
        let faux = if s.streamed {
            faux.streaming(3, Duration::from_millis(1))
        } else {
            faux
        };
        let agent = Agent::new(options(s, Arc::new(faux)));
        let initial = agent.state().messages;
        let rec = Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            ended: AtomicBool::new(false),
            late: AtomicUsize::new(0),
        });
        let actions = s.actions.clone();
        let r = rec.clone();
        let handle = agent.clone();
        let _sub = agent.subscribe_sync(move |e| {
            if r.ended.load(Ordering::SeqCst) {
                r.late.fetch_add(1, Ordering::SeqCst);
                return;
            }
            let n = {
                let mut ev = r.events.lock();
                ev.push(e.clone());
                ev.len()
            };
            for (at, action) in &actions {
                if *at == n {
                    match action {
                        Action::Steer => handle.steer(Message::user_text(format!("steer {n}"))),
                        Action::FollowUp => {
                            handle.follow_up(Message::user_text(format!("follow up {n}")))
                        }
                        Action::Abort => handle.abort(),
                    }
                }
            }
        });
        let run = async {
            agent
                .prompt("go")
                .await
                .map_err(|e| format!("prompt: {e}"))?;
            agent.wait_for_idle().await;
            Ok::<(), String>(())
        };
        tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .map_err(|_| "hang: the run did not end within 30 s".to_string())??;
        rec.ended.store(true, Ordering::SeqCst);
        let events = std::mem::take(&mut *rec.events.lock());
        check(&events, &initial, &agent)?;
        // Tools that ignore the signal may still be sleeping: give them time to misbehave.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let late = rec.late.load(Ordering::SeqCst);
        if late != 0 {
            return Err(format!("{late} listener calls after the run ended"));
        }
        // The agent is usable again (the script may be exhausted: that is an error reply).
        agent.clear_all_queues();
        let before = agent.state().messages;
        rec.ended.store(false, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(30), async {
            agent.prompt("again").await.map_err(|e| e.to_string())?;
            agent.wait_for_idle().await;
            Ok::<(), String>(())
        })
        .await
        .map_err(|_| "hang on the second prompt".to_string())??;
        rec.ended.store(true, Ordering::SeqCst);
        let events = std::mem::take(&mut *rec.events.lock());
        check(&events, &before, &agent).map_err(|e| format!("second run: {e}"))
    })
}

/// Runs `s`; a broken invariant or a panic fails the case.
fn check_scenario(s: &Scenario) -> Result<(), TestCaseError> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_scenario(s)));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => prop_assert!(false, "{}", e),
        Err(_) => prop_assert!(false, "panicked"),
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_scenarios_keep_the_invariants(s in scenario(false)) {
        check_scenario(&s)?;
    }

    #[test]
    fn panicking_tools_do_not_break_the_agent(s in scenario(true)) {
        check_scenario(&s)?;
    }
}
