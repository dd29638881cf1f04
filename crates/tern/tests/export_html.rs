//! `tern --export SESSION [OUT]` writes a page that headless Chromium renders with every
//! part of the session, and on which a tool result's `<script>` stays text.

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_contains, command, dirs, run, stderr, stdout};
use serde_json::json;

/// The marker the injected markup would set if it ran.
const PWNED: &str = "pwned-by-tool-output";

fn session(path: &Path) {
    let script = format!(
        "<script>document.title='{PWNED}';document.body.insertAdjacentHTML('beforeend','<p id=\"{PWNED}\"></p>')</script><img src=x onerror=\"document.title='{PWNED}'\">"
    );
    let lines = [
        json!({"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/proj"}),
        json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "t",
               "message": {"role": "user", "content": "Please read notes.txt", "timestamp": 1}}),
        json!({"type": "message", "id": "a2", "parentId": "a1", "timestamp": "t",
               "message": {"role": "assistant", "model": "scripted-model", "api": "openai-completions", "provider": "p",
                           "content": [{"type": "thinking", "thinking": "secret plan to read the file"},
                                       {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}}],
                           "stopReason": "toolUse", "timestamp": 2}}),
        json!({"type": "message", "id": "a3", "parentId": "a2", "timestamp": "t",
               "message": {"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "isError": false,
                           "content": [{"type": "text", "text": script}], "timestamp": 3}}),
        json!({"type": "message", "id": "a4", "parentId": "a3", "timestamp": "t",
               "message": {"role": "assistant", "model": "scripted-model", "api": "openai-completions", "provider": "p",
                           "content": [{"type": "text", "text": "The notes hold a script tag."}],
                           "stopReason": "stop", "timestamp": 4}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).expect("write session");
}

fn chromium() -> &'static str {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c;
        }
    }
    panic!("headless Chromium is needed to check the exported page: apt-get install chromium (.ci/run does)");
}

#[test]
fn an_exported_session_renders_in_chromium_with_its_parts_and_no_injected_script() {
    let (home, cwd) = dirs();
    let input = cwd.path().join("s.jsonl");
    session(&input);

    // Without an output, pi's default name in the working directory.
    let mut c = command(home.path(), cwd.path());
    c.args(["--export", "s.jsonl"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        format!("Exported to: tern-session-s.html")
    );
    assert!(cwd.path().join("tern-session-s.html").exists());

    let mut c = command(home.path(), cwd.path());
    c.args(["--export", "s.jsonl", "page.html"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = cwd.path().join("page.html");
    assert_contains(&stdout(&o), "page.html");

    let browser = chromium();
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let base = |c: &mut Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()));
    };
    let mut dump = Command::new(browser);
    base(&mut dump);
    dump.args(["--virtual-time-budget=2000", "--dump-dom", &url]);
    let o = dump.output().expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && dom.contains("<html"),
        "chromium: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Each part is there.
    for part in [
        "id=\"session-header\"",
        "sess-1",
        "class=\"message user\"",
        "Please read notes.txt",
        "class=\"message assistant\"",
        "class=\"tool-name\">read</div>",
        "\"path\": \"notes.txt\"",
        "class=\"message tool-result\"",
        "The notes hold a script tag.",
        "secret plan to read the file",
    ] {
        assert!(dom.contains(part), "no {part} in the rendered page:\n{dom}");
    }
    // Thinking is folded: its details element is not open.
    assert!(
        dom.contains("<details class=\"thinking\"><summary>Thinking</summary>"),
        "{dom}"
    );
    // The tool's markup is shown as text, and never ran.
    assert!(dom.contains("&lt;script&gt;document.title="), "{dom}");
    assert!(
        !dom.contains(&format!("<p id=\"{PWNED}\"")),
        "the injected script ran:\n{dom}"
    );
    assert!(
        !dom.contains(&format!("<title>{PWNED}")),
        "the injected script ran:\n{dom}"
    );
    assert!(!dom.contains("<script"), "{dom}");

    let shot = cwd.path().join("page.png");
    let mut c = Command::new(browser);
    base(&mut c);
    c.arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1000,1400", &url]);
    let o = c.output().expect("run chromium");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "a blank or broken screenshot: {} bytes",
        png.len()
    );
}

#[test]
fn export_errors_say_what_is_wrong() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args(["--export", "missing.jsonl"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1));
    assert_contains(&stderr(&o), "Error: File not found: ");
}
