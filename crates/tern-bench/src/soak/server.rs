//! The soak's server: OpenAI Chat Completions SSE on 127.0.0.1, answering each request
//! with a seeded reply or fault.

use super::*;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_testkit::chat::{self, ChatStream};
use tern_testkit::http;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

// ---------------------------------------------------------------------------------------
// The server

/// Cap of an error body the client keeps (`tern_ai::providers::http::MAX_ERROR_BODY_BYTES`).
pub(super) const ERROR_BODY_CAP: usize = 64 * 1024;
/// How long a stalled connection stays silent before the server drops it.
pub(super) const STALL: Duration = Duration::from_secs(8);

pub(super) struct Served {
    kind: Kind,
    /// The whole reply was written to the socket.
    complete: bool,
    at: Instant,
}

pub(super) struct ServerState {
    rng: Mutex<SplitMix64>,
    /// Hashes of request bodies answered with a retryable status: their retry gets the answer.
    retry_due: Mutex<HashMap<u64, Instant>>,
    /// The last reply per prompt id, taken by the client when the prompt ends.
    served: Mutex<HashMap<String, Served>>,
    counts: [AtomicU64; Kind::ALL.len()],
    pub(super) requests: AtomicU64,
    root: PathBuf,
    huge_body: Vec<u8>,
    skip: Vec<Kind>,
}

impl ServerState {
    pub(super) fn count(&self, kind: Kind) {
        self.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    fn note(&self, prompt: &str, kind: Kind) {
        self.served.lock().insert(
            prompt.to_string(),
            Served {
                kind,
                complete: false,
                at: Instant::now(),
            },
        );
    }

    fn note_complete(&self, prompt: &str) {
        if let Some(s) = self.served.lock().get_mut(prompt) {
            s.complete = true;
        }
    }

    /// Forgets notes and retry marks older than a few minutes (prompts long gone).
    fn prune(&self) {
        let old = Duration::from_secs(180);
        self.retry_due.lock().retain(|_, t| t.elapsed() < old);
        self.served.lock().retain(|_, s| s.at.elapsed() < old);
    }
}

/// What a request asks, read from its body.
pub(super) struct Request {
    /// The prompt id: the text of the last user message (`p <agent> <n>` or `check …`).
    prompt: String,
    /// Assistant messages since that user message.
    turns: usize,
    /// The body's hash (a retry sends the same bytes).
    hash: u64,
}

pub(super) fn parse_request(body: &[u8]) -> Request {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    let hash = h.finish();
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let empty = Vec::new();
    let messages = v["messages"].as_array().unwrap_or(&empty);
    let last_user = messages.iter().rposition(|m| m["role"] == "user");
    let prompt = last_user
        .map(|i| chat::message_text(&messages[i]))
        .unwrap_or_default();
    let turns = last_user.map_or(0, |i| {
        messages[i + 1..]
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count()
    });
    Request {
        prompt,
        turns,
        hash,
    }
}

/// `(agent, n)` of a prompt id `p <agent> <n>` or `check <agent> <n>`.
pub(super) fn prompt_agent(prompt: &str) -> Option<usize> {
    prompt.split_whitespace().nth(1)?.parse().ok()
}

/// The answer to a prompt id.
pub fn answer_for(prompt: &str) -> String {
    format!("answer to {prompt}")
}

pub(super) async fn chunk(sock: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    sock.write_all(&http::chunked(data)).await
}

pub(super) async fn full(
    sock: &mut TcpStream,
    status: &str,
    content_type: &str,
    headers: &str,
    body: &[u8],
) -> std::io::Result<()> {
    sock.write_all(&http::response(status, content_type, headers, body))
        .await?;
    sock.flush().await
}

const STREAM: ChatStream = ChatStream::new("chatcmpl-soak", "bench-model").created(1_767_225_600);

pub(super) fn sse(delta: Value, finish: Option<&str>) -> Vec<u8> {
    STREAM.chunk(delta, finish).into_bytes()
}

pub(super) fn usage_and_done() -> Vec<u8> {
    (STREAM.usage(20, 5) + chat::DONE).into_bytes()
}

/// The SSE events of a text answer, in `parts` deltas.
pub(super) fn text_events(text: &str, parts: usize) -> Vec<Vec<u8>> {
    let mut out = vec![sse(json!({"role": "assistant", "content": ""}), None)];
    let chars: Vec<char> = text.chars().collect();
    let parts = parts.clamp(1, chars.len().max(1));
    let per = chars.len().div_ceil(parts).max(1);
    for piece in chars.chunks(per) {
        let s: String = piece.iter().collect();
        out.push(sse(json!({ "content": s }), None));
    }
    out.push(sse(json!({}), Some("stop")));
    out.push(usage_and_done());
    out
}

/// The SSE events of one tool call, its arguments in two fragments.
pub(super) fn tool_events(id: &str, name: &str, args: &Value) -> Vec<Vec<u8>> {
    let a = args.to_string();
    let (first, rest) = chat::halves(&a);
    vec![
        sse(json!({"role": "assistant", "content": null}), None),
        sse(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        ),
        sse(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": first}}]}),
            None,
        ),
        sse(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": rest}}]}),
            None,
        ),
        sse(json!({}), Some("tool_calls")),
        usage_and_done(),
    ]
}

/// Writes `events` as a chunked event stream, a short random pause before some of them.
pub(super) async fn stream(
    sock: &mut TcpStream,
    events: &[Vec<u8>],
    pauses: &[u64],
) -> std::io::Result<()> {
    sock.write_all(http::CHUNKED_SSE_HEAD).await?;
    for (i, e) in events.iter().enumerate() {
        if let Some(ms) = pauses.get(i).filter(|ms| **ms > 0) {
            sock.flush().await?;
            tokio::time::sleep(Duration::from_millis(*ms)).await;
        }
        chunk(sock, e).await?;
    }
    sock.write_all(http::LAST_CHUNK).await?;
    sock.flush().await
}

/// The agent's folder and the files the tool calls use.
pub(super) fn agent_dir(root: &Path, agent: usize) -> PathBuf {
    root.join(format!("a{agent}"))
}

/// Arguments of the tool call of `kind` for `agent` (the edit reads the file's current word).
pub(super) fn tool_args(
    state: &ServerState,
    kind: Kind,
    agent: usize,
    rng: &mut SplitMix64,
) -> (&'static str, Value) {
    match kind {
        Kind::ToolRead => ("read", json!({"path": "notes.txt"})),
        Kind::ToolEdit => {
            let now = std::fs::read_to_string(agent_dir(&state.root, agent).join("state.txt"))
                .unwrap_or_default();
            let (old, new) = if now.contains("alpha") {
                ("alpha", "beta")
            } else {
                ("beta", "alpha")
            };
            (
                "edit",
                json!({"path": "state.txt", "edits": [{"oldText": old, "newText": new}]}),
            )
        }
        Kind::ToolBash => ("bash", json!({"command": "echo soak; wc -l notes.txt"})),
        Kind::ToolLs => ("ls", json!({"path": "."})),
        Kind::ToolFifo => ("read", json!({"path": "pipe"})),
        Kind::ToolEditCap => (
            "edit",
            json!({"path": "big.txt", "edits": [{"oldText": "x", "newText": "y"}]}),
        ),
        Kind::ToolBashBackground => (
            "bash",
            json!({"command": format!("sleep {} & echo started", 1 + rng.below(2))}),
        ),
        _ => ("bash", json!({"command": "sleep 30", "timeout": 1})),
    }
}

/// Answers one request; `Ok(false)` closes the connection.
pub(super) async fn answer(
    sock: &mut TcpStream,
    state: &ServerState,
    body: &[u8],
) -> std::io::Result<bool> {
    let req = parse_request(body);
    let agent = prompt_agent(&req.prompt).unwrap_or(0);
    let check = req.prompt.starts_with("check ");
    let retried = state.retry_due.lock().remove(&req.hash).is_some();
    let (kind, pauses, seed) = {
        let mut rng = state.rng.lock();
        let kind = if check || retried {
            Kind::Text
        } else {
            let pick = |rng: &mut SplitMix64| {
                let weight = |k: Kind, w: u64| if state.skip.contains(&k) { 0 } else { w };
                let total: u64 = MIX.iter().map(|(k, w)| weight(*k, *w)).sum();
                let mut x = rng.below(total);
                for (k, w) in MIX {
                    let w = weight(k, w);
                    if x < w {
                        return k;
                    }
                    x -= w;
                }
                Kind::Text
            };
            let mut k = pick(&mut rng);
            // After three tool rounds, no more tool calls: the prompt must end.
            while req.turns >= 3 && k.tool_call() {
                k = pick(&mut rng);
            }
            k
        };
        let pauses: Vec<u64> = (0..8)
            .map(|_| {
                if rng.chance(0.15) {
                    5 + rng.below(60)
                } else {
                    0
                }
            })
            .collect();
        (kind, pauses, rng.next_u64())
    };
    state.count(kind);
    state.note(&req.prompt, kind);
    let mut rng = SplitMix64::new(seed);
    let answer_text = answer_for(&req.prompt);
    match kind {
        Kind::Text => {
            let parts = 1 + rng.below(6) as usize;
            stream(sock, &text_events(&answer_text, parts), &pauses).await?;
        }
        k if k.tool_call() => {
            let (name, args) = tool_args(state, k, agent, &mut rng);
            let id = format!("call_{}_{}", k.name(), rng.below(1_000_000));
            stream(sock, &tool_events(&id, name, &args), &pauses).await?;
        }
        Kind::Reset => {
            let events = text_events(&answer_text, 4);
            sock.write_all(http::CHUNKED_SSE_HEAD).await?;
            for e in &events[..2] {
                chunk(sock, e).await?;
            }
            sock.flush().await?;
            tokio::time::sleep(Duration::from_millis(rng.below(50))).await;
            #[allow(deprecated)]
            sock.set_linger(Some(Duration::ZERO))?;
            return Ok(false);
        }
        Kind::StallHead => {
            tokio::time::sleep(STALL).await;
            return Ok(false);
        }
        Kind::StallBody => {
            let events = text_events(&answer_text, 4);
            sock.write_all(http::CHUNKED_SSE_HEAD).await?;
            for e in &events[..2] {
                chunk(sock, e).await?;
            }
            sock.flush().await?;
            tokio::time::sleep(STALL).await;
            return Ok(false);
        }
        Kind::RateLimited => {
            state.retry_due.lock().insert(req.hash, Instant::now());
            full(
                sock,
                "429 Too Many Requests",
                "application/json",
                "retry-after: 1\r\n",
                br#"{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":429}}"#,
            )
            .await?;
        }
        Kind::ServerError => {
            state.retry_due.lock().insert(req.hash, Instant::now());
            let status = [
                "500 Internal Server Error",
                "502 Bad Gateway",
                "503 Service Unavailable",
            ][rng.below(3) as usize];
            full(
                sock,
                status,
                "application/json",
                "",
                br#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
            )
            .await?;
        }
        Kind::Html200 => {
            full(
                sock,
                "200 OK",
                "text/html",
                "",
                b"<!DOCTYPE html><html><head><title>Gateway</title></head><body><h1>Welcome</h1></body></html>",
            )
            .await?;
        }
        Kind::Utf8Garbage => {
            let body = b"data: \xff\xfe\xfd\x80\n\n\xc3\x28\xa0\xa1\n\n".repeat(4);
            full(sock, "200 OK", "text/event-stream", "", &body).await?;
        }
        Kind::Utf8InStream => {
            let mut body = b": \xff\xfe comment \xc3\x28\n\n".to_vec();
            for e in text_events(&answer_text, 3) {
                body.extend_from_slice(&e);
            }
            full(sock, "200 OK", "text/event-stream", "", &body).await?;
        }
        Kind::HugeErrorBody => {
            full(sock, "400 Bad Request", "text/plain", "", &state.huge_body).await?;
        }
        _ => {
            let parts = 1 + rng.below(6) as usize;
            stream(sock, &text_events(&answer_text, parts), &pauses).await?;
        }
    }
    state.note_complete(&req.prompt);
    Ok(true)
}

pub(super) async fn serve(mut sock: TcpStream, state: Arc<ServerState>) {
    let _ = sock.set_nodelay(true);
    while let Ok(Some(request)) = http::read_request_async(&mut sock).await {
        state.requests.fetch_add(1, Ordering::Relaxed);
        match answer(&mut sock, &state, &request.body).await {
            Ok(true) => {}
            _ => return,
        }
    }
}

/// The local scripted server.
pub struct SoakServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub(super) state: Arc<ServerState>,
}

impl SoakServer {
    /// Binds 127.0.0.1 and serves on the current runtime; the agents' folders are under `root`.
    pub async fn start(root: &Path, seed: u64, skip: &[Kind]) -> std::io::Result<SoakServer> {
        let state = Arc::new(ServerState {
            rng: Mutex::new(SplitMix64::new(seed)),
            retry_due: Mutex::new(HashMap::new()),
            served: Mutex::new(HashMap::new()),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            requests: AtomicU64::new(0),
            root: root.to_path_buf(),
            huge_body: vec![b'e'; 256 * 1024],
            skip: skip.to_vec(),
        });
        let st = state.clone();
        let origin = http::serve_tasks(move |sock| serve(sock, st.clone())).await?;
        let base_url = format!("{origin}/v1");
        let st = state.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(30)).await;
                st.prune();
            }
        });
        Ok(SoakServer { base_url, state })
    }

    /// The last reply served for `prompt`, forgotten.
    pub(super) fn take_served(&self, prompt: &str) -> Option<(Kind, bool)> {
        self.state
            .served
            .lock()
            .remove(prompt)
            .map(|s| (s.kind, s.complete))
    }

    pub(super) fn count(&self, kind: Kind) {
        self.state.count(kind);
    }

    pub(super) fn injected(&self) -> Vec<(Kind, u64)> {
        Kind::ALL
            .iter()
            .map(|k| (*k, self.state.counts[k.index()].load(Ordering::Relaxed)))
            .collect()
    }
}
