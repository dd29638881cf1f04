//! The prompt as pi records it: a new session's leading system message holds the sections by
//! name; a resumed session whose prompt or tools changed gets pi's patch (changed sections,
//! removed ones `null`) and the loop's tool declarations, and the model gets the new prompt.

mod common;

use std::path::Path;

use common::{command, messages, run, stderr, Reply, Server};
use serde_json::Value;

fn system_entries(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "system")
        .map(|e| e["message"].clone())
        .collect()
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_changed_prompt_and_tool_set_on_resume_are_recorded_as_pi_records_them() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = home.path().join("s.jsonl");
    let server = Server::start(vec![
        Reply::text("Oui."),
        Reply::text("Yes."),
        Reply::text("Again."),
    ]);
    let go = |flags: &[&str], prompt: &str| {
        let mut c = command(home.path(), cwd.path());
        c.args(["--base-url", &server.url, "--session"])
            .arg(&file)
            .args(flags)
            .args(["-p", prompt]);
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
    };
    go(
        &[
            "--tools",
            "read",
            "--append-system-prompt",
            "Answer in French.",
        ],
        "hello",
    );
    let first = system_entries(&file);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["content"], "");
    let sections = first[0]["sections"].as_object().expect("sections");
    let order: Vec<&str> = sections.keys().map(String::as_str).collect();
    assert_eq!(order, ["preamble", "tools", "rules", "addendum", "cwd"]);
    assert_eq!(
        sections["addendum"],
        "<addendum>\nAnswer in French.\n</addendum>"
    );
    assert_eq!(names(&first[0]["toolsAdded"]), ["read"]);
    let sent = messages(&server.requests()[0]);
    assert!(sent[0]["content"]
        .as_str()
        .unwrap()
        .contains("Answer in French."));

    // No addendum now, and ls as well: the patch removes the addendum and rewrites the tool
    // list and rules; the loop declares ls.
    go(&["--tools", "read,ls"], "and now?");
    let now = system_entries(&file);
    assert_eq!(now.len(), 3, "{now:#?}");
    let patch = now[1]["sections"].as_object().expect("a patch");
    assert_eq!(patch["addendum"], Value::Null);
    assert!(
        patch["tools"].as_str().unwrap().contains("- ls: "),
        "{patch:?}"
    );
    assert!(
        !patch.contains_key("preamble") && !patch.contains_key("cwd"),
        "{patch:?}"
    );
    assert_eq!(names(&now[2]["toolsAdded"]), ["ls"]);
    let body = &server.requests()[1];
    let prompt = body.to_string();
    assert!(!prompt.contains("Answer in French."), "{prompt}");
    assert!(prompt.contains("- ls: "), "{prompt}");
    let declared: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(declared, ["read", "ls"]);

    // The same flags again: nothing more to record.
    go(&["--tools", "read,ls"], "once more");
    assert_eq!(system_entries(&file).len(), 3);
}
