//! The soak test: many agents in one process for minutes, against a local OpenAI Chat
//! Completions server (real HTTP, real SSE) that answers every request with a random reply
//! from a seeded generator: text, a tool call (`read`, `edit`, `bash`, `ls` on files in the
//! agent's own folder), or a fault. Stream faults: a reset mid-stream, a stall before and
//! after the head (past the idle timeout), `429` with `Retry-After` and `5xx` (both retried),
//! an HTML page with status 200, invalid UTF-8 (garbage only, and inside a valid stream), a
//! large error body. Tool faults: `read` of a FIFO, `edit` of a file over the edit cap, `bash`
//! leaving a background process, `bash` timing out. Some prompts are aborted after a random
//! delay.
//!
//! Every prompt must end (`prompt()` returns) within [`SoakParams::deadline`]; one that does
//! not is *lost*. The server notes what it last served for each prompt, so the ending is
//! checked against it: an answer served must be the answer received (else the answer is
//! *lost* too), a fault must end the prompt with the error that fault calls for, and a
//! failure must not break the agent (its next prompt is a plain one that must complete).
//! RSS is sampled each second.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_agent::{Agent, RunEnding};
use tern_ai::providers::Providers;
use tern_ai::{Message, StreamOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fixtures::bench_model_at;
use crate::util::{heap_in_use_bytes, mib, rss_bytes};

/// A small seeded generator (SplitMix64): no dependency, the same stream for the same seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// What the server answered a request with, or what the client did to a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The final answer, streamed in a few deltas.
    Text,
    /// A `read` of a small text file.
    ToolRead,
    /// An `edit` of a small text file (one replacement that applies).
    ToolEdit,
    /// A `bash` command that prints and exits.
    ToolBash,
    /// An `ls` of the agent's folder.
    ToolLs,
    /// Head and part of the stream, then a TCP reset.
    Reset,
    /// The request is read, no head comes (the idle timeout must fire).
    StallHead,
    /// Head and part of the stream, then silence (the idle timeout must fire).
    StallBody,
    /// `429` with `Retry-After: 1`; the retry is answered.
    RateLimited,
    /// `500`/`502`/`503`; the retry is answered.
    ServerError,
    /// Status 200 with an HTML page.
    Html200,
    /// Status 200, an event stream of invalid UTF-8 only.
    Utf8Garbage,
    /// A valid stream with invalid UTF-8 in a comment line (decoded lossily: the answer).
    Utf8InStream,
    /// `400` with a 256 KiB body (the error message must be capped at 64 KiB).
    HugeErrorBody,
    /// A `read` of a FIFO (must be refused, not block).
    ToolFifo,
    /// An `edit` of a file over the edit cap (must be refused).
    ToolEditCap,
    /// A `bash` command that leaves a background process behind.
    ToolBashBackground,
    /// A `bash` command that runs past its timeout.
    ToolBashTimeout,
    /// The client aborts the prompt after a random delay.
    Abort,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 19] = [
        Kind::Text,
        Kind::ToolRead,
        Kind::ToolEdit,
        Kind::ToolBash,
        Kind::ToolLs,
        Kind::Reset,
        Kind::StallHead,
        Kind::StallBody,
        Kind::RateLimited,
        Kind::ServerError,
        Kind::Html200,
        Kind::Utf8Garbage,
        Kind::Utf8InStream,
        Kind::HugeErrorBody,
        Kind::ToolFifo,
        Kind::ToolEditCap,
        Kind::ToolBashBackground,
        Kind::ToolBashTimeout,
        Kind::Abort,
    ];

    /// The faults (every kind but the plain replies).
    pub fn is_fault(self) -> bool {
        !matches!(
            self,
            Kind::Text | Kind::ToolRead | Kind::ToolEdit | Kind::ToolBash | Kind::ToolLs
        )
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::ToolRead => "read",
            Kind::ToolEdit => "edit",
            Kind::ToolBash => "bash",
            Kind::ToolLs => "ls",
            Kind::Reset => "reset",
            Kind::StallHead => "stall_head",
            Kind::StallBody => "stall_body",
            Kind::RateLimited => "429",
            Kind::ServerError => "5xx",
            Kind::Html200 => "html200",
            Kind::Utf8Garbage => "utf8_garbage",
            Kind::Utf8InStream => "utf8_in_stream",
            Kind::HugeErrorBody => "huge_error_body",
            Kind::ToolFifo => "read_fifo",
            Kind::ToolEditCap => "edit_over_cap",
            Kind::ToolBashBackground => "bash_background",
            Kind::ToolBashTimeout => "bash_timeout",
            Kind::Abort => "abort",
        }
    }

    fn index(self) -> usize {
        Kind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }

    /// The kind of a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Whether the server's reply of this kind ends the prompt with an error.
    fn fails_prompt(self) -> bool {
        matches!(
            self,
            Kind::Reset
                | Kind::StallHead
                | Kind::StallBody
                | Kind::Html200
                | Kind::Utf8Garbage
                | Kind::HugeErrorBody
        )
    }

    fn tool_call(self) -> bool {
        matches!(
            self,
            Kind::ToolRead
                | Kind::ToolEdit
                | Kind::ToolBash
                | Kind::ToolLs
                | Kind::ToolFifo
                | Kind::ToolEditCap
                | Kind::ToolBashBackground
                | Kind::ToolBashTimeout
        )
    }
}

/// Relative weights of the server's replies (per request).
const MIX: [(Kind, u64); 18] = [
    (Kind::Text, 30),
    (Kind::ToolRead, 6),
    (Kind::ToolEdit, 6),
    (Kind::ToolBash, 4),
    (Kind::ToolLs, 5),
    (Kind::Reset, 4),
    (Kind::StallHead, 2),
    (Kind::StallBody, 2),
    (Kind::RateLimited, 3),
    (Kind::ServerError, 4),
    (Kind::Html200, 3),
    (Kind::Utf8Garbage, 3),
    (Kind::Utf8InStream, 3),
    (Kind::HugeErrorBody, 3),
    (Kind::ToolFifo, 3),
    (Kind::ToolEditCap, 3),
    (Kind::ToolBashBackground, 2),
    (Kind::ToolBashTimeout, 2),
];

/// The soak's settings.
#[derive(Debug, Clone)]
pub struct SoakParams {
    /// Agents running at once.
    pub agents: usize,
    /// How long agents start prompts.
    pub duration: Duration,
    /// Seed of the server's and the agents' generators.
    pub seed: u64,
    /// A prompt not ended after this long is lost.
    pub deadline: Duration,
    /// The providers' idle timeout.
    pub idle_timeout: Duration,
    /// Share of prompts aborted after a random delay.
    pub abort_share: f64,
    /// Longest pause of an agent between two prompts (uniform from 0): the agents' think
    /// time, which sets the load (1,000 agents with 40 s: about 50 prompts a second).
    pub max_pause: Duration,
    /// Print the RSS series and progress to stderr every this many seconds (0: never).
    pub report_every: u64,
    /// Worker threads of the runtime (0: one per core).
    pub threads: usize,
    /// Print every failed prompt's error to stderr.
    pub verbose: bool,
    /// Replies the server never serves (to tell which one a figure depends on).
    pub skip: Vec<Kind>,
}

impl Default for SoakParams {
    fn default() -> Self {
        SoakParams {
            agents: 1000,
            duration: Duration::from_secs(600),
            seed: 1,
            deadline: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(2),
            abort_share: 0.1,
            max_pause: Duration::from_secs(40),
            report_every: 10,
            threads: 0,
            verbose: false,
            skip: Vec::new(),
        }
    }
}

/// What the soak counted.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Agents.
    pub agents: usize,
    /// Seconds of load.
    pub seconds: u64,
    /// Prompts started.
    pub started: u64,
    /// Prompts that completed with the right answer.
    pub completed: u64,
    /// Prompts that ended with an error, by cause.
    pub failed: Vec<(String, u64)>,
    /// Prompts aborted (the abort came before the end).
    pub aborted: u64,
    /// Prompts that did not end within the deadline.
    pub lost: u64,
    /// Answers served but not received (a failure, a wrong text, or another ending).
    pub lost_answers: u64,
    /// Endings that did not match what the server served (the wrong error, say).
    pub mismatched: u64,
    /// Replies the idle timeout cut while the server was still writing them, or during a
    /// prompt in which the runtime stalled (the process too busy to write or read within the
    /// timeout): failures, not losses.
    pub cut_by_idle: u64,
    /// The longest a 100 ms sleep of the runtime woke up late, in ms.
    pub max_lag_ms: u64,
    /// How often it woke up a second or more late.
    pub stalls: u64,
    /// The first few hangs, then the first few other problems, described.
    pub problems: Vec<String>,
    /// Plain prompts run right after a failure or an abort, and how many of them completed.
    pub recoveries: (u64, u64),
    /// Requests the server received.
    pub requests: u64,
    /// How often each kind was served (for `abort`: aborts sent before the prompt ended).
    pub injected: Vec<(Kind, u64)>,
    /// Tool results checked against their fault, and how many were as expected.
    pub tool_checks: (u64, u64),
    /// RSS each second, in bytes (index 0 = after 1 s).
    pub rss: Vec<u64>,
    /// Bytes malloc'd and in use (glibc `mallinfo2`) at `base_second`, 0 off glibc: what
    /// the program holds, against what the allocator keeps from the busiest moment.
    pub heap_base: u64,
    /// The same at the end of the load.
    pub heap_end: u64,
    /// RSS after the first minute (or the first sample past a sixth of the run when shorter).
    pub rss_base: u64,
    /// Second of `rss_base`.
    pub base_second: usize,
    /// Largest RSS after `base_second`.
    pub rss_max_after_base: u64,
    /// RSS at the end of the load.
    pub rss_end: u64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
}

impl SoakReport {
    /// `(end − base) / base`.
    pub fn growth(&self) -> f64 {
        if self.rss_base == 0 {
            return 0.0;
        }
        (self.rss_end as f64 - self.rss_base as f64) / self.rss_base as f64
    }

    /// Pass: nothing lost (no hang, no answer lost), no ending against what was served, and
    /// RSS growth after the first minute at most 10 %.
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.lost_answers == 0
            && self.mismatched == 0
            && self.recoveries.0 == self.recoveries.1
            && self.tool_checks.0 == self.tool_checks.1
            && self.growth() <= 0.10
    }

    /// How often `kind` was injected.
    pub fn injected(&self, kind: Kind) -> u64 {
        self.injected
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    }

    /// Prompts that failed, all causes.
    pub fn failed_total(&self) -> u64 {
        self.failed.iter().map(|(_, n)| n).sum()
    }

    /// The multi-line summary, ending with the one-line verdict.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let mb = |b: u64| mib(b);
        let _ = writeln!(
            s,
            "prompts: {} started, {} completed, {} failed, {} aborted, {} lost; {} requests",
            self.started,
            self.completed,
            self.failed_total(),
            self.aborted,
            self.lost,
            self.requests
        );
        let causes: Vec<String> = self
            .failed
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        let _ = writeln!(s, "failed by cause: {}", causes.join(", "));
        let inj: Vec<String> = self
            .injected
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        let _ = writeln!(s, "served/injected: {}", inj.join(", "));
        let _ = writeln!(
            s,
            "checks: {} lost answers, {} mismatched endings, {} replies cut by the idle timeout, recoveries {}/{}, tool results {}/{} as expected",
            self.lost_answers,
            self.mismatched,
            self.cut_by_idle,
            self.recoveries.1,
            self.recoveries.0,
            self.tool_checks.1,
            self.tool_checks.0
        );
        let _ = writeln!(
            s,
            "runtime: a 100 ms sleep woke up at most {} ms late; {} times 1 s or more",
            self.max_lag_ms, self.stalls
        );
        for p in &self.problems {
            let _ = writeln!(s, "  problem: {p}");
        }
        let series: Vec<String> = self
            .rss
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % 10 == 0)
            .map(|(_, b)| format!("{:.0}", mb(*b)))
            .collect();
        let _ = writeln!(s, "RSS MiB every 10 s: {}", series.join(" "));
        let _ = writeln!(
            s,
            "RSS at {} s {:.1} MiB, max after {:.1} MiB, end {:.1} MiB; growth {:+.1} %",
            self.base_second,
            mb(self.rss_base),
            mb(self.rss_max_after_base),
            mb(self.rss_end),
            self.growth() * 100.0
        );
        let _ = writeln!(
            s,
            "heap in use at {} s {:.1} MiB, end {:.1} MiB",
            self.base_second,
            mb(self.heap_base),
            mb(self.heap_end)
        );
        let _ = write!(
            s,
            "soak: {} agents, {} s, {} prompts ({} completed, {} failed, {} aborted), {} lost, {} lost answers, RSS {} s {:.0} MB → end {:.0} MB ({:+.1} %): {}",
            self.agents,
            self.seconds,
            self.started,
            self.completed,
            self.failed_total(),
            self.aborted,
            self.lost,
            self.lost_answers,
            self.base_second,
            self.rss_base as f64 / 1e6,
            self.rss_end as f64 / 1e6,
            self.growth() * 100.0,
            if self.passed() { "PASS" } else { "FAIL" }
        );
        s
    }
}

// ---------------------------------------------------------------------------------------
// The server

/// Cap of an error body the client keeps (`tern_ai::providers::http::MAX_ERROR_BODY_BYTES`).
const ERROR_BODY_CAP: usize = 64 * 1024;
/// How long a stalled connection stays silent before the server drops it.
const STALL: Duration = Duration::from_secs(8);

struct Served {
    kind: Kind,
    /// The whole reply was written to the socket.
    complete: bool,
    at: Instant,
}

struct ServerState {
    rng: Mutex<Rng>,
    /// Hashes of request bodies answered with a retryable status: their retry gets the answer.
    retry_due: Mutex<HashMap<u64, Instant>>,
    /// The last reply per prompt id, taken by the client when the prompt ends.
    served: Mutex<HashMap<String, Served>>,
    counts: [AtomicU64; Kind::ALL.len()],
    requests: AtomicU64,
    root: PathBuf,
    huge_body: Vec<u8>,
    skip: Vec<Kind>,
}

impl ServerState {
    fn count(&self, kind: Kind) {
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
struct Request {
    /// The prompt id: the text of the last user message (`p <agent> <n>` or `check …`).
    prompt: String,
    /// Assistant messages since that user message.
    turns: usize,
    /// The body's hash (a retry sends the same bytes).
    hash: u64,
}

fn parse_request(body: &[u8]) -> Request {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    let hash = h.finish();
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let empty = Vec::new();
    let messages = v["messages"].as_array().unwrap_or(&empty);
    let last_user = messages.iter().rposition(|m| m["role"] == "user");
    let prompt = last_user
        .map(|i| match &messages[i]["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
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
fn prompt_agent(prompt: &str) -> Option<usize> {
    prompt.split_whitespace().nth(1)?.parse().ok()
}

/// The answer to a prompt id.
pub fn answer_for(prompt: &str) -> String {
    format!("answer to {prompt}")
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > 64 * 1024 {
            return Ok(None);
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Ok(Some(buf.split_off(head_end)))
}

const STREAM_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

async fn chunk(sock: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(data.len() + 12);
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    sock.write_all(&out).await
}

async fn full(
    sock: &mut TcpStream,
    status: &str,
    content_type: &str,
    headers: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{headers}\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body).await?;
    sock.flush().await
}

fn sse(delta: Value, finish: Option<&str>) -> Vec<u8> {
    let v = json!({
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 1_767_225_600u64,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {v}\n\n").into_bytes()
}

fn usage_and_done() -> Vec<u8> {
    let v = json!({
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 1_767_225_600u64,
        "model": "bench-model",
        "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    });
    format!("data: {v}\n\ndata: [DONE]\n\n").into_bytes()
}

/// The SSE events of a text answer, in `parts` deltas.
fn text_events(text: &str, parts: usize) -> Vec<Vec<u8>> {
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
fn tool_events(id: &str, name: &str, args: &Value) -> Vec<Vec<u8>> {
    let a = args.to_string();
    let cut = a
        .char_indices()
        .nth(a.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    vec![
        sse(json!({"role": "assistant", "content": null}), None),
        sse(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        ),
        sse(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": &a[..cut]}}]}),
            None,
        ),
        sse(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": &a[cut..]}}]}),
            None,
        ),
        sse(json!({}), Some("tool_calls")),
        usage_and_done(),
    ]
}

/// Writes `events` as a chunked event stream, a short random pause before some of them.
async fn stream(sock: &mut TcpStream, events: &[Vec<u8>], pauses: &[u64]) -> std::io::Result<()> {
    sock.write_all(STREAM_HEAD).await?;
    for (i, e) in events.iter().enumerate() {
        if let Some(ms) = pauses.get(i).filter(|ms| **ms > 0) {
            sock.flush().await?;
            tokio::time::sleep(Duration::from_millis(*ms)).await;
        }
        chunk(sock, e).await?;
    }
    sock.write_all(b"0\r\n\r\n").await?;
    sock.flush().await
}

/// The agent's folder and the files the tool calls use.
fn agent_dir(root: &Path, agent: usize) -> PathBuf {
    root.join(format!("a{agent}"))
}

/// Arguments of the tool call of `kind` for `agent` (the edit reads the file's current word).
fn tool_args(
    state: &ServerState,
    kind: Kind,
    agent: usize,
    rng: &mut Rng,
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
async fn answer(sock: &mut TcpStream, state: &ServerState, body: &[u8]) -> std::io::Result<bool> {
    let req = parse_request(body);
    let agent = prompt_agent(&req.prompt).unwrap_or(0);
    let check = req.prompt.starts_with("check ");
    let retried = state.retry_due.lock().remove(&req.hash).is_some();
    let (kind, pauses, seed) = {
        let mut rng = state.rng.lock();
        let kind = if check || retried {
            Kind::Text
        } else {
            let pick = |rng: &mut Rng| {
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
    let mut rng = Rng::new(seed);
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
            sock.write_all(STREAM_HEAD).await?;
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
            sock.write_all(STREAM_HEAD).await?;
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

async fn serve(mut sock: TcpStream, state: Arc<ServerState>) {
    let _ = sock.set_nodelay(true);
    while let Ok(Some(body)) = read_request(&mut sock).await {
        state.requests.fetch_add(1, Ordering::Relaxed);
        match answer(&mut sock, &state, &body).await {
            Ok(true) => {}
            _ => return,
        }
    }
}

/// The local scripted server.
pub struct SoakServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    state: Arc<ServerState>,
}

impl SoakServer {
    /// Binds 127.0.0.1 and serves on the current runtime; the agents' folders are under `root`.
    pub async fn start(root: &Path, seed: u64, skip: &[Kind]) -> std::io::Result<SoakServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let state = Arc::new(ServerState {
            rng: Mutex::new(Rng::new(seed)),
            retry_due: Mutex::new(HashMap::new()),
            served: Mutex::new(HashMap::new()),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            requests: AtomicU64::new(0),
            root: root.to_path_buf(),
            huge_body: vec![b'e'; 256 * 1024],
            skip: skip.to_vec(),
        });
        let st = state.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((sock, _)) => {
                        tokio::spawn(serve(sock, st.clone()));
                    }
                    // Out of descriptors, say: wait and go on, as a server would.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
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
    fn take_served(&self, prompt: &str) -> Option<(Kind, bool)> {
        self.state
            .served
            .lock()
            .remove(prompt)
            .map(|s| (s.kind, s.complete))
    }

    fn count(&self, kind: Kind) {
        self.state.count(kind);
    }

    fn injected(&self) -> Vec<(Kind, u64)> {
        Kind::ALL
            .iter()
            .map(|k| (*k, self.state.counts[k.index()].load(Ordering::Relaxed)))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// The agents

#[derive(Default)]
struct Tally {
    started: AtomicU64,
    completed: AtomicU64,
    aborted: AtomicU64,
    lost: AtomicU64,
    lost_answers: AtomicU64,
    mismatched: AtomicU64,
    cut_by_idle: AtomicU64,
    recover_runs: AtomicU64,
    recover_ok: AtomicU64,
    tool_checks: AtomicU64,
    tool_ok: AtomicU64,
    failed: Mutex<HashMap<&'static str, u64>>,
    problems: Mutex<Vec<String>>,
    hangs: Mutex<Vec<String>>,
    tool_problems: Mutex<Vec<String>>,
    /// When the runtime was last seen stalled (a 100 ms sleep late by a second or more).
    last_stall: Mutex<Option<Instant>>,
    max_lag_ms: AtomicU64,
    stalls: AtomicU64,
}

impl Tally {
    fn problem(&self, p: String) {
        let mut v = self.problems.lock();
        if v.len() < 20 {
            v.push(p);
        }
    }

    fn tool_problem(&self, p: String) {
        let mut v = self.tool_problems.lock();
        if v.len() < 5 {
            v.push(p);
        }
    }

    fn hang(&self, p: String) {
        let mut v = self.hangs.lock();
        if v.len() < 20 {
            v.push(p);
        }
    }
}

/// The cause of a failed prompt, from its error message.
fn cause(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("idle timeout") {
        "idle_timeout"
    } else if m.contains("truncated at") {
        "error_body_capped"
    } else if m.contains("not an event stream") {
        "not_event_stream"
    } else if m.contains("malformed server-sent event") {
        "bad_event"
    } else if m.contains("connection") || m.contains("reset") || m.contains("error decoding") {
        "connection"
    } else if m.contains("429") || m.contains("rate limit") {
        "429"
    } else if m.contains("500")
        || m.contains("502")
        || m.contains("503")
        || m.contains("server had an error")
    {
        "5xx"
    } else {
        "other"
    }
}

/// The causes a fault of `kind` may end a prompt with.
fn expected_causes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Reset => &["connection"],
        Kind::StallHead | Kind::StallBody => &["idle_timeout"],
        Kind::Html200 => &["not_event_stream"],
        Kind::Utf8Garbage => &["bad_event"],
        Kind::HugeErrorBody => &["error_body_capped"],
        _ => &[],
    }
}

/// Checks the tool results of a run against the fault each call carried (in its id); not
/// after an abort, which may cut any call.
fn check_tools(messages: &[Message], aborted: bool, tally: &Tally) {
    if aborted {
        return;
    }
    for m in messages {
        let Message::ToolResult(t) = m else { continue };
        let Some(kind) = t
            .tool_call_id
            .strip_prefix("call_")
            .and_then(|rest| rest.rsplit_once('_'))
            .and_then(|(name, _)| Kind::from_name(name))
        else {
            continue;
        };
        let text: String = t
            .content
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join("");
        let ok = match kind {
            Kind::ToolFifo => t.is_error && text.contains("FIFO"),
            Kind::ToolEditCap => t.is_error && text.contains("limit for edit"),
            Kind::ToolBashTimeout => t.is_error && text.contains("timed out"),
            Kind::ToolBashBackground => !t.is_error && text.contains("started"),
            Kind::ToolRead => !t.is_error && text.contains("soak notes"),
            Kind::ToolEdit => !t.is_error,
            Kind::ToolBash => !t.is_error && text.contains("soak"),
            Kind::ToolLs => !t.is_error && text.contains("notes.txt"),
            _ => true,
        };
        tally.tool_checks.fetch_add(1, Ordering::Relaxed);
        if ok {
            tally.tool_ok.fetch_add(1, Ordering::Relaxed);
        } else {
            tally.tool_problem(format!(
                "tool {} (error {}): {}",
                kind.name(),
                t.is_error,
                text.chars().take(300).collect::<String>()
            ));
        }
    }
}

/// Makes the agent's folder: `notes.txt`, `state.txt`, a sparse `big.txt` over the edit cap
/// and a FIFO `pipe`.
fn make_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("notes.txt"), "soak notes\nline two\nline three\n")?;
    std::fs::write(dir.join("state.txt"), "state: alpha\n")?;
    let big = std::fs::File::create(dir.join("big.txt"))?;
    big.set_len(2 * EDIT_CAP)?;
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    Ok(())
}

/// The edit cap of the agents' tools.
const EDIT_CAP: u64 = 256 * 1024;

fn build_agent(model: &Arc<tern_ai::Model>, dir: &Path, p: &SoakParams) -> Agent {
    let config = tern_tools::ToolConfig::new(dir)
        .with_max_edit_bytes(EDIT_CAP)
        .with_bash_timeout(Some(Duration::from_secs(10)));
    Agent::builder(model.clone(), Providers)
        .system_prompt("You are a soak-test agent.")
        .tools([
            tern_tools::read_tool(&config),
            tern_tools::edit_tool(&config),
            tern_tools::bash_tool(&config),
            tern_tools::ls_tool(&config),
        ])
        .stream_options(StreamOptions {
            api_key: Some("soak-key".into()),
            idle_timeout_ms: Some(p.idle_timeout.as_millis() as u64),
            max_retries: Some(3),
            max_retry_delay_ms: Some(5_000),
            ..StreamOptions::default()
        })
        .build()
}

/// How one prompt ended.
enum End {
    Completed,
    Failed,
    Aborted,
    Lost,
}

/// Runs one prompt with the deadline, aborting it after `abort_after` when given.
async fn run_prompt(
    agent: &Agent,
    id: &str,
    abort_after: Option<Duration>,
    server: &SoakServer,
    tally: &Tally,
    p: &SoakParams,
) -> End {
    tally.started.fetch_add(1, Ordering::Relaxed);
    let t0 = Instant::now();
    let fut = agent.prompt(id);
    tokio::pin!(fut);
    let mut abort_sent = false;
    let result = loop {
        let abort_at = abort_after.filter(|_| !abort_sent);
        tokio::select! {
            r = &mut fut => break Some(r),
            _ = tokio::time::sleep(abort_at.unwrap_or(Duration::ZERO)), if abort_at.is_some() => {
                agent.abort();
                abort_sent = true;
                server.count(Kind::Abort);
            }
            _ = tokio::time::sleep(p.deadline.saturating_sub(t0.elapsed())) => break None,
        }
    };
    let served = server.take_served(id);
    let Some(result) = result else {
        tally.lost.fetch_add(1, Ordering::Relaxed);
        let st = agent.state();
        agent.abort();
        let after_abort = tokio::time::timeout(Duration::from_secs(10), &mut fut)
            .await
            .map(|r| match r {
                Ok(o) => format!("{:?}", o.ending),
                Err(e) => e.to_string(),
            });
        tally.hang(format!(
            "prompt {id:?} did not end in {:?}: last served {:?}, streaming {}, pending tools {:?}, {} messages; after an abort: {}",
            p.deadline,
            served,
            st.is_streaming,
            st.pending_tool_calls,
            st.messages.len(),
            after_abort.unwrap_or_else(|_| "still running 10 s later".into())
        ));
        return End::Lost;
    };
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            tally.mismatched.fetch_add(1, Ordering::Relaxed);
            tally.problem(format!("prompt {id:?} refused: {e}"));
            return End::Failed;
        }
    };
    check_tools(&outcome.messages, abort_sent, tally);
    match &outcome.ending {
        RunEnding::Completed => {
            let text = outcome.final_text().unwrap_or_default();
            if text == answer_for(id) {
                tally.completed.fetch_add(1, Ordering::Relaxed);
                End::Completed
            } else {
                tally.lost_answers.fetch_add(1, Ordering::Relaxed);
                tally.problem(format!("prompt {id:?} completed with {text:?}"));
                End::Failed
            }
        }
        RunEnding::Aborted if abort_sent => {
            tally.aborted.fetch_add(1, Ordering::Relaxed);
            End::Aborted
        }
        RunEnding::Failed(msg) => {
            let c = cause(msg);
            *tally.failed.lock().entry(c).or_insert(0) += 1;
            if p.verbose {
                eprintln!(
                    "{id}: failed ({c}) after {:?}: {}",
                    served,
                    msg.chars().take(200).collect::<String>()
                );
            }
            match served {
                // An abort can land anywhere; whatever it cut is not checked.
                _ if abort_sent => {}
                Some((k, _)) if k.fails_prompt() => {
                    if !expected_causes(k).contains(&c) {
                        tally.mismatched.fetch_add(1, Ordering::Relaxed);
                        tally.problem(format!(
                            "prompt {id:?}: {} ended with cause {c}: {}",
                            k.name(),
                            msg.chars().take(300).collect::<String>()
                        ));
                    }
                    if k == Kind::HugeErrorBody && msg.len() > ERROR_BODY_CAP + 1024 {
                        tally.mismatched.fetch_add(1, Ordering::Relaxed);
                        tally.problem(format!("prompt {id:?}: error of {} bytes", msg.len()));
                    }
                }
                // A reply still being written when the idle timeout fired (a pause of the
                // server, or a starved process), or written while the runtime itself stood
                // still for a second or more during the prompt (its tasks, the connection's
                // among them, did not run): a timeout, not a lost answer.
                Some((k, done))
                    if c == "idle_timeout"
                        && (!done || tally.last_stall.lock().is_some_and(|t| t >= t0)) =>
                {
                    if tally.cut_by_idle.fetch_add(1, Ordering::Relaxed) < 3 {
                        tally.problem(format!(
                            "prompt {id:?}: {} cut by the idle timeout while being written",
                            k.name()
                        ));
                    }
                }
                other => {
                    tally.lost_answers.fetch_add(1, Ordering::Relaxed);
                    tally.problem(format!(
                        "prompt {id:?} failed after {:?} was served: {}",
                        other.map(|(k, done)| format!(
                            "{}{}",
                            k.name(),
                            if done { "" } else { " (partly)" }
                        )),
                        msg.chars().take(300).collect::<String>()
                    ));
                }
            }
            End::Failed
        }
        other => {
            tally.mismatched.fetch_add(1, Ordering::Relaxed);
            tally.problem(format!(
                "prompt {id:?} ended {other:?} (abort sent: {abort_sent}, served {:?})",
                served.map(|(k, _)| k.name())
            ));
            End::Failed
        }
    }
}

async fn agent_loop(
    i: usize,
    dir: PathBuf,
    model: Arc<tern_ai::Model>,
    server: Arc<SoakServer>,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    p: SoakParams,
) {
    let mut rng = Rng::new(p.seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut agent = build_agent(&model, &dir, &p);
    // Spread the starts over the first ten seconds (or the pause, when shorter).
    let spread = p.max_pause.min(Duration::from_secs(10)).as_millis() as u64;
    tokio::time::sleep(Duration::from_millis(rng.below(spread + 1))).await;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let id = format!("p {i} {n}");
        let abort_after = rng.chance(p.abort_share).then(|| {
            // Mostly early (in the stream, a retry wait, a tool), sometimes late.
            let upper = 1 + rng.below(800);
            Duration::from_millis(rng.below(upper))
        });
        let end = run_prompt(&agent, &id, abort_after, &server, &tally, &p).await;
        if let End::Lost = end {
            agent.abort();
            if tokio::time::timeout(Duration::from_secs(10), agent.wait_for_idle())
                .await
                .is_err()
            {
                tally.problem(format!(
                    "agent {i} still busy 10 s after the abort: replaced"
                ));
                agent = build_agent(&model, &dir, &p);
            }
        }
        if matches!(end, End::Failed | End::Aborted | End::Lost) {
            // The agent must still work: a plain prompt the server always answers.
            let check = format!("check {i} {n}");
            tally.recover_runs.fetch_add(1, Ordering::Relaxed);
            if let End::Completed = run_prompt(&agent, &check, None, &server, &tally, &p).await {
                tally.recover_ok.fetch_add(1, Ordering::Relaxed);
            } else {
                tally.problem(format!(
                    "agent {i}: the prompt after a failure did not complete"
                ));
            }
        }
        // Bounded transcripts: a fresh conversation for each prompt (the check after a
        // failure still runs on the failed transcript).
        let _ = agent.reset();
        let pause = rng.below(p.max_pause.as_millis() as u64 + 1);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// Runs the soak on a new runtime and returns what it counted.
pub fn run(p: &SoakParams) -> Result<SoakReport, String> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if p.threads > 0 {
        b.worker_threads(p.threads);
    }
    let rt = b.enable_all().build().map_err(|e| e.to_string())?;
    let root = std::env::temp_dir().join(format!("tern-soak-{}", std::process::id()));
    let out = rt.block_on(run_async(p, &root));
    drop(rt);
    let _ = std::fs::remove_dir_all(&root);
    out
}

async fn run_async(p: &SoakParams, root: &Path) -> Result<SoakReport, String> {
    let wall = Instant::now();
    for i in 0..p.agents {
        make_dir(&agent_dir(root, i)).map_err(|e| format!("agent folder {i}: {e}"))?;
    }
    let server = Arc::new(
        SoakServer::start(root, p.seed, &p.skip)
            .await
            .map_err(|e| format!("server: {e}"))?,
    );
    let model = Arc::new(bench_model_at(&server.base_url));
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::with_capacity(p.agents);
    for i in 0..p.agents {
        handles.push(tokio::spawn(agent_loop(
            i,
            agent_dir(root, i),
            model.clone(),
            server.clone(),
            tally.clone(),
            stop.clone(),
            p.clone(),
        )));
    }
    // How late a 100 ms sleep wakes up: the runtime's own stalls (a busy machine).
    let lag_tally = tally.clone();
    let lag_stop = stop.clone();
    let lag = tokio::spawn(async move {
        while !lag_stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            tokio::time::sleep(Duration::from_millis(100)).await;
            let late = t.elapsed().saturating_sub(Duration::from_millis(100));
            lag_tally
                .max_lag_ms
                .fetch_max(late.as_millis() as u64, Ordering::Relaxed);
            if late >= Duration::from_secs(1) {
                lag_tally.stalls.fetch_add(1, Ordering::Relaxed);
                *lag_tally.last_stall.lock() = Some(Instant::now());
            }
        }
    });
    let seconds = p.duration.as_secs().max(1);
    let mut rss = Vec::with_capacity(seconds as usize);
    let mut heap = Vec::with_capacity(seconds as usize);
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for s in 1..=seconds {
        tick.tick().await;
        rss.push(rss_bytes());
        heap.push(heap_in_use_bytes().unwrap_or(0));
        if p.report_every > 0 && s % p.report_every == 0 {
            eprintln!(
                "t={s:>4}s rss={:.1}MiB heap={:.1}MiB fds={} prompts={} completed={} aborted={} lost={} requests={}",
                mib(rss_bytes()),
                mib(heap.last().copied().unwrap_or(0)),
                std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
                tally.started.load(Ordering::Relaxed),
                tally.completed.load(Ordering::Relaxed),
                tally.aborted.load(Ordering::Relaxed),
                tally.lost.load(Ordering::Relaxed),
                server.state.requests.load(Ordering::Relaxed),
            );
        }
    }
    let rss_end = rss.last().copied().unwrap_or_else(rss_bytes);
    stop.store(true, Ordering::Relaxed);
    // Every agent finishes its prompt (each bounded by the deadline, twice with the check).
    for h in handles {
        if let Err(e) = h.await {
            tally.problem(format!("agent task failed: {e}"));
            tally.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = lag.await;
    let base_second = if seconds >= 120 {
        60
    } else {
        (seconds as usize / 6).max(1)
    };
    let rss_base = rss.get(base_second - 1).copied().unwrap_or(0);
    let rss_max_after_base = rss
        .iter()
        .skip(base_second)
        .copied()
        .max()
        .unwrap_or(rss_base);
    let mut failed: Vec<(String, u64)> = tally
        .failed
        .lock()
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    failed.sort();
    let mut problems = tally.hangs.lock().clone();
    problems.extend(tally.problems.lock().iter().cloned());
    problems.extend(tally.tool_problems.lock().iter().cloned());
    Ok(SoakReport {
        agents: p.agents,
        seconds,
        started: tally.started.load(Ordering::Relaxed),
        completed: tally.completed.load(Ordering::Relaxed),
        failed,
        aborted: tally.aborted.load(Ordering::Relaxed),
        lost: tally.lost.load(Ordering::Relaxed),
        lost_answers: tally.lost_answers.load(Ordering::Relaxed),
        mismatched: tally.mismatched.load(Ordering::Relaxed),
        cut_by_idle: tally.cut_by_idle.load(Ordering::Relaxed),
        max_lag_ms: tally.max_lag_ms.load(Ordering::Relaxed),
        stalls: tally.stalls.load(Ordering::Relaxed),
        problems,
        recoveries: (
            tally.recover_runs.load(Ordering::Relaxed),
            tally.recover_ok.load(Ordering::Relaxed),
        ),
        requests: server.state.requests.load(Ordering::Relaxed),
        injected: server.injected(),
        tool_checks: (
            tally.tool_checks.load(Ordering::Relaxed),
            tally.tool_ok.load(Ordering::Relaxed),
        ),
        heap_base: heap.get(base_second - 1).copied().unwrap_or(0),
        heap_end: heap.last().copied().unwrap_or(0),
        rss,
        rss_base,
        base_second,
        rss_max_after_base,
        rss_end,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}
