//! W9's model server: OpenAI Chat Completions SSE on 127.0.0.1. Session `i`'s model URL is
//! `/s/i/v1`; a request with `k` assistant messages in its transcript gets a call of the
//! `step` tool for `k < TURNS`, else the closing text. It notes when each request arrived,
//! per session (the step latencies).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::json;
use tern_testkit::chat::{self, ChatStream};
use tern_testkit::http;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Tool turns per session; the request after them is answered with text.
pub const TURNS: usize = 3;

/// The running server.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    arrivals: Arc<Mutex<HashMap<usize, Vec<Instant>>>>,
}

const STREAM: ChatStream = ChatStream::new("chatcmpl-w9", "w9-model");

/// The SSE body answering a request with `k` assistant messages before it.
fn answer(k: usize) -> String {
    let mut out = String::new();
    if k < TURNS {
        let args = json!({"k": k}).to_string();
        out += &STREAM.chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{k}"),
                "type": "function", "function": {"name": "step", "arguments": args}}]}),
            None,
        );
        out += &STREAM.chunk(json!({}), Some("tool_calls"));
    } else {
        out += &STREAM.chunk(json!({"role": "assistant", "content": "All "}), None);
        out += &STREAM.chunk(json!({"content": "three steps done."}), None);
        out += &STREAM.chunk(json!({}), Some("stop"));
    }
    out += &STREAM.usage(50, 10);
    out += chat::DONE;
    out
}

impl Server {
    /// Binds a free port and serves until the process ends.
    pub async fn start() -> std::io::Result<Server> {
        let arrivals: Arc<Mutex<HashMap<usize, Vec<Instant>>>> = Arc::default();
        let seen = arrivals.clone();
        let origin = http::serve_tasks(move |stream| {
            let seen = seen.clone();
            async move {
                let _ = serve(stream, &seen).await;
            }
        })
        .await?;
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
    mut stream: TcpStream,
    arrivals: &Mutex<HashMap<usize, Vec<Instant>>>,
) -> std::io::Result<()> {
    let at = Instant::now();
    let Some(request) = http::read_request_async(&mut stream).await? else {
        return Ok(());
    };
    let session = request
        .path()
        .strip_prefix("/s/")
        .and_then(|p| p.split('/').next())
        .and_then(|s| s.parse::<usize>().ok());
    let k = chat::assistant_turns(&request.json());
    let Some(session) = session else {
        let msg = br#"{"error":{"message":"no session in the path"}}"#;
        let answer = http::response(
            "404 Not Found",
            "application/json",
            "connection: close\r\n",
            msg,
        );
        return stream.write_all(&answer).await;
    };
    arrivals.lock().entry(session).or_default().push(at);
    stream.write_all(http::SSE_HEAD.as_bytes()).await?;
    stream.write_all(answer(k).as_bytes()).await?;
    stream.shutdown().await
}
