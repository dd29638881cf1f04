//! pi's session flags: `--session PATH|ID|PREFIX`, `--session-id`, `--fork`, `--name`, and the
//! model and thinking-level entries that a resume restores.

mod common;

use std::path::Path;

use common::{
    assert_contains, command, dirs, json_lines, run, session_files, stderr, Reply, Server,
};
use serde_json::Value;

fn of_type<'a>(entries: &'a [Value], kind: &str) -> Vec<&'a Value> {
    entries.iter().filter(|e| e["type"] == kind).collect()
}

/// A print run against `server` with `flags`.
fn print_run(home: &Path, cwd: &Path, server: &Server, flags: &[&str]) -> std::process::Output {
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url, "--tools", "read"])
        .args(flags);
    run(c)
}

#[test]
fn session_id_name_prefix_lookup_and_unknown_ids() {
    let (home, cwd) = dirs();
    let server = Server::answering(&["one", "two", "three", "four"]);
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &[
            "--session-id",
            "review-1",
            "--name",
            "Auth work",
            "-p",
            "first",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(
        &stderr(&o),
        "no project session found with id 'review-1'; creating a new session with that id",
    );
    let files = session_files(home.path());
    assert_eq!(files.len(), 1);
    assert!(
        files[0].to_string_lossy().ends_with("_review-1.jsonl"),
        "{files:?}"
    );
    let entries = json_lines(&files[0]);
    assert_eq!(entries[0]["id"], "review-1");
    // pi's order: the model and thinking level of a new session ahead of its messages.
    let kinds: Vec<&str> = entries[1..4]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["model_change", "thinking_level_change", "session_info"]
    );
    assert_eq!(entries[1]["provider"], "local");
    assert_eq!(entries[1]["modelId"], "local");
    assert_eq!(entries[2]["thinkingLevel"], "off");
    assert_eq!(entries[3]["name"], "Auth work");

    // --session-id again opens it; --session with a prefix too.
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session-id", "review-1", "-p", "second"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no project session"), "{}", stderr(&o));
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session", "revi", "-p", "third"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(session_files(home.path()).len(), 1);
    let body = server.requests()[2].to_string();
    assert!(body.contains("first") && body.contains("second") && body.contains("third"));
    // Same model, same level: nothing new recorded.
    let entries = json_lines(&files[0]);
    assert_eq!(of_type(&entries, "model_change").len(), 1);
    assert_eq!(of_type(&entries, "thinking_level_change").len(), 1);

    // An unknown id is an error, and no file is made after it.
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session", "nosuch", "-p", "x"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "no session found matching 'nosuch'");
    assert!(!cwd.path().join("nosuch").exists());
    assert_eq!(session_files(home.path()).len(), 1);
    assert_eq!(server.requests().len(), 3);

    // A prefix two sessions share is an error too.
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session-id", "review-2", "-p", "x"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session", "review", "-p", "x"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_contains(&stderr(&o), "2 sessions match id review");
    // A bad id and flags pi refuses together.
    for (flags, message) in [
        (
            vec!["--session-id", "bad.", "-p", "x"],
            "session id must be non-empty",
        ),
        (
            vec!["--session-id", "a", "--continue", "-p", "x"],
            "--session-id cannot be combined with --continue",
        ),
        (
            vec!["--fork", "review-1", "--no-session", "-p", "x"],
            "--fork cannot be combined with --no-session",
        ),
    ] {
        let o = print_run(home.path(), cwd.path(), &server, &flags);
        assert_eq!(o.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&o).contains(message), "{flags:?}: {}", stderr(&o));
    }
}

#[test]
fn a_fork_copies_the_session_and_leaves_it_unchanged() {
    let (home, cwd) = dirs();
    let other = tempfile::tempdir().unwrap();
    let server = Server::answering(&["one", "two"]);
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session-id", "base", "-p", "first"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let source = session_files(home.path()).remove(0);
    let before = std::fs::read_to_string(&source).unwrap();

    let o = print_run(
        home.path(),
        other.path(),
        &server,
        &["--fork", "base", "--session-id", "forked", "-p", "second"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&source).unwrap(), before);
    let files = session_files(home.path());
    let fork = files
        .iter()
        .find(|f| f.to_string_lossy().ends_with("_forked.jsonl"))
        .unwrap_or_else(|| panic!("{files:?}"));
    let entries = json_lines(fork);
    assert_eq!(entries[0]["id"], "forked");
    assert_eq!(entries[0]["cwd"], other.path().to_string_lossy().as_ref());
    assert_eq!(
        entries[0]["parentSession"],
        source.canonicalize().unwrap().to_string_lossy().as_ref()
    );
    // The fork holds the source's entries, then the new run.
    let source_entries = json_lines(&source);
    assert_eq!(entries[1..source_entries.len()], source_entries[1..]);
    let body = server.requests()[1].to_string();
    assert!(body.contains("first") && body.contains("one") && body.contains("second"));
}

#[test]
fn the_model_and_thinking_level_are_restored_on_resume_and_recorded_on_change() {
    let (home, cwd) = dirs();
    let server = Server::start(
        ["one", "two", "three", "four", "five", "six"]
            .into_iter()
            .map(Reply::text)
            .collect(),
    );
    // A --base-url model's id comes back on resume.
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--model", "my-local", "--session-id", "s1", "-p", "first"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = session_files(home.path()).remove(0);
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session", "s1", "-p", "second"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.requests()[1]["model"], "my-local");
    let entries = json_lines(&file);
    assert_eq!(of_type(&entries, "model_change").len(), 1);
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &["--session", "s1", "--model", "other", "-p", "third"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.requests()[2]["model"], "other");
    let entries = json_lines(&file);
    let models = of_type(&entries, "model_change");
    assert_eq!(models.len(), 2);
    assert_eq!(models[1]["modelId"], "other");
    let loaded = tern_session::load(&file).expect("readable");
    assert_eq!(loaded.model, Some(("local".into(), "other".into())));

    // The thinking level of a model that has levels comes back too.
    let model = ["--provider", "groq", "--model", "qwen/qwen3.8-27b"];
    let flags = |extra: &[&'static str]| [&model[..], extra].concat();
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &flags(&["--thinking", "high", "--session-id", "s2", "-p", "first"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = tern_session::find_by_id(&home.path().join("sessions"), "s2").expect("s2");
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &flags(&["--session", "s2", "-p", "x"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let levels = |f: &Path| -> Vec<String> {
        of_type(&json_lines(f), "thinking_level_change")
            .iter()
            .map(|e| e["thinkingLevel"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(levels(&file), ["high"], "the recorded level was restored");
    let o = print_run(
        home.path(),
        cwd.path(),
        &server,
        &flags(&["--session", "s2", "--thinking", "low", "-p", "y"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(levels(&file), ["high", "low"]);
}
