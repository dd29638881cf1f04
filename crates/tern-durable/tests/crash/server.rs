//! The scripted OpenAI-compatible server: real TCP on 127.0.0.1, real SSE, one thread per
//! connection. It tells kill points, agents and process lives apart by the path
//! (`/p/POINT/a/AGENT/l/LIFE/v1/chat/completions`), identifies which request of the script it is
//! from the transcript it receives (the number of assistant messages in it), logs every
//! request with how much of its answer was streamed, and can kill the agent process after
//! a given chunk of a given answer (a kill mid-stream).

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Value};
use tern_testkit::chat::{self, ChatStream};
use tern_testkit::http;

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
        let (first, rest) = chat::halves(&a);
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
    events.push(STREAM.usage(100 + 10 * n as u64, 20));
    events.push(chat::DONE.to_string());
    Some(events)
}

const STREAM: ChatStream = ChatStream::new("chatcmpl-crash", "crash-model");

fn chunk(delta: Value, finish: Option<&str>) -> String {
    STREAM.chunk(delta, finish)
}

impl Server {
    /// Starts the server; answers are streamed a chunk every `delay`.
    pub fn start(delay: Duration) -> Server {
        let state = Arc::new(State::default());
        let s = state.clone();
        let origin = http::serve_threads(move |stream| {
            let _ = serve(stream, &s, delay);
        });
        Server { origin, state }
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
    stream.write_all(&chat::error_response(status, message))?;
    stream.flush()
}

fn serve(mut stream: TcpStream, state: &State, delay: Duration) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(request) = http::read_request(&mut reader)? else {
        return Ok(());
    };
    let path = request.path().to_string();
    let Some((point, agent, life)) = route(&path) else {
        return refuse(&mut stream, 404, &format!("no route {path}"));
    };
    let n = chat::assistant_turns(&request.json());
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
    stream.write_all(http::SSE_HEAD.as_bytes())?;
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
