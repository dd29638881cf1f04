//! `--session-dir` with pi's layout (every directory's sessions in the folder itself, told
//! apart by their header's `cwd`), and `-r` without an id: a picker on a terminal, else the
//! list of this directory's sessions, newest first.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{command, run, stderr, text_of, Reply, Server};
use serde_json::Value;

/// The session files directly in `dir`, oldest first by name (their timestamp).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
    out.sort();
    out
}

fn header(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// One print-mode run at `server` in `cwd` with `flags`, then `prompt`.
fn prompt(home: &Path, cwd: &Path, server: &Server, flags: &[&str], prompt: &str) -> String {
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url, "--tools", "read"])
        .args(flags)
        .args(["-p", prompt]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
    stderr(&o)
}

#[test]
fn session_dir_keeps_every_directorys_sessions_in_the_folder_itself() {
    let home = tempfile::tempdir().unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().to_str().unwrap();
    let server = Server::start(vec![
        Reply::text("Noted apples."),
        Reply::text("Noted bananas."),
        Reply::text("You said apples."),
        Reply::text("Found it."),
    ]);
    prompt(
        home.path(),
        a.path(),
        &server,
        &["--session-dir", dir],
        "apples",
    );
    prompt(
        home.path(),
        b.path(),
        &server,
        &["--session-dir", dir],
        "bananas",
    );
    let made = files(store.path());
    assert_eq!(made.len(), 2, "{made:?}");
    // pi's names: `<ISO time with : and . as ->_<id>.jsonl`, the id the header's.
    for f in &made {
        let name = f.file_name().unwrap().to_str().unwrap();
        let h = header(f);
        let id = h["id"].as_str().unwrap();
        assert!(name.ends_with(&format!("_{id}.jsonl")), "{name}");
        let stamp = &name[..name.len() - id.len() - 7];
        assert_eq!(stamp.len(), 24, "{name}");
        assert!(
            !stamp.contains(':') && !stamp.contains('.') && stamp.ends_with('Z'),
            "{name}"
        );
    }
    assert!(
        !home.path().join("sessions").exists(),
        "nothing in the default root"
    );

    // --continue in a takes a's session, though b's is newer.
    prompt(
        home.path(),
        a.path(),
        &server,
        &["--session-dir", dir, "-c"],
        "what fruit?",
    );
    let sent = text_of(&server.requests()[2]);
    assert!(
        sent.contains("apples") && !sent.contains("bananas"),
        "{sent}"
    );

    // An id prefix is found in the folder.
    let b_file = made
        .iter()
        .find(|f| header(f)["cwd"] == b.path().canonicalize().unwrap().to_str().unwrap())
        .expect("b's session");
    let b_id = header(b_file)["id"].as_str().unwrap().to_string();
    prompt(
        home.path(),
        a.path(),
        &server,
        &["--session-dir", dir, "--session", &b_id[..8]],
        "and here?",
    );
    assert!(text_of(&server.requests()[3]).contains("bananas"));
    assert_eq!(files(store.path()).len(), 2, "no new file");
}

/// Two sessions of `cwd` (the second newer) and one of another directory, in the default
/// root.
fn three_sessions(home: &Path, cwd: &Path, server: &Server) {
    let other = tempfile::tempdir().unwrap();
    prompt(home, cwd, server, &[], "first topic");
    std::thread::sleep(Duration::from_millis(1100));
    prompt(home, other.path(), server, &[], "elsewhere topic");
    std::thread::sleep(Duration::from_millis(1100));
    prompt(home, cwd, server, &[], "second topic");
}

#[test]
fn resume_without_an_id_off_a_terminal_lists_this_directorys_sessions() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = Server::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    three_sessions(home.path(), cwd.path(), &server);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-r", "-p", "go on"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let (second, first) = (err.find("second topic"), err.find("first topic"));
    assert!(
        second.is_some() && first.is_some() && second < first,
        "newest first: {err}"
    );
    assert!(!err.contains("elsewhere"), "{err}");
    assert!(
        err.contains("  1. ") && err.contains(" --session "),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3, "nothing was sent");
}

#[test]
fn resume_without_an_id_on_a_terminal_opens_the_picked_session() {
    if !common::tmux::available() {
        return;
    }
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = Server::start(vec![
        Reply::text("a"),
        Reply::text("b"),
        Reply::text("c"),
        Reply::text("Back on the first topic."),
    ]);
    three_sessions(home.path(), cwd.path(), &server);
    let flags = format!(
        "--base-url '{}' --tools read -r -p 'go on'; echo EXIT=$?",
        server.url
    );
    let pane = common::tmux::Pane::tern("picker", home.path(), cwd.path(), &flags);
    pane.wait_for("Resume which?");
    let screen = pane.text();
    let (second, first) = (screen.find("second topic"), screen.find("first topic"));
    assert!(second.is_some() && second < first, "{screen}");
    assert!(!screen.contains("elsewhere"), "{screen}");
    pane.keys(&["2", "Enter"]);
    pane.wait_for("EXIT=");
    let screen = pane.text();
    assert!(screen.contains("EXIT=0"), "{screen}");
    let sent = text_of(&server.requests()[3]);
    assert!(
        sent.contains("first topic") && !sent.contains("second topic"),
        "{sent}"
    );
}
