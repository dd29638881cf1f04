//! Compaction through the real binary and the scripted server: past the threshold the older
//! messages become pi's summary (the next request holds it and the kept messages only, the
//! session file the `compaction` entry); a pi-format session with a compaction entry resumes
//! as pi resumes it; a context overflow compacts and retries once.

mod common;

use std::path::{Path, PathBuf};

use common::{
    assert_contains, command, json_lines, messages, parse_lines, run, stderr, stdout, Reply, Rpc,
    Server,
};
use serde_json::{json, Value};

/// pi's wrapper of a compaction summary in the user message it sends.
fn wrapped(summary: &str) -> String {
    format!(
        "The conversation history before this point was compacted into the following \
         summary:\n\n<summary>\n{summary}\n</summary>"
    )
}

/// The text of a Chat Completions message (string content or text parts).
fn text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The (role, text) of a request's messages after the system prompt.
fn conversation(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .iter()
        .filter(|m| m["role"] != "system" && m["role"] != "developer")
        .map(|m| (m["role"].as_str().unwrap_or_default().to_string(), text(m)))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect()
}

/// A temporary home and the path of a session file `name` in it.
fn home_with(name: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().expect("home");
    let session = home.path().join(name);
    (home, session)
}

/// `tern -p PROMPT` with `flags`, in the session `session`, against `server`.
fn print(
    home: &Path,
    server: &Server,
    session: &Path,
    flags: &[&str],
    prompt: &str,
) -> std::process::Output {
    let mut c = command(home, home);
    c.args(["--base-url", &server.url, "--no-tools", "--session"])
        .arg(session)
        .args(flags)
        .args(["-p", prompt]);
    run(c)
}

/// A window whose threshold (window minus pi's 16384 reserve) every scripted answer
/// (120 tokens of usage) crosses, and a keep budget that keeps the last exchange.
const PAST_THRESHOLD: [&str; 6] = [
    "--context-window",
    "16400",
    "--max-output-tokens",
    "10",
    "--compaction-keep-recent-tokens",
    "5",
];

#[test]
fn past_the_threshold_the_next_request_holds_the_summary_and_the_kept_messages() {
    let (home, session) = home_with("s.jsonl");
    let server = Server::answering(&[
        "first answer",
        "second answer",
        "## Goal\nTest the summary.",
        "third answer",
    ]);
    // The first exchange fits (the default window).
    let o = print(home.path(), &server, &session, &[], "first question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("compacted"), "{}", stderr(&o));

    // The second crosses the threshold: the first exchange is summarized.
    let o = print(
        home.path(),
        &server,
        &session,
        &PAST_THRESHOLD,
        "second question",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(&stderr(&o), "tern: compacted the conversation (threshold)");
    let requests = server.wait_requests(3);
    let summary_request = &requests[2];
    let system = messages(summary_request)[0].clone();
    assert!(
        text(&system).starts_with("You are a context summarization assistant."),
        "{system}"
    );
    let asked = conversation(summary_request);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].1.starts_with(
            "<conversation>\n[User]: first question\n\n[Assistant]: first answer\n\
             </conversation>\n\nThe messages above are a conversation to summarize."
        ),
        "{}",
        asked[0].1
    );
    assert!(summary_request["tools"]
        .as_array()
        .is_none_or(|t| t.is_empty()));

    // The file has pi's entry, naming the second question as the first kept entry.
    let lines = json_lines(&session);
    let compaction = lines
        .iter()
        .find(|e| e["type"] == "compaction")
        .expect("a compaction entry");
    let second = lines
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["content"][0]["text"] == "second question")
        .expect("the second question");
    assert_eq!(compaction["firstKeptEntryId"], second["id"]);
    assert_eq!(compaction["summary"], "## Goal\nTest the summary.");
    assert_eq!(compaction["tokensBefore"], 120);
    assert_eq!(
        compaction["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    assert_eq!(compaction["usage"]["totalTokens"], 120);
    // pi's entry carries the system message in force, stamped with the entry's time: a
    // resume leaves the system messages before it out and starts from this one.
    let head = lines
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "system")
        .expect("the session's system message");
    let mut expected = head["message"].clone();
    let stamp = compaction["systemMessage"]["timestamp"].clone();
    assert!(stamp.is_u64(), "{compaction}");
    expected["timestamp"] = stamp;
    assert_eq!(compaction["systemMessage"], expected);

    // The next prompt sends the summary and the kept exchange only.
    let o = print(
        home.path(),
        &server,
        &session,
        &["--no-auto-compaction"],
        "third question",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "third answer");
    let requests = server.wait_requests(4);

    assert_eq!(
        conversation(&requests[3]),
        pairs(&[
            ("user", &wrapped("## Goal\nTest the summary.")),
            ("user", "second question"),
            ("assistant", "second answer"),
            ("user", "third question"),
        ])
    );
}

/// A home holding a session file as pi writes one after a compaction: the summary, the
/// first kept entry (`c`), and an entry after the compaction.
fn pi_home() -> (tempfile::TempDir, PathBuf) {
    let (home, path) = home_with("pi.jsonl");
    let usage = json!({"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let assistant = |id: &str, parent: &str, t: &str| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": t}],
                           "api": "openai-completions", "provider": "openai", "model": "gpt-4o-mini",
                           "usage": usage, "stopReason": "stop", "timestamp": 1_735_689_601_000i64}})
    };
    let user = |id: &str, parent: Option<&str>, t: &str| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:00.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": t}], "timestamp": 1_735_689_600_000i64}})
    };
    let lines = [
        json!({"type": "session", "version": 3, "id": "0194e5a4-0000-7000-8000-000000000001",
               "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"}),
        user("a1", None, "old question"),
        assistant("a2", "a1", "old answer"),
        user("a3", Some("a2"), "kept question"),
        assistant("a4", "a3", "kept answer"),
        json!({"type": "compaction", "id": "a5", "parentId": "a4", "timestamp": "2025-01-01T00:00:02.000Z",
               "summary": "## Goal\nOld work.", "firstKeptEntryId": "a3", "tokensBefore": 50000,
               "details": {"readFiles": ["src/lib.rs"], "modifiedFiles": []}}),
        user("a6", Some("a5"), "question after"),
        assistant("a7", "a6", "answer after"),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write the session");
    (home, path)
}

#[test]
fn a_pi_session_with_a_compaction_resumes_with_the_summary_and_the_kept_messages() {
    let (home, session) = pi_home();
    let server = Server::start(vec![Reply::text("next answer")]);
    let o = print(
        home.path(),
        &server,
        &session,
        &["--no-auto-compaction"],
        "next question",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("does not replay"),
        "the compaction entry is replayed: {}",
        stderr(&o)
    );
    // pi's buildSessionContext: the summary, the entries from firstKeptEntryId, then what
    // followed the compaction. The fixture is the request pi 1.6 itself sent for this file
    // (its messages after the system prompt), recorded against a scripted server.
    let request = &server.wait_requests(1)[0];
    let sent: Vec<Value> = messages(request)
        .into_iter()
        .filter(|m| m["role"] != "system")
        .collect();
    let pi: Vec<Value> = serde_json::from_str(include_str!(
        "../fixtures/pi_compacted_resume_messages.json"
    ))
    .expect("the fixture");
    assert_eq!(sent, pi);
    assert_eq!(
        conversation(request),
        pairs(&[
            ("user", &wrapped("## Goal\nOld work.")),
            ("user", "kept question"),
            ("assistant", "kept answer"),
            ("user", "question after"),
            ("assistant", "answer after"),
            ("user", "next question"),
        ])
    );
}

#[test]
fn a_resumed_session_over_the_threshold_compacts_before_the_prompt() {
    let (home, session) = pi_home();
    let server = Server::answering(&["## Goal\nBefore.", "next answer", "## Goal\nAfter."]);
    // The file's last answer reports 15 tokens: over a window of 16390 less 16384.
    let flags = [
        "--context-window",
        "16390",
        "--max-output-tokens",
        "5",
        "--compaction-keep-recent-tokens",
        "5",
    ];
    let o = print(home.path(), &server, &session, &flags, "next question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let requests = server.wait_requests(2);
    assert!(
        conversation(&requests[0])[0]
            .1
            .starts_with("<conversation>\n[User]: kept question"),
        "the first request is the summary: {:?}",
        conversation(&requests[0])
    );
    assert_eq!(
        conversation(&requests[1]),
        pairs(&[
            (
                "user",
                &wrapped("## Goal\nBefore.\n\n<read-files>\nsrc/lib.rs\n</read-files>")
            ),
            ("user", "question after"),
            ("assistant", "answer after"),
            ("user", "next question"),
        ])
    );
}

#[test]
fn a_second_compaction_updates_the_previous_summary_and_carries_its_files() {
    let (home, session) = pi_home();
    let server = Server::answering(&["next answer", "## Goal\nNewer work."]);
    let o = print(
        home.path(),
        &server,
        &session,
        &PAST_THRESHOLD,
        "next question",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let requests = server.wait_requests(2);
    let asked = conversation(&requests[1]);
    // The kept messages of the first compaction are summarized again, with the previous
    // summary to update (pi's iterative compaction).
    assert!(
        asked[0].1.starts_with(
            "<conversation>\n[User]: kept question\n\n[Assistant]: kept answer\n\n\
             [User]: question after\n\n[Assistant]: answer after\n</conversation>\n\n\
             <previous-summary>\n## Goal\nOld work.\n</previous-summary>\n\n\
             The messages above are NEW conversation messages"
        ),
        "{}",
        asked[0].1
    );
    let lines = json_lines(&session);
    let last = lines
        .iter()
        .rev()
        .find(|e| e["type"] == "compaction")
        .expect("a new compaction");
    assert_eq!(
        last["summary"],
        "## Goal\nNewer work.\n\n<read-files>\nsrc/lib.rs\n</read-files>"
    );
    assert_eq!(
        last["details"],
        json!({"readFiles": ["src/lib.rs"], "modifiedFiles": []})
    );
}

/// An error the provider sends when the prompt does not fit.
fn overflow() -> Reply {
    Reply::Error(
        400,
        "prompt is too long: 200000 tokens > 128000 maximum".into(),
    )
}

/// One exchange, then a second prompt that overflows: the model summarizes, and `retry` is
/// the answer to the retried prompt. Returns the home, the session, the server and the
/// second run's output.
fn overflow_after_one_exchange(
    retry: Reply,
) -> (tempfile::TempDir, PathBuf, Server, std::process::Output) {
    failure_after_one_exchange(overflow(), retry)
}

/// One exchange, then a second prompt answered with `failed`, a summary, and `retry`.
fn failure_after_one_exchange(
    failed: Reply,
    retry: Reply,
) -> (tempfile::TempDir, PathBuf, Server, std::process::Output) {
    let (home, session) = home_with("s.jsonl");
    let server = Server::start(vec![
        Reply::text("first answer"),
        failed,
        Reply::text("## Goal\nShort."),
        retry,
    ]);
    let o = print(home.path(), &server, &session, &[], "first question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let keep = ["--compaction-keep-recent-tokens", "1"];
    let o = print(home.path(), &server, &session, &keep, "second question");
    (home, session, server, o)
}

/// Checks a compact-and-retry that recovered: the answer is the retry's, the retry holds
/// the summary and the prompt that failed (not the failed answer), and the failed answer,
/// whose `stopReason` is `stop_reason`, is omitted in the file too (pi's `context_edit`),
/// so a resume agrees.
fn assert_recovered(
    session: &Path,
    server: &Server,
    o: &std::process::Output,
    answer: &str,
    stop_reason: &str,
) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    assert_eq!(stdout(o).trim(), answer);
    assert_contains(&stderr(o), "compacted the conversation (overflow)");
    let requests = server.wait_requests(4);
    assert_eq!(requests.len(), 4);
    assert_eq!(
        conversation(&requests[3]),
        pairs(&[
            ("user", &wrapped("## Goal\nShort.")),
            ("user", "second question"),
        ])
    );
    let lines = json_lines(session);
    let failed = lines
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["stopReason"] == stop_reason)
        .expect("the failed answer is kept in the file");
    assert!(lines.iter().any(|e| e["type"] == "context_edit"
        && e["targetId"] == failed["id"]
        && e["replacement"].is_null()));
}

#[test]
fn an_overflow_compacts_and_retries_once() {
    let (_home, session, server, o) = overflow_after_one_exchange(Reply::text("recovered answer"));
    assert_recovered(&session, &server, &o, "recovered answer", "error");
    let loaded = tern_session::load(&session).expect("load");
    assert_eq!(
        loaded.messages.len(),
        4,
        "the compaction's system message, summary, question, recovered answer"
    );
}

#[test]
fn a_second_overflow_fails_with_pis_message() {
    let (_home, _session, server, o) = overflow_after_one_exchange(overflow());
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_contains(
        &stderr(&o),
        "Context overflow recovery failed after one compact-and-retry attempt. Try \
             reducing context or switching to a larger-context model.",
    );
    // One compaction, one retry, nothing more.
    assert_eq!(server.requests().len(), 4);
}

/// A reply cut at `length` below the model's output limit: the scripted usage reports 20
/// output tokens, under pi's default 16,384 for a custom model.
fn cut_short() -> Reply {
    Reply::Truncated("The answer be".into())
}

#[test]
fn an_answer_cut_below_the_output_limit_compacts_and_retries_once() {
    // pi's `isRecoverableLength`: omitted (context_edit), compacted, continued.
    let (_home, session, server, o) =
        failure_after_one_exchange(cut_short(), Reply::text("the whole answer"));
    assert_recovered(&session, &server, &o, "the whole answer", "length");
}

#[test]
fn an_answer_cut_short_twice_fails_with_pis_message() {
    let (_home, _session, server, o) = failure_after_one_exchange(cut_short(), cut_short());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "The answer be");
    let err = stderr(&o);
    assert_contains(
        &err,
        "Truncated response recovery failed after one compact-and-retry attempt.",
    );
    assert_contains(
        &err,
        "Response was truncated: the model reached its output token limit.",
    );
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn an_answer_cut_at_the_output_limit_is_not_retried() {
    // 20 output tokens of a 20-token limit: the model said all it could (no recovery).
    let (home, session) = home_with("s.jsonl");
    let server = Server::start(vec![Reply::text("first answer"), cut_short()]);
    let o = print(home.path(), &server, &session, &[], "first question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let flags = [
        "--compaction-keep-recent-tokens",
        "1",
        "--max-output-tokens",
        "20",
    ];
    let o = print(home.path(), &server, &session, &flags, "second question");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("compacted"), "{}", stderr(&o));
    assert_eq!(server.requests().len(), 2);
    assert!(!json_lines(&session)
        .iter()
        .any(|e| e["type"] == "context_edit"));
}

#[test]
fn json_mode_emits_pis_compaction_events() {
    let (home, session) = home_with("s.jsonl");
    let server = Server::answering(&["first answer", "second answer", "## Goal\nJSON."]);
    let o = print(home.path(), &server, &session, &[], "first question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut flags = PAST_THRESHOLD.to_vec();
    flags.extend(["--mode", "json"]);
    let o = print(home.path(), &server, &session, &flags, "second question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = parse_lines(&stdout(&o));
    let start = events
        .iter()
        .position(|e| e == &json!({"type": "compaction_start", "reason": "threshold"}))
        .expect("compaction_start");
    let end = events
        .iter()
        .position(|e| e["type"] == "compaction_end")
        .expect("compaction_end");
    assert!(start < end);
    let e = &events[end];
    assert_eq!(
        (&e["reason"], &e["aborted"], &e["willRetry"]),
        (&json!("threshold"), &json!(false), &json!(false))
    );
    assert_eq!(e["result"]["summary"], "## Goal\nJSON.");
    assert_eq!(e["result"]["tokensBefore"], 120);
    assert!(e["result"]["firstKeptEntryId"].is_string());
}

#[test]
fn rpc_compact_summarizes_with_the_focus_and_answers_with_the_result() {
    let home = tempfile::tempdir().expect("home");
    let server = Server::answering(&[
        "first answer",
        "second answer",
        "## Goal\nRPC.",
        "third answer",
    ]);
    let mut rpc = Rpc::start(
        home.path(),
        home.path(),
        &server,
        &["--no-tools", "--compaction-keep-recent-tokens", "5"],
    );
    // Too small: pi's failure, after its compaction_start.
    let r = rpc.call("c0", json!({"type": "compact"}));
    assert_eq!(r["success"], false, "{r}");
    assert_eq!(r["error"], "Nothing to compact (session too small)", "{r}");
    let failed = rpc.since(0, "compaction_end", |v| v["type"] == "compaction_end");
    assert_eq!(
        failed["errorMessage"],
        "Compaction failed: Nothing to compact (session too small)"
    );
    for (id, q) in [("p1", "first question"), ("p2", "second question")] {
        rpc.call(id, json!({"type": "prompt", "message": q}));
        rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    }
    let r = rpc.call(
        "c1",
        json!({"type": "compact", "customInstructions": "the file names"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["summary"], "## Goal\nRPC.");
    assert_eq!(r["data"]["tokensBefore"], 120);
    let asked = conversation(&server.wait_requests(3)[2]);
    assert!(
        asked[0].1.ends_with("\n\nAdditional focus: the file names"),
        "{}",
        asked[0].1
    );
    rpc.call("p3", json!({"type": "prompt", "message": "third question"}));
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    assert_eq!(
        conversation(&server.wait_requests(4)[3]),
        pairs(&[
            ("user", &wrapped("## Goal\nRPC.")),
            ("user", "second question"),
            ("assistant", "second answer"),
            ("user", "third question"),
        ])
    );
    assert_eq!(rpc.finish(), Some(0));
}

/// Sends `prompt` over RPC and waits until the agent settled.
fn rpc_prompt(rpc: &mut Rpc, id: &str, prompt: &str) {
    let r = rpc.call(id, json!({"type": "prompt", "message": prompt}));
    assert_eq!(r["success"], true, "{r}");
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
}

/// `get_state`'s `autoCompactionEnabled`.
fn auto_compaction(rpc: &mut Rpc, id: &str) -> Value {
    rpc.call(id, json!({"type": "get_state"}))["data"]["autoCompactionEnabled"].clone()
}

#[test]
fn rpc_set_auto_compaction_turns_the_automatic_kind_off_and_on() {
    let home = tempfile::tempdir().expect("home");
    let server = Server::answering(&[
        "first answer",
        "second answer",
        "## Goal\nOn again.",
        "third answer",
        "## Goal\nThird.",
        "fourth answer",
    ]);
    let mut flags = vec!["--no-tools", "--no-auto-compaction"];
    flags.extend(PAST_THRESHOLD);
    let mut rpc = Rpc::start(home.path(), home.path(), &server, &flags);
    // `--no-auto-compaction` is what get_state reports, as pi's settings do.
    assert_eq!(auto_compaction(&mut rpc, "s0"), json!(false));
    // Off: every answer crosses the threshold, and nothing is summarized.
    rpc_prompt(&mut rpc, "p1", "first question");
    rpc_prompt(&mut rpc, "p2", "second question");
    assert_eq!(
        conversation(&server.wait_requests(2)[1]),
        pairs(&[
            ("user", "first question"),
            ("assistant", "first answer"),
            ("user", "second question"),
        ])
    );
    assert!(!rpc.seen.iter().any(|v| v["type"] == "compaction_start"));

    // On: the check before the next prompt compacts (pi's `_prepareRun`), and the one
    // after its run compacts again.
    let r = rpc.call(
        "a1",
        json!({"type": "set_auto_compaction", "enabled": true}),
    );
    assert_eq!(
        r,
        json!({"type": "response", "command": "set_auto_compaction", "success": true, "id": "a1"})
    );
    assert_eq!(auto_compaction(&mut rpc, "s1"), json!(true));
    let mark = rpc.seen.len();
    rpc_prompt(&mut rpc, "p3", "third question");
    let requests = server.wait_requests(5);
    assert!(
        conversation(&requests[2])[0]
            .1
            .starts_with("<conversation>\n[User]: first question"),
        "the summary request: {:?}",
        conversation(&requests[2])
    );
    assert_eq!(
        conversation(&requests[3]),
        pairs(&[
            ("user", &wrapped("## Goal\nOn again.")),
            ("user", "second question"),
            ("assistant", "second answer"),
            ("user", "third question"),
        ])
    );
    assert!(
        conversation(&requests[4])[0]
            .1
            .contains("[User]: second question"),
        "the second summary request: {:?}",
        conversation(&requests[4])
    );
    let ends = rpc.seen[mark..]
        .iter()
        .filter(|v| v["type"] == "compaction_end" && v["reason"] == "threshold")
        .count();
    assert_eq!(ends, 2);

    // Off again: the next run sends its prompt and nothing else.
    rpc.call(
        "a2",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    assert_eq!(auto_compaction(&mut rpc, "s2"), json!(false));
    rpc_prompt(&mut rpc, "p4", "fourth question");
    let requests = server.wait_requests(6);
    assert_eq!(requests.len(), 6);
    assert_eq!(
        conversation(&requests[5]),
        pairs(&[
            ("user", &wrapped("## Goal\nThird.")),
            ("user", "third question"),
            ("assistant", "third answer"),
            ("user", "fourth question"),
        ])
    );
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn a_run_past_the_threshold_compacts_between_two_turns_and_goes_on() {
    // pi checks before each further request of a run (its `prepareNextTurn` hook), not
    // only around the run. The threshold (window 16554 less pi's 16384 reserve: 170) is
    // above an answer's 120 tokens of usage, so neither the check before the prompt nor
    // the one after the run compacts; the file read (about 100 tokens) pushes the context
    // past it between the two turns. The keep budget keeps the prompt's whole turn.
    let (home, session) = home_with("s.jsonl");
    let notes = "code 42 ".repeat(50);
    std::fs::write(home.path().join("notes.txt"), &notes).expect("write notes");
    let question = format!("second question {}", "please ".repeat(25));
    let server = Server::start(vec![
        Reply::text("first answer"),
        Reply::tool("call_1", "read", json!({"path": "notes.txt"})),
        Reply::text("## Goal\nMid-run."),
        Reply::text("final answer"),
    ]);
    let o = print(home.path(), &server, &session, &[], "first question");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let flags = [
        "--tools",
        "read",
        "--context-window",
        "16554",
        "--max-output-tokens",
        "10",
        "--compaction-keep-recent-tokens",
        "130",
        "--mode",
        "json",
    ];
    let o = print(home.path(), &server, &session, &flags, &question);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let requests = server.wait_requests(4);
    assert_eq!(requests.len(), 4);
    assert!(
        conversation(&requests[2])[0].1.starts_with(
            "<conversation>\n[User]: first question\n\n[Assistant]: first answer\n</conversation>"
        ),
        "the summary request comes between the two turns: {:?}",
        conversation(&requests[2])
    );
    // The run's second request goes out from the compacted transcript.
    let second_turn = conversation(&requests[3]);
    assert_eq!(second_turn.len(), 4, "{second_turn:?}");
    assert_eq!(
        second_turn[..2],
        pairs(&[("user", &wrapped("## Goal\nMid-run.")), ("user", &question)])[..]
    );
    assert_eq!(second_turn[3], ("tool".to_string(), notes.clone()));
    // The prompt and the tool the summarized part declared are still the system's.
    assert_eq!(messages(&requests[3])[0]["role"], "system");
    assert_eq!(requests[3]["tools"][0]["function"]["name"], "read");
    // One run: the compaction's events fall between the first turn's end and the next
    // turn's start. The sequence is pi 1.6's own for this script (its JSON mode against the
    // same replies; deltas left out, since the two servers cut the text differently).
    let events = parse_lines(&stdout(&o));
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| *k != "message_update")
        .collect();
    let pi = [
        "session",
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "compaction_start",
        "compaction_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
        "agent_settled",
    ];
    assert_eq!(kinds, pi);
    let end = events
        .iter()
        .find(|e| e["type"] == "compaction_end")
        .expect("compaction_end");
    assert_eq!(
        (&end["reason"], &end["willRetry"]),
        (&json!("threshold"), &json!(false))
    );
    let compaction = json_lines(&session)
        .into_iter()
        .find(|e| e["type"] == "compaction")
        .expect("the compaction entry");
    assert_eq!(compaction["summary"], "## Goal\nMid-run.");
}
