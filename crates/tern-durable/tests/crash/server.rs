//! The scripted OpenAI-compatible server: real TCP on 127.0.0.1, real SSE, one thread per
//! connection. It tells kill points, agents and process lives apart by the path
//! (`/p/POINT/a/AGENT/l/LIFE/v1/chat/completions`), identifies which request of the script it is
//! from the transcript it receives (the number of assistant messages in it), logs every
//! request with how much of its answer was streamed, and can kill the agent process after
//! a given chunk of a given answer (a kill mid-stream).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};

/// Requests in the script; a sixth one is an error.
pub const REQUESTS: usize = 5;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The kill point (or reference) the request belongs to.
    pub point: usize,
    pub agent: usize,
    pub life: u32,
    /// Which request of the script (assistant messages in its transcript).
    pub n: usize,
    /// Chunks of the answer written so far.
    pub chunks: usize,
    /// The whole answer (and `[DONE]`) was written.
    pub done: bool,
}

/// Kill `victim` once chunk `chunk` of answer `n` to `agent` in `life` is written.
pub struct Trigger {
    pub point: usize,
    pub agent: usize,
    pub life: u32,
    pub n: usize,
    pub chunk: usize,
    pub victim: Arc<Mutex<Child>>,
}

#[derive(Default)]
struct State {
    log: Mutex<Vec<Request>>,
    trigger: Mutex<Option<Trigger>>,
}

pub struct Server {
    pub origin: String,
    state: Arc<State>,
}

/// The script: request `n`'s answer as a list of SSE events.
pub fn answer(n: usize) -> Option<Vec<String>> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let text = |s: &str, events: &mut Vec<String>| {
        for piece in s.split_inclusive(' ') {
            events.push(chunk(json!({ "content": piece }), None));
        }
    };
    let call = |index: usize, id: &str, name: &str, args: Value, events: &mut Vec<String>| {
        let a = args.to_string();
        let (first, rest) = a.split_at(a.len() / 2);
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": first}}]}),
            None,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": rest}}]}),
            None,
        ));
    };
    let finish = match n {
        0 => {
            text("Counting both at once.", &mut events);
            call(0, "call_1", "tally", json!({"what": "first"}), &mut events);
            call(1, "call_2", "stamp", json!({"what": "first"}), &mut events);
            "tool_calls"
        }
        1 => {
            text("Stamping again, as asked.", &mut events);
            call(0, "call_3", "stamp", json!({"what": "second"}), &mut events);
            "tool_calls"
        }
        2 => {
            call(0, "call_4", "tally", json!({"what": "last"}), &mut events);
            "tool_calls"
        }
        3 => {
            text("All counted: two tallies and two stamps.", &mut events);
            "stop"
        }
        // After the follow-up.
        4 => {
            text("Done.", &mut events);
            "stop"
        }
        _ => return None,
    };
    events.push(chunk(json!({}), Some(finish)));
    let usage = json!({"id": "chatcmpl-crash", "object": "chat.completion.chunk", "created": 0,
        "model": "crash-model", "choices": [],
        "usage": {"prompt_tokens": 100 + 10 * n, "completion_tokens": 20, "total_tokens": 120 + 10 * n}});
    events.push(format!("data: {usage}\n\n"));
    events.push("data: [DONE]\n\n".to_string());
    Some(events)
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let v = json!({
        "id": "chatcmpl-crash", "object": "chat.completion.chunk", "created": 0,
        "model": "crash-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {v}\n\n")
}

impl Server {
    /// Starts the server; answers are streamed a chunk every `delay`.
    pub fn start(delay: Duration) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(State::default());
        let s = state.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                thread::spawn(move || {
                    let _ = serve(stream, &s, delay);
                });
            }
        });
        Server {
            origin: format!("http://127.0.0.1:{port}"),
            state,
        }
    }

    /// The requests of kill point `point` so far.
    pub fn log(&self, point: usize) -> Vec<Request> {
        self.state
            .log
            .lock()
            .iter()
            .filter(|r| r.point == point)
            .cloned()
            .collect()
    }

    pub fn arm(&self, trigger: Trigger) {
        *self.state.trigger.lock() = Some(trigger);
    }

    pub fn disarm(&self) {
        self.state.trigger.lock().take();
    }
}

/// `/p/POINT/a/AGENT/l/LIFE/v1/chat/completions` → (point, agent, life).
fn route(path: &str) -> Option<(usize, usize, u32)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["p", point, "a", agent, "l", life, "v1", "chat", "completions"] => {
            Some((point.parse().ok()?, agent.parse().ok()?, life.parse().ok()?))
        }
        _ => None,
    }
}

fn refuse(stream: &mut TcpStream, status: u16, message: &str) -> std::io::Result<()> {
    let b = json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string();
    write!(
        stream,
        "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
        b.len()
    )?;
    stream.flush()
}

fn serve(mut stream: TcpStream, state: &State, delay: Duration) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
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
    reader.read_exact(&mut body)?;
    let Some((point, agent, life)) = route(&path) else {
        return refuse(&mut stream, 404, &format!("no route {path}"));
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0);
    let index = {
        let mut log = state.log.lock();
        log.push(Request {
            point,
            agent,
            life,
            n,
            chunks: 0,
            done: false,
        });
        log.len() - 1
    };
    let Some(events) = answer(n) else {
        return refuse(&mut stream, 400, &format!("the script has no request {n}"));
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    let total = events.len();
    for (k, event) in events.into_iter().enumerate() {
        stream.write_all(event.as_bytes())?;
        stream.flush()?;
        {
            let mut log = state.log.lock();
            log[index].chunks = k + 1;
            log[index].done = k + 1 == total;
        }
        let mut trigger = state.trigger.lock();
        let fire = trigger.as_ref().is_some_and(|t| {
            (t.point, t.agent, t.life, t.n, t.chunk) == (point, agent, life, n, k + 1)
        });
        if fire {
            if let Some(t) = trigger.take() {
                let _ = t.victim.lock().kill();
            }
            return Ok(());
        }
        drop(trigger);
        if k + 1 < total {
            thread::sleep(delay);
        }
    }
    Ok(())
}
