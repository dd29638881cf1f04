//! RPC mode (pi's `docs/rpc.md`, `docs/rpc-commands.md`): JSONL commands on stdin; responses
//! (`{"type":"response","command",...,"success",...}`, correlated by `id`) and session events
//! on stdout. A prompt's response only says it was accepted; `agent_settled` says that
//! nothing more will run.
//!
//! - `command.rs`: the commands, typed.
//! - `handler.rs`: what each command does.
//! - here: the stdin loop and the responses.

mod command;
mod handler;

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use crate::event_lines;
use crate::runtime::Runtime;
use command::Command;
use handler::Rpc;

/// A failed response.
fn failure(command: &str, error: String) -> Value {
    json!({"type": "response", "command": command, "success": false, "error": error})
}

/// Reads a command line: `Err` is the response to send instead (a `parse` failure, a
/// missing or unknown `type`, a malformed field).
fn read_command(line: &str) -> Result<(Command, String, Option<Value>), Value> {
    let value: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return Err(failure(
                "parse",
                "Failed to parse command: a command is a JSON object".into(),
            ))
        }
        Err(e) => return Err(failure("parse", format!("Failed to parse command: {e}"))),
    };
    let id = value.get("id").cloned();
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let with_id = |mut resp: Value| {
        if let Some(id) = &id {
            resp["id"] = id.clone();
        }
        resp
    };
    if kind.is_empty() {
        return Err(with_id(failure("", "missing field `type`".into())));
    }
    match serde_json::from_value::<Command>(value) {
        Ok(command) => Ok((command, kind, id)),
        Err(e) => Err(with_id(failure(&kind, e.to_string()))),
    }
}

/// Runs RPC mode until stdin closes and the last run settles; returns the exit code.
pub async fn run(rt: Runtime) -> i32 {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(line) = rx.recv().await {
            if out.write_all(line.as_bytes()).await.is_err()
                || out.write_all(b"\n").await.is_err()
                || out.flush().await.is_err()
            {
                break;
            }
        }
    });
    let events_tx = tx.clone();
    let sub = rt.agent.subscribe_sync(move |e| {
        let _ = events_tx.send(event_lines::event_json(e).to_string());
    });
    let (idle, _) = watch::channel(true);
    let rpc = Arc::new(Rpc {
        rt: Arc::new(rt),
        tx: tx.clone(),
        idle,
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                eprintln!("tern: cannot read stdin: {e}");
                break;
            }
        };
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let (command, kind, id) = match read_command(line) {
            Ok(c) => c,
            Err(resp) => {
                rpc.send(resp);
                continue;
            }
        };
        // Commands are handled in order; a prompt's run goes on in its own task.
        let mut resp = match rpc.handle(command, &kind).await {
            Ok(data) => {
                let mut r = json!({"type": "response", "command": kind, "success": true});
                if let Some(d) = data {
                    r["data"] = d;
                }
                r
            }
            Err(e) => failure(&kind, e),
        };
        if let Some(id) = id {
            resp["id"] = id;
        }
        rpc.send(resp);
    }
    // Orderly shutdown: let a running prompt settle.
    rpc.wait_idle().await;
    sub.unsubscribe();
    drop(rpc);
    drop(tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    0
}
