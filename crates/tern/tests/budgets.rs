//! Budgets through the real binary: a run's limits are journaled and a recovery keeps them,
//! JSON and RPC output name the limit that ended a run, and session limits count every run
//! of a session: the run that reaches one wraps up, a later one is refused with exit code 3.

mod common;

use common::killed::{killed_run, read, recover};
use common::{
    assert_contains, command, has_tools, run, stderr, stdout, text_of, Reply, Rpc, Server,
};
use serde_json::{json, Value};

#[test]
fn a_recovery_runs_under_the_recorded_limits_unless_a_flag_replaces_one() {
    let home = tempfile::tempdir().expect("home");
    let session = home.path().join("s.jsonl");
    killed_run(
        home.path(),
        home.path(),
        &session,
        &["--max-turns", "2"],
        "run the slow thing",
    );
    assert!(
        read(&session).contains(r#""budget":{"run":{"maxTurns":1}}"#),
        "the start record carries the budget"
    );
    let copy = home.path().join("copy.jsonl");
    std::fs::copy(&session, &copy).expect("copy");

    // No flag (a config limit does not count: it is there every time): the recorded
    // --max-turns 2 makes the second request the wrap-up.
    let config = home.path().join("config.toml");
    std::fs::write(&config, "max_turns = 5\n").expect("config");
    let server = Server::start(vec![Reply::text("Wrapped up after the kill.")]);
    let config_flag = ["--config", config.to_str().expect("utf-8")];
    let o = recover(home.path(), home.path(), &session, &server, &config_flag);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Wrapped up after the kill.");
    assert_contains(&stderr(&o), "turn limit reached (2 turns, --max-turns)");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(!has_tools(&reqs[0]), "the wrap-up has no tools");
    assert!(text_of(&reqs[0]).contains("The turn budget of this run is spent"));

    // A flag given now replaces the recorded value, and says so.
    let server = Server::start(vec![Reply::text("Done, with turns to spare.")]);
    let o = recover(
        home.path(),
        home.path(),
        &copy,
        &server,
        &["--max-turns", "5"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(&stderr(&o), "--max-turns 5 replaces the recorded 2");
    assert!(has_tools(&server.requests()[0]));
}

#[test]
fn json_mode_names_the_limit_in_its_last_line() {
    let home = tempfile::tempdir().expect("home");
    let server = Server::start(vec![Reply::text("All I have.")]);
    let mut c = command(home.path(), home.path());
    c.args(["--base-url", &server.url, "--no-session", "--mode", "json"])
        .args(["--max-turns", "1", "-p", "go"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let last: Value = serde_json::from_str(stdout(&o).lines().last().expect("lines")).unwrap();
    assert_eq!(
        last,
        json!({"type": "agent_settled", "aborted": false, "limit": "maxTurns"})
    );
    // A run no limit ended has no `limit`.
    let server = Server::start(vec![Reply::text("Plain.")]);
    let mut c = command(home.path(), home.path());
    c.args(["--base-url", &server.url, "--no-session", "--mode", "json"])
        .args(["-p", "go"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let last: Value = serde_json::from_str(stdout(&o).lines().last().expect("lines")).unwrap();
    assert_eq!(last, json!({"type": "agent_settled", "aborted": false}));
}

#[test]
fn session_limits_wrap_up_the_run_that_reaches_them_and_refuse_the_next() {
    let home = tempfile::tempdir().expect("home");
    let session = home.path().join("s.jsonl");
    let server = Server::start(vec![
        Reply::tool("call_1", "ls", json!({})),
        Reply::text("First run wrapped up."),
    ]);
    let prompt = |flags: &[&str], text: &str| {
        let mut c = command(home.path(), home.path());
        c.args(["--base-url", &server.url, "--tools", "read,grep,find,ls"])
            .args(flags)
            .arg("--session")
            .arg(&session)
            .args(["-p", text]);
        run(c)
    };
    let o = prompt(&["--session-max-turns", "2"], "list, then more");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_contains(
        &stderr(&o),
        "session turn limit reached (2 turns, --session-max-turns)",
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(text_of(&reqs[1]).contains("The turn budget of this session is spent"));

    // The session's two turns are spent: the next run is refused before any request.
    let o = prompt(&["--session-max-turns", "2"], "and now?");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("session turn limit reached")
            && err.contains("raise it with --session-max-turns")
            && err.contains("session_max_turns"),
        "{err}"
    );
    assert!(stdout(&o).is_empty());
    assert_eq!(server.requests().len(), 2, "nothing was sent");

    // Raised: the session goes on.
    let server2 = Server::start(vec![Reply::text("Going on.")]);
    let mut c = command(home.path(), home.path());
    c.args(["--base-url", &server2.url, "--session-max-turns", "4"])
        .arg("--session")
        .arg(&session)
        .args(["-p", "and now?"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Going on.");
}

#[test]
fn rpc_names_the_limit_and_refuses_a_prompt_over_the_sessions_budget() {
    let home = tempfile::tempdir().expect("home");
    let server = Server::start(vec![
        Reply::tool("call_1", "ls", json!({})),
        Reply::text("Wrapped up."),
    ]);
    let mut rpc = Rpc::start(
        home.path(),
        home.path(),
        &server,
        &[
            "--no-session",
            "--tools",
            "read,grep,find,ls",
            "--session-max-tool-calls",
            "1",
        ],
    );
    let r = rpc.call("p1", json!({"type": "prompt", "message": "list"}));
    assert_eq!(r["success"], true, "{r}");
    let settled = rpc.wait_for("settled", |v| v["type"] == "agent_settled");
    assert_eq!(settled["limit"], "sessionMaxToolCalls", "{settled}");
    // The in-memory session counts its runs too: the next prompt is refused.
    let r = rpc.call("p2", json!({"type": "prompt", "message": "more"}));
    assert_eq!(r["success"], false, "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("--session-max-tool-calls") && error.contains("sessionMaxToolCalls"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(rpc.finish(), Some(0));
}
