//! RPC mode against the scripted HTTP server: prompt, steer while a tool runs, abort, state.

mod common;

use common::{dirs, text_of, Reply, Rpc, Server};
use serde_json::json;

#[test]
fn rpc_prompt_steer_abort_and_state() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![
        Reply::tool(
            "call_1",
            "bash",
            json!({"command": "sleep 1.5; echo slept"}),
        ),
        Reply::text("Noted the banana."),
        Reply::Hang,
    ]);
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--tools", "read,bash"]);

    // Malformed input and unknown commands get error responses, not a crash.
    rpc.send_raw("{not json\n");
    let parse = rpc.wait_for("parse error", |v| v["command"] == "parse");
    assert_eq!(parse["success"], false);
    let unknown = rpc.call("u", json!({"type": "teleport"}));
    assert_eq!(unknown["success"], false);

    let r = rpc.call(
        "1",
        json!({"type": "prompt", "message": "run the slow thing"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["disposition"], "started");

    // Steer while the slow tool runs.
    rpc.wait_for("tool_execution_start", |v| {
        v["type"] == "tool_execution_start"
    });
    let r = rpc.call(
        "2",
        json!({"type": "steer", "message": "also mention banana"}),
    );
    assert_eq!(r["data"]["disposition"], "queued");
    // queue_update is written before the steer's response.
    let q = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "queue_update")
        .unwrap()
        .clone();
    assert_eq!(q["steering"], json!(["also mention banana"]));
    let id = r["data"]["inputId"].clone();
    assert!(id.is_string(), "the steer's response names its input: {r}");
    let settled = rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    assert_eq!(settled["aborted"], false);
    // The input's way, step by step: accepted (journaled), committed (placed after the tool
    // result), seen (sent in the second request, before its response streamed).
    let stages: Vec<(usize, String)> = rpc
        .seen
        .iter()
        .enumerate()
        .filter(|(_, v)| v["type"] == "input_update" && v["inputId"] == id)
        .map(|(i, v)| (i, v["stage"].as_str().unwrap_or("").to_string()))
        .collect();
    let names: Vec<&str> = stages.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(names, ["accepted", "committed", "seen"], "{:?}", rpc.seen);
    let tool_end = rpc
        .seen
        .iter()
        .position(|v| v["type"] == "tool_execution_end")
        .expect("the tool ended");
    let answer = tool_end
        + rpc.seen[tool_end..]
            .iter()
            .position(|v| v["type"] == "message_start" && v["message"]["role"] == "assistant")
            .expect("the second answer started");
    assert!(
        stages[2].0 < answer,
        "seen before the answer to that request"
    );

    // The steering message reached the next request, after the tool result.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let body = text_of(&reqs[1]);
    let (slept, banana) = (body.find("slept").unwrap(), body.find("banana").unwrap());
    assert!(slept < banana, "{body}");
    assert!(!text_of(&reqs[0]).contains("banana"));

    let r = rpc.call("3", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"]["text"], "Noted the banana.");

    // A hung model: a prompt without streamingBehavior is refused while running, abort ends it.
    rpc.call("4", json!({"type": "prompt", "message": "hang please"}));
    server.wait_requests(3);
    let r = rpc.call("5", json!({"type": "prompt", "message": "another"}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("streamingBehavior"));
    let mark = rpc.seen.len();
    let r = rpc.call("6", json!({"type": "abort"}));
    assert_eq!(r["success"], true);
    let settled = rpc.since(mark, "aborted settle", |v| v["type"] == "agent_settled");
    assert_eq!(settled["aborted"], true);

    let state = rpc.call("7", json!({"type": "get_state"}));
    let d = &state["data"];
    assert_eq!(d["isStreaming"], false);
    assert_eq!(d["model"]["baseUrl"], server.url);
    assert!(d["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
    let msgs = rpc.call("8", json!({"type": "get_messages"}));
    let n = msgs["data"]["messages"].as_array().unwrap().len();
    assert_eq!(d["messageCount"], n);
    let last = &msgs["data"]["messages"][n - 1];
    assert_eq!(last["stopReason"], "aborted");

    // Settings.
    let r = rpc.call("9", json!({"type": "set_steering_mode", "mode": "all"}));
    assert_eq!(r["success"], true);
    let r = rpc.call(
        "10",
        json!({"type": "set_steering_mode", "mode": "sometimes"}),
    );
    assert_eq!(r["success"], false);
    let r = rpc.call("11", json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(r["success"], true);
    let state = rpc.call("12", json!({"type": "get_state"}));
    assert_eq!(state["data"]["steeringMode"], "all");
    assert_eq!(state["data"]["thinkingLevel"], "high");

    // Models: an id the catalog does not know works on the same local server.
    let r = rpc.call(
        "m1",
        json!({"type": "set_model", "provider": "local", "modelId": "other-local"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["id"], "other-local");
    assert_eq!(r["data"]["baseUrl"], server.url);
    let r = rpc.call(
        "m2",
        json!({"type": "set_model", "provider": "nowhere", "modelId": "x"}),
    );
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("Model not found"));

    // Queue and new session.
    rpc.call("13", json!({"type": "follow_up", "message": "later"}));
    let r = rpc.call("14", json!({"type": "clear_queue"}));
    assert_eq!(r["data"]["followUp"], json!(["later"]));
    let r = rpc.call("15", json!({"type": "new_session"}));
    assert_eq!(r["data"]["cancelled"], false);
    let state = rpc.call("16", json!({"type": "get_state"}));
    assert_ne!(state["data"]["sessionId"], d["sessionId"]);

    assert_eq!(rpc.finish(), Some(0));
}

/// Failed commands answer in pi's shape (`docs/rpc.md` "Errors"): one response with
/// `success: false`, the command's `type` and the request's `id`; unknown types say
/// `Unknown command: TYPE` as pi's rpc-mode does. Nothing reaches the model.
#[test]
fn rpc_failed_commands_answer_in_pi_shape() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![]);
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--no-session"]);

    let r = rpc.call("u1", json!({"type": "teleport", "where": "moon"}));
    assert_eq!(
        r,
        json!({"type": "response", "command": "teleport", "success": false,
               "error": "Unknown command: teleport", "id": "u1"})
    );
    for (id, cmd, kind) in [
        ("m1", json!({"type": "steer"}), "steer"),
        ("m2", json!({"type": "prompt", "message": 42}), "prompt"),
        (
            "m3",
            json!({"type": "set_follow_up_mode", "mode": 1}),
            "set_follow_up_mode",
        ),
        (
            "m4",
            json!({"type": "set_thinking_level", "level": "hot"}),
            "set_thinking_level",
        ),
        (
            "m5",
            json!({"type": "follow_up", "message": "x", "images": [{"data": 1}]}),
            "follow_up",
        ),
    ] {
        let r = rpc.call(id, cmd);
        assert_eq!(r["command"], kind, "{r}");
        assert_eq!(r["success"], false, "{r}");
        assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
    }
    let r = rpc.call("t1", json!({"note": "no type"}));
    assert_eq!(
        (r["success"].clone(), r["id"].clone()),
        (json!(false), json!("t1"))
    );

    rpc.send_raw("[1, 2]\n");
    let parse = rpc.wait_for("parse error", |v| v["command"] == "parse");
    assert_eq!(parse["success"], false);
    assert!(parse.get("id").is_none(), "{parse}");
    assert!(parse["error"]
        .as_str()
        .unwrap()
        .starts_with("Failed to parse command"));

    // The process is still serving: a state query works.
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(state["success"], true);
    assert_eq!(state["data"]["isStreaming"], false);
    assert_eq!(rpc.finish(), Some(0));
    assert!(server.requests().is_empty());
}

#[test]
fn rpc_answers_bad_bytes_and_oversized_lines_and_goes_on() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::text("still here")]);
    let mut rpc = Rpc::start(
        home.path(),
        cwd.path(),
        &server,
        &["--no-session", "--rpc-max-line-bytes", "1000"],
    );

    rpc.send_bytes(b"{\"type\":\"get_state\",\"id\":\"\xff\"}\n");
    let bad = rpc.wait_for("utf-8 parse error", |v| v["command"] == "parse");
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("invalid UTF-8"),
        "{bad}"
    );

    let long = format!(
        "{{\"type\":\"prompt\",\"message\":\"{}\"}}\n",
        "x".repeat(5000)
    );
    rpc.send_raw(&long);
    let big = rpc.wait_for("size error", |v| {
        v["command"] == "parse" && v["error"].as_str().is_some_and(|e| e.contains("limit"))
    });
    assert!(
        big["error"].as_str().unwrap().contains("5030 bytes"),
        "{big}"
    );

    // The loop went on: the next command is answered, a prompt still runs.
    let state = rpc.call("s", json!({"type": "get_state"}));
    assert_eq!(state["success"], true, "{state}");
    rpc.call("p", json!({"type": "prompt", "message": "hi"}));
    rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
    let r = rpc.call("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(r["data"]["text"], "still here");
    assert_eq!(rpc.finish(), Some(0));
}

/// A new session's requests carry its id (here as OpenAI's `prompt_cache_key`, which the
/// model's compat turns on), not the id of the session it replaced.
#[test]
fn a_new_session_sends_its_own_session_id() {
    let (home, cwd) = dirs();
    let server = Server::start(vec![Reply::text("one"), Reply::text("two")]);
    let models = json!({"providers": {"lab": {
        "baseUrl": server.url, "api": "openai-completions", "apiKey": "lab-key-123456",
        "compat": {"promptCacheKeyMode": "enabled"},
        "models": [{"id": "m"}]}}});
    let config = home.path().join(".config/tern");
    std::fs::create_dir_all(&config).expect("config folder");
    std::fs::write(config.join("models.json"), models.to_string()).expect("models.json");
    let mut rpc = Rpc::start(home.path(), cwd.path(), &server, &["--model", "lab/m"]);
    let mut ids = Vec::new();
    for (i, text) in ["first", "second"].iter().enumerate() {
        let state = rpc.call(&format!("s{i}"), json!({"type": "get_state"}));
        ids.push(
            state["data"]["sessionId"]
                .as_str()
                .expect("a session id")
                .to_string(),
        );
        rpc.call(&format!("p{i}"), json!({"type": "prompt", "message": text}));
        rpc.wait_for("agent_settled", |v| v["type"] == "agent_settled");
        if i == 0 {
            let r = rpc.call("n", json!({"type": "new_session"}));
            assert_eq!(r["success"], true, "{r}");
        }
    }
    assert_ne!(ids[0], ids[1]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for (request, id) in requests.iter().zip(&ids) {
        let expected: String = id.chars().take(64).collect();
        assert_eq!(request["prompt_cache_key"], json!(expected), "{request}");
    }
    assert_eq!(rpc.finish(), Some(0));
}
