//! pi's `models.json` (tern's config folder, and pi's `~/.pi/agent`) for custom providers
//! and models, and `--context-window auto`: the limits a server's `/models` reports.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;

use common::{command, run, stderr, stdout, Reply, Server};
use serde_json::{json, Value};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn tern_models(home: &Path) -> std::path::PathBuf {
    home.join(".config/tern/models.json")
}

fn pi_models(home: &Path) -> std::path::PathBuf {
    home.join(".pi/agent/models.json")
}

#[test]
fn a_custom_provider_of_models_json_runs_with_its_limits_and_compat() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = Server::start(vec![Reply::text("from lab"), Reply::text("again")]);
    let file = json!({"providers": {"lab": {
    "baseUrl": server.url, "api": "openai-completions", "apiKey": "lab-key-123456",
    "compat": {"supportsStore": false, "maxTokensField": "max_tokens"},
    "models": [
        {"id": "small-coder", "contextWindow": 32768, "maxTokens": 4096},
        {"id": "other", "compat": {"maxTokensField": "max_completion_tokens"}}
    ]}}});
    write(&tern_models(home.path()), &file.to_string());
    let mut c = command(home.path(), cwd.path());
    c.args(["--model", "lab/small", "--tools", "read", "-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "from lab");
    let body = &server.requests()[0];
    assert_eq!(body["model"], "small-coder");
    assert_eq!(body["max_tokens"], 4096, "{body}");

    // The model's compat wins over the provider's; its limits are pi's defaults.
    let mut c = command(home.path(), cwd.path());
    c.args(["--provider", "lab", "--model", "other", "--tools", "read"])
        .args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let body = &server.requests()[1];
    assert_eq!(body["model"], "other");
    assert_eq!(body["max_completion_tokens"], 16384, "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn pis_file_is_read_and_terns_wins_over_it() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = Server::start(vec![Reply::text("a"), Reply::text("b")]);
    let provider = |window: u64, max: u64| {
        json!({"providers": {"box": {
            "baseUrl": server.url, "api": "openai-completions", "apiKey": "box-key-123456",
            "compat": {"maxTokensField": "max_tokens"},
            "models": [{"id": "m1", "contextWindow": window, "maxTokens": max}]
        }}})
        .to_string()
    };
    write(&pi_models(home.path()), &provider(64000, 3000));
    let mut c = command(home.path(), cwd.path());
    c.args(["--model", "box/m1", "--tools", "read", "-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.requests()[0]["max_tokens"], 3000);

    write(&tern_models(home.path()), &provider(64000, 2000));
    let mut c = command(home.path(), cwd.path());
    c.args(["--model", "box/m1", "--tools", "read", "-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(server.requests()[1]["max_tokens"], 2000);

    // PI_CODING_AGENT_DIR moves pi's folder, as it does for pi.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::remove_file(tern_models(home.path())).unwrap();
    let mut c = command(home.path(), cwd.path());
    c.env("PI_CODING_AGENT_DIR", elsewhere.path())
        .args(["--model", "box/m1", "-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown model box/m1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn list_models_shows_models_json_providers_and_a_bad_file_is_named() {
    let home = tempfile::tempdir().unwrap();
    write(
        &tern_models(home.path()),
        r#"{"providers": {"lab": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "apiKey": "lab-key-123456",
            "models": [{"id": "vision-9b", "contextWindow": 65536, "maxTokens": 8192,
                        "input": ["text", "image"], "reasoning": true}]}}}"#,
    );
    let mut c = command(home.path(), home.path());
    c.args(["--list-models", "lab"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<Vec<String>> = stdout(&o)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{}", stdout(&o));
    assert_eq!(rows[1], ["lab", "vision-9b", "65.5K", "8.2K", "yes", "yes"]);

    write(
        &pi_models(home.path()),
        r#"{"providers": {"lab": {"models": [{"id": "x"}]}}}"#,
    );
    let mut c = command(home.path(), home.path());
    c.args(["--list-models"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(".pi/agent/models.json is not valid")
            && err.contains("Provider lab, model x: no \"api\" specified"),
        "{err}"
    );
}

/// A server that answers `GET /v1/models` with `listing` and each chat request with a
/// short text stream, keeping the chat request bodies.
struct ModelsServer {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    /// The `authorization` header of each chat request.
    auth: Arc<Mutex<Vec<String>>>,
}

impl ModelsServer {
    fn start(listing: Value) -> ModelsServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/v1",
            listener.local_addr().unwrap().port()
        );
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let (seen, keys) = (bodies.clone(), auth.clone());
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let (mut first, mut len, mut key) = (String::new(), 0usize, String::new());
                reader.read_line(&mut first).unwrap_or(0);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if lower.starts_with("authorization:") {
                        key = line["authorization:".len()..].trim().to_string();
                    }
                }
                let mut body = vec![0u8; len];
                let _ = reader.read_exact(&mut body);
                let mut stream = stream;
                let answer = if first.starts_with("GET /v1/models ") {
                    let b = listing.to_string();
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len())
                } else {
                    keys.lock().unwrap().push(key);
                    seen.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                    let delta = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
                    format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {delta}\n\ndata: [DONE]\n\n")
                };
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        ModelsServer { url, bodies, auth }
    }
}

/// Runs tern in print mode at `server` with `--context-window auto` and `extra`: its output
/// and the last chat request.
fn run_auto(server: &ModelsServer, extra: &[&str]) -> (std::process::Output, Value) {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--model", "m", "--tools", "read"])
        .args(["--context-window", "auto"])
        .args(extra)
        .args(["-p", "hi"]);
    let o = run(c);
    let body = server
        .bodies
        .lock()
        .unwrap()
        .last()
        .cloned()
        .unwrap_or(Value::Null);
    (o, body)
}

#[test]
fn context_window_auto_reads_the_servers_model_list() {
    // vLLM: the request's output limit is clamped to what fits the 8192-token window after
    // the prompt and a 4096-token margin (with pi's default window it would be 16384).
    let vllm = ModelsServer::start(
        json!({"object": "list", "data": [{"id": "m", "max_model_len": 8192}]}),
    );
    let (o, body) = run_auto(&vllm, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sent = body["max_tokens"].as_u64().unwrap_or(0);
    assert!(sent > 0 && sent < 8192 - 4096, "{body}");
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    // A flag's output limit wins over the server's window cap, and must fit in it.
    let (o, body) = run_auto(&vllm, &["--max-output-tokens", "1000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(body["max_tokens"], 1000, "{body}");
    let (o, _) = run_auto(&vllm, &["--max-output-tokens", "9000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("(8192 tokens)"), "{}", stderr(&o));

    // OpenRouter-style: the reported output limit is taken.
    let listed = ModelsServer::start(json!({"data": [{"id": "m", "context_length": 200000,
        "top_provider": {"max_completion_tokens": 12000}}]}));
    let (o, body) = run_auto(&listed, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(body["max_tokens"], 12000, "{body}");

    // Ollama reports no limits: pi's defaults, and a note says so.
    let ollama =
        ModelsServer::start(json!({"object": "list", "data": [{"id": "m", "object": "model"}]}));
    let (o, body) = run_auto(&ollama, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(body["max_tokens"], 16384, "{body}");
    assert!(
        stderr(&o).contains("/models reports no context window for m; it stays 128000 tokens"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn context_window_auto_gives_the_model_the_served_context() {
    // llama.cpp's served context (meta.n_ctx) wins over the trained one; the model RPC
    // reports (whose window sets the compaction threshold) has it.
    let server = ModelsServer::start(
        json!({"data": [{"id": "m", "meta": {"n_ctx": 3000, "n_ctx_train": 131072}}]}),
    );
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "--model", "m", "--tools", "read"])
        .args(["--context-window", "auto", "--mode", "rpc", "--no-session"]);
    let mut rpc = common::Rpc::spawn(c);
    let state = rpc.call("s1", json!({"type": "get_state"}));
    assert_eq!(state["data"]["model"]["contextWindow"], 3000, "{state}");
    assert_eq!(state["data"]["model"]["maxTokens"], 3000, "{state}");
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn a_providers_key_from_models_json_is_sent_and_never_shown() {
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = ModelsServer::start(json!({"data": []}));
    let file = json!({"providers": {"lab": {
        "baseUrl": server.url, "api": "openai-completions", "apiKey": "$LAB_TEST_KEY",
        "models": [{"id": "coder"}]}}});
    write(&tern_models(home.path()), &file.to_string());
    let session = home.path().join("s.jsonl");
    let mut c = command(home.path(), cwd.path());
    c.env("LAB_TEST_KEY", "sk-lab-from-env-9f8e7d6c")
        .args(["--model", "lab/coder", "--tools", "read", "--session"])
        .arg(&session)
        .args(["-p", "hi"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        server.auth.lock().unwrap().clone(),
        ["Bearer sk-lab-from-env-9f8e7d6c"]
    );
    let file = std::fs::read_to_string(&session).unwrap();
    assert!(file.contains("\"provider\":\"lab\""), "{file}");
    for text in [stdout(&o), stderr(&o), file] {
        assert!(!text.contains("sk-lab-from-env"), "{text}");
    }
}
