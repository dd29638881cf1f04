//! W9's model server: OpenAI Chat Completions SSE on 127.0.0.1. Session `i`'s model URL is
//! `/s/i/v1`; a request with `k` assistant messages in its transcript gets a call of the
//! `step` tool for `k < TURNS`, else the closing text. It notes when each request arrived,
//! per session (the step latencies).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Tool turns per session; the request after them is answered with text.
pub const TURNS: usize = 3;

/// The running server.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    arrivals: Arc<Mutex<HashMap<usize, Vec<Instant>>>>,
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let v = json!({"id": "chatcmpl-w9", "object": "chat.completion.chunk", "created": 0,
        "model": "w9-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {v}\n\n")
}

/// The SSE body answering a request with `k` assistant messages before it.
fn answer(k: usize) -> String {
    let mut out = String::new();
    if k < TURNS {
        let args = json!({"k": k}).to_string();
        out += &chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{k}"),
                "type": "function", "function": {"name": "step", "arguments": args}}]}),
            None,
        );
        out += &chunk(json!({}), Some("tool_calls"));
    } else {
        out += &chunk(json!({"role": "assistant", "content": "All "}), None);
        out += &chunk(json!({"content": "three steps done."}), None);
        out += &chunk(json!({}), Some("stop"));
    }
    let usage = json!({"id": "chatcmpl-w9", "object": "chat.completion.chunk", "created": 0,
        "model": "w9-model", "choices": [],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}});
    out += &format!("data: {usage}\n\ndata: [DONE]\n\n");
    out
}

impl Server {
    /// Binds a free port and serves until the process ends.
    pub async fn start() -> std::io::Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let origin = format!("http://{}", listener.local_addr()?);
        let arrivals: Arc<Mutex<HashMap<usize, Vec<Instant>>>> = Arc::default();
        let seen = arrivals.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &seen).await;
                });
            }
        });
        Ok(Server { origin, arrivals })
    }

    /// The model URL of session `i`.
    pub fn base_url(&self, i: usize) -> String {
        format!("{}/s/{i}/v1", self.origin)
    }

    /// Forgets the arrivals noted so far (between the two runs).
    pub fn reset(&self) {
        self.arrivals.lock().clear();
    }

    /// The times between consecutive requests of each session (one turn: the answer, the
    /// tool call, and what the runtime does between them), in ms; and how many sessions
    /// sent all their requests.
    pub fn steps(&self) -> (Vec<f64>, usize) {
        let arrivals = self.arrivals.lock();
        let mut steps = Vec::new();
        let mut complete = 0;
        for times in arrivals.values() {
            complete += usize::from(times.len() == TURNS + 1);
            steps.extend(
                times
                    .windows(2)
                    .map(|w| w[1].duration_since(w[0]).as_secs_f64() * 1e3),
            );
        }
        (steps, complete)
    }
}

async fn serve(
    stream: TcpStream,
    arrivals: &Mutex<HashMap<usize, Vec<Instant>>>,
) -> std::io::Result<()> {
    let at = Instant::now();
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).await?;
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).await?;
    let session = request_line
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.strip_prefix("/s/"))
        .and_then(|p| p.split('/').next())
        .and_then(|s| s.parse::<usize>().ok());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let k = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0);
    let Some(session) = session else {
        let msg = r#"{"error":{"message":"no session in the path"}}"#;
        let head = format!(
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            msg.len()
        );
        write.write_all(head.as_bytes()).await?;
        return write.write_all(msg.as_bytes()).await;
    };
    arrivals.lock().entry(session).or_default().push(at);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    write.write_all(head.as_bytes()).await?;
    write.write_all(answer(k).as_bytes()).await?;
    write.shutdown().await
}
