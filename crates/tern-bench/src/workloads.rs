//! W1–W6 as functions: each builds its own tokio runtime (current-thread like Node unless
//! told otherwise), runs the workload, checks its arithmetic and returns the JSON line with
//! the Node script's field names. A failed check is an `Err`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{join_all, FutureExt};
use serde_json::{json, Map, Value};
use tern_agent::{Agent, AgentEvent, AgentOptions, AgentTool};
use tern_ai::providers::Providers;
use tern_ai::{
    AssistantMessage, AssistantMessageEvent, Content, ContentBlock, Context, Message, Name,
    StopReason, StreamFn, StreamOptions, SystemMessage, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};

use crate::fixtures::*;
use crate::util::*;

pub use crate::w1::*;

pub(crate) type Res = Result<Value, String>;

/// The runtime a workload runs on: current-thread for `threads == 0`, else multi-thread
/// with that many workers (the tests use the same).
pub fn rt(threads: usize) -> tokio::runtime::Runtime {
    if threads == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
    .expect("tokio runtime")
}

/// Lets the tasks a finished prompt left behind run before the next clock starts. A long
/// run's transcript is packed in a task of its own after `prompt` returns; on the
/// current-thread runtime that task runs at the next `await` that waits, which would put it
/// inside whatever is timed next (W3's timer-only baseline: about 30 µs longer, and the
/// share over it as much shorter).
pub(crate) async fn settle() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub(crate) fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

// ---------------------------------------------------------------------------------------
// W2

/// W2 parameters (§W2).
#[derive(Clone, Debug)]
pub struct W2Params {
    /// Deltas per response (K).
    pub deltas: usize,
    /// Warm-up rounds.
    pub warmup: usize,
    /// Measured rounds.
    pub reps: usize,
}

impl Default for W2Params {
    fn default() -> Self {
        W2Params {
            deltas: 100_000,
            warmup: 3,
            reps: 7,
        }
    }
}

/// The W2 delta: 8 ASCII bytes.
pub const W2_DELTA: &str = "abcdefg ";

/// W2 — streaming events.
pub fn w2(p: &W2Params) -> Res {
    rt(0).block_on(async {
        let k = p.deltas;
        let script = TextScript {
            delta: W2_DELTA.into(),
            repeat: k,
        };
        let model = bench_model();
        // The script reads no options; the reference's script is called with none.
        let options = StreamOptions::default();
        let agent = bench_agent(vec![], Arc::new(script.clone()));
        let events = Arc::new(Counter::default());
        let ev = events.clone();
        agent.subscribe_sync(move |_| {
            ev.bump();
        });
        let (mut produce, mut produce_drain, mut total, mut cpu) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in 0..p.warmup + p.reps {
            // (a) the producer alone (the last prompt's leftover task cannot run here: (a)
            // and (b) never wait; it runs at (c)'s settle).
            let t0 = Instant::now();
            let s = script
                .stream(&model, Context::default(), &options)
                .map_err(|e| e.to_string())?;
            let p_ms = ms(t0.elapsed());
            drop(s);
            // (b) producer + bare drain.
            let t0 = Instant::now();
            let mut s = script
                .stream(&model, Context::default(), &options)
                .map_err(|e| e.to_string())?;
            let mut n = 0usize;
            while let Some(_e) = s.next().await {
                n += 1;
            }
            let pd_ms = ms(t0.elapsed());
            check(n == k + 4, || format!("drain saw {n}"))?;
            drop(s);
            // (c) the whole agent prompt.
            settle().await;
            agent.reset().map_err(|e| e.to_string())?;
            events.set(0);
            let c0 = cpu_ms();
            let t0 = Instant::now();
            agent.prompt("go").await.map_err(|e| e.to_string())?;
            let t_ms = ms(t0.elapsed());
            let c = cpu_ms() - c0;
            let len = last_text(&agent).len();
            check(len == k * W2_DELTA.len(), || format!("text length {len}"))?;
            let n = events.get();
            check(n == k + 10, || format!("events {n}"))?;
            if r >= p.warmup {
                produce.push(p_ms);
                produce_drain.push(pd_ms);
                total.push(t_ms);
                cpu.push(c);
            }
        }
        let (t_ms, p_ms, pd_ms) = (median(&total), median(&produce), median(&produce_drain));
        let ev_n = (k + 10) as f64;
        Ok(json!({
            "workload": "W2",
            "deltas": k,
            "agent_events": k + 10,
            "reps": p.reps,
            "total_ms_median": t_ms,
            "total_ms_min": min(&total),
            "total_cpu_ms_median": median(&cpu),
            "total_ms_all": total.iter().map(|x| round(*x, 2)).collect::<Vec<_>>(),
            "produce_ms_min": min(&produce),
            "produce_drain_ms_min": min(&produce_drain),
            "produce_ms_median": p_ms,
            "produce_drain_ms_median": pd_ms,
            "events_per_s": ev_n / (t_ms / 1000.0),
            "runtime_ms_beyond_produce": t_ms - p_ms,
            "runtime_ns_per_event_beyond_produce": (t_ms - p_ms) * 1e6 / ev_n,
            "runtime_ms_beyond_produce_drain": t_ms - pd_ms,
            "impl": "tern",
        }))
    })
}

// ---------------------------------------------------------------------------------------
// W3

/// W3 parameters (§W3).
#[derive(Clone, Debug)]
pub struct W3Params {
    /// Parallel tool calls (N).
    pub tools: usize,
    /// Sleep per tool, ms.
    pub sleep_ms: u64,
    /// Warm-up prompts.
    pub warmup: usize,
    /// Measured prompts.
    pub reps: usize,
}

impl Default for W3Params {
    fn default() -> Self {
        W3Params {
            tools: 64,
            sleep_ms: 20,
            warmup: 3,
            reps: 20,
        }
    }
}

#[derive(Default)]
struct W3Marks {
    events: usize,
    saw_assistant_end: bool,
    msg_end: Option<Instant>,
    first_tool_start: Option<Instant>,
    first_tool_end: Option<Instant>,
    last_tool_end: Option<Instant>,
    turn_end: Option<Instant>,
}

/// W3 — parallel tools.
pub fn w3(p: &W3Params) -> Res {
    rt(0).block_on(async {
        let n = p.tools;
        let script = Arc::new(ParallelScript::new(n));
        let agent = bench_agent(vec![sleep_tool(p.sleep_ms)], script.clone());
        let marks = Arc::new(Mutex::new(W3Marks::default()));
        let mk = marks.clone();
        // The clock is read at the marked points only, as the reference script does.
        agent.subscribe_sync(move |e| {
            let mut m = mk.lock().unwrap();
            m.events += 1;
            match e {
                AgentEvent::MessageEnd { message }
                    if message.role() == "assistant" && !m.saw_assistant_end =>
                {
                    m.saw_assistant_end = true;
                    m.msg_end = Some(Instant::now());
                }
                AgentEvent::ToolExecutionStart { .. } if m.first_tool_start.is_none() => {
                    m.first_tool_start = Some(Instant::now())
                }
                AgentEvent::ToolExecutionEnd { .. } => {
                    let now = Instant::now();
                    m.first_tool_end.get_or_insert(now);
                    m.last_tool_end = Some(now)
                }
                AgentEvent::TurnEnd { .. } if m.turn_end.is_none() => {
                    m.turn_end = Some(Instant::now())
                }
                _ => {}
            }
        });
        let sleep = Duration::from_millis(p.sleep_ms);
        let (mut wall, mut phase, mut span, mut base) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let mut events = 0;
        for r in 0..p.warmup + p.reps {
            settle().await;
            let t0 = Instant::now();
            join_all((0..n).map(|_| tokio::time::sleep(sleep))).await;
            let b = ms(t0.elapsed());
            agent.reset().map_err(|e| e.to_string())?;
            script.reset();
            *marks.lock().unwrap() = W3Marks::default();
            let t0 = Instant::now();
            agent.prompt("go").await.map_err(|e| e.to_string())?;
            let end = Instant::now();
            let w = ms(end.duration_since(t0));
            let results = agent.with_messages(|m| {
                m.iter()
                    .filter(|m| matches!(m, Message::ToolResult(_)))
                    .count()
            });
            check(results == n, || format!("toolResult messages {results}"))?;
            let m = marks.lock().unwrap();
            events = m.events;
            let expected = 4 + (1 + 3 * n + 1 + n + n + 2 * n + 1 + 1) + 7;
            check(events == expected, || {
                format!("events {events} != {expected}")
            })?;
            let d = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
                (Some(a), Some(b)) => ms(b.duration_since(a)),
                _ => f64::NAN,
            };
            if r >= p.warmup {
                wall.push(w);
                phase.push(d(m.msg_end, m.turn_end));
                span.push(d(m.first_tool_start, m.last_tool_end));
                before.push(d(Some(t0), m.first_tool_start));
                after.push(d(m.first_tool_end, Some(end)));
                base.push(b);
            }
        }
        let (w, tp) = (median(&wall), median(&phase));
        let s = p.sleep_ms as f64;
        Ok(json!({
            "workload": "W3",
            "tools": n,
            "sleep_ms": p.sleep_ms,
            "events_per_prompt": events,
            "reps": p.reps,
            "prompt_wall_ms_median": w,
            "prompt_wall_ms_min": min(&wall),
            "prompt_wall_ms_max": max(&wall),
            "tool_phase_ms_median": tp,
            "tool_span_ms_median": median(&span),
            "timer_only_baseline_ms_median": median(&base),
            "before_tools_ms_median": median(&before),
            "after_first_wake_ms_median": median(&after),
            "overhead_vs_ideal_ms": w - s,
            "tool_phase_overhead_vs_ideal_ms": tp - s,
            "overhead_vs_timer_baseline_ms": w - median(&base),
            "serial_would_be_ms": n as f64 * s,
            "impl": "tern",
        }))
    })
}

// ---------------------------------------------------------------------------------------
// W4

/// W4 parameters (§W4).
#[derive(Clone, Debug)]
pub struct W4Params {
    /// Agents (A).
    pub agents: usize,
    /// Turns per agent.
    pub turns: usize,
    /// 0: one current-thread runtime, all prompts joined on one task (like Node's
    /// `Promise.all`); n > 0: a multi-thread runtime with n workers, one task per prompt.
    pub threads: usize,
}

impl Default for W4Params {
    fn default() -> Self {
        W4Params {
            agents: 10_000,
            turns: 3,
            threads: 0,
        }
    }
}

/// W4 — many agents. Memory figures are per process: run it in a fresh process.
pub fn w4(p: &W4Params) -> Res {
    rt(p.threads).block_on(async {
        let (a_n, turns) = (p.agents, p.turns);
        {
            let w = bench_agent(vec![noop_tool()], Arc::new(LoopScript::new(turns)));
            w.prompt("go").await.map_err(|e| e.to_string())?;
        }
        trim_heap();
        let rss0 = rss_bytes();
        let heap0 = heap_in_use_bytes();
        let tool = noop_tool();
        let events = Arc::new(AtomicUsize::new(0));
        let t0 = Instant::now();
        let mut agents = Vec::with_capacity(a_n);
        for _ in 0..a_n {
            let a = bench_agent(vec![tool.clone()], Arc::new(LoopScript::new(turns)));
            let ev = events.clone();
            a.subscribe_sync(move |_| {
                ev.fetch_add(1, Ordering::Relaxed);
            });
            agents.push(a);
        }
        let t1 = Instant::now();
        let rss_constructed = rss_bytes();
        let heap_constructed = heap_in_use_bytes();
        // Each prompt's outcome is dropped as its prompt ends, as the reference's `prompt`
        // resolves to nothing: an outcome shares its run's messages, and 10,000 of them kept
        // until the last prompt ends would hold every transcript twice (packed and not).
        let results: Vec<Result<(), String>> = if p.threads == 0 {
            join_all(
                agents
                    .iter()
                    .map(|a| async { a.prompt("go").await.map(drop).map_err(|e| e.to_string()) }),
            )
            .await
        } else {
            // One task per prompt, spawned from a worker as a service's tasks spawn theirs (a
            // spawn from outside the runtime goes through its shared queue and wakes a worker
            // every time), and awaited with one wake-up of this thread rather than one per
            // finished task.
            let countdown = Countdown::new(agents.len());
            let failures = Arc::new(Mutex::new(Vec::new()));
            // The guards are made here: a spawn that never happens still counts down.
            let all: Vec<_> = agents.iter().map(|a| (a.clone(), countdown.guard())).collect();
            let f = failures.clone();
            tokio::spawn(async move {
                for (a, done) in all {
                    let f = f.clone();
                    tokio::spawn(async move {
                        let run = std::panic::AssertUnwindSafe(a.prompt("go")).catch_unwind();
                        let failure = match run.await {
                            Ok(Ok(_)) => None,
                            Ok(Err(e)) => Some(e.to_string()),
                            Err(_) => Some("a prompt panicked".to_string()),
                        };
                        if let Some(failure) = failure {
                            f.lock().unwrap_or_else(|p| p.into_inner()).push(failure);
                        }
                        drop(done);
                    });
                }
            });
            countdown.wait().await;
            let failures = std::mem::take(&mut *failures.lock().unwrap_or_else(|p| p.into_inner()));
            failures.into_iter().map(Err).collect()
        };
        let t2 = Instant::now();
        for r in results {
            r?;
        }
        let peak = max_rss_bytes();
        let rss_after_run = rss_bytes();
        trim_heap();
        let rss_retained = rss_bytes();
        let heap_retained = heap_in_use_bytes();
        let heap_kb = |h: Option<u64>| {
            heap0
                .zip(h)
                .map(|(h0, h)| (h as f64 - h0 as f64) / a_n as f64 / 1024.0)
        };
        let expected = a_n * loop_events(turns);
        let n = events.load(Ordering::Relaxed);
        check(n == expected, || format!("events {n} != {expected}"))?;
        for a in &agents {
            let m = a.message_count();
            check(m == 2 * turns + 1, || format!("transcript {m}"))?;
        }
        let run = ms(t2 - t1);
        Ok(json!({
            "workload": "W4",
            "agents": a_n,
            "turns_per_agent": turns,
            "threads": if p.threads == 0 { "current_thread".to_string() } else { format!("multi_thread({})", p.threads) },
            "events_total": n,
            "construct_ms": ms(t1 - t0),
            "run_wall_ms": run,
            "total_wall_ms": ms(t2 - t0),
            "us_per_agent_turn": run * 1000.0 / (a_n * turns) as f64,
            "rss_baseline_mb": mib(rss0),
            "rss_after_construct_mb": mib(rss_constructed),
            "rss_after_run_mb": mib(rss_after_run),
            "peak_rss_mb": mib(peak),
            "peak_rss_per_agent_kb": (peak as f64 - rss0 as f64) / a_n as f64 / 1024.0,
            "retained_rss_per_agent_kb_after_gc": (rss_retained as f64 - rss0 as f64) / a_n as f64 / 1024.0,
            "retained_heap_per_agent_kb_after_gc": heap_kb(heap_retained),
            "constructed_heap_per_agent_kb": heap_kb(heap_constructed),
            "impl": "tern",
        }))
    })
}

// ---------------------------------------------------------------------------------------
// W5

/// W5 parameters (§W5).
#[derive(Clone, Debug)]
pub struct W5Params {
    /// Idle agents (A).
    pub agents: usize,
}

impl Default for W5Params {
    fn default() -> Self {
        W5Params { agents: 10_000 }
    }
}

/// Raw text bytes of one W5 transcript.
pub const W5_RAW_TEXT_BYTES: usize = 25 * (256 + 128 + 1024 + 512);

/// `text(i, j, L)`: `"<i>.<j>:"` padded with `x` to exactly `len` bytes, its own buffer of
/// exactly that capacity.
pub fn w5_text(i: usize, j: usize, len: usize) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(len);
    let _ = write!(s, "{i}.{j}:");
    while s.len() < len {
        s.push('x');
    }
    s
}

/// The 100-message transcript of agent `i` (§W5).
pub fn w5_transcript(i: usize) -> Vec<Message> {
    const TS: u64 = 1_700_000_000_000;
    let mut msgs = Vec::with_capacity(100);
    let mut j = 0;
    let mut next = |len| {
        let t = w5_text(i, j, len);
        j += 1;
        t
    };
    let assistant = |content, stop_reason| AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "bench".into(),
        model: "bench-model".into(),
        usage: Usage::default().into(),
        stop_reason,
        timestamp: TS,
        ..AssistantMessage::default()
    };
    for c in 0..25 {
        msgs.push(Message::from(UserMessage {
            content: Content::Blocks(vec![ContentBlock::text(next(256))]),
            timestamp: TS,
            extra: None,
        }));
        msgs.push(Message::from(assistant(
            vec![
                ContentBlock::text(next(128)),
                ContentBlock::tool_call(ToolCall {
                    id: Name::unique(&format!("call_{c}")),
                    name: "noop".into(),
                    arguments: json!({ "n": c }),
                    ..ToolCall::default()
                }),
            ],
            StopReason::ToolUse,
        )));
        msgs.push(Message::from(ToolResultMessage {
            tool_call_id: Name::unique(&format!("call_{c}")),
            tool_name: "noop".into(),
            content: vec![ContentBlock::text(next(1024))],
            details: Some(Value::Object(Map::new())),
            is_error: false,
            timestamp: TS,
            ..ToolResultMessage::default()
        }));
        msgs.push(Message::from(assistant(
            vec![ContentBlock::text(next(512))],
            StopReason::Stop,
        )));
    }
    msgs
}

fn idle_stream_fn() -> Arc<dyn StreamFn> {
    Arc::new(
        |_: &tern_ai::Model,
         _: Context,
         _: &StreamOptions|
         -> Result<tern_ai::AssistantMessageEventStream, tern_ai::BoxError> {
            Err("idle agents never stream".into())
        },
    )
}

/// Builds an idle W5 agent with the transcript of agent `i`.
pub fn w5_agent(i: usize, tool: &AgentTool, stream_fn: &Arc<dyn StreamFn>) -> Agent {
    Agent::new(AgentOptions {
        system_prompt: Some(SYSTEM_PROMPT.into()),
        model: Some(shared_bench_model()),
        tools: vec![tool.clone()],
        messages: w5_transcript(i),
        stream_fn: Some(stream_fn.clone()),
        ..AgentOptions::default()
    })
}

/// W5 — idle memory. Memory figures are per process: run it in a fresh process.
pub fn w5(p: &W5Params) -> Res {
    let a_n = p.agents;
    let bytes: usize = w5_transcript(7)
        .iter()
        .map(|m| match m {
            Message::User(u) => u.content.text("").len(),
            Message::Assistant(a) => a.text().len(),
            Message::ToolResult(t) => tern_ai::content_text(&t.content, "").len(),
            _ => 0,
        })
        .sum();
    check(bytes == W5_RAW_TEXT_BYTES, || {
        format!("transcript text bytes {bytes}")
    })?;
    let tool = noop_tool();
    let sf = idle_stream_fn();
    trim_heap();
    let rss0 = rss_bytes();
    let heap0 = heap_in_use_bytes();
    let t0 = Instant::now();
    let agents: Vec<Agent> = (0..a_n).map(|i| w5_agent(i, &tool, &sf)).collect();
    let t1 = Instant::now();
    trim_heap();
    let rss1 = rss_bytes();
    let heap1 = heap_in_use_bytes();
    check(agents[a_n - 1].message_count() == 101, || {
        "messages".to_string()
    })?;
    let per = (rss1 as f64 - rss0 as f64) / a_n as f64;
    let over = per - W5_RAW_TEXT_BYTES as f64;
    let heap_per = heap0
        .zip(heap1)
        .map(|(h0, h1)| (h1 as f64 - h0 as f64) / a_n as f64);
    let sizes = json!({
        "Message": std::mem::size_of::<Message>(),
        "AssistantMessage": std::mem::size_of::<AssistantMessage>(),
        "UserMessage": std::mem::size_of::<UserMessage>(),
        "ToolResultMessage": std::mem::size_of::<ToolResultMessage>(),
        "SystemMessage": std::mem::size_of::<SystemMessage>(),
        "ContentBlock": std::mem::size_of::<ContentBlock>(),
        "ToolCall": std::mem::size_of::<ToolCall>(),
        "Usage": std::mem::size_of::<Usage>(),
        "Value": std::mem::size_of::<Value>(),
    });
    drop(agents);
    let by_kind = w5_bytes_by_kind();
    Ok(json!({
        "workload": "W5",
        "agents": a_n,
        "messages_per_agent": 100,
        "raw_text_bytes_per_agent": W5_RAW_TEXT_BYTES,
        "construct_ms": ms(t1 - t0),
        "rss_baseline_mb": mib(rss0),
        "rss_idle_mb": mib(rss1),
        "peak_rss_mb": mib(max_rss_bytes()),
        "rss_per_agent_bytes": per,
        "rss_overhead_per_agent_bytes": over,
        "heap_per_agent_bytes": heap_per,
        "heap_overhead_per_agent_bytes": heap_per.map(|h| h - W5_RAW_TEXT_BYTES as f64),
        "heap_note": "glibc malloc in use (mallinfo2), chunk headers included",
        "overhead_per_message_bytes_rss": over / 100.0,
        "type_sizes_bytes": sizes,
        "heap_overhead_per_message_by_kind_bytes": by_kind,
        "impl": "tern",
    }))
}

/// Heap bytes each kind of W5 message holds beyond its text (malloc headers included), from
/// `mallinfo2` around 2,000 transcripts of which only that kind is kept, shrunk as an agent
/// keeps them. `null` off glibc.
fn w5_bytes_by_kind() -> Value {
    const N: usize = 2_000;
    // (name, position in the 4-message cycle, text bytes)
    let kinds = [
        ("user", 0, 256),
        ("assistant_with_tool_call", 1, 128),
        ("tool_result", 2, 1024),
        ("assistant", 3, 512),
    ];
    let mut out = Map::new();
    for (name, pos, text) in kinds {
        trim_heap();
        let h0 = heap_in_use_bytes();
        let kept: Vec<Vec<Message>> = (0..N)
            .map(|i| {
                let mut t = w5_transcript(i);
                t.retain({
                    let mut k = 0;
                    move |_| {
                        k += 1;
                        (k - 1) % 4 == pos
                    }
                });
                t.shrink_to_fit();
                // As `Agent::new` keeps them.
                t.iter_mut().for_each(Message::shrink_to_fit);
                t
            })
            .collect();
        let h1 = heap_in_use_bytes();
        let per = h0.zip(h1).map(|(a, b)| {
            // The outer vector's own buffer is the measurement's, not the messages'.
            let outer = (N * std::mem::size_of::<Vec<Message>>()) as f64;
            (b as f64 - a as f64 - outer) / (N * 25) as f64 - text as f64
        });
        out.insert(name.into(), json!(per.map(|p| round(p, 1))));
        drop(kept);
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------
// W6

/// W6 parameters (§W6).
#[derive(Clone, Debug)]
pub struct W6Params {
    /// SSE chunks in the body (C).
    pub chunks: usize,
    /// Warm-up requests (direct and agent each).
    pub warmup: usize,
    /// Measured direct requests.
    pub reps: usize,
    /// Measured agent requests.
    pub agent_reps: usize,
    /// Path of the reference's `w6-server.mjs` (in a directory where `npm ci` ran).
    pub server: PathBuf,
    /// Also measure the direct requests on a multi-thread runtime with this many workers
    /// (0: no).
    pub mt_threads: usize,
}

impl Default for W6Params {
    fn default() -> Self {
        W6Params {
            chunks: 200_000,
            warmup: 1,
            reps: 5,
            agent_reps: 3,
            server: PathBuf::from("../shared/bench/node/w6-server.mjs"),
            mt_threads: 2,
        }
    }
}

/// The text of delta `i`: `t<i mod 10⁶, 6 digits> ` (8 bytes).
pub fn w6_delta(i: usize) -> String {
    format!("t{:06} ", i % 1_000_000)
}

/// The W6 server process (killed on drop).
pub struct W6Server {
    child: std::process::Child,
    /// Its port.
    pub port: u16,
    /// The body size it reported.
    pub body_bytes: usize,
}

impl W6Server {
    /// Starts `node <server> --chunks <chunks>` and waits for `LISTENING <port> <bytes>`.
    pub fn start(server: &std::path::Path, chunks: usize) -> Result<Self, String> {
        use std::io::BufRead;
        let mut child = std::process::Command::new("node")
            .arg(server)
            .args(["--chunks", &chunks.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("node {}: {e}", server.display()))?;
        let mut line = String::new();
        let out = child.stdout.take().ok_or("no stdout")?;
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 3 || parts[0] != "LISTENING" {
            let _ = child.kill();
            return Err(format!("server said {line:?}"));
        }
        Ok(W6Server {
            port: parts[1].parse().map_err(|_| "port")?,
            body_bytes: parts[2].parse().map_err(|_| "bytes")?,
            child,
        })
    }
}

impl Drop for W6Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct W6Run {
    ms: f64,
    cpu: f64,
    ttfd: f64,
}

async fn w6_direct(model: &tern_ai::Model, chunks: usize) -> Result<W6Run, String> {
    let context = Context::new(vec![
        Message::from(SystemMessage {
            content: Content::Text(SYSTEM_PROMPT.into()),
            timestamp: 0,
            ..SystemMessage::default()
        }),
        Message::user_text("go"),
    ]);
    let options = StreamOptions {
        api_key: Some("bench".into()),
        ..StreamOptions::default()
    };
    let c0 = cpu_ms();
    let t0 = Instant::now();
    let mut deltas = 0usize;
    let mut first = None;
    let mut s = tern_ai::providers::stream(model, context, options);
    while let Some(e) = s.next().await {
        if let AssistantMessageEvent::TextDelta { .. } = e {
            if deltas == 0 {
                first = Some(t0.elapsed());
            }
            deltas += 1;
        }
    }
    let msg = s.result().await;
    let wall = t0.elapsed();
    let cpu = cpu_ms() - c0;
    check(msg.stop_reason == StopReason::Stop, || {
        format!("stopReason {:?} {:?}", msg.stop_reason, msg.error_message)
    })?;
    let text = msg.text();
    check(
        deltas == chunks && text.len() == chunks * 8 && text.ends_with(&w6_delta(chunks - 1)),
        || format!("content: {deltas} deltas, {} bytes", text.len()),
    )?;
    Ok(W6Run {
        ms: ms(wall),
        cpu,
        ttfd: first.map(ms).unwrap_or(f64::NAN),
    })
}

/// W6 — SSE client throughput, against the reference's Node server.
pub fn w6(p: &W6Params) -> Res {
    let server = W6Server::start(&p.server, p.chunks)?;
    let model = bench_model_at(&format!("http://127.0.0.1:{}/v1", server.port));
    let body = server.body_bytes as f64;
    let c = p.chunks;
    let direct_runs = |threads: usize| -> Result<Vec<W6Run>, String> {
        rt(threads).block_on(async {
            let mut d = Vec::new();
            for r in 0..p.warmup + p.reps {
                let x = w6_direct(&model, c).await?;
                if r >= p.warmup {
                    d.push(x);
                }
            }
            Ok(d)
        })
    };
    let d = direct_runs(0)?;
    let ag: Vec<W6Run> = rt(0).block_on(async {
        let agent = Agent::new(AgentOptions {
            system_prompt: Some(SYSTEM_PROMPT.into()),
            model: Some(Arc::new(model.clone())),
            stream_fn: Some(Arc::new(Providers)),
            hooks: tern_agent::Hooks::default()
                .get_api_key(|_p| async { Ok(Some("bench".to_string())) }),
            ..AgentOptions::default()
        });
        let events = Arc::new(AtomicUsize::new(0));
        let ev = events.clone();
        agent.subscribe_sync(move |_| {
            ev.fetch_add(1, Ordering::Relaxed);
        });
        let mut out = Vec::new();
        let warm = if p.agent_reps > 0 { p.warmup } else { 0 };
        for r in 0..warm + p.agent_reps {
            agent.reset().map_err(|e| e.to_string())?;
            events.store(0, Ordering::Relaxed);
            let c0 = cpu_ms();
            let t0 = Instant::now();
            agent.prompt("go").await.map_err(|e| e.to_string())?;
            let wall = ms(t0.elapsed());
            let cpu = cpu_ms() - c0;
            let len = last_text(&agent).len();
            check(len == c * 8, || format!("agent text {len}"))?;
            let n = events.load(Ordering::Relaxed);
            check(n == c + 10, || format!("agent events {n}"))?;
            if r >= warm {
                out.push(W6Run {
                    ms: wall,
                    cpu,
                    ttfd: f64::NAN,
                });
            }
        }
        Ok::<_, String>(out)
    })?;
    let mt = if p.mt_threads > 0 {
        direct_runs(p.mt_threads)?
    } else {
        Vec::new()
    };
    let walls: Vec<f64> = d.iter().map(|x| x.ms).collect();
    let m = median(&walls);
    let cpu = median(&d.iter().map(|x| x.cpu).collect::<Vec<_>>());
    let mut out = json!({
        "workload": "W6",
        "chunks": c,
        "body_bytes": server.body_bytes,
        "reps": p.reps,
        "wall_ms_median": m,
        "wall_ms_all": walls.iter().map(|x| round(*x, 1)).collect::<Vec<_>>(),
        "mb_per_s": body / 1e6 / (m / 1000.0),
        "chunks_per_s": c as f64 / (m / 1000.0),
        "client_cpu_ms_median": cpu,
        "client_cpu_us_per_chunk": cpu * 1000.0 / c as f64,
        "client_cpu_utilization": cpu / m,
        "time_to_first_delta_ms_median": median(&d.iter().map(|x| x.ttfd).collect::<Vec<_>>()),
        "impl": "tern",
    });
    if !ag.is_empty() {
        let am = median(&ag.iter().map(|x| x.ms).collect::<Vec<_>>());
        out["agent_reps"] = json!(ag.len());
        out["agent_wall_ms_median"] = json!(am);
        out["agent_mb_per_s"] = json!(body / 1e6 / (am / 1000.0));
        out["agent_chunks_per_s"] = json!(c as f64 / (am / 1000.0));
        out["agent_client_cpu_ms_median"] =
            json!(median(&ag.iter().map(|x| x.cpu).collect::<Vec<_>>()));
    }
    if !mt.is_empty() {
        let mm = median(&mt.iter().map(|x| x.ms).collect::<Vec<_>>());
        out["mt_threads"] = json!(p.mt_threads);
        out["mt_wall_ms_median"] = json!(mm);
        out["mt_mb_per_s"] = json!(body / 1e6 / (mm / 1000.0));
        out["mt_client_cpu_ms_median"] =
            json!(median(&mt.iter().map(|x| x.cpu).collect::<Vec<_>>()));
        out["mt_time_to_first_delta_ms_median"] =
            json!(median(&mt.iter().map(|x| x.ttfd).collect::<Vec<_>>()));
    }
    Ok(out)
}
