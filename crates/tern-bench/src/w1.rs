//! W1 — loop overhead: `L(T)`, one prompt of T turns with a no-op tool, per turn and per
//! event, with a sync and an async listener, and with telemetry compiled in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tern_agent::{Agent, AgentEvent};

use crate::fixtures::*;
use crate::util::*;
use crate::workloads::{check, ms, rt, settle, Res};

// ---------------------------------------------------------------------------------------
// W1

/// W1 parameters (§W1).
#[derive(Clone, Debug)]
pub struct W1Params {
    /// Turns per prompt (T).
    pub turns: usize,
    /// Warm-up prompts.
    pub warmup: usize,
    /// Measured prompts.
    pub reps: usize,
    /// Also measure the same prompts with an async listener (`Agent::subscribe`).
    pub async_listener: bool,
    /// Also measure them with telemetry compiled in (`tern-telemetry`, feature `otel`): off
    /// as the CLI leaves it without `OTEL_*` variables, and its listener attached with no
    /// exporter installed.
    pub telemetry: bool,
}

impl Default for W1Params {
    fn default() -> Self {
        W1Params {
            turns: 1000,
            warmup: 5,
            reps: 10,
            async_listener: true,
            telemetry: true,
        }
    }
}

/// Counts events and timestamps each `turn_start` into a preallocated array.
struct TurnRecorder {
    base: Instant,
    events: Counter,
    idx: Counter,
    stamps: Vec<AtomicU64>,
}

impl TurnRecorder {
    fn new(n: usize) -> Self {
        TurnRecorder {
            base: Instant::now(),
            events: Counter::default(),
            idx: Counter::default(),
            stamps: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }
    fn reset(&self) {
        self.events.set(0);
        self.idx.set(0);
    }
    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
    fn on_event(&self, e: &AgentEvent) {
        self.events.bump();
        if matches!(e, AgentEvent::TurnStart) {
            let i = self.idx.bump();
            if let Some(s) = self.stamps.get(i) {
                s.store(self.now(), Ordering::Relaxed);
            }
        }
    }
    fn stamp_us(&self, i: usize) -> f64 {
        self.stamps[i].load(Ordering::Relaxed) as f64 / 1e3
    }
}

struct W1Run {
    ms: f64,
    cpu_ms: f64,
    events: usize,
    first_us: f64,
    last_us: f64,
}

async fn w1_reps(
    agent: &Agent,
    script: &LoopScript,
    rec: &TurnRecorder,
    p: &W1Params,
) -> Result<Vec<W1Run>, String> {
    let t = p.turns;
    let mut runs = Vec::new();
    for r in 0..p.warmup + p.reps {
        settle().await;
        agent.reset().map_err(|e| e.to_string())?;
        script.reset();
        rec.reset();
        let c0 = cpu_ms();
        let t0 = Instant::now();
        agent.prompt("go").await.map_err(|e| e.to_string())?;
        let end = rec.now();
        let elapsed = t0.elapsed();
        let cpu = cpu_ms() - c0;
        let turns = rec.idx.get();
        check(turns == t, || format!("expected {t} turns, got {turns}"))?;
        rec.stamps[t].store(end, Ordering::Relaxed);
        let n = agent.message_count();
        check(n == 2 * t + 1, || format!("transcript length {n}"))?;
        let events = rec.events.get();
        check(events == loop_events(t), || format!("events {events}"))?;
        let win = (t / 10).max(1);
        let first = rec.stamp_us(win) - rec.stamp_us(0);
        let last = rec.stamp_us(t) - rec.stamp_us(t - win);
        if r >= p.warmup {
            runs.push(W1Run {
                ms: ms(elapsed),
                cpu_ms: cpu,
                events,
                first_us: first / win as f64,
                last_us: last / win as f64,
            });
        }
    }
    Ok(runs)
}

/// W1's prompts with telemetry compiled in, beside plain ones, one prompt of each in turn
/// (the order rotating), so load moves all three alike: `telemetry_plain` (no telemetry),
/// `telemetry_off` (what the CLI does without `OTEL_*` variables: the configuration is read
/// and nothing is attached) and `telemetry_no_exporter` (the span listener attached, no
/// exporter installed). Milliseconds per prompt of each.
async fn w1_telemetry(p: &W1Params) -> Result<Vec<(&'static str, Vec<f64>)>, String> {
    let t = p.turns;
    let mut setups = Vec::new();
    for (key, attach) in [
        ("telemetry_plain", None),
        ("telemetry_off", Some(false)),
        ("telemetry_no_exporter", Some(true)),
    ] {
        let script = Arc::new(LoopScript::new(t));
        let agent = bench_agent(vec![noop_tool()], script.clone());
        let rec = Arc::new(TurnRecorder::new(t + 1));
        let r2 = rec.clone();
        agent.subscribe_sync(move |e| r2.on_event(e));
        let spans = attach.and_then(|always| {
            let on = tern_telemetry::export::ExportConfig::from_vars("tern", |_| None);
            (always || on.is_some())
                .then(|| tern_telemetry::attach(&agent, tern_telemetry::TraceOptions::new("w1")))
        });
        let warm = W1Params {
            reps: 0,
            ..p.clone()
        };
        w1_reps(&agent, &script, &rec, &warm).await?;
        setups.push((key, agent, script, rec, spans, Vec::new()));
    }
    let one = W1Params {
        warmup: 0,
        reps: 1,
        ..p.clone()
    };
    for r in 0..p.reps {
        for i in 0..setups.len() {
            let n = setups.len();
            let (_, agent, script, rec, _, ms) = &mut setups[(i + r) % n];
            let run = w1_reps(agent, script, rec, &one).await?;
            ms.extend(run.iter().map(|x| x.ms));
        }
    }
    Ok(setups.into_iter().map(|(k, .., ms)| (k, ms)).collect())
}

/// W1 — loop overhead.
pub fn w1(p: &W1Params) -> Res {
    rt(0).block_on(async {
        let t = p.turns;
        let script = Arc::new(LoopScript::new(t));
        let agent = bench_agent(vec![noop_tool()], script.clone());
        let rec = Arc::new(TurnRecorder::new(t + 1));
        let r2 = rec.clone();
        agent.subscribe_sync(move |e| r2.on_event(e));
        let runs = w1_reps(&agent, &script, &rec, p).await?;
        let all: Vec<f64> = runs.iter().map(|x| x.ms).collect();
        let m = median(&all);
        let mut out = json!({
            "workload": "W1",
            "turns": t,
            "events_per_prompt": runs[0].events,
            "reps": p.reps,
            "prompt_ms_median": m,
            "prompt_ms_min": min(&all),
            "prompt_cpu_ms_median": median(&runs.iter().map(|x| x.cpu_ms).collect::<Vec<_>>()),
            "prompt_ms_all": all.iter().map(|x| round(*x, 3)).collect::<Vec<_>>(),
            "us_per_turn_best": min(&all) * 1000.0 / t as f64,
            "us_per_turn": m * 1000.0 / t as f64,
            "ns_per_event": m * 1e6 / runs[0].events as f64,
            "us_per_turn_first10pct": median(&runs.iter().map(|x| x.first_us).collect::<Vec<_>>()),
            "us_per_turn_last10pct": median(&runs.iter().map(|x| x.last_us).collect::<Vec<_>>()),
            "listener": "sync",
            "impl": "tern",
        });
        if p.async_listener {
            // The same prompts with an async listener (the reference's `await listener(e)`).
            let script = Arc::new(LoopScript::new(t));
            let agent = bench_agent(vec![noop_tool()], script.clone());
            let rec = Arc::new(TurnRecorder::new(t + 1));
            let r2 = rec.clone();
            agent.subscribe(move |e, _signal| {
                r2.on_event(&e);
                std::future::ready(())
            });
            let runs = w1_reps(&agent, &script, &rec, p).await?;
            let all: Vec<f64> = runs.iter().map(|x| x.ms).collect();
            let m = median(&all);
            out["async_listener_us_per_turn"] = json!(m * 1000.0 / t as f64);
            out["async_listener_us_per_turn_first10pct"] =
                json!(median(&runs.iter().map(|x| x.first_us).collect::<Vec<_>>()));
            out["async_listener_us_per_turn_last10pct"] =
                json!(median(&runs.iter().map(|x| x.last_us).collect::<Vec<_>>()));
        }
        if p.telemetry {
            let t_runs = w1_telemetry(p).await?;
            for (key, ms) in t_runs {
                out[format!("{key}_us_per_turn")] = json!(median(&ms) * 1000.0 / t as f64);
            }
        }
        Ok(out)
    })
}
