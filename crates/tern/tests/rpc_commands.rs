//! Every command of pi's `docs/rpc-commands.md`, sent to `tern --mode rpc` against the
//! scripted server: none is unknown, and each answers with the documented shape (field
//! names and JSON types, from the doc's examples).

mod common;

use std::path::Path;

use common::{dirs, Rpc, Server};
use serde_json::{json, Value};

/// pi 1.6's RPC commands, in the doc's order.
const PI_COMMANDS: [&str; 33] = [
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "new_session",
    "get_state",
    "get_messages",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_commands",
];

/// Manual compaction belongs to the compaction work, which answers `compact` on its own.
const ELSEWHERE: [&str; 1] = ["compact"];

/// The doc's `### name` headings, when the reference package is here.
fn documented() -> Option<Vec<String>> {
    let doc =
        Path::new("/work/ref/earendil-works-pi-coding-agent-1.6.0/package/docs/rpc-commands.md");
    let text = std::fs::read_to_string(doc).ok()?;
    Some(
        text.lines()
            .filter_map(|l| l.strip_prefix("### "))
            .map(|s| s.trim().to_string())
            .collect(),
    )
}

/// `v` has `shape`: an object shape lists required fields, each a shape; a string names a
/// JSON type (`string`, `number`, `bool`, `array`, `object`, `null`, `any`), with `?` for
/// "or null".
fn check(path: &str, v: &Value, shape: &Value) {
    match shape {
        Value::Object(fields) => {
            assert!(v.is_object(), "{path}: want an object, got {v}");
            for (k, s) in fields {
                let optional = k.ends_with('?');
                let key = k.trim_end_matches('?');
                match v.get(key) {
                    Some(x) => check(&format!("{path}.{key}"), x, s),
                    None if optional => {}
                    None => panic!("{path}: no field `{key}` in {v}"),
                }
            }
        }
        Value::Array(items) => {
            let arr = v
                .as_array()
                .unwrap_or_else(|| panic!("{path}: want an array, got {v}"));
            if let Some(item) = items.first() {
                for (i, x) in arr.iter().enumerate() {
                    check(&format!("{path}[{i}]"), x, item);
                }
            }
        }
        Value::String(t) => {
            let nullable = t.ends_with('?');
            if nullable && v.is_null() {
                return;
            }
            let ok = match t.trim_end_matches('?') {
                "string" => v.is_string(),
                "number" => v.is_number(),
                "bool" => v.is_boolean(),
                "array" => v.is_array(),
                "object" => v.is_object(),
                "null" => v.is_null(),
                "any" => true,
                other => panic!("bad shape type {other}"),
            };
            assert!(ok, "{path}: want {t}, got {v}");
        }
        other => panic!("bad shape {other}"),
    }
}

fn model_shape() -> Value {
    json!({"id": "string", "name": "string", "api": "string", "provider": "string",
           "baseUrl": "string", "reasoning": "bool", "input": ["string"],
           "contextWindow": "number", "maxTokens": "number",
           "cost": {"input": "number", "output": "number", "cacheRead": "number", "cacheWrite": "number"}})
}

/// Sends `cmd` and checks the response: success, the command's name, and `data`'s shape
/// (`None`: no `data`).
fn ok(rpc: &mut Rpc, seen: &mut Vec<String>, cmd: Value, data: Option<Value>) -> Value {
    let kind = cmd["type"].as_str().unwrap_or_default().to_string();
    let r = rpc.call(&format!("c{}", seen.len()), cmd);
    assert_eq!(r["command"], kind.as_str(), "{r}");
    assert_eq!(r["success"], true, "{kind}: {r}");
    let err = r["error"].as_str().unwrap_or_default();
    assert!(!err.starts_with("Unknown command"), "{r}");
    match data {
        Some(shape) => check(&kind, &r["data"], &shape),
        None => assert!(
            r.get("data").is_none() || r["data"].is_null(),
            "{kind}: {r}"
        ),
    }
    seen.push(kind);
    r["data"].clone()
}

#[test]
fn every_pi_rpc_command_answers_with_its_documented_shape() {
    let listed: Vec<&str> = PI_COMMANDS.to_vec();
    match documented() {
        Some(doc) => assert_eq!(doc, listed, "pi's list changed"),
        None => println!("pi's docs are not on this machine: using the list kept here"),
    }
    let (home, cwd) = dirs();
    let server = Server::answering(&["Hi there.", "Second answer."]);
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--tools", "read"]);
    let mut seen = Vec::new();
    let rpc = &mut rpc;
    let seen = &mut seen;

    ok(
        rpc,
        seen,
        json!({"type": "prompt", "message": "hello"}),
        Some(json!({"disposition": "string"})),
    );
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    ok(
        rpc,
        seen,
        json!({"type": "steer", "message": "s"}),
        Some(json!({"disposition": "string"})),
    );
    ok(
        rpc,
        seen,
        json!({"type": "follow_up", "message": "f"}),
        Some(json!({"disposition": "string"})),
    );
    let q = ok(
        rpc,
        seen,
        json!({"type": "clear_queue"}),
        Some(json!({"steering": ["string"], "followUp": ["string"]})),
    );
    assert_eq!(q, json!({"steering": ["s"], "followUp": ["f"]}));
    ok(rpc, seen, json!({"type": "abort"}), None);
    let state_shape = json!({"model": model_shape(), "thinkingLevel": "string", "isStreaming": "bool",
        "isCompacting": "bool", "steeringMode": "string", "followUpMode": "string",
        "sessionFile?": "string", "sessionId": "string", "sessionName?": "string",
        "autoCompactionEnabled": "bool", "messageCount": "number", "pendingMessageCount": "number"});
    let state = ok(
        rpc,
        seen,
        json!({"type": "get_state"}),
        Some(state_shape.clone()),
    );
    let session_file = state["sessionFile"]
        .as_str()
        .expect("a session on disk")
        .to_string();
    ok(
        rpc,
        seen,
        json!({"type": "get_messages"}),
        Some(json!({"messages": [{"role": "string"}]})),
    );

    let provider = state["model"]["provider"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let model_id = state["model"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ok(
        rpc,
        seen,
        json!({"type": "set_model", "provider": provider, "modelId": model_id}),
        Some(model_shape()),
    );
    // Without keys in the environment only the current model is available: `null`.
    let cycled = ok(
        rpc,
        seen,
        json!({"type": "cycle_model"}),
        Some(json!("object?")),
    );
    assert!(cycled.is_null(), "{cycled}");
    ok(
        rpc,
        seen,
        json!({"type": "get_available_models"}),
        Some(json!({"models": [model_shape()]})),
    );
    ok(
        rpc,
        seen,
        json!({"type": "set_thinking_level", "level": "off"}),
        None,
    );
    // The served model has no reasoning: `null`, and only "off".
    let cycled = ok(
        rpc,
        seen,
        json!({"type": "cycle_thinking_level"}),
        Some(json!("object?")),
    );
    assert!(cycled.is_null(), "{cycled}");
    let levels = ok(
        rpc,
        seen,
        json!({"type": "get_available_thinking_levels"}),
        Some(json!({"levels": ["string"]})),
    );
    assert_eq!(levels["levels"], json!(["off"]));
    ok(
        rpc,
        seen,
        json!({"type": "set_steering_mode", "mode": "one-at-a-time"}),
        None,
    );
    ok(
        rpc,
        seen,
        json!({"type": "set_follow_up_mode", "mode": "all"}),
        None,
    );
    println!("not sent here: {ELSEWHERE:?} (answered by the compaction work)");
    ok(
        rpc,
        seen,
        json!({"type": "set_auto_compaction", "enabled": false}),
        None,
    );
    ok(
        rpc,
        seen,
        json!({"type": "set_auto_retry", "enabled": true}),
        None,
    );
    ok(rpc, seen, json!({"type": "abort_retry"}), None);
    let bash_shape = json!({"output": "string", "exitCode": "number?", "cancelled": "bool",
        "truncated": "bool", "fullOutputPath?": "string"});
    let b = ok(
        rpc,
        seen,
        json!({"type": "bash", "command": "echo hi"}),
        Some(bash_shape),
    );
    assert_eq!(
        (b["output"].as_str(), b["exitCode"].as_i64()),
        (Some("hi\n"), Some(0))
    );
    // The output streamed first, tagged with the command's id.
    let update = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "bash_execution_update")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (update["delta"].as_str(), update["id"].is_string()),
        (Some("hi\n"), true),
        "{update}"
    );
    ok(rpc, seen, json!({"type": "abort_bash"}), None);
    // abort_bash is read while a command runs, and ends it.
    rpc.send(json!({"id": "slow", "type": "bash", "command": "sleep 20"}));
    ok(rpc, seen, json!({"type": "abort_bash"}), None);
    let slow = rpc.wait_for("the slow bash", |v| v["id"] == "slow");
    assert_eq!(
        (
            slow["data"]["cancelled"].as_bool(),
            &slow["data"]["exitCode"]
        ),
        (Some(true), &Value::Null),
        "{slow}"
    );
    let stats = ok(
        rpc,
        seen,
        json!({"type": "get_session_stats"}),
        Some(json!({
        "sessionFile?": "string", "sessionId": "string", "userMessages": "number",
        "assistantMessages": "number", "toolCalls": "number", "toolResults": "number",
        "totalMessages": "number",
        "tokens": {"input": "number", "output": "number", "cacheRead": "number", "cacheWrite": "number", "total": "number"},
        "cost": "number",
        "contextUsage?": {"tokens": "number?", "contextWindow": "number", "percent": "number?"}})),
    );
    assert_eq!(
        (
            stats["userMessages"].as_u64(),
            stats["assistantMessages"].as_u64()
        ),
        (Some(1), Some(1))
    );
    let out = cwd.path().join("page.html");
    let e = ok(
        rpc,
        seen,
        json!({"type": "export_html", "outputPath": out}),
        Some(json!({"path": "string"})),
    );
    let page = std::fs::read_to_string(e["path"].as_str().unwrap_or_default()).expect("the page");
    assert!(
        page.contains("Hi there.") && page.contains("hello"),
        "{page}"
    );

    // The tree: the prompt, the answer, the bash message.
    let entry_shape = json!({"type": "string", "id": "string"});
    let entries = ok(
        rpc,
        seen,
        json!({"type": "get_entries"}),
        Some(json!({"entries": [entry_shape], "leafId": "string?"})),
    );
    let all = entries["entries"].as_array().cloned().unwrap_or_default();
    let first = all
        .first()
        .and_then(|e| e["id"].as_str())
        .unwrap_or_default()
        .to_string();
    let later = ok(
        rpc,
        seen,
        json!({"type": "get_entries", "since": first}),
        Some(json!({"entries": "array", "leafId": "string?"})),
    );
    assert_eq!(
        later["entries"].as_array().map(Vec::len),
        Some(all.len() - 1)
    );
    let node = json!({"entry": {"id": "string"}, "children": "array", "label?": "string", "labelTimestamp?": "string"});
    let tree = ok(
        rpc,
        seen,
        json!({"type": "get_tree"}),
        Some(json!({"tree": [node], "leafId": "string?"})),
    );
    assert_eq!(tree["leafId"], entries["leafId"]);
    let forks = ok(
        rpc,
        seen,
        json!({"type": "get_fork_messages"}),
        Some(json!({"messages": [{"entryId": "string", "text": "string"}]})),
    );
    let user = forks["messages"][0].clone();
    assert_eq!(user["text"], "hello");
    ok(
        rpc,
        seen,
        json!({"type": "get_last_assistant_text"}),
        Some(json!({"text": "string?"})),
    );
    ok(
        rpc,
        seen,
        json!({"type": "set_session_name", "name": "my-work"}),
        None,
    );
    let named = ok(
        rpc,
        seen,
        json!({"type": "get_state"}),
        Some(state_shape.clone()),
    );
    assert_eq!(named["sessionName"], "my-work");
    ok(
        rpc,
        seen,
        json!({"type": "get_commands"}),
        Some(json!({"commands": [{"name": "string", "source": "string", "sourceInfo": "object"}]})),
    );

    // Fork before the prompt: a new session, empty, its parent the old one.
    let f = ok(
        rpc,
        seen,
        json!({"type": "fork", "entryId": user["entryId"]}),
        Some(json!({"text": "string", "cancelled": "bool"})),
    );
    assert_eq!(
        (f["text"].as_str(), f["cancelled"].as_bool()),
        (Some("hello"), Some(false))
    );
    let forked = ok(
        rpc,
        seen,
        json!({"type": "get_state"}),
        Some(state_shape.clone()),
    );
    assert_ne!(forked["sessionFile"].as_str(), Some(session_file.as_str()));
    let msgs = ok(
        rpc,
        seen,
        json!({"type": "get_messages"}),
        Some(json!({"messages": "array"})),
    );
    assert!(!msgs["messages"].to_string().contains("hello"), "{msgs}");
    // Back to the first session, then a clone of it holds its conversation.
    ok(
        rpc,
        seen,
        json!({"type": "switch_session", "sessionPath": session_file}),
        Some(json!({"cancelled": "bool"})),
    );
    ok(
        rpc,
        seen,
        json!({"type": "clone"}),
        Some(json!({"cancelled": "bool"})),
    );
    let cloned = ok(rpc, seen, json!({"type": "get_state"}), Some(state_shape));
    assert_ne!(cloned["sessionFile"].as_str(), Some(session_file.as_str()));
    let msgs = ok(
        rpc,
        seen,
        json!({"type": "get_messages"}),
        Some(json!({"messages": "array"})),
    );
    assert!(msgs["messages"].to_string().contains("Hi there."), "{msgs}");
    // The clone goes on: the next prompt sends the history, and the bash output pi's way.
    ok(
        rpc,
        seen,
        json!({"type": "prompt", "message": "again"}),
        Some(json!({"disposition": "string"})),
    );
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    let sent = server.wait_requests(2)[1].to_string();
    assert!(
        sent.contains("Hi there.") && sent.contains("Ran `echo hi`"),
        "{sent}"
    );
    ok(
        rpc,
        seen,
        json!({"type": "new_session"}),
        Some(json!({"cancelled": "bool"})),
    );

    let mut missing: Vec<&str> = listed
        .iter()
        .filter(|c| !seen.iter().any(|s| s == *c) && !ELSEWHERE.contains(c))
        .copied()
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "not covered: {missing:?}");
}

#[test]
fn a_session_kept_in_memory_has_entries_and_a_tree() {
    let (home, cwd) = dirs();
    let server = Server::answering(&["Hi there."]);
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--no-session"]);
    rpc.call("p", json!({"type": "prompt", "message": "hello"}));
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    let entries = rpc.call("e", json!({"type": "get_entries"}));
    let all = entries["data"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let messages: Vec<&str> = all
        .iter()
        .filter(|e| e["type"] == "message")
        .filter_map(|e| e["message"]["role"].as_str())
        .collect();
    // As pi's in-memory session: the system prompt, the prompt and the answer, linked.
    assert_eq!(messages, ["system", "user", "assistant"], "{entries}");
    let leaf = all
        .last()
        .and_then(|e| e["id"].as_str())
        .expect("a last entry");
    assert_eq!(entries["data"]["leafId"], leaf);
    for pair in all.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "{entries}");
    }
    let tree = rpc.call("t", json!({"type": "get_tree"}));
    assert_eq!(tree["data"]["leafId"], leaf, "{tree}");
    assert_eq!(
        tree["data"]["tree"].as_array().map(Vec::len),
        Some(1),
        "{tree}"
    );
    let forks = rpc.call("f", json!({"type": "get_fork_messages"}));
    assert_eq!(forks["data"]["messages"][0]["text"], "hello", "{forks}");
    // Nothing was written.
    assert!(common::session_files(home.path()).is_empty());
    assert_eq!(rpc.finish(), Some(0));
}
