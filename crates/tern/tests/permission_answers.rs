//! Permission answers as journaled steps, through the terminal UI in tmux: a bash call
//! allowed with "y", tern killed while it runs; `/recover` finishes the run without asking
//! again; `--replay` reproduces the answer (identical), and with `--deny bash` reports the
//! permission hook's divergence. Skipped, with a note, when tmux is not installed.

mod common;

use std::path::Path;
use std::process::Command;

use common::killed::{read, slow_bash, wait_until};
use common::tmux::{self, Pane};
use common::{command, run, stderr, stdout, text_of, Reply, Server};

/// A pane running tern on `session` against `url`, in `home`.
fn start(home: &Path, session: &Path, url: &str, tag: &str) -> Pane {
    let flags = format!(
        "--base-url '{url}' --tools bash --sandbox full-access --session '{}'",
        session.display()
    );
    Pane::tern(&format!("ask-{tag}"), home, home, &flags)
}

fn kill(signal: &str, pid: &str) {
    let _ = Command::new("kill").args([signal, pid]).status();
}

#[test]
fn an_answer_is_not_asked_again_on_recovery_and_replays() {
    if !tmux::available() {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let session = home.path().join("s.jsonl");
    let pid = home.path().join("pid");

    // A bash call asked about, allowed, and cut off by SIGKILL while it runs.
    let server = Server::start(vec![slow_bash("call_1", &pid)]);
    let pane = start(home.path(), &session, &server.url, "run");
    pane.wait_for("ready");
    pane.keys(&["run the slow thing", "Enter"]);
    pane.wait_for("Allow bash");
    pane.keys(&["y"]);
    wait_until("the tool", || !read(&pid).trim().is_empty());
    let file = read(&session);
    let (question, answer, call) = (
        file.find(r#""type":"decision_intent""#),
        file.find(r#""type":"decision""#),
        file.find(r#""type":"tool_intent""#),
    );
    assert!(
        question < answer && answer < call && question.is_some(),
        "the question, then the answer, then the call: {file}"
    );
    kill("-KILL", &pane.tern_pid());
    kill("-KILL", read(&pid).trim());
    drop(pane);

    // `/recover`: the recorded answer lets the call through again, nobody is asked.
    let server = Server::start(vec![Reply::text("Recovered without asking.")]);
    let pane = start(home.path(), &session, &server.url, "recover");
    pane.wait_for("/recover finishes it");
    pane.keys(&["/recover", "Enter"]);
    pane.wait_for("Recovered without asking.");
    let screen = pane.text();
    assert!(!screen.contains("Allow bash"), "asked again:\n{screen}");
    drop(pane);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let sent = text_of(&reqs[0]);
    assert!(
        sent.contains("interrupted") && !sent.contains("Permission denied"),
        "{sent}"
    );
    assert_eq!(
        read(&session).matches(r#""type":"decision""#).count(),
        1,
        "the answer is journaled once"
    );

    // Replay: the recorded answer replies to the policy's question.
    let replay = |flags: &[&str]| {
        let mut c = command(home.path(), home.path());
        c.arg("--replay")
            .arg(&session)
            .args(["--sandbox", "full-access"])
            .args(flags);
        run(c)
    };
    let o = replay(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "identical (1 recorded run replayed)");
    let o = replay(&["--deny", "bash"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("tool call call_1: the permission hook's decision differs")
            && out.contains("denies without asking"),
        "{out}"
    );
}
