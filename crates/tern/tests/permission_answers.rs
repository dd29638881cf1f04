//! Permission answers as journaled steps, through the terminal UI in tmux: a bash call
//! allowed with "y", tern killed while it runs; `/recover` finishes the run without asking
//! again; `--replay` reproduces the answer (identical), and with `--deny bash` reports the
//! permission hook's divergence. Skipped, with a note, when tmux is not installed.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::killed::{read, slow_bash, wait_until};
use common::{command, run, stderr, stdout, text_of, Reply, Server};

/// One tmux session running tern on `session` against `url`.
struct Pane {
    name: String,
}

impl Pane {
    fn start(home: &Path, session: &Path, url: &str, tag: &str) -> Pane {
        let name = format!("tern-ask-{tag}-{}", std::process::id());
        let shell = format!(
            "cd '{}' && env HOME='{}' TERN_SESSION_DIR='{}/sessions' TERN_CONFIG=/dev/null '{}' \
             --base-url '{url}' --tools bash --sandbox full-access --session '{}'; sleep 30",
            home.display(),
            home.display(),
            home.display(),
            common::tern().display(),
            session.display()
        );
        let p = Pane { name };
        let started = p.tmux(&[
            "new-session",
            "-d",
            "-s",
            &p.name,
            "-x",
            "120",
            "-y",
            "30",
            &shell,
        ]);
        assert!(started.status.success(), "{started:?}");
        p
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        // A server of its own per pane: another test's server shutting down (tmux's
        // "server exited unexpectedly") cannot take this one along.
        Command::new("tmux")
            .args(["-L", &self.name])
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn text(&self) -> String {
        let o = self.tmux(&["capture-pane", "-p", "-S", "-200", "-t", &self.name]);
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let p = self.text();
            if p.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "expected {text:?} on screen; the pane was:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The tern process the pane's shell runs.
    fn tern_pid(&self) -> String {
        let shell = self.tmux(&["display", "-p", "-t", &self.name, "#{pane_pid}"]);
        let shell = String::from_utf8_lossy(&shell.stdout).trim().to_string();
        let children = Command::new("pgrep")
            .args(["-P", &shell])
            .output()
            .expect("pgrep");
        let pids = String::from_utf8_lossy(&children.stdout).to_string();
        pids.lines().next().unwrap_or_default().trim().to_string()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-session", "-t", &self.name]);
    }
}

fn kill(signal: &str, pid: &str) {
    let _ = Command::new("kill").args([signal, pid]).status();
}

#[test]
fn an_answer_is_not_asked_again_on_recovery_and_replays() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed (apt-get install -y tmux)");
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let session = home.path().join("s.jsonl");
    let pid = home.path().join("pid");

    // A bash call asked about, allowed, and cut off by SIGKILL while it runs.
    let server = Server::start(vec![slow_bash("call_1", &pid)]);
    let pane = Pane::start(home.path(), &session, &server.url, "run");
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
    let pane = Pane::start(home.path(), &session, &server.url, "recover");
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
