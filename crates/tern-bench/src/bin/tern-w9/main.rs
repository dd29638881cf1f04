//! W9: many agent sessions on Temporal. `N` concurrent sessions (3 turns with one tool call
//! each, then an answer; the model is a scripted server over local HTTP) on one dev server
//! and two worker processes, beside the same work in one process. Prints one JSON line:
//! wall time, sessions per second, p50/p99 step latency (the time between a session's
//! consecutive model requests), and peak RSS of the workers and of the in-process run.
//!
//! ```sh
//! cargo run --release -p tern-bench --features temporal --bin tern-w9 -- --workflows 1000
//! ```
//!
//! Roles (the binary runs itself as its workers): `tern-w9 [--workflows N]` (the driver),
//! `tern-w9 worker ADDRESS QUEUE`, `tern-w9 local ORIGIN N`. `--db file` keeps the dev
//! server's database in a file (default: in memory).

#[allow(dead_code)]
#[path = "../../../../tern-temporal/tests/support/dev_server.rs"]
mod dev_server;
mod server;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tern_agent::{run_agent_loop, AgentContext, AgentEvent, AgentLoopConfig, AgentTool, Replay};
use tern_ai::providers::Providers;
use tern_ai::{Message, Model, StreamFn, StreamOptions};
use tern_bench::util::{mib, round, Args};
use tern_temporal::{AgentActivities, SessionInput, Sessions, ToolSpec};
use tern_testkit::agent::chat_model;
use tokio_util::sync::CancellationToken;

use server::Server;

const QUEUE: &str = "w9";
const ANSWER: &str = "All three steps done.";
/// Sessions run before the measured ones.
const WARM_UP: usize = 4;

fn model(base_url: &str) -> Model {
    chat_model("w9-model", "w9", base_url, 1024)
}

fn step_tool() -> AgentTool {
    AgentTool::dynamic(
        "step",
        "Takes one step.",
        json!({"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]}),
        |call| async move {
            Ok(tern_agent::ToolResult::text(format!(
                "step {} taken",
                call.args["k"]
            )))
        },
    )
    .with_replay(Replay::Safe)
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("no tokio runtime: {e}"))
}

/// Peak RSS of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn last_text(messages: &[Message]) -> String {
    messages
        .last()
        .and_then(|m| serde_json::to_value(m).ok())
        .and_then(|v| {
            v["content"].as_array().map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<String>()
            })
        })
        .unwrap_or_default()
}

/// `worker ADDRESS QUEUE`: hosts the session workflow, the model requests and `step`.
fn worker(address: &str, queue: &str) -> Result<(), String> {
    runtime()?.block_on(async {
        let client = tern_temporal::connect_client(address, "default")
            .await
            .map_err(|e| e.to_string())?;
        let rt = tern_temporal::runtime().map_err(|e| e.to_string())?;
        let activities = AgentActivities::new(Arc::new(Providers), vec![step_tool()])
            .with_api_key(Some("w9-key".into()));
        let mut w = tern_temporal::build_worker(&rt, client, queue, activities)
            .map_err(|e| e.to_string())?;
        w.run().await.map_err(|e| e.to_string())
    })
}

/// `local ORIGIN N`: the same sessions in this process; prints `{"wall_ms","rss_bytes"}`.
fn local(origin: &str, n: usize) -> Result<(), String> {
    let began = Instant::now();
    let done = runtime()?.block_on(async {
        let stream_fn: Arc<dyn StreamFn> = Arc::new(Providers);
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let stream_fn = stream_fn.clone();
                let base = format!("{origin}/s/{i}/v1");
                tokio::spawn(async move {
                    let mut config = AgentLoopConfig::new(model(&base));
                    config.stream_options = StreamOptions {
                        api_key: Some("w9-key".into()),
                        ..StreamOptions::default()
                    };
                    let sink = |_e: AgentEvent| async {};
                    let out = run_agent_loop(
                        vec![Message::user_text(format!("Take three steps ({i})."))],
                        AgentContext::new(Vec::new(), vec![step_tool()]),
                        config,
                        &sink,
                        CancellationToken::new(),
                        stream_fn,
                    )
                    .await;
                    out.map(|m| last_text(&m) == ANSWER).unwrap_or(false)
                })
            })
            .collect();
        let mut done = 0;
        for t in tasks {
            done += usize::from(t.await.unwrap_or(false));
        }
        done
    });
    println!(
        "{}",
        json!({"wall_ms": began.elapsed().as_secs_f64() * 1e3, "done": done,
               "rss_bytes": tern_bench::util::max_rss_bytes()})
    );
    Ok(())
}

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn figures(wall: Duration, n: usize, steps: &[f64]) -> Value {
    let s = wall.as_secs_f64();
    json!({
        "wall_ms": round(s * 1e3, 1),
        "workflows_per_s": round(n as f64 / s, 1),
        "step_p50_ms": round(percentile(steps, 0.5), 2),
        "step_p99_ms": round(percentile(steps, 0.99), 2),
    })
}

async fn temporal_run(
    server: &Server,
    address: &str,
    n: usize,
) -> Result<(Duration, usize), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let sessions = loop {
        match Sessions::connect(address, "default", QUEUE).await {
            Ok(s) => break s,
            Err(e) if Instant::now() > deadline => return Err(e.to_string()),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let tools = vec![ToolSpec::of(&step_tool())];
    // Warm-up sessions first (numbered after the measured ones), so that the clock does not
    // count the workers' start.
    let (_, warm) = run_sessions(server, &sessions, &tools, n..n + WARM_UP).await?;
    if warm < WARM_UP {
        return Err(format!(
            "only {warm} of {WARM_UP} warm-up sessions finished"
        ));
    }
    server.reset();
    run_sessions(server, &sessions, &tools, 0..n).await
}

/// Runs sessions `ids` at once; their wall time and how many finished with the answer.
async fn run_sessions(
    server: &Server,
    sessions: &Sessions,
    tools: &[ToolSpec],
    ids: std::ops::Range<usize>,
) -> Result<(Duration, usize), String> {
    let n = ids.len();
    let began = Instant::now();
    // Start every session first (they then run concurrently), then close them all: a
    // session closes once its run is done, and `close` returns its transcript.
    let started: Vec<_> = futures::stream::iter(ids)
        .map(|i| {
            let tools = tools.to_vec();
            let input = SessionInput {
                model: model(&server.base_url(i)),
                tools,
                ..SessionInput::default()
            };
            async move {
                let s = sessions
                    .start(&format!("w9-{i}"), input)
                    .await
                    .map_err(|e| e.to_string())?;
                s.prompt(vec![Message::user_text(format!("Take three steps ({i})."))])
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(s)
            }
        })
        .buffer_unordered(100)
        .collect()
        .await;
    let handles: Vec<_> = started.into_iter().collect::<Result<_, _>>()?;
    let outputs: Vec<_> = futures::stream::iter(handles.iter())
        .map(|s| s.close())
        .buffer_unordered(n.max(1))
        .collect()
        .await;
    let wall = began.elapsed();
    let done = outputs
        .iter()
        .filter(|o| o.as_ref().is_ok_and(|o| last_text(&o.messages) == ANSWER))
        .count();
    Ok((wall, done))
}

fn drive(args: &Args) -> Result<Value, String> {
    let n = args.int("workflows", 1000);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let rt = runtime()?;
    let server = rt
        .block_on(Server::start())
        .map_err(|e| format!("model server: {e}"))?;
    // `--db file`: the dev server's database in a file (fsynced), as the tests run it;
    // the default keeps it in memory, so the figures are the runtime's, not the disk's.
    let temporal = match args.str("db").as_deref() {
        Some("file") => dev_server::DevServer::start(),
        _ => dev_server::DevServer::start_in_memory(),
    };
    let workers: Vec<Kill> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args(["worker", &temporal.address, QUEUE])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map(Kill)
                .map_err(|e| format!("spawn a worker: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let (wall, done) = rt.block_on(temporal_run(&server, &temporal.address, n))?;
    let (steps, complete) = server.steps();
    let rss: Vec<f64> = workers
        .iter()
        .map(|w| round(mib(peak_rss(w.0.id())), 1))
        .collect();
    drop(workers);
    let mut on_temporal = figures(wall, n, &steps);
    on_temporal["worker_peak_rss_mib"] = json!(rss);
    on_temporal["sessions_done"] = json!(done);
    on_temporal["sessions_with_all_requests"] = json!(complete);

    server.reset();
    let began = Instant::now();
    let out = Command::new(&exe)
        .args(["local", &server.origin, &n.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("the in-process run: {e}"))?;
    let child_wall = began.elapsed();
    let report: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the in-process run printed no report: {e}"))?;
    let (steps, complete) = server.steps();
    let wall = report["wall_ms"]
        .as_f64()
        .map_or(child_wall, |ms| Duration::from_secs_f64(ms / 1e3));
    let mut in_process = figures(wall, n, &steps);
    in_process["peak_rss_mib"] = json!(round(mib(report["rss_bytes"].as_u64().unwrap_or(0)), 1));
    in_process["sessions_done"] = report["done"].clone();
    in_process["sessions_with_all_requests"] = json!(complete);
    Ok(json!({
        "workload": "w9",
        "workflows": n,
        "turns": server::TURNS,
        "temporal": on_temporal,
        "in_process": in_process,
    }))
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("worker") if argv.len() == 3 => worker(&argv[1], &argv[2]),
        Some("local") if argv.len() == 3 => argv[2]
            .parse()
            .map_err(|e| format!("N: {e}"))
            .and_then(|n| local(&argv[1], n)),
        _ => {
            let args = Args::parse(argv);
            args.check(&["workflows", "db"], &["db"])
                .and_then(|()| drive(&args).map(|v| println!("{v}")))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tern-w9: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
