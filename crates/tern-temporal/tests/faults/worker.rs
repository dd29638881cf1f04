//! The worker process the harness kills: `worker ADDRESS QUEUE SLOT LIFE DIR TOOL_MS`.
//!
//! It runs model requests with tern-ai's providers (the session's model points at the
//! scripted server; the worker adds its slot and life to the path, so the server's log says
//! which worker streamed what) and two counting tools: `tally` (`replay: safe`) and `stamp`
//! (`replay: never`). Each call writes `SLOT LIFE start SESSION CALL_ID` to `DIR/progress`,
//! its effect `NAME SESSION CALL_ID SLOT LIFE` to `DIR/effects`, waits `TOOL_MS` (where the
//! kills land), then `SLOT LIFE end SESSION CALL_ID`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tern_agent::{AgentTool, Replay, ToolResult};
use tern_ai::providers::Providers;
use tern_ai::{Context, Model, StreamFn, StreamOptions, StreamStart};
use tern_temporal::activities::current_session;
use tern_temporal::{build_worker, connect_client, runtime, AgentActivities};

/// The path part every session's model URL has, which the worker replaces with its own.
pub const UNROUTED: &str = "/a/0/l/0/";

struct Routed {
    inner: Providers,
    route: String,
}

impl StreamFn for Routed {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        let mut model = model.clone();
        model.base_url = model.base_url.replace(UNROUTED, &self.route);
        self.inner.stream(&model, context, options)
    }
}

pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One write: a kill leaves the line whole or absent.
    f.write_all(format!("{line}\n").as_bytes())
}

fn counting_tool(
    dir: &Path,
    worker: &str,
    name: &'static str,
    replay: Replay,
    pause: Duration,
) -> AgentTool {
    let (dir, worker) = (dir.to_path_buf(), worker.to_string());
    AgentTool::dynamic(
        name,
        "Counts one effect.",
        json!({"type": "object", "properties": {"what": {"type": "string"}}}),
        move |call| {
            let (dir, worker) = (dir.clone(), worker.clone());
            async move {
                let id = &call.tool_call_id;
                let session = current_session().ok_or("no session: not on a worker")?;
                append_line(
                    &dir.join("progress"),
                    &format!("{worker} start {session} {id}"),
                )?;
                append_line(
                    &dir.join("effects"),
                    &format!("{name} {session} {id} {worker}"),
                )?;
                tokio::time::sleep(pause).await;
                append_line(
                    &dir.join("progress"),
                    &format!("{worker} end {session} {id}"),
                )?;
                Ok(ToolResult::text(format!("{name}: {id} counted")))
            }
        },
    )
    .with_replay(replay)
}

pub fn main(args: &[String]) -> ExitCode {
    let [address, queue, slot, life, dir, tool_ms] = args else {
        eprintln!("usage: worker ADDRESS QUEUE SLOT LIFE DIR TOOL_MS");
        return ExitCode::FAILURE;
    };
    let pause = Duration::from_millis(tool_ms.parse().unwrap_or(1000));
    let dir = PathBuf::from(dir);
    let worker = format!("{slot} {life}");
    let tools = vec![
        counting_tool(&dir, &worker, "tally", Replay::Safe, pause),
        counting_tool(&dir, &worker, "stamp", Replay::Never, pause),
    ];
    let stream_fn: Arc<dyn StreamFn> = Arc::new(Routed {
        inner: Providers,
        route: format!("/a/{slot}/l/{life}/"),
    });
    let activities = AgentActivities::new(stream_fn, tools).with_api_key(Some("faults-key".into()));
    let rt = match crate::tokio_runtime("worker") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let run = rt.block_on(async {
        let client = connect_client(address, "default").await?;
        let runtime = runtime()?;
        let mut worker = build_worker(&runtime, client, queue, activities)?;
        worker
            .run()
            .await
            .map_err(|e| tern_temporal::Error::Worker(e.to_string()))
    });
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worker {slot} (life {life}): {e}");
            ExitCode::FAILURE
        }
    }
}
