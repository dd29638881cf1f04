//! Runs killed on purpose: a bash call slow enough to be killed in, SIGKILL once its intent
//! is journaled, the flags that let bash run unasked, and `--recover` of such a run.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{command, run, Reply, Server};

/// A bash call that writes its shell's pid to `pid` and sleeps (long enough to be killed).
pub fn slow_bash(id: &str, pid: &Path) -> Reply {
    Reply::tool(
        id,
        "bash",
        json!({"command": format!("sh -c 'echo $$ > {}; exec sleep 30'", pid.display())}),
    )
}

/// The flags that give tern bash, allowed without asking and unconfined.
pub const BASH: [&str; 6] = [
    "--tools",
    "bash",
    "--allow",
    "bash",
    "--sandbox",
    "full-access",
];

/// A file's text, empty when it cannot be read.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits (20 s at most) until `cond` holds.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (`limit` at most) until the file `path` holds a pid, and returns it.
pub fn wait_for_pid(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let pid = read(path);
        if !pid.trim().is_empty() {
            return pid.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills tern with SIGKILL once the bash call's intent is journaled and the tool runs, then
/// the orphaned sleep.
pub fn kill_mid_tool(mut child: Child, session: &Path, pid: &Path) {
    wait_until("the tool intent and the tool", || {
        read(session).contains(r#""type":"tool_intent""#) && !read(pid).trim().is_empty()
    });
    child.kill().expect("SIGKILL tern");
    let _ = child.wait();
    let _ = Command::new("kill")
        .args(["-KILL", read(pid).trim()])
        .stderr(Stdio::null())
        .status();
}

/// Starts a print run of `prompt` with `flags` in `session` whose model calls the slow bash,
/// and kills it mid-tool; returns the server (one request made).
pub fn killed_run(home: &Path, cwd: &Path, session: &Path, flags: &[&str], prompt: &str) -> Server {
    let pid = cwd.join("pid");
    let _ = std::fs::remove_file(&pid);
    let server = Server::start(vec![slow_bash("call_1", &pid)]);
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url])
        .args(BASH)
        .args(flags)
        .arg("--session")
        .arg(session)
        .args(["-p", prompt]);
    kill_mid_tool(spawn(c), session, &pid);
    assert_eq!(server.requests().len(), 1);
    server
}

/// `--recover` of `session` with `flags`, against `server`: without `--tools`, it runs the
/// tools the session declared.
pub fn recover(home: &Path, cwd: &Path, session: &Path, server: &Server, flags: &[&str]) -> Output {
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url])
        .args(&BASH[2..])
        .args(flags)
        .arg("--session")
        .arg(session)
        .arg("--recover");
    run(c)
}

/// Spawns the command with no stdin and its output dropped.
pub fn spawn(mut c: Command) -> Child {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().expect("spawn tern")
}
