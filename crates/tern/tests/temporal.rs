//! `tern worker --temporal` and `tern --temporal -p` through the real binary, against a real
//! Temporal dev server and a scripted OpenAI-compatible model server: the worker runs the
//! model request and the `read` tool (in its own directory), the client prints the answer;
//! a second prompt attaches to the same session in JSON mode.

#![cfg(feature = "temporal")]

mod common;
// Not every helper of the shared module is used here.
#[allow(dead_code)]
#[path = "../../tern-temporal/tests/support/dev_server.rs"]
mod dev_server;

use std::process::{Child, Command, Stdio};

use common::killed::{spawn, BASH};
use common::{command, run, stderr, stdout, Reply, Server};
use serde_json::{json, Value};

/// Kills the worker when the test ends, also when it fails.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The shared home, the worker's folder and the client's folder.
fn folders() -> (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir) {
    (
        tempfile::tempdir().expect("home"),
        tempfile::tempdir().expect("worker dir"),
        tempfile::tempdir().expect("client dir"),
    )
}

/// Starts `tern worker` in `dir` with `flags`.
fn worker(home: &std::path::Path, dir: &std::path::Path, flags: impl Fn(&mut Command)) -> Worker {
    let mut w = command(home, dir);
    w.arg("worker");
    flags(&mut w);
    Worker(spawn(w))
}

/// Points a worker or a client at the task queue `queue` of `temporal`, and at `model`.
fn connect(c: &mut Command, temporal: &dev_server::DevServer, queue: &str, model: &Server) {
    c.args(["--temporal", &temporal.address, "--task-queue", queue])
        .args(["--base-url", &model.url, "--model", "local"]);
}

#[test]
fn a_worker_serves_prompts_sent_with_temporal() {
    let temporal = dev_server::DevServer::start();
    let model = Server::reading(
        "notes.txt",
        &["The code is TANGO-42.", "It was in notes.txt."],
    );
    let (home, worker_dir, client_dir) = folders();
    std::fs::write(worker_dir.path().join("notes.txt"), "code: TANGO-42\n").expect("notes");
    let flags = |c: &mut Command| connect(c, &temporal, "cli-test", &model);

    let _worker = worker(home.path(), worker_dir.path(), flags);

    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args(["-p", "What is the code in notes.txt?"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "The code is TANGO-42.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let tool_result = requests[1].to_string();
    assert!(
        tool_result.contains("TANGO-42"),
        "the worker's read ran in its directory"
    );
    let err = stderr(&o);
    let id = err
        .split_whitespace()
        .skip_while(|w| *w != "--temporal-session")
        .nth(1)
        .map(|s| s.trim_end_matches(')').to_string())
        .unwrap_or_else(|| panic!("no session id in: {err}"));

    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args([
        "--temporal-session",
        &id,
        "--mode",
        "json",
        "-p",
        "Where was it?",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let events: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    let end = events.last().expect("events");
    let roles: Vec<&str> = end["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "the second run's messages");
    // The session kept the first run: the second request carries the whole transcript.
    let second = model.requests()[2].to_string();
    assert!(second.contains("TANGO-42") && second.contains("Where was it?"));
}

#[test]
fn every_prompt_argument_is_sent_in_order_with_the_files_in_the_first() {
    let temporal = dev_server::DevServer::start();
    let model = Server::answering(&["First answer.", "Second answer."]);
    let (home, worker_dir, client_dir) = folders();
    std::fs::write(client_dir.path().join("brief.md"), "marker NOTE-7\n").expect("brief");
    let flags = |c: &mut Command| connect(c, &temporal, "prompts", &model);

    let _worker = worker(home.path(), worker_dir.path(), flags);

    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args(["-p", "@brief.md", "first question", "second question"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    // As a local run: the last prompt's answer is printed.
    assert_eq!(stdout(&o).trim(), "Second answer.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one request per prompt");
    let (first, second) = (requests[0].to_string(), requests[1].to_string());
    assert!(
        first.contains("NOTE-7") && first.contains("first question"),
        "{first}"
    );
    assert!(!first.contains("second question"), "{first}");
    // The second prompt went after the first settled, in the same session.
    assert!(
        second.contains("First answer.") && second.contains("second question"),
        "{second}"
    );
}

/// The parent of process `pid` (from /proc).
fn parent_of(pid: &str) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces, so read after the last ')'.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn a_worker_killed_mid_tool_leaves_the_outcome_unknown_and_another_finishes() {
    let temporal = dev_server::DevServer::start();
    let (home, worker_dir, client_dir) = folders();
    let pid_file = worker_dir.path().join("bash.pid");
    let runs = worker_dir.path().join("runs.txt");
    let model = Server::start(vec![
        Reply::tool(
            "call_1",
            "bash",
            json!({"command": format!(
                "echo run >> {}; sh -c 'echo $$ > {}; exec sleep 30'",
                runs.display(),
                pid_file.display()
            )}),
        ),
        Reply::text("The command's outcome is unknown."),
    ]);
    let flags = |c: &mut Command| connect(c, &temporal, "failover", &model);
    let spawn_worker = || {
        worker(home.path(), worker_dir.path(), |w: &mut Command| {
            flags(w);
            w.args(BASH);
        })
    };
    let mut workers = vec![spawn_worker(), spawn_worker()];

    // The session's tool declarations come from the client; the worker runs them.
    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args(["--tools", "bash", "-p", "Run the command."]);
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = c.spawn().expect("spawn the client");

    // Once the tool runs, SIGKILL the worker running it (the shell's parent's parent).
    // Should it never run, say what the client and the model saw.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let shell = loop {
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if !pid.trim().is_empty() {
            break pid.trim().to_string();
        }
        let exited = matches!(client.try_wait(), Ok(Some(_)));
        if exited || std::time::Instant::now() > deadline {
            let alive: Vec<bool> = workers
                .iter_mut()
                .map(|w| matches!(w.0.try_wait(), Ok(None)))
                .collect();
            let o = common::wait_output(client, std::time::Duration::ZERO);
            panic!(
                "the tool never started (client exited: {exited}, workers alive: {alive:?}, \
                 model requests: {}); client stderr: {}",
                model.requests().len(),
                stderr(&o)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut running = None;
    let mut p = parent_of(&shell);
    while let Some(pid) = p.filter(|p| *p > 1) {
        if let Some(i) = workers.iter().position(|w| w.0.id() == pid) {
            running = Some(i);
            break;
        }
        p = parent_of(&pid.to_string());
    }
    let i = running.expect("the tool runs under one of the workers");
    let mut dead = workers.remove(i);
    dead.0.kill().expect("SIGKILL the worker");
    let _ = dead.0.wait();
    let _ = Command::new("kill").args(["-9", shell.trim()]).status();

    let o = common::wait_output(client, std::time::Duration::from_secs(90));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "The command's outcome is unknown.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one request per turn, none repeated");
    let sent = requests[1].to_string();
    assert!(
        sent.contains("interrupted") && sent.contains("outcome") && sent.contains("unknown"),
        "the model is told the outcome is unknown: {sent}"
    );
    let times = std::fs::read_to_string(&runs).unwrap_or_default();
    assert_eq!(times.lines().count(), 1, "bash (replay: never) ran once");
}

/// The records of `rpc` from `mark` on whose `type` is `kind`.
fn of_kind<'a>(rpc: &'a common::Rpc, mark: usize, kind: &str) -> Vec<&'a Value> {
    rpc.seen[mark..]
        .iter()
        .filter(|v| v["type"] == kind)
        .collect()
}

#[test]
fn rpc_mode_drives_a_session_on_temporal() {
    use std::time::Duration;
    let temporal = dev_server::DevServer::start();
    let (home, worker_dir, client_dir) = folders();
    let model = Server::start(vec![
        Reply::tool("call_1", "bash", json!({"command": "sleep 3; echo slept"})),
        Reply::text("Slept, and hello."),
        Reply::tool("call_2", "bash", json!({"command": "sleep 60"})),
    ]);
    let flags = |c: &mut Command| connect(c, &temporal, "rpc", &model);
    let _worker = worker(home.path(), worker_dir.path(), |w: &mut Command| {
        flags(w);
        w.args(BASH);
    });
    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args(["--tools", "bash", "--mode", "rpc"]);
    let mut rpc = common::Rpc::spawn(c);
    let long = Duration::from_secs(60);

    // A prompt starts a run; while its tool runs, a plain prompt is refused and a steer is
    // queued, then delivered with the tool's result.
    let mark = rpc.seen.len();
    let r = rpc.call(
        "p1",
        json!({"type": "prompt", "message": "Sleep, then greet."}),
    );
    assert_eq!(r["success"], true, "{r}");
    // The run's events may come before the prompt's answer.
    rpc.since_within(mark, long, "the tool to start", |v| {
        v["type"] == "tool_execution_start"
    });
    let busy = rpc.call("p2", json!({"type": "prompt", "message": "Another."}));
    assert_eq!(busy["success"], false, "{busy}");
    assert!(
        busy["error"]
            .as_str()
            .is_some_and(|e| e.contains("streamingBehavior")),
        "{busy}"
    );
    let steer = rpc.call("s", json!({"type": "steer", "message": "Say hello too."}));
    assert_eq!(steer["success"], true, "{steer}");
    let settled = rpc.wait_for_within(long, "agent_settled", |v| v["type"] == "agent_settled");
    assert_eq!(settled["aborted"], false, "{settled}");
    let kinds: Vec<&str> = rpc.seen.iter().filter_map(|v| v["type"].as_str()).collect();
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(at("agent_start") < at("tool_execution_end"), "{kinds:?}");
    assert!(at("tool_execution_end") < at("agent_end"), "{kinds:?}");
    assert!(at("agent_end") < at("agent_settled"), "{kinds:?}");
    let second = model.requests()[1].to_string();
    assert!(
        second.contains("slept") && second.contains("Say hello too."),
        "the tool's result and the steer reach the model: {second}"
    );

    // The state, the transcript and the last answer come from the workflow.
    let state = rpc.call("st", json!({"type": "get_state"}));
    assert_eq!(state["success"], true, "{state}");
    assert_eq!(state["data"]["isStreaming"], false, "{state}");
    assert_eq!(state["data"]["model"]["id"], "local", "{state}");
    assert!(state["data"]["sessionId"]
        .as_str()
        .is_some_and(|s| s.starts_with("tern-")));
    let msgs = rpc.call("m", json!({"type": "get_messages"}));
    let roles: Vec<&str> = msgs["data"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    assert_eq!(state["data"]["messageCount"], 6, "{state}");
    let last = rpc.call("l", json!({"type": "get_last_assistant_text"}));
    assert_eq!(last["data"]["text"], "Slept, and hello.", "{last}");

    // A command that needs a local session says so.
    let stats = rpc.call("x", json!({"type": "get_session_stats"}));
    assert_eq!(stats["success"], false, "{stats}");
    assert!(
        stats["error"]
            .as_str()
            .is_some_and(|e| e.contains("--temporal")),
        "{stats}"
    );

    // abort stops a running tool, answers once the session is idle, and keeps the session.
    let mark = rpc.seen.len();
    let r = rpc.call("p3", json!({"type": "prompt", "message": "Sleep long."}));
    assert_eq!(r["success"], true, "{r}");
    rpc.since_within(mark, long, "the long tool to start", |v| {
        v["type"] == "tool_execution_start" && v["toolCallId"] == "call_2"
    });
    let r = rpc.call("a", json!({"type": "abort"}));
    assert_eq!(r["success"], true, "{r}");
    let settled = of_kind(&rpc, mark, "agent_settled");
    assert_eq!(
        settled.len(),
        1,
        "settled before abort's answer: {:#?}",
        rpc.seen
    );
    assert_eq!(settled[0]["aborted"], true);
    let state = rpc.call("st2", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], false, "{state}");
    assert_eq!(model.requests().len(), 3, "no request after the abort");
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn a_model_requests_deltas_reach_an_rpc_client_while_it_streams_each_once() {
    use std::time::Duration;
    let temporal = dev_server::DevServer::start();
    let (home, worker_dir, client_dir) = folders();
    let gate = common::Gate::default();
    let model = Server::start(vec![Reply::Gated(
        "Live part, ".into(),
        "then the rest.".into(),
        gate.clone(),
    )]);
    let flags = |c: &mut Command| connect(c, &temporal, "live", &model);
    let _worker = worker(home.path(), worker_dir.path(), flags);
    let mut c = command(home.path(), client_dir.path());
    flags(&mut c);
    c.args(["--mode", "rpc"]);
    let mut rpc = common::Rpc::spawn(c);
    let long = Duration::from_secs(60);

    let r = rpc.call("p", json!({"type": "prompt", "message": "Answer."}));
    assert_eq!(r["success"], true, "{r}");
    // The server holds the rest of the answer until the gate opens: this delta can only
    // have come live from the worker, not from the session's log. It may have come before
    // the prompt's answer.
    let delta = rpc.since_within(0, long, "the first delta", |v| {
        v["type"] == "message_update" && v["assistantMessageEvent"]["type"] == "text_delta"
    });
    assert_eq!(delta["assistantMessageEvent"]["delta"], "Live part, ");
    assert!(
        !rpc.seen
            .iter()
            .any(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant"),
        "the answer has not ended"
    );
    gate.open();
    rpc.wait_for_within(long, "agent_settled", |v| v["type"] == "agent_settled");
    // Each event once: the log's copies of the live ones are not printed again.
    let assistant_starts = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "message_start" && v["message"]["role"] == "assistant")
        .count();
    assert_eq!(assistant_starts, 1, "{:#?}", rpc.seen);
    let deltas: Vec<&str> = rpc
        .seen
        .iter()
        .filter(|v| v["assistantMessageEvent"]["type"] == "text_delta")
        .filter_map(|v| v["assistantMessageEvent"]["delta"].as_str())
        .collect();
    assert_eq!(
        deltas,
        ["Live part, ", "then the rest."],
        "{:#?}",
        rpc.seen
            .iter()
            .filter(|v| v["type"] == "message_update")
            .collect::<Vec<_>>()
    );
    let kinds: Vec<&str> = rpc.seen.iter().filter_map(|v| v["type"].as_str()).collect();
    let ends = kinds.iter().filter(|k| **k == "message_end").count();
    assert_eq!(ends, 2, "the prompt's and the answer's: {kinds:?}");
    assert_eq!(kinds.last(), Some(&"agent_settled"), "{kinds:?}");
    assert_eq!(rpc.finish(), Some(0));
}
