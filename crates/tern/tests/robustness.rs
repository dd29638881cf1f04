//! The CLI under attack, through the real binary: damaged and contended session files, keys
//! echoed back by a provider, transient failures, silent servers, signals, escape sequences
//! in model text, and the bash sandbox flags.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::killed::{wait_for_pid, BASH};
use common::{
    assert_contains, assert_exit, command, dirs, json_lines, run, run_against, stderr, stdout,
    text_of, wait_output, Reply, Rpc, Server,
};
use serde_json::{json, Value};

/// `tern -p` with `extra`, then `prompt`, against `server`.
fn print_run(
    home: &Path,
    cwd: &Path,
    server: &Server,
    extra: &[&str],
    prompt: &str,
) -> std::process::Output {
    run_against(home, cwd, server, &[&["-p"], extra, &[prompt]].concat())
}

/// A print run with no session and no retries, which fails (exit 1) at the server's first
/// error.
fn fails_untried(home: &Path, cwd: &Path, server: &Server) -> std::process::Output {
    let o = print_run(
        home,
        cwd,
        server,
        &["--no-session", "--max-retries", "0"],
        "hi",
    );
    assert_exit(&o, 1);
    o
}

#[test]
fn a_last_line_without_its_newline_keeps_the_history() {
    let (home, cwd) = dirs();
    let file = home.path().join("s.jsonl");
    let f = file.to_str().unwrap();
    let server = Server::answering(&["one", "two", "three", "four"]);
    for (prompt, cut) in [("q1", false), ("q2", true), ("q3", false), ("q4", false)] {
        let o = print_run(home.path(), cwd.path(), &server, &["--session", f], prompt);
        assert_exit(&o, 0);
        if cut {
            // `truncate -s -1`: only the final newline goes.
            let text = std::fs::read(&file).unwrap();
            std::fs::write(&file, &text[..text.len() - 1]).unwrap();
        }
    }
    let last = text_of(&server.requests()[3]);
    for earlier in ["q1", "one", "q2", "two", "q3", "three", "q4"] {
        assert!(last.contains(earlier), "{earlier} missing from {last}");
    }
}

#[test]
fn a_second_writer_of_a_session_is_refused() {
    let (home, cwd) = dirs();
    let file = home.path().join("s.jsonl");
    let f = file.to_str().unwrap();
    let server = Server::start(vec![Reply::text("first")]);
    let o = print_run(home.path(), cwd.path(), &server, &["--session", f], "q1");
    assert_exit(&o, 0);

    // An RPC process resumes the file and holds it.
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--session", f]);
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(state["success"], true, "{state}");

    let o = print_run(home.path(), cwd.path(), &server, &["--session", f], "q2");
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("s.jsonl") && stderr(&o).contains("in use"),
        "{}",
        stderr(&o)
    );
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn a_key_echoed_by_the_provider_is_written_nowhere() {
    let (home, cwd) = dirs();
    let key = "sk-test-0123456789abcdef";
    let server = Server::start(vec![Reply::Error(
        401,
        format!("Incorrect API key provided: {key}. You can find your API key at ..."),
    )]);
    let file = home.path().join("s.jsonl");
    let flags = [
        "--api-key",
        key,
        "--max-retries",
        "0",
        "--session",
        file.to_str().unwrap(),
    ];
    let o = print_run(home.path(), cwd.path(), &server, &flags, "hello");
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains("Incorrect API key provided: [redacted]"),
        "{err}"
    );
    assert!(!err.contains(key), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(key), "{text}");
    assert!(text.contains("[redacted]"), "{text}");

    // JSON mode's event lines too, with the key from the environment this time.
    let server = Server::start(vec![Reply::Error(401, format!("bad key {key}"))]);
    let mut c = command(home.path(), cwd.path());
    c.env("OPENAI_API_KEY", key)
        .args(["--mode", "json", "--no-session", "--max-retries", "0"])
        .args(["--base-url", &server.url, "hello"]);
    let o = run(c);
    assert!(
        !stdout(&o).contains(key) && !stderr(&o).contains(key),
        "{}",
        stdout(&o)
    );
    assert_contains(&stdout(&o), "bad key [redacted]");
}

#[test]
fn a_transient_429_is_retried() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![
        Reply::Error(429, "slow down".into()),
        Reply::Error(503, "overloaded".into()),
        Reply::text("made it"),
    ]);
    let o = print_run(home.path(), cwd.path(), &server, &["--no-session"], "hi");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), "made it");
    assert_eq!(server.requests().len(), 3);

    // --max-retries 0: the first failure ends the run.
    let server = Server::start(vec![
        Reply::Error(429, "slow down".into()),
        Reply::text("x"),
    ]);
    fails_untried(home.path(), cwd.path(), &server);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_silent_server_times_out_in_the_cli_words_and_the_answer_is_marked_partial() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::Hang]);
    let started = Instant::now();
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        // No retries: auto-retry would retry the timed-out answer, as pi does.
        &["--no-session", "--idle-timeout", "1", "--max-retries", "0"],
        "hi",
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_exit(&o, 1);
    assert_eq!(stdout(&o).trim(), "Thinking about it");
    let err = stderr(&o);
    assert!(
        err.contains("--idle-timeout") && !err.contains("idle_timeout_ms"),
        "{err}"
    );
    assert!(err.contains("partial"), "{err}");

    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--idle-timeout=-1"],
        "hi",
    );
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "--idle-timeout");
}

#[test]
fn escape_sequences_reach_the_terminal_only_in_json_modes() {
    let (home, cwd) = dirs();
    let evil = "clear\x1b[2J title\x1b]0;owned\x07 done";
    let server = Server::start(vec![Reply::text(evil), Reply::text(evil)]);
    let o = print_run(home.path(), cwd.path(), &server, &["--no-session"], "hi");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o).trim(), "clear[2J title]0;owned done");

    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--no-session", "--mode", "json"],
        "hi",
    );
    assert_contains(&stdout(&o), "\\u001b[2J");

    // A tool name and a provider's error body are outside text too (stderr shows the tool
    // line only on a terminal).
    let server = Server::start(vec![
        Reply::tool("c1", "evil\x1b]0;owned\x07", json!({})),
        Reply::Error(400, "bad\x1b[2J request".into()),
    ]);
    let o = fails_untried(home.path(), cwd.path(), &server);
    assert_contains(&stderr(&o), "request failed");
    assert!(!stderr(&o).contains('\x1b'), "{:?}", stderr(&o));
}

fn alive(pid: &str) -> bool {
    Command::new("kill")
        .args(["-0", pid])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn sigterm_aborts_the_run_kills_the_tool_and_keeps_the_session() {
    for signal in ["TERM", "HUP"] {
        let (home, cwd) = dirs();
        let pid_file = cwd.path().join("pid");
        let server = Server::start(vec![Reply::tool(
            "call_1",
            "bash",
            json!({"command": format!("sh -c 'echo $$ > {}; exec sleep 300'", pid_file.display())}),
        )]);
        let file = home.path().join("s.jsonl");
        let mut c = command(home.path(), cwd.path());
        c.args(["-p", "--base-url", &server.url])
            .args(BASH)
            .args(["--session", file.to_str().unwrap(), "go"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = c.spawn().unwrap();
        let pid = wait_for_pid(&pid_file, Duration::from_secs(20));
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let o = wait_output(child, Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(130), "{signal}: {}", stderr(&o));
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(&pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !alive(&pid),
            "{signal}: the tool's process {pid} still runs"
        );
        // The session holds the aborted tool result and the aborted answer, in order.
        let lines = json_lines(&file);
        let messages: Vec<&Value> = lines
            .iter()
            .map(|l| &l["message"])
            .filter(|m| m.is_object())
            .collect();
        let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "toolResult", "assistant"],
            "{signal}"
        );
        assert_eq!(messages[4]["stopReason"], "aborted", "{signal}");
    }
}

#[test]
fn sandbox_flags_reach_bash() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![
        Reply::tool("call_1", "bash", json!({"command": "touch made.txt"})),
        Reply::text("tried"),
    ]);
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &[
            "--no-session",
            "--tools",
            "bash",
            "--allow",
            "bash",
            "--sandbox",
            "read-only",
        ],
        "make a file",
    );
    assert_exit(&o, 0);
    assert!(
        !cwd.path().join("made.txt").exists(),
        "read-only let bash write"
    );
    let no_landlock = !tern_tools::sandbox::support().confines();
    assert_eq!(
        stderr(&o).contains("no Landlock"),
        no_landlock,
        "{}",
        stderr(&o)
    );

    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--sandbox", "none"],
        "x",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--sandbox") && stderr(&o).contains("full-access"),
        "{}",
        stderr(&o)
    );

    // full-access and --pass-env: the named secret reaches the command, others do not.
    let server = Server::start(vec![
        Reply::tool(
            "call_1",
            "bash",
            json!({"command": "echo \"A=$MY_TOKEN B=$OTHER_TOKEN\" > env.txt"}),
        ),
        Reply::text("done"),
    ]);
    let mut c = command(home.path(), cwd.path());
    c.env("MY_TOKEN", "passed-through")
        .env("OTHER_TOKEN", "kept-back");
    c.args(["-p", "--no-session", "--base-url", &server.url])
        .args(BASH)
        .args(["--pass-env", "MY_TOKEN", "go"]);
    let o = run(c);
    assert_exit(&o, 0);
    let env = std::fs::read_to_string(cwd.path().join("env.txt")).unwrap();
    assert_eq!(env.trim(), "A=passed-through B=");
}

#[test]
fn add_dir_opens_one_named_folder_outside_and_nothing_else() {
    let (home, cwd) = dirs();
    let (added, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(added.path().join("note.txt"), "ADDED-NOTE").unwrap();
    std::fs::write(other.path().join("note.txt"), "OTHER-NOTE").unwrap();
    let dir = added.path().to_str().unwrap().to_string();
    // The flag, then the same folder through the config file.
    for (flag, config) in [
        (true, String::new()),
        (false, format!("add_dirs = [{dir:?}]\n")),
    ] {
        let made = added.path().join(format!("made-{flag}.txt"));
        let server = Server::start(vec![
            Reply::tool("c1", "read", json!({"path": added.path().join("note.txt")})),
            Reply::tool("c2", "read", json!({"path": other.path().join("note.txt")})),
            Reply::tool(
                "c3",
                "bash",
                json!({"command": format!("echo hi > {}", made.display())}),
            ),
            Reply::text("done"),
        ]);
        let mut c = command(home.path(), cwd.path());
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        c.args(["-p", "--no-session", "--base-url", &server.url])
            .args(["--tools", "read,bash", "--allow", "bash"]);
        if flag {
            c.args(["--add-dir", &dir]);
        }
        c.arg("go");
        let o = run(c);
        assert_exit(&o, 0);
        let requests = server.requests();
        let result = |n: usize| text_of(&requests[n]);
        assert!(result(1).contains("ADDED-NOTE"), "{}", result(1));
        assert!(!result(2).contains("OTHER-NOTE"), "{}", result(2));
        if tern_tools::sandbox::support().confines() {
            assert!(
                made.exists(),
                "workspace-write could not write the added folder"
            );
        }
    }

    let mut c = command(home.path(), cwd.path());
    c.args(["-p", "--no-session", "--base-url", "http://127.0.0.1:9/v1"])
        .args(["--add-dir", "no-such-folder", "go"]);
    let o = run(c);
    assert_exit(&o, 2);
    assert_contains(&stderr(&o), "no-such-folder");
}
