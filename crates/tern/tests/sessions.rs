//! Sessions: written, resumed with the same transcript, torn lines, pi's files.

mod common;

use common::{
    assert_contains, command, dirs, json_lines, messages, run, session_files, stderr, stdout,
    Reply, Rpc, Server,
};
use serde_json::{json, Value};

/// Entries other than the durable runs' step records (`custom` entries of type `tern.step`,
/// which pi keeps out of the conversation).
fn without_steps(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .filter(|e| !(e["type"] == "custom" && e["customType"] == "tern.step"))
        .cloned()
        .collect()
}

/// Two prompts in one RPC process and the same two prompts as two print runs joined by
/// `--continue` send the model the same transcript.
#[test]
fn resumed_session_gives_the_model_the_same_transcript() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), "alpha").unwrap();
    let server = || Server::reading("a.txt", &["It says alpha.", "Second answer."]);

    // One process, two prompts.
    let home_a = tempfile::tempdir().unwrap();
    let server_a = server();
    let mut rpc = Rpc::start(home_a.path(), cwd.path(), &server_a, &[]);
    rpc.call(
        "1",
        json!({"type": "prompt", "message": "what is in a.txt?"}),
    );
    rpc.wait_for("settle 1", |v| v["type"] == "agent_settled");
    rpc.call("2", json!({"type": "prompt", "message": "and now?"}));
    rpc.wait_for("settle 2", |v| v["type"] == "agent_settled");
    assert_eq!(rpc.finish(), Some(0));

    // Two processes: a print run, then --continue.
    let home_b = tempfile::tempdir().unwrap();
    let server_b = server();
    let mut c = command(home_b.path(), cwd.path());
    c.args(["--base-url", &server_b.url, "-p", "what is in a.txt?"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let files = session_files(home_b.path());
    assert_eq!(files.len(), 1);
    let mut c = command(home_b.path(), cwd.path());
    c.args(["--base-url", &server_b.url, "--continue", "-p", "and now?"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "Second answer.");
    assert_eq!(
        session_files(home_b.path()).len(),
        1,
        "--continue appends to the same file"
    );

    let (ra, rb) = (server_a.requests(), server_b.requests());
    assert_eq!(ra.len(), 3);
    assert_eq!(rb.len(), 3);
    assert_eq!(messages(&ra[2]), messages(&rb[2]));
    assert_eq!(ra[2]["tools"], rb[2]["tools"]);
    assert_eq!(
        messages(&rb[2]).len(),
        6,
        "system, user, assistant, tool, assistant, user"
    );

    // The file: a pi header, then message entries (and the runs' step records) chained by
    // parentId.
    let entries = json_lines(&files[0]);
    assert_eq!(entries[0]["type"], "session");
    assert_eq!(entries[0]["version"], 3);
    assert_eq!(entries[0]["cwd"], cwd.path().to_string_lossy().as_ref());
    let mut parent = Value::Null;
    for e in &entries[1..] {
        assert_eq!(e["parentId"], parent);
        assert_eq!(e["id"].as_str().unwrap().len(), 8);
        parent = e["id"].clone();
    }
    let entries = without_steps(&entries);
    // pi's new-session entries: the model and thinking level, ahead of the messages.
    assert_eq!(entries[1]["type"], "model_change");
    assert_eq!(entries[2]["type"], "thinking_level_change");
    for e in &entries[3..] {
        assert_eq!(e["type"], "message");
    }
    let roles: Vec<&str> = entries[3..]
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

#[test]
fn resume_by_id_and_no_session() {
    let (home, cwd) = dirs();
    let server = Server::answering(&["one", "two", "three"]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--no-session", "-p", "ephemeral"]);
    assert_eq!(run(c).status.code(), Some(0));
    assert!(session_files(home.path()).is_empty());

    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-p", "first"]);
    assert_eq!(run(c).status.code(), Some(0));
    let file = session_files(home.path()).remove(0);
    let id = json_lines(&file)[0]["id"].as_str().unwrap().to_string();
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        &server.url,
        "--resume",
        &id[..8],
        "-p",
        "second",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let body = server.requests()[2].to_string();
    assert!(body.contains("first") && body.contains("two") && body.contains("second"));
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--resume", "zzzz", "-p", "x"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no session with id zzzz"));
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let (home, cwd) = dirs();
    let server = Server::answering(&["first answer", "second answer", "third answer"]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-p", "first question"]);
    assert_eq!(run(c).status.code(), Some(0));
    let mut c = command(home.path(), cwd.path());
    c.args([
        "--base-url",
        &server.url,
        "--continue",
        "-p",
        "second question",
    ]);
    assert_eq!(run(c).status.code(), Some(0));
    let file = session_files(home.path()).remove(0);
    let complete = without_steps(&json_lines(&file)).len();

    // A crash mid-write: the last message entry (the second answer) is cut in the middle;
    // the step records that follow it were never written.
    let text = std::fs::read_to_string(&file).unwrap();
    let answer_end = text.rfind(r#""type":"message""#).unwrap();
    let last_start = text[..answer_end].rfind('\n').unwrap() + 1;
    let line_end = last_start + text[last_start..].find('\n').unwrap();
    let cut = last_start + (line_end - last_start) / 2;
    std::fs::write(&file, &text[..cut]).unwrap();

    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--session"]);
    c.arg(&file);
    c.args(["-p", "third question"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(&stderr(&o), "torn last line");

    // Every complete entry reached the model; the torn one did not.
    let body = server.requests()[2].to_string();
    for s in [
        "first question",
        "first answer",
        "second question",
        "third question",
    ] {
        assert!(body.contains(s), "{s} missing from {body}");
    }
    assert!(!body.contains("second answer"));
    // The file is whole again: the torn tail was cut before the new entries.
    let after = without_steps(&json_lines(&file));
    assert_eq!(after.len(), complete - 1 + 2);
    assert_eq!(
        after.last().unwrap()["message"]["content"][0]["text"],
        "third answer"
    );
}

#[test]
fn a_pi_session_file_is_read_and_continued() {
    let (home, cwd) = dirs();
    let file = cwd.path().join("pi-session.jsonl");
    let pi = [
        json!({"type":"session","version":3,"id":"3f2a9c1e-0000-4000-8000-000000000001","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/project"}),
        json!({"type":"message","id":"a0b1c2d3","parentId":null,"timestamp":"2024-12-03T14:00:00.000Z","message":{"role":"system","content":"","sections":{"preamble":"You are an expert coding assistant."},"timestamp":1733234400000u64}}),
        json!({"type":"message","id":"a1b2c3d4","parentId":"a0b1c2d3","timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"Hello from pi","timestamp":1733234401000u64}}),
        json!({"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Hi from pi!"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1733234402000u64}}),
        json!({"type":"session_info","id":"c3d4e5f6","parentId":"b2c3d4e5","timestamp":"2024-12-03T14:00:03.000Z","name":"greeting"}),
        json!({"type":"label","id":"d4e5f6a7","parentId":"c3d4e5f6","timestamp":"2024-12-03T14:00:04.000Z","targetId":"a1b2c3d4","label":"start"}),
    ];
    let text: String = pi.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let server = Server::start(vec![Reply::text("continued")]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--session"]);
    c.arg(&file);
    c.args(["-p", "and from tern"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let msgs = messages(&server.requests()[0]);
    let all = serde_json::to_string(&msgs).unwrap();
    assert!(
        all.contains("Hello from pi")
            && all.contains("Hi from pi!")
            && all.contains("and from tern")
    );
    assert!(all.contains("You are an expert coding assistant."), "{all}");
    // New entries attach to pi's leaf: the model and thinking level (pi's file recorded
    // none), tern's tools declared in a system message (pi's file declared none), then the
    // prompt and the answer.
    let entries = json_lines(&file);
    assert_eq!(entries[6]["parentId"], "d4e5f6a7");
    assert_eq!(entries[6]["type"], "model_change");
    assert_eq!(entries[7]["type"], "thinking_level_change");
    let entries = without_steps(&entries);
    let roles: Vec<&str> = entries[8..]
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"], "{entries:#?}");
    assert!(entries[8]["message"]["toolsAdded"].is_array());
}
