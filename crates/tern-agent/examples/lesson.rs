//! The first seed lesson, offline: an agent reads `sample.ts` with a confined tool and
//! explains what `first([])` returns. The model is scripted, so this runs without a network
//! or an API key and shows the whole loop: two requests for one prompt, a tool call in between.
//!
//! ```sh
//! cargo run --release -p tern-agent --example lesson
//! ```
//!
//! Key events go to stderr; the answer goes to stdout. A `finish_turn` hook ends the run
//! after 4 turns that still call tools, and a 30 s timer aborts it.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tern_agent::hooks::TurnDecision;
use tern_agent::{Agent, AgentEvent, AgentTool, RunEnding, StopCause, ToolResult};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::Model;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// File name inside the lesson's fixtures folder, e.g. `sample.ts`.
    path: String,
}

/// Resolves `name` inside `root`, refusing anything that would leave it.
fn confined(root: &Path, name: &str) -> Result<PathBuf, String> {
    let rel = Path::new(name);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!("Refused: {name} is outside the lesson folder"));
    }
    let path = root.join(rel);
    let real = path
        .canonicalize()
        .map_err(|e| format!("Cannot read {name}: {e}"))?;
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("Lesson folder missing: {e}"))?;
    if !real.starts_with(&real_root) {
        return Err(format!("Refused: {name} is outside the lesson folder"));
    }
    Ok(real)
}

fn read_lesson_file(root: PathBuf) -> AgentTool {
    AgentTool::typed(
        "read_lesson_file",
        "Read a file from the lesson's fixtures folder.",
        move |args: ReadArgs, _call| {
            let root = root.clone();
            async move {
                let path = confined(&root, &args.path)?;
                let text = tokio::fs::read_to_string(&path)
                    .await
                    .map_err(|e| format!("Cannot read {}: {e}", args.path))?;
                Ok(ToolResult::text(text))
            }
        },
    )
    .with_label("Read lesson file")
}

const EXPLANATION: &str = "`first` returns `items[0]`. For an empty array there is no element 0, \
so indexing gives `undefined`, and `first([])` returns `undefined` — which the signature \
admits with its `T | undefined` return type. The file's first call, `first([1, 2, 3])`, prints 1.";

#[tokio::main]
async fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fixtures");
    let model = FauxModel::new(vec![
        FauxResponse::tool_call("call_1", "read_lesson_file", json!({"path": "sample.ts"}))
            .with_text_first("I'll read the file first."),
        FauxResponse::text(EXPLANATION),
    ])
    .streaming(12, Duration::from_millis(15));

    let turns = Arc::new(AtomicUsize::new(0));
    let limited = Arc::new(AtomicBool::new(false));
    let (t, l) = (turns.clone(), limited.clone());
    let lesson_model = Model::new("scripted-lesson", "scripted", "tern-demo", "");
    let agent = Agent::builder(lesson_model, model)
        .system_prompt("Explain code after reading the lesson files; never invent file contents.")
        .tool(read_lesson_file(root))
        .finish_turn(move |turn, _signal| {
            let (t, l) = (t.clone(), l.clone());
            async move {
                let n = t.fetch_add(1, Ordering::SeqCst) + 1;
                if n >= 4 && turn.message.tool_calls().next().is_some() {
                    l.store(true, Ordering::SeqCst);
                    return Ok(Some(TurnDecision::End));
                }
                Ok(None)
            }
        })
        .build();

    eprintln!("(scripted model: tern's built-in demo, no network, no API key)");
    let subscription = agent.subscribe_sync(|event| match event {
        AgentEvent::TurnStart => eprintln!("[turn_start]"),
        AgentEvent::MessageEnd { message } => eprintln!("[message_end] {}", message.role()),
        AgentEvent::ToolExecutionStart { tool_call } => {
            eprintln!("[tool_start] {} {}", tool_call.name, tool_call.id)
        }
        AgentEvent::ToolExecutionEnd { is_error, .. } => eprintln!("[tool_end] {is_error}"),
        AgentEvent::TurnEnd { tool_results, .. } => {
            eprintln!("[turn_end] {}", tool_results.len())
        }
        _ => {}
    });

    let timer = {
        let agent = agent.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            agent.abort();
        })
    };
    let outcome = agent
        .prompt("Read sample.ts and explain what first([]) returns and why.")
        .await;
    timer.abort();
    agent.abort();
    agent.wait_for_idle().await;
    subscription.unsubscribe();

    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    match &outcome.ending {
        RunEnding::Completed => {}
        RunEnding::Stopped(StopCause::FinishTurn) if limited.load(Ordering::SeqCst) => {
            eprintln!("error: the turn limit was reached; the task was not confirmed complete");
            std::process::exit(3);
        }
        RunEnding::Failed(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        other => {
            eprintln!("error: the run ended as {other:?}");
            std::process::exit(1);
        }
    }
    println!("{}", outcome.final_text().unwrap_or_default());
}
