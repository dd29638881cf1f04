//! Test helpers: a scripted OpenAI-compatible Chat Completions server on 127.0.0.1 (real HTTP,
//! real SSE) that records every request body, and a runner for the real `tern` binary.

#![allow(dead_code)]

pub mod killed;
pub mod pi;
pub mod tmux;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tern_testkit::chat::{self, ChatStream};
use tern_testkit::http;

/// One scripted response.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Streamed text.
    Text(String),
    /// Streamed text that ends at the output limit (`finish_reason: "length"`).
    Truncated(String),
    /// A tool call (after optional text).
    Tool {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        args: Value,
    },
    /// An HTTP error status with a JSON error body.
    Error(u16, String),
    /// Headers, one text chunk, then nothing for a minute (a hung model).
    Hang,
    /// The first text chunk, then the second once `gate` is opened (a minute at most).
    Gated(String, String, Gate),
    /// Reasoning (`reasoning_content`), then text.
    Think(String, String),
    /// `deltas` text deltas at `per_second` (a word each, a line break every 12), then the
    /// text `end`: a fast model.
    Flood {
        /// How many deltas.
        deltas: usize,
        /// How many a second.
        per_second: u32,
        /// The last delta.
        end: String,
    },
}

/// A gate a scripted reply waits at, opened by the test.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    /// Opens the gate.
    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }

    /// Waits until the gate is open, `limit` at most.
    fn wait(&self, limit: Duration) {
        let open = self.0 .0.lock().unwrap();
        let _ = self.0 .1.wait_timeout_while(open, limit, |o| !*o);
    }
}

impl Reply {
    /// A text reply.
    pub fn text(s: &str) -> Self {
        Reply::Text(s.to_string())
    }

    /// A tool-call reply.
    pub fn tool(id: &str, name: &str, args: Value) -> Self {
        Reply::Tool {
            id: id.to_string(),
            name: name.to_string(),
            args,
        }
    }
}

/// The server: its base URL and the request bodies it received, in order.
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Server {
    /// Starts a server answering requests with `script` in order (then with an error).
    pub fn start(script: Vec<Reply>) -> Server {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script = Mutex::new(script.into_iter().collect::<VecDeque<_>>());
        let reqs = requests.clone();
        let origin = http::serve_threads(move |stream| {
            let _ = serve(stream, &reqs, &script);
        });
        Server {
            url: format!("{origin}/v1"),
            requests,
        }
    }

    /// Starts a server answering each request with the next of `answers` (streamed text).
    pub fn answering(answers: &[&str]) -> Server {
        Server::start(answers.iter().map(|a| Reply::text(a)).collect())
    }

    /// Starts a server whose model first reads the file `path` (a `read` call), then answers
    /// each request with the next of `answers`.
    pub fn reading(path: &str, answers: &[&str]) -> Server {
        let read = Reply::tool("call_1", "read", json!({ "path": path }));
        let texts = answers.iter().map(|a| Reply::text(a));
        Server::start(std::iter::once(read).chain(texts).collect())
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests arrived (10 s at most).
    pub fn wait_requests(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let r = self.requests();
            if r.len() >= n {
                return r;
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.requests()
    }
}

const STREAM: ChatStream = ChatStream::new("chatcmpl-test", "test-model");

fn chunk(delta: Value, finish: Option<&str>) -> String {
    STREAM.chunk(delta, finish)
}

fn serve(
    mut stream: TcpStream,
    reqs: &Mutex<Vec<Value>>,
    script: &Mutex<VecDeque<Reply>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(request) = http::read_request(&mut reader)? else {
        return Ok(());
    };
    reqs.lock().unwrap().push(request.json());
    let reply = script.lock().unwrap().pop_front().unwrap_or(Reply::Error(
        400,
        "the test script has no more replies".into(),
    ));
    if let Reply::Error(status, msg) = &reply {
        stream.write_all(&chat::error_response(*status, msg))?;
        return stream.flush();
    }
    stream.write_all(http::SSE_HEAD.as_bytes())?;
    stream.flush()?;
    // The flood writes at its own pace, past `send`'s pause.
    let mut paced = stream.try_clone()?;
    let mut send = |s: String| -> std::io::Result<()> {
        stream.write_all(s.as_bytes())?;
        stream.flush()?;
        thread::sleep(Duration::from_millis(5));
        Ok(())
    };
    match &reply {
        Reply::Text(text) | Reply::Truncated(text) => {
            let finish = if matches!(reply, Reply::Truncated(_)) {
                "length"
            } else {
                "stop"
            };
            send(chunk(json!({"role": "assistant", "content": ""}), None))?;
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(8) {
                send(chunk(
                    json!({"content": piece.iter().collect::<String>()}),
                    None,
                ))?;
            }
            send(chunk(json!({}), Some(finish)))?;
        }
        Reply::Tool { id, name, args } => {
            let (id, name) = (id.clone(), name.clone());
            let a = args.to_string();
            let (first, rest) = chat::halves(&a);
            send(chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": first}}]}),
                None,
            ))?;
            send(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": rest}}]}),
                None,
            ))?;
            send(chunk(json!({}), Some("tool_calls")))?;
        }
        Reply::Think(thinking, text) => {
            send(chunk(
                json!({"role": "assistant", "reasoning_content": thinking}),
                None,
            ))?;
            send(chunk(json!({"content": text}), None))?;
            send(chunk(json!({}), Some("stop")))?;
        }
        Reply::Gated(first, second, gate) => {
            send(chunk(json!({"role": "assistant", "content": first}), None))?;
            gate.wait(Duration::from_secs(60));
            send(chunk(json!({"content": second}), None))?;
            send(chunk(json!({}), Some("stop")))?;
        }
        Reply::Flood {
            deltas,
            per_second,
            end,
        } => {
            // Paced by the clock, not by a sleep per delta: the rate holds however long a
            // write takes.
            let start = Instant::now();
            let gap = Duration::from_secs(1) / (*per_second).max(1);
            paced.write_all(chunk(json!({"role": "assistant", "content": ""}), None).as_bytes())?;
            for i in 0..*deltas {
                let word = if i % 12 == 11 { "word\n" } else { "word " };
                paced.write_all(chunk(json!({"content": word}), None).as_bytes())?;
                paced.flush()?;
                let due = start + gap * (i as u32 + 1);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    thread::sleep(wait);
                }
            }
            send(chunk(json!({"content": format!("\n{end}")}), None))?;
            send(chunk(json!({}), Some("stop")))?;
        }
        Reply::Hang => {
            send(chunk(
                json!({"role": "assistant", "content": "Thinking about it"}),
                None,
            ))?;
            thread::sleep(Duration::from_secs(60));
            return Ok(());
        }
        Reply::Error(..) => unreachable!(),
    }
    send(STREAM.usage(100, 20))?;
    send(chat::DONE.to_string())?;
    Ok(())
}

/// A temporary home folder (sessions, config) and a temporary working folder.
pub fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (
        tempfile::tempdir().expect("home"),
        tempfile::tempdir().expect("cwd"),
    )
}

/// The JSON values of `text`, one a line; a line that is not JSON fails the test.
pub fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The entries of a JSON-lines file (a session file).
pub fn json_lines(path: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    parse_lines(&text)
}

/// The session files under `home` (one folder for each working directory), sorted.
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(home.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            out.push(f.path());
        }
    }
    out.sort();
    out
}

/// Whether a Chat Completions request declares any tool.
pub fn has_tools(request: &Value) -> bool {
    request["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The tern binary.
pub fn tern() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tern"))
}

/// A command for the binary with a clean environment: no API keys, sessions and config in
/// `home`, working directory `cwd`.
pub fn command(home: &Path, cwd: &Path) -> Command {
    let mut c = Command::new(tern());
    c.current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERN_SESSION_DIR", home.join("sessions"))
        .env("TERN_CONFIG", home.join("config.toml"))
        .env("NO_COLOR", "1");
    std::fs::write(home.join("config.toml"), "").expect("write empty config");
    c
}

/// Runs tern in `home` and `cwd` against `server` (`--base-url`) with `args`, and returns its
/// output.
pub fn run_against(home: &Path, cwd: &Path, server: &Server, args: &[&str]) -> Output {
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url]).args(args);
    run(c)
}

/// Asserts that a run exited with `code`, showing its stderr when it did not.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "stderr: {}", stderr(o));
}

/// Runs the command with stdin closed and returns its output (30 s at most).
pub fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().expect("spawn tern");
    wait_output(child, Duration::from_secs(30))
}

/// Waits for a child with a deadline (kills it after), reading its pipes meanwhile.
pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut v);
        }
        v
    });
    let t_err = thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut v);
        }
        v
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().expect("wait for tern");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Asserts that `text` (a run's stdout or stderr, say) contains `part`, showing `text` when
/// it does not.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{text}");
}

/// The `messages` of a Chat Completions request body.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The last user message of a Chat Completions request body; a request without one fails
/// the test.
#[track_caller]
pub fn last_user(body: &Value) -> Value {
    messages(body)
        .into_iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap_or_else(|| panic!("no user message in {body}"))
}

/// All the text of a request's messages, for `contains` checks.
pub fn text_of(body: &Value) -> String {
    body["messages"].to_string()
}

/// A running `tern --mode rpc` with a line reader on its stdout.
pub struct Rpc {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    rx: std::sync::mpsc::Receiver<Value>,
    /// Every record read so far.
    pub seen: Vec<Value>,
}

impl Rpc {
    /// Spawns the command (args already set) in RPC mode.
    pub fn spawn(mut c: Command) -> Rpc {
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = c.spawn().expect("spawn tern --mode rpc");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Rpc {
            child,
            stdin,
            rx,
            seen: Vec::new(),
        }
    }

    /// Spawns `tern --mode rpc` against `server` with `flags`, in `home` and `cwd`.
    pub fn start(home: &Path, cwd: &Path, server: &Server, flags: &[&str]) -> Rpc {
        let mut c = command(home, cwd);
        c.args(["--mode", "rpc", "--base-url", &server.url])
            .args(flags);
        Rpc::spawn(c)
    }

    /// Writes one command.
    pub fn send(&mut self, cmd: Value) {
        let s = self.stdin.as_mut().expect("stdin open");
        writeln!(s, "{cmd}").expect("write command");
        s.flush().expect("flush");
    }

    /// Writes raw bytes (for malformed input).
    pub fn send_raw(&mut self, raw: &str) {
        let s = self.stdin.as_mut().expect("stdin open");
        s.write_all(raw.as_bytes()).expect("write");
        s.flush().expect("flush");
    }

    /// Writes raw bytes, valid UTF-8 or not.
    pub fn send_bytes(&mut self, raw: &[u8]) {
        let s = self.stdin.as_mut().expect("stdin open");
        s.write_all(raw).expect("write");
        s.flush().expect("flush");
    }

    /// Reads records until one satisfies `pred` (10 s at most) and returns it.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_within(Duration::from_secs(10), what, pred)
    }

    /// [`wait_for`](Self::wait_for), `limit` at most.
    pub fn wait_for_within(
        &mut self,
        limit: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; seen: {:#?}", self.seen),
            }
        }
    }

    /// The first record at or after index `mark` of `seen` satisfying `pred`, waiting for it
    /// when it was not read yet.
    pub fn since(&mut self, mark: usize, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.since_within(mark, Duration::from_secs(10), what, pred)
    }

    /// [`since`](Self::since), `limit` at most. Use it for events that may arrive before the
    /// response of the command that caused them: [`call`](Self::call) reads them into `seen`.
    pub fn since_within(
        &mut self,
        mark: usize,
        limit: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(v) = self.seen.iter().skip(mark).find(|v| pred(v)) {
            return v.clone();
        }
        self.wait_for_within(limit, what, pred)
    }

    /// Sends a command with `id` and returns its response.
    pub fn call(&mut self, id: &str, mut cmd: Value) -> Value {
        cmd["id"] = json!(id);
        self.send(cmd);
        self.wait_for(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }

    /// Closes stdin and waits for the exit code.
    pub fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}
