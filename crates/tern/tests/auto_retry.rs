//! Automatic retry of an answer that failed with a transient error (pi's auto-retry): the
//! events in the JSON and RPC streams, the wait, the session file, and turning it off or
//! cutting the wait short.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// `--max-retries 1`: the request layer retries the first 529 itself; the second one
/// reaches the agent as a failed answer, which auto-retry takes over.
const REQUEST_RETRIES: [&str; 2] = ["--max-retries", "1"];

fn overloaded() -> Reply {
    Reply::Error(529, "Overloaded".into())
}

/// A config file with `retry` as its `[retry]` table; its `--config` flag.
fn retry_config(home: &Path, retry: &str) -> [String; 2] {
    let path = home.join("retry.toml");
    std::fs::write(&path, format!("[retry]\n{retry}\n")).expect("config");
    ["--config".into(), path.display().to_string()]
}

/// `tern --mode json hi` against `server`, with `retry` as the config's `[retry]` table.
fn json_run(home: &Path, cwd: &Path, server: &Server, retry: &str) -> std::process::Command {
    let config = retry_config(home, retry);
    let mut c = command(home, cwd);
    c.args(["--mode", "json", "--base-url", &server.url])
        .args(REQUEST_RETRIES)
        .args(&config)
        .arg("hi");
    c
}

/// `tern --mode rpc` against `server`, with `retry` as the config's `[retry]` table.
fn rpc_with(home: &Path, cwd: &Path, server: &Server, retry: &str) -> Rpc {
    let config = retry_config(home, retry);
    let flags = [
        REQUEST_RETRIES[0],
        REQUEST_RETRIES[1],
        &config[0],
        &config[1],
    ];
    Rpc::start(home, cwd, server, &flags)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn position(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("not found in {events:#?}"))
}

#[test]
fn an_overloaded_answer_is_retried_after_the_delay_with_pis_events_and_session_entries() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![overloaded(), overloaded(), Reply::text("made it")]);
    let c = json_run(home.path(), cwd.path(), &server, "base_delay = 0.4");
    let started = Instant::now();
    let o = run(c);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = parse_lines(&stdout(&o));

    let start = of_type(&events, "auto_retry_start");
    assert_eq!(start.len(), 1, "{events:#?}");
    assert_eq!(start[0]["attempt"], 1);
    assert_eq!(start[0]["maxAttempts"], 3);
    assert_eq!(start[0]["delayMs"], 400);
    assert!(
        start[0]["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("Overloaded")),
        "{}",
        start[0]
    );
    assert_eq!(
        of_type(&events, "auto_retry_end"),
        [&json!({"type": "auto_retry_end", "success": true, "attempt": 1})]
    );
    // The failed run's agent_end says a retry follows; the retried one's does not.
    let ends: Vec<&Value> = of_type(&events, "agent_end");
    assert_eq!(ends.len(), 2, "{events:#?}");
    assert_eq!(ends[0]["willRetry"], true);
    assert_eq!(ends[1]["willRetry"], false);
    // pi's order: the retry is announced after the failed run ended, and it ends right
    // after the successful answer's message_end.
    let first_end = position(&events, |e| e["type"] == "agent_end");
    let announced = position(&events, |e| e["type"] == "auto_retry_start");
    let success = position(&events, |e| {
        e["type"] == "message_end" && e["message"]["stopReason"] == "stop"
    });
    let retry_end = position(&events, |e| e["type"] == "auto_retry_end");
    assert!(first_end < announced && announced < success, "{events:#?}");
    assert_eq!(retry_end, success + 1, "{events:#?}");
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("agent_settled"))
    );

    // Two requests at the request layer, then the retry after its delay.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(took >= Duration::from_millis(400), "{took:?}");
    // The failed answer is not in the retried request's context.
    assert_eq!(messages(&reqs[2]), messages(&reqs[1]));

    // The session keeps the failed answer, omitted from the context as pi omits it.
    let files = session_files(home.path());
    assert_eq!(files.len(), 1);
    let lines = json_lines(&files[0]);
    let failed = lines
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["stopReason"] == "error")
        .expect("the failed answer is in the file");
    let edit = position(&lines, |e| {
        e["type"] == "context_edit" && e["targetId"] == failed["id"] && e["replacement"].is_null()
    });
    let answer = position(&lines, |e| {
        e["type"] == "message" && e["message"]["stopReason"] == "stop"
    });
    assert!(edit < answer, "{lines:#?}");
    // The retried answer continues the branch the edit is on.
    let mut at = lines[answer]["parentId"].clone();
    while at != lines[edit]["id"] {
        let parent = lines
            .iter()
            .find(|e| e["id"] == at)
            .expect("parent in the file");
        at = parent["parentId"].clone();
        assert!(
            !at.is_null(),
            "the answer's branch misses the edit: {lines:#?}"
        );
    }
    // A resume sees the question and the retried answer, not the failure.
    let loaded = tern_session::load(&files[0]).expect("load");
    let context: Vec<Value> = loaded
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        .filter(|m| m["role"] != "system")
        .collect();
    assert_eq!(context.len(), 2, "{context:#?}");
    assert_eq!(context[0]["role"], "user");
    assert_eq!(context[1]["stopReason"], "stop");
}

#[test]
fn with_retry_disabled_the_first_failed_answer_ends_the_run() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![overloaded(), overloaded(), Reply::text("x")]);
    let c = json_run(
        home.path(),
        cwd.path(),
        &server,
        "enabled = false\nbase_delay = 0.05",
    );
    let o = run(c);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let events = parse_lines(&stdout(&o));
    assert!(
        of_type(&events, "auto_retry_start").is_empty(),
        "{events:#?}"
    );
    assert_eq!(of_type(&events, "agent_end")[0]["willRetry"], false);
    assert_eq!(server.requests().len(), 2);

    // So does RPC `set_auto_retry false`, with retries on in the config.
    let script = vec![overloaded(), overloaded(), overloaded(), overloaded()];
    let server = Server::start([script, vec![Reply::text("x")]].concat());
    let mut rpc = rpc_with(home.path(), cwd.path(), &server, "base_delay = 0.05");
    let r = rpc.call("off", json!({"type": "set_auto_retry", "enabled": false}));
    assert_eq!(r["success"], true);
    rpc.call("p", json!({"type": "prompt", "message": "hi"}));
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    assert!(
        !rpc.seen.iter().any(|v| v["type"] == "auto_retry_start"),
        "{:#?}",
        rpc.seen
    );
    assert_eq!(server.requests().len(), 2);
    // And back on: the next prompt's failure is retried.
    rpc.call("on", json!({"type": "set_auto_retry", "enabled": true}));
    rpc.call("p2", json!({"type": "prompt", "message": "again"}));
    let start = rpc.wait_for("auto_retry_start", |v| v["type"] == "auto_retry_start");
    assert_eq!(start["attempt"], 1);
    let end = rpc.wait_for("auto_retry_end", |v| v["type"] == "auto_retry_end");
    assert_eq!(end["success"], true, "{end}");
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    assert_eq!(server.requests().len(), 5);
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn abort_retry_during_the_wait_ends_the_run_with_the_error() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![overloaded(), overloaded(), Reply::text("never")]);
    let mut rpc = rpc_with(home.path(), cwd.path(), &server, "base_delay = 30");
    rpc.call("p", json!({"type": "prompt", "message": "hi"}));
    let start = rpc.wait_for("auto_retry_start", |v| v["type"] == "auto_retry_start");
    assert_eq!(start["delayMs"], 30_000);
    let asked = Instant::now();
    let r = rpc.call("stop", json!({"type": "abort_retry"}));
    assert_eq!(r["success"], true);
    let end = rpc.wait_for("auto_retry_end", |v| v["type"] == "auto_retry_end");
    assert_eq!(
        end,
        json!({"type": "auto_retry_end", "success": false, "attempt": 1,
               "finalError": "Retry cancelled"})
    );
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    assert!(asked.elapsed() < Duration::from_secs(10));
    // The run ended with the failed answer; nothing more was sent.
    assert_eq!(server.requests().len(), 2);
    // The failed answer was taken out of the context when the retry was announced.
    let m = rpc.call("m", json!({"type": "get_messages"}));
    let last = m["data"]["messages"]
        .as_array()
        .and_then(|a| a.last())
        .cloned();
    assert_eq!(last.map(|l| l["role"].clone()), Some(json!("user")), "{m}");
    assert_eq!(rpc.finish(), Some(0));
}
