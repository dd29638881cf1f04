//! Print mode, JSON mode, limits and exit codes, against the scripted HTTP server.

mod common;

use common::{
    assert_contains, assert_exit, command, dirs, last_user, parse_lines, run, run_against, stderr,
    stdout, text_of, Reply, Server,
};
use serde_json::json;

#[test]
fn print_mode_answers_after_a_tool_round_trip() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("notes.txt"), "launch code: TANGO-42\n").unwrap();
    let server = Server::reading("notes.txt", &["The code is TANGO-42."]);
    let args = ["--model", "whatever-local", "-p", "What is the code?"];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), "The code is TANGO-42.");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["model"], "whatever-local");
    // The tool result reached the second request.
    assert!(text_of(&reqs[1]).contains("TANGO-42"), "{}", reqs[1]);
}

#[test]
fn provider_error_exits_1_with_the_reason_on_stderr() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::Error(400, "model overloaded by test".into())]);
    let o = run_against(home.path(), cwd.path(), &server, &["-p", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert_contains(&stderr(&o), "model overloaded by test");
    assert!(stdout(&o).is_empty());
}

#[test]
fn no_key_and_no_base_url_runs_nothing_and_says_how() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.lines().next().unwrap_or("").contains("no API key"),
        "{err}"
    );
    assert!(err.contains("--base-url") && err.contains("--demo"));
    assert!(
        !home.path().join("sessions").exists(),
        "nothing ran, nothing saved"
    );
}

#[test]
fn usage_errors_exit_2() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--tools",
        "read,teleport",
        "-p",
        "hi",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown tool teleport"));
    let mut c = command(home.path(), cwd.path());
    c.args(["--no-such-flag"]);
    assert_eq!(run(c).status.code(), Some(2));
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--transport",
        "pigeon",
    ])
    .args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown transport \"pigeon\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn piped_stdin_and_at_file_join_the_prompt() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("spec.md"), "SPEC-BODY").unwrap();
    let server = Server::answering(&["ok", "ok again"]);
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        &server.url,
        "-p",
        "@spec.md",
        "review",
        "this",
    ]);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut si = child.stdin.take().unwrap();
        si.write_all(b"PIPED-DIFF").unwrap();
    }
    let o = common::wait_output(child, std::time::Duration::from_secs(30));
    assert_exit(&o, 0);
    let user = last_user(&server.requests()[0]).to_string();
    let (a, b, c) = (
        user.find("PIPED-DIFF").unwrap(),
        user.find("SPEC-BODY").unwrap(),
        user.find("review").unwrap(),
    );
    assert!(a < b && b < c, "{user}");
    // As pi: each further message argument is a prompt of its own, sent after the first.
    assert!(!user.contains("this"), "{user}");
    let last = last_user(&server.requests()[1]);
    assert!(last.to_string().contains("this"), "{last}");
}

#[test]
fn json_mode_lines_follow_the_event_grammar() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("a.txt"), "alpha").unwrap();
    let server = Server::reading("a.txt", &["It says alpha."]);
    let args = [
        "--tools",
        "read,grep,find,ls",
        "--mode",
        "json",
        "what is in a.txt?",
    ];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 0);
    let lines = parse_lines(&stdout(&o));
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    // pi's framing: the session header, the run's events, then agent_settled.
    assert_eq!(types[0], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(types[1], "agent_start");
    assert_eq!(types[types.len() - 2], "agent_end");
    assert_eq!(types[types.len() - 1], "agent_settled");
    assert_eq!(lines.last().unwrap()["aborted"], false);
    let events = &types[1..types.len() - 1];
    let count = |t: &str| events.iter().filter(|x| **x == t).count();
    assert_eq!(count("agent_start"), 1);
    assert_eq!(count("agent_end"), 1);
    assert_eq!(count("turn_start"), 2);
    assert_eq!(count("turn_start"), count("turn_end"));
    assert_eq!(count("message_start"), count("message_end"));
    assert_eq!(count("tool_execution_start"), 1);
    assert_eq!(count("tool_execution_end"), 1);
    // Turns nest: never two turn_starts without a turn_end between.
    let mut depth = 0i32;
    for t in events {
        match *t {
            "turn_start" => depth += 1,
            "turn_end" => depth -= 1,
            _ => {}
        }
        assert!((0..=1).contains(&depth));
    }
    // message_update is delta-only, with usage, as pi writes it.
    let update = lines
        .iter()
        .find(|l| l["type"] == "message_update")
        .unwrap();
    assert!(update.get("message").is_none());
    assert!(update["usage"].is_object());
    assert!(update["assistantMessageEvent"].get("partial").is_none());
    let tc_start = lines
        .iter()
        .find(|l| l["assistantMessageEvent"]["type"] == "toolcall_start")
        .unwrap();
    assert_eq!(tc_start["assistantMessageEvent"]["toolName"], "read");
    assert!(stderr(&o).is_empty(), "stderr: {}", stderr(&o));
}

#[test]
fn max_turns_ends_the_run_with_code_3() {
    let (home, cwd) = dirs();
    let script = (0..6)
        .map(|i| Reply::tool(&format!("call_{i}"), "ls", json!({})))
        .collect();
    let server = Server::start(script);
    let args = [
        "--tools",
        "read,grep,find,ls",
        "--max-turns",
        "2",
        "-p",
        "loop forever",
    ];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 3);
    assert_contains(&stderr(&o), "not confirmed complete");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn timeout_aborts_with_code_3() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::Hang]);
    let start = std::time::Instant::now();
    let o = run_against(
        home.path(),
        cwd.path(),
        &server,
        &["--timeout", "1", "-p", "hang"],
    );
    assert_exit(&o, 3);
    assert!(start.elapsed().as_secs() < 15);
    assert_contains(&stderr(&o), "timeout");
}

#[test]
fn demo_runs_offline_and_is_labelled() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args(["--demo"]);
    let o = run(c);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("scripted"));
    assert!(stderr(&o).contains("read"));
    assert!(stdout(&o).contains("first([])"));
    assert!(stdout(&o).contains("undefined"));
}

#[test]
fn the_config_file_supplies_defaults() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::text("configured")]);
    let mut c = command(home.path(), cwd.path());
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "base_url = \"{}\"\nmodel = \"cfg-model\"\ntemperature = 0.0\ntools = \"read,ls\"\n",
            server.url
        ),
    )
    .unwrap();
    c.args(["-p", "hi"]);
    let o = run(c);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), "configured");
    let req = &server.requests()[0];
    assert_eq!(req["model"], "cfg-model");
    assert_eq!(req["temperature"], 0.0);
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "ls"]);

    let mut c = common::command(home.path(), cwd.path());
    std::fs::write(home.path().join("config.toml"), "modle = 1\n").unwrap();
    c.args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "config file");
}

#[test]
fn ctrl_c_in_print_mode_aborts_with_130() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::Hang]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-p", "hang"]);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    server.wait_requests(1);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = common::wait_output(child, std::time::Duration::from_secs(15));
    assert_exit(&o, 130);
    assert!(stderr(&o).contains("aborted"));
}

#[test]
fn dash_v_prints_the_version_as_pi_takes_it() {
    let (home, cwd) = dirs();
    for flag in ["-v", "--version"] {
        let mut c = command(home.path(), cwd.path());
        c.arg(flag);
        let o = run(c);
        assert_exit(&o, 0);
        assert_eq!(
            stdout(&o).trim(),
            format!("tern {}", env!("CARGO_PKG_VERSION"))
        );
    }
}
