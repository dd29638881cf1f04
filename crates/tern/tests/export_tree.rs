//! The exported page shows the session tree, every branch of it, and renders an assistant's
//! Markdown (raw markup in it stays text), as headless Chromium reads the page.

mod common;

use std::process::Command;

use common::{command, run, stderr};
use serde_json::json;

fn message(
    id: &str,
    parent: Option<&str>,
    role: &str,
    content: serde_json::Value,
) -> serde_json::Value {
    let mut m = json!({"role": role, "content": content, "timestamp": 1});
    if role == "assistant" {
        m["model"] = json!("scripted-model");
        m["stopReason"] = json!("stop");
    }
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-02T03:04:05.000Z", "message": m})
}

#[test]
fn the_page_shows_every_branch_and_renders_markdown() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    // The first question was asked twice: the older branch and the active one.
    let lines = [
        json!({"type": "session", "version": 3, "id": "tree-1", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/proj"}),
        message("u1", None, "user", json!("Plan the refactor")),
        message("a1", Some("u1"), "assistant", text("First idea: **split** the parser")),
        message("u2", Some("a1"), "user", json!("Too big, try again")),
        message("a2", Some("u2"), "assistant", text("Abandoned branch answer")),
        json!({"type": "model_change", "id": "m1", "parentId": "a1", "timestamp": "t", "provider": "p", "modelId": "x"}),
        message("u3", Some("m1"), "user", json!("Smaller steps please")),
        message("a3", Some("u3"), "assistant", text("## Steps\n\n1. Move `lexer.rs`\n2. Add tests\n\n| file | lines |\n|---|---|\n| a.rs | 10 |\n\n<script>document.title='pwned'</script>")),
    ];
    let file = cwd.path().join("s.jsonl");
    std::fs::write(
        &file,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let mut c = command(home.path(), cwd.path());
    c.args(["--export", "s.jsonl", "page.html"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = cwd.path().join("page.html");

    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("headless Chromium is needed to check the exported page: apt-get install chromium (.ci/run does)");
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        dom.contains("<html"),
        "chromium: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The tree: open, as there are branches; the active branch links to its messages, the
    // other branch holds its message folded.
    let tree_at = dom.find("id=\"session-tree\"").expect("a tree");
    let tree = &dom[tree_at
        ..dom[tree_at..]
            .find("</details>\n<main")
            .map_or(dom.len(), |e| tree_at + e)];
    assert!(
        dom.contains("<details id=\"session-tree\" open=\"\">"),
        "{dom}"
    );
    assert!(
        tree.contains("<a href=\"#entry-u3\">user: Smaller steps please</a>"),
        "{tree}"
    );
    assert!(
        tree.contains("<a href=\"#entry-a1\">assistant: First idea: **split** the parser</a>"),
        "{tree}"
    );
    assert!(tree.contains("class=\"off-branch\""), "{tree}");
    assert!(
        tree.contains("user: Too big, try again") && tree.contains("Abandoned branch answer"),
        "{tree}"
    );
    // The fork nests both branches one level below the shared start.
    let nested = tree
        .find("<ul class=\"tree\">\n<li class=\"off-branch\">")
        .or_else(|| tree.find("<ul class=\"tree\">\n<li class=\"active\"><a href=\"#entry-u3\""));
    assert!(nested.is_some(), "{tree}");
    // The main view is the active branch only, each message with the id the tree links to.
    let main = &dom[dom.find("<main").unwrap()..];
    assert!(
        main.contains("id=\"entry-u3\"") && !main.contains("Abandoned branch answer"),
        "{main}"
    );
    // Markdown, rendered; the raw script stays text and never ran.
    assert!(main.contains("<strong>split</strong>"), "{main}");
    assert!(
        main.contains("<h2>Steps</h2>") && main.contains("<code>lexer.rs</code>"),
        "{main}"
    );
    assert!(
        main.contains("<ol>") && main.contains("<table>") && main.contains("<td>a.rs</td>"),
        "{main}"
    );
    assert!(main.contains("&lt;script&gt;document.title="), "{main}");
    assert!(
        !dom.contains("<title>pwned") && !dom.contains("<script"),
        "{dom}"
    );
}
