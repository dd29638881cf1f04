//! RPC mode (pi's `docs/rpc.md`, `docs/rpc-commands.md`): JSONL commands on stdin; responses
//! (`{"type":"response","command",...,"success",...}`, correlated by `id`) and session events
//! on stdout. A prompt's response only says it was accepted; `agent_settled` says that
//! nothing more will run.
//!
//! - `command.rs`: the commands, typed.
//! - `handler.rs`: what each command does.
//! - `models.rs`: the model and thinking-level commands.
//! - `session.rs`: the session commands (stats, entries, tree, fork, clone, switch, export).
//! - `io.rs`: typed commands off stdin, ordered redacted lines on stdout.
//! - `line_reader.rs`: bounded command lines off stdin.
//! - `parse.rs`: a line's bytes to a command, or the failure response to send instead.
//! - `temporal.rs`: the same protocol with the session on Temporal (`--temporal`).
//! - here: the stdin loop and the responses.
//!
//! A bad line (not UTF-8, not JSON, over the size cap) is answered with a `parse` failure
//! and the loop goes on.

mod command;
mod handler;
mod io;
mod line_reader;
mod models;
mod parse;
mod session;
#[cfg(feature = "temporal")]
pub mod temporal;

pub(crate) use handler::slash_commands;

pub use line_reader::DEFAULT_MAX_LINE_BYTES;

use std::sync::Arc;

use serde_json::json;

use crate::event_lines;
use crate::runtime::Runtime;
use handler::Rpc;
use io::Input;
use parse::failure;

/// Runs RPC mode until stdin closes and the last run settles; returns the exit code.
/// Command lines longer than `max_line_bytes` are refused.
pub async fn run(rt: Runtime, max_line_bytes: usize) -> i32 {
    let (tx, writer) = io::stdout_lines();
    let events_tx = tx.clone();
    let retry = rt.retry.clone();
    let sub = rt.agent.subscribe_sync(move |e| {
        let _ = events_tx.send(event_lines::event_json(e, &retry).to_string());
    });
    // Compaction and retry events go out in line with the agent's.
    let session_tx = tx.clone();
    let observer: crate::compaction::run::Observer = Arc::new(move |v: &serde_json::Value| {
        let _ = session_tx.send(v.to_string());
    });
    *rt.compaction.observer.lock() = Some(observer.clone());
    *rt.retry.observer.lock() = Some(observer);
    // Accepted input, step by step: `{"type":"input_update","inputId":…,"stage":…}`.
    let inputs_tx = tx.clone();
    *rt.inputs.lock() = Some(Arc::new(move |p: &tern_durable::InputProgress| {
        let _ = inputs_tx.send(
            json!({"type": "input_update", "inputId": p.id, "stage": p.stage.name()}).to_string(),
        );
    }));
    let rpc = Arc::new(Rpc::new(rt, tx.clone()));
    let mut commands = io::Commands::new(max_line_bytes);
    let mut signalled = false;
    loop {
        let (command, kind, id) = match commands.next_command(|r| rpc.send(r)).await {
            Input::Command(c, kind, id) => (c, kind, id),
            Input::End => break,
            // SIGINT, SIGTERM, SIGHUP: abort the running prompt, let it settle, and exit.
            Input::Interrupted => {
                signalled = true;
                rpc.rt.abort_by_user();
                break;
            }
        };
        // A shell command answers when it ends, and `abort_bash` must be read meanwhile.
        if let command::Command::Bash {
            command,
            exclude_from_context,
        } = command
        {
            let rpc = rpc.clone();
            // Taken now, so an `abort_bash` on the next line stops this command.
            let cancel = rpc.bash_cancel.lock().clone();
            tokio::spawn(async move {
                let result = rpc
                    .bash(&command, exclude_from_context, id.as_ref(), cancel)
                    .await;
                rpc.send(response(&kind, id, result.map(Some)));
            });
            continue;
        }
        // pi answers `abort_retry` before the wait it cuts short reports its end: the response
        // goes out first (responses and events share one channel), then the wait is cut, so
        // the waiting task, on another thread, cannot report before the answer.
        if matches!(command, command::Command::AbortRetry) {
            rpc.send(response(&kind, id, Ok(None)));
            rpc.rt.retry.abort();
            continue;
        }
        // Commands are handled in order; a prompt's run goes on in its own task.
        let result = rpc.handle(command, &kind).await;
        rpc.send(response(&kind, id, result));
    }
    // Orderly shutdown: let a running prompt settle.
    rpc.wait_idle().await;
    sub.unsubscribe();
    drop(rpc);
    drop(tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    if signalled {
        crate::exit::ABORTED
    } else {
        crate::exit::OK
    }
}

/// The response line to a command of type `kind`, correlated by `id`.
fn response(
    kind: &str,
    id: Option<serde_json::Value>,
    result: Result<Option<serde_json::Value>, String>,
) -> serde_json::Value {
    let mut resp = match result {
        Ok(data) => {
            let mut r = json!({"type": "response", "command": kind, "success": true});
            if let Some(d) = data {
                r["data"] = d;
            }
            r
        }
        Err(e) => failure(kind, e),
    };
    if let Some(id) = id {
        resp["id"] = id;
    }
    resp
}
