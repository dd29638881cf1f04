//! Durable runs through the real binary: a run killed with SIGKILL mid-tool and finished by
//! `--recover` (and RPC `recover`), journals that must not be replayed, budgets ending a run
//! with a wrap-up turn, and `--replay` of a recorded session.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::killed::{
    kill_mid_tool, killed_run, read, recover, slow_bash, spawn, wait_until, BASH,
};
use common::tmux::{self, Pane};
use common::{
    assert_contains, command, dirs, has_tools, run, stderr, stdout, text_of, Reply, Rpc, Server,
};
use serde_json::{json, Value};

/// `--recover` of `session` against a model answering `answer`: the run ends (exit 0) with
/// that answer. Returns the requests the recovery sent.
fn recovered(home: &Path, cwd: &Path, session: &Path, answer: &str) -> Vec<Value> {
    let server = Server::start(vec![Reply::text(answer)]);
    let o = recover(home, cwd, session, &server, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), answer);
    server.requests()
}

/// The roles of the messages `session` loads to.
fn roles(session: &Path) -> Vec<String> {
    let loaded = tern_session::load(session).expect("readable");
    loaded
        .messages
        .iter()
        .map(|m| m.role().to_string())
        .collect()
}

#[test]
fn a_run_killed_mid_tool_is_finished_by_recover() {
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    killed_run(home.path(), cwd.path(), &session, &[], "run the slow thing");
    assert!(!read(&session).contains(r#""type":"run_finished""#));
    let replay = || {
        let mut c = command(home.path(), cwd.path());
        c.arg("--replay").arg(&session).args(BASH);
        run(c)
    };
    let o = replay();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_contains(
        &stderr(&o),
        "was interrupted before it ended and is not replayed",
    );

    let reqs = recovered(
        home.path(),
        cwd.path(),
        &session,
        "Recovered: the sleep may not have run.",
    );
    // The first request had its outcome on disk: only the one after the bash call is sent,
    // and it carries the "interrupted, outcome unknown" result (bash is never re-run).
    assert_eq!(reqs.len(), 1, "{reqs:#?}");
    let sent = text_of(&reqs[0]);
    assert!(sent.contains("run the slow thing"), "{sent}");
    assert!(
        sent.contains("interrupted") && sent.contains("outcome is unknown"),
        "{sent}"
    );
    // The session holds the run once: one prompt, one bash call and its result, the answer.
    assert_eq!(
        roles(&session),
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    assert!(read(&session).contains(r#""type":"run_finished""#));
    // The recovered run, interrupted result included, replays as identical.
    let o = replay();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "identical (1 recorded run replayed)");

    // Recovering a run that ended: nothing to do, exit 0 and a note.
    let idle = Server::start(vec![]);
    let o = recover(home.path(), cwd.path(), &session, &idle, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing to recover: the last run in")
            && stderr(&o).contains("s.jsonl ended"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    assert!(idle.requests().is_empty());
}

#[test]
fn a_recovered_run_that_overflows_compacts_and_retries_once() {
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    // An exchange before the killed run, long enough to be what the compaction summarizes.
    let first = "first answer ".repeat(40);
    let earlier = Server::start(vec![Reply::text(&first)]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &earlier.url])
        .args(BASH)
        .arg("--session")
        .arg(&session)
        .args(["-p", "first question"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Long enough that the kept part (about 100 tokens) starts at this prompt.
    let prompt = format!("run the slow thing {}", "please ".repeat(30));
    killed_run(home.path(), cwd.path(), &session, &[], &prompt);

    // The request after the interrupted bash call overflows: as in a live run, the failed
    // answer is omitted, the older exchange summarized, and the request sent once more.
    let server = Server::start(vec![
        Reply::Error(
            400,
            "prompt is too long: 200000 tokens > 128000 maximum".into(),
        ),
        Reply::text("## Goal\nRecovered."),
        Reply::text("Recovered after compacting."),
    ]);
    let keep = ["--compaction-keep-recent-tokens", "100"];
    let o = recover(home.path(), cwd.path(), &session, &server, &keep);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Recovered after compacting.");
    assert_contains(&stderr(&o), "compacted the conversation (overflow)");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let summarized = text_of(&reqs[1]);
    assert!(
        summarized.contains("[User]: first question") && !summarized.contains("run the slow"),
        "{summarized}"
    );
    let retried = text_of(&reqs[2]);
    assert!(
        retried.contains("<summary>\\n## Goal\\nRecovered."),
        "{retried}"
    );
    assert!(!retried.contains("first answer"), "{retried}");
    assert!(
        retried.contains("run the slow thing") && retried.contains("outcome is unknown"),
        "{retried}"
    );
    let text = read(&session);
    assert!(text.contains(r#""type":"compaction""#));
    assert!(text.contains(r#""type":"context_edit""#));
    assert!(text.contains(r#""type":"run_finished""#));
    // The session resumes from the compaction's system message and its summary: the
    // recovered run's messages follow them.
    assert_eq!(
        roles(&session),
        [
            "system",
            "user",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
}

#[test]
fn a_run_killed_mid_request_sends_that_request_again() {
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    let hung = Server::start(vec![Reply::Hang]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &hung.url, "--session"])
        .arg(&session)
        .args(["-p", "think hard"]);
    let mut child = spawn(c);
    wait_until("the request", || {
        read(&session).contains(r#""type":"model_intent""#) && hung.requests().len() == 1
    });
    child.kill().expect("SIGKILL tern");
    let _ = child.wait();

    let reqs = recovered(home.path(), cwd.path(), &session, "Thought it through.");
    assert_eq!(reqs.len(), 1, "the request without an outcome, once more");
    assert_eq!(
        common::messages(&reqs[0]),
        common::messages(&hung.requests()[0]),
        "the same request"
    );
    assert_eq!(read(&session).matches(r#""attempt":2"#).count(), 1);
    assert_eq!(roles(&session), ["system", "user", "assistant"]);
}

#[test]
fn a_journal_of_another_transcript_or_format_is_refused_with_exit_2() {
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    // A first run that ends, then a second one killed mid-tool.
    let first = Server::start(vec![Reply::text("first answer")]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &first.url])
        .args(BASH)
        .arg("--session")
        .arg(&session)
        .args(["-p", "first question"]);
    assert_eq!(run(c).status.code(), Some(0));
    killed_run(home.path(), cwd.path(), &session, &[], "second question");
    let original = read(&session);

    // The transcript the second run started from was edited.
    std::fs::write(&session, original.replace("first answer", "edited answer")).unwrap();
    let server = Server::start(vec![Reply::text("must not be sent")]);
    let o = recover(home.path(), cwd.path(), &session, &server, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("journal is for another transcript")
            && stderr(&o).contains("it was not replayed"),
        "{}",
        stderr(&o)
    );
    assert!(server.requests().is_empty());

    // A step record of another format version.
    let v9 = original.replacen(
        r#""v":1,"type":"tool_intent""#,
        r#""v":9,"type":"tool_intent""#,
        1,
    );
    assert_ne!(v9, original);
    std::fs::write(&session, v9).unwrap();
    let o = recover(home.path(), cwd.path(), &session, &server, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_contains(&stderr(&o), "format version 9");
    assert!(server.requests().is_empty());
}

#[test]
fn recover_needs_an_existing_session() {
    let (home, cwd) = dirs();
    for extra in [
        vec!["--recover"],
        vec!["--recover", "--no-session"],
        vec!["--recover", "--session", "missing.jsonl"],
        vec!["--recover", "--session", "s.jsonl", "a prompt"],
    ] {
        let mut c = command(home.path(), cwd.path());
        c.args(["--base-url", "http://127.0.0.1:9/v1"]).args(&extra);
        let o = run(c);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--recover"),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
}

/// Runs `prompt` with `flags` against `script`; returns the output and the requests.
fn budget_run(
    flags: &[&str],
    script: Vec<Reply>,
    cwd: &Path,
) -> (std::process::Output, Vec<Value>) {
    let home = tempfile::tempdir().expect("home");
    let server = Server::start(script);
    let mut c = command(home.path(), cwd);
    c.args(["--base-url", &server.url]).args(flags);
    // The scripted model lists files: the read-only tools, unless the case names its own.
    if !flags.contains(&"--tools") {
        c.args(["--tools", "read,grep,find,ls"]);
    }
    c.args(["-p", "list the files, then more"]);
    let o = run(c);
    (o, server.requests())
}

#[test]
fn each_budget_flag_ends_the_run_with_a_wrap_up_turn() {
    let cwd = tempfile::tempdir().expect("cwd");
    let pid = cwd.path().join("pid");
    let ls = || Reply::tool("call_1", "ls", json!({}));
    let cases: Vec<(Vec<&str>, Vec<Reply>, &str, &str)> = vec![
        (vec!["--max-turns", "2"], vec![ls()], "--max-turns", "turn"),
        (
            vec!["--max-tool-calls", "1"],
            vec![ls()],
            "--max-tool-calls",
            "tool-call",
        ),
        // Each scripted response reports 120 tokens.
        (
            vec!["--max-tokens", "100"],
            vec![ls()],
            "--max-tokens",
            "token",
        ),
        // A catalog model with prices: 100 input and 20 output tokens cost $0.0001.
        (
            vec![
                "--provider",
                "openrouter",
                "--model",
                "anthropic/claude-haiku-4.5:batch",
                "--max-cost",
                "0.00005",
            ],
            vec![ls()],
            "--max-cost",
            "cost",
        ),
        // The budget is spent while the tool runs; the hard stop is 5 s later.
        (
            [&["--timeout", "1"][..], &BASH[..]].concat(),
            vec![Reply::tool(
                "call_1",
                "bash",
                json!({"command": format!("echo $$ > {}; sleep 1.5", pid.display())}),
            )],
            "--timeout",
            "time",
        ),
    ];
    for (flags, mut script, flag, what) in cases {
        script.push(Reply::text("Wrapped up: here is what I have."));
        let (o, reqs) = budget_run(&flags, script, cwd.path());
        assert_eq!(o.status.code(), Some(3), "{flag}: {}", stderr(&o));
        assert_eq!(
            stdout(&o).trim(),
            "Wrapped up: here is what I have.",
            "{flag}"
        );
        let err = stderr(&o);
        assert!(
            err.contains(flag) && err.contains("wrap-up"),
            "{flag}: {err}"
        );
        assert_eq!(
            reqs.len(),
            2,
            "{flag}: one normal request, then the wrap-up"
        );
        assert!(has_tools(&reqs[0]), "{flag}: tools before the wrap-up");
        let last = &reqs[1];
        assert!(!has_tools(last), "{flag}: the wrap-up has no tools: {last}");
        let notice = format!("The {what} budget of this run is spent");
        assert!(text_of(last).contains(&notice), "{flag}: {}", text_of(last));
    }
}

#[test]
fn replay_of_a_recorded_session_is_identical_until_it_is_edited() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("notes.txt"), "launch code: TANGO-42\n").unwrap();
    let session = home.path().join("s.jsonl");
    let server = Server::reading("notes.txt", &["The code is TANGO-42.", "Nothing else."]);
    for prompt in ["What is the code?", "Anything else?"] {
        let mut c = command(home.path(), cwd.path());
        c.args(["--base-url", &server.url, "--session"])
            .arg(&session)
            .args(["-p", prompt]);
        assert_eq!(run(c).status.code(), Some(0));
    }
    let replay = |file: &Path| {
        let mut c = command(home.path(), cwd.path());
        c.arg("--replay").arg(file);
        run(c)
    };
    let o = replay(&session);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "identical (2 recorded runs replayed)");
    assert_eq!(server.requests().len(), 3, "a replay sends nothing");

    // One recorded tool result edited: the request that carried it differs.
    let original = read(&session);
    let edited: String = original
        .lines()
        .map(|l| {
            let l = if l.contains(r#""type":"tool_outcome""#) {
                l.replace("TANGO-42", "FOXTROT-7")
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    assert_ne!(edited, original);
    let file = home.path().join("tool-edited.jsonl");
    std::fs::write(&file, edited).unwrap();
    let o = replay(&file);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("run 1 of 2")
            && stdout(&o).contains("model request 2: the request context differs"),
        "{}",
        stdout(&o)
    );

    // The system prompt edited: the first request differs there.
    let edited = original.replacen("running inside tern", "running inside fern", 1);
    assert_ne!(edited, original);
    let file = home.path().join("system-edited.jsonl");
    std::fs::write(&file, edited).unwrap();
    let o = replay(&file);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_contains(&stdout(&o), "model request 1: the system prompt differs");
}

#[test]
fn rpc_recover_finishes_the_interrupted_run_and_steering_is_journaled() {
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    let pid = cwd.path().join("pid");
    let s = session.to_str().unwrap();

    // A run killed mid-tool after a steering message was accepted.
    let server = Server::start(vec![slow_bash("call_1", &pid)]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--mode", "rpc", "--base-url", &server.url, "--session", s])
        .args(BASH)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().expect("spawn");
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().expect("stdin");
        writeln!(
            stdin,
            "{}",
            json!({"type": "prompt", "message": "start the job"})
        )
        .unwrap();
        wait_until("the tool", || !read(&pid).trim().is_empty());
        // A follow-up accepted, then cleared: journaled as returned, never delivered.
        for cmd in [
            json!({"type": "follow_up", "message": "forget this"}),
            json!({"type": "clear_queue"}),
            json!({"type": "steer", "message": "and report back"}),
        ] {
            writeln!(stdin, "{cmd}").unwrap();
        }
        wait_until("the steer's acceptance", || {
            let text = read(&session);
            text.contains(r#""type":"input_returned""#)
                && text.matches(r#""type":"input_accepted""#).count() == 2
        });
    }
    kill_mid_tool(child, &session, &pid);

    let server = Server::start(vec![Reply::text("Job state unknown; reporting back.")]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--mode", "rpc", "--base-url", &server.url, "--session", s])
        .args(BASH);
    let mut rpc = Rpc::spawn(c);
    let r = rpc.call("r1", json!({"type": "recover"}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["interrupted"], true, "{r}");
    rpc.wait_for("settled", |v| v["type"] == "agent_settled");
    let answer = rpc
        .seen
        .iter()
        .rev()
        .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .cloned()
        .expect("the answer's message_end");
    assert_eq!(
        answer["message"]["content"][0]["text"],
        "Job state unknown; reporting back."
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    // The accepted steer was delivered on recovery, after the interrupted result.
    let sent = text_of(&reqs[0]);
    assert!(
        sent.contains("and report back") && sent.contains("interrupted"),
        "{sent}"
    );
    assert!(
        !sent.contains("forget this"),
        "a cleared message stays cleared: {sent}"
    );
    let again = rpc.call("r2", json!({"type": "recover"}));
    assert_eq!(again["success"], true, "{again}");
    assert_eq!(again["data"]["interrupted"], false, "{again}");
    assert_eq!(rpc.finish(), Some(0));
    assert!(read(&session).contains(r#""type":"input_committed""#));
}

/// The terminal UI on a session with an interrupted run: one line says so, `/recover`
/// finishes it. Skipped, with a note, when tmux is not installed.
#[test]
fn interactive_resume_offers_recover_in_tmux() {
    if !tmux::available() {
        return;
    }
    let (home, cwd) = dirs();
    let session = home.path().join("s.jsonl");
    killed_run(home.path(), cwd.path(), &session, &[], "run the slow thing");
    let server = Server::start(vec![Reply::text("Recovered in the terminal.")]);
    let flags = format!(
        "--base-url '{}' --tools bash --allow bash --sandbox full-access --session '{}'",
        server.url,
        session.display()
    );
    let pane = Pane::tern("durable", home.path(), cwd.path(), &flags);
    pane.wait_for("was interrupted before it ended; /recover finishes it");
    pane.keys(&["/recover", "Enter"]);
    pane.wait_for("Recovered in the terminal.");
    // The answer shows as it streams; the run's end is journaled when the run ends, a moment
    // later: wait for it before leaving.
    wait_until("the recovered run's end in the session", || {
        read(&session).contains(r#""type":"run_finished""#)
    });
    pane.keys(&["C-d"]);
    drop(pane);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(text_of(&reqs[0]).contains("interrupted"));
}
