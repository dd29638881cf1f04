//! Runs `tests/interactive.sh` (tmux drives the interactive UI) against the scripted server.
//! Skipped, with a note, only when tmux is not installed.

mod common;

use common::{text_of, Reply, Server};
use serde_json::json;

/// An answer in Markdown: a heading, emphasis, inline code, a list, a code block and a
/// table, with a line long enough to wrap at 60 columns.
const MARKDOWN: &str = "## Plan\n\nUse **bold** words and `code` here.\n\n- first item\n\n```rust\nlet total = a ** b;\n```\n\n| name | size |\n|---|---|\n| alpha | 1 |\n\nThis closing sentence is long enough that a sixty column screen must wrap it between words.";

#[test]
fn interactive_mode_in_tmux() {
    if !common::tmux::available() {
        return;
    }
    let server = Server::start(vec![
        Reply::tool(
            "call_1",
            "bash",
            json!({"command": "echo warming up; sleep 5; echo slept"}),
        ),
        Reply::text("Noted the banana."),
        Reply::text("Summary done."),
        Reply::tool(
            "call_again",
            "bash",
            json!({"command": "echo again-$((2+3))"}),
        ),
        Reply::text("Ran again."),
        // One call of each file tool, and a read that fails.
        Reply::tool(
            "call_write",
            "write",
            json!({"path": "new.txt", "content": "alpha\nbeta\ngamma\n"}),
        ),
        Reply::tool(
            "call_edit",
            "edit",
            json!({"path": "new.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}),
        ),
        Reply::tool(
            "call_read",
            "read",
            json!({"path": "new.txt", "offset": 2, "limit": 2}),
        ),
        Reply::tool("call_missing", "read", json!({"path": "missing.txt"})),
        Reply::text("Files done."),
        Reply::Hang,
        Reply::text("before\x1b]2;owned\x07 after\x1b[2J end"),
        Reply::text(MARKDOWN),
        Reply::Think("secret musing".into(), "Thought it through.".into()),
        // A fast model (1,000 deltas a second for 4 s) while keys are typed.
        Reply::Flood {
            deltas: 4000,
            per_second: 1000,
            end: "Flood done.".into(),
        },
        Reply::tool("call_deny", "bash", json!({"command": "rm -rf build"})),
        Reply::text("Understood, keeping it."),
        Reply::tool("call_2", "bash", json!({"command": "sleep 30; echo never"})),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    // TERN_TEST_OUT keeps the captured panes for a look.
    let out = std::env::var_os("TERN_TEST_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interactive.sh");
    let status = std::process::Command::new("bash")
        .arg(script)
        .env("TERN_BIN", env!("CARGO_BIN_EXE_tern"))
        .env("TERN_TEST_URL", &server.url)
        .env("TERN_TEST_OUT", &out)
        .status()
        .expect("run interactive.sh");
    assert!(status.success(), "interactive.sh failed");
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        18,
        "prompt, after steering, after the follow-up, a second command, after it, five file \
         tool replies, hung, escapes, markdown, thinking, flood, the denied call, after it, the \
         long tool"
    );
    // `-c` resumed the session: its first request carries the first run's history.
    assert!(
        text_of(&reqs[15]).contains("Noted the banana"),
        "{}",
        text_of(&reqs[15])
    );
    // The denied call's result gives the model the reason typed in the dialog.
    let denied = text_of(&reqs[16]);
    assert!(
        denied.contains("Permission denied: the user declined the call")
            && denied.contains("The user said: keep the build folder"),
        "{denied}"
    );
    // A prompt of two lines (Ctrl+J) went as one message holding both.
    let last_user = reqs[12]["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(last_user.contains("show\\nmarkdown"), "{last_user}");
    // The queued message taken back with Alt+Up and corrected never reached the model.
    for r in &reqs {
        assert!(!text_of(r).contains("typo mesage"), "{}", text_of(r));
    }
    // `!echo` ran in a shell and went to the model with the next prompt; `!!echo` did not.
    let resumed = text_of(&reqs[15]);
    assert!(
        resumed.contains("Ran `echo bang-$((6*7))`") && resumed.contains("bang-42"),
        "{resumed}"
    );
    assert!(!resumed.contains("quiet-25"), "{resumed}");
    let body = text_of(&reqs[1]);
    let (slept, banana) = (body.find("slept").unwrap(), body.find("banana").unwrap());
    assert!(
        slept < banana,
        "the steering message follows the tool result: {body}"
    );
    assert!(
        !body.contains("then summarize"),
        "the follow-up waits until the agent would stop"
    );
    // The second command ran without a question ("always" for bash) and its result went on.
    assert!(
        text_of(&reqs[4]).contains("again-5"),
        "{}",
        text_of(&reqs[4])
    );
    let body = text_of(&reqs[2]);
    let noted = body.find("Noted the banana").unwrap();
    let summarize = body.find("then summarize").unwrap();
    assert!(noted < summarize, "{body}");
}
