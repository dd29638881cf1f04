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
            json!({"command": "echo warming up; sleep 3; echo slept"}),
        ),
        Reply::text("Noted the banana."),
        Reply::text("Summary done."),
        Reply::tool(
            "call_again",
            "bash",
            json!({"command": "echo again-$((2+3))"}),
        ),
        Reply::text("Ran again."),
        Reply::Hang,
        Reply::text("before\x1b]2;owned\x07 after\x1b[2J end"),
        Reply::text(MARKDOWN),
        Reply::Think("secret musing".into(), "Thought it through.".into()),
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
        10,
        "prompt, after steering, after the follow-up, a second command, after it, hung, \
         escapes, markdown, thinking, the long tool"
    );
    // `-c` resumed the session: the last request carries the first run's history.
    assert!(
        text_of(&reqs[9]).contains("Noted the banana"),
        "{}",
        text_of(&reqs[9])
    );
    // `!echo` ran in a shell and went to the model with the next prompt; `!!echo` did not.
    let resumed = text_of(&reqs[9]);
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
