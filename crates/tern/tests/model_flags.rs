//! `--model` patterns as pi resolves them (fuzzy parts, `provider/id`, a `:thinking` suffix)
//! and `--list-models [SEARCH]`.

mod common;

use std::path::Path;
use std::process::Output;

use common::{command, json_lines, run, session_files, stderr, stdout, Server};

/// The thinking levels the sessions under `home` recorded.
fn thinking_entries(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for f in session_files(home) {
        for v in json_lines(&f) {
            if v["type"] == "thinking_level_change" {
                out.push(v["thinkingLevel"].as_str().unwrap_or_default().to_string());
            }
        }
    }
    out
}

/// A print run with `flags` in a fresh home against `server` (which must answer): the home
/// and the output.
fn run_fresh(server: &Server, cwd: &Path, flags: &[&str]) -> (tempfile::TempDir, Output) {
    let home = tempfile::tempdir().unwrap();
    let mut c = command(home.path(), cwd);
    c.args(["--base-url", &server.url, "--tools", "read"])
        .args(flags)
        .args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
    (home, o)
}

#[test]
fn fuzzy_patterns_and_a_thinking_suffix_pick_the_model_and_level() {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::answering(&["a", "b", "c"]);
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["--provider", "groq", "--model", "70b"],
            "llama-3.3-70b-versatile",
            "off",
        ),
        (
            &["--model", "groq/qwen3.8:high"],
            "qwen/qwen3.8-27b",
            "high",
        ),
        // --thinking wins over the suffix.
        (
            &["--model", "groq/qwen3.8:high", "--thinking", "low"],
            "qwen/qwen3.8-27b",
            "low",
        ),
    ];
    for (i, (flags, id, level)) in cases.into_iter().enumerate() {
        let (home, _) = run_fresh(&server, cwd.path(), flags);
        assert_eq!(server.requests()[i]["model"], id, "{flags:?}");
        assert_eq!(thinking_entries(home.path()), [level], "{flags:?}");
    }
}

#[test]
fn an_id_several_providers_offer_is_an_error_naming_them() {
    let home = tempfile::tempdir().unwrap();
    let mut c = command(home.path(), home.path());
    c.args(["--model", "claude-haiku-4-5", "-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("model claude-haiku-4-5 is offered by several providers (")
            && err.contains("anthropic/claude-haiku-4-5")
            && err.contains("--provider"),
        "{err}"
    );
}

#[test]
fn list_models_shows_the_providers_with_keys_in_pis_table() {
    let home = tempfile::tempdir().unwrap();
    let mut c = command(home.path(), home.path());
    c.env("GROQ_API_KEY", "test-key")
        .args(["--list-models", "70b"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        words(lines[0]),
        ["provider", "model", "context", "max-out", "thinking", "images"]
    );
    // pi's token counts: 131072 -> 131.1K, 32768 -> 32.8K.
    assert_eq!(
        words(lines[1]),
        [
            "groq",
            "llama-3.3-70b-versatile",
            "131.1K",
            "32.8K",
            "no",
            "no"
        ]
    );
    assert_eq!(lines[0].find("model"), lines[1].find("llama"), "{out}");

    let mut c = command(home.path(), home.path());
    c.env("GROQ_API_KEY", "test-key").arg("--list-models");
    let out = stdout(&run(c));
    assert!(out.lines().skip(1).all(|l| l.starts_with("groq ")), "{out}");
    assert_eq!(
        out.lines().count(),
        8,
        "the header and groq's seven models: {out}"
    );

    let mut c = command(home.path(), home.path());
    c.env("GROQ_API_KEY", "test-key")
        .args(["--list-models", "zzzz"]);
    assert_eq!(stdout(&run(c)).trim(), "No models matching \"zzzz\"");

    let mut c = command(home.path(), home.path());
    c.arg("--list-models");
    let o = run(c);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).starts_with("No models available"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_thinking_level_is_clamped_to_what_the_model_supports() {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::answering(&["a", "b"]);
    // qwen3.6-27b has off and high only: medium goes up to high; a model without reasoning
    // runs with off (pi's clampThinkingLevel).
    let cases: [(&[&str], &str); 2] = [
        (
            &["--model", "groq/qwen/qwen3.6-27b", "--thinking", "medium"],
            "high",
        ),
        (&["--model", "groq/70b:high"], "off"),
    ];
    for (flags, level) in cases {
        let (home, o) = run_fresh(&server, cwd.path(), flags);
        assert_eq!(thinking_entries(home.path()), [level], "{flags:?}");
        assert!(
            stderr(&o).contains(&format!("; using {level}")),
            "{flags:?}: {}",
            stderr(&o)
        );
    }
}
