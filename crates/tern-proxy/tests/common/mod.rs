//! Shared pieces of the integration tests: a real server on 127.0.0.1, traces of a stream
//! normalized like the conformance traces, scripted upstreams, and the Node side.
#![allow(dead_code)] // each test binary uses its own part

pub mod node;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tern_ai::{
    assistant_stream, AssistantMessageEvent, AssistantMessageEventStream, Context, Message, Model,
    StreamFn, StreamOptions,
};
use tern_proxy::{ProxyServer, ProxyStreamFn};
use tern_testkit::http;
use tokio_util::sync::CancellationToken;

/// The token the test servers accept.
pub const TOKEN: &str = "secret";

/// A served router and its base URL; the server stops when this is dropped.
pub struct Served {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `server` on a free port of 127.0.0.1.
pub async fn serve(server: ProxyServer) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = server.router();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Served { url, task }
}

/// The transcript every case sends.
pub fn context() -> Context {
    Context::new(vec![serde_json::from_value::<Message>(
        json!({"role": "user", "content": "hi", "timestamp": 0}),
    )
    .unwrap()])
}

/// The model every case names (its id names the case for the Node server).
pub fn model(id: &str) -> Model {
    Model::new(id, "scripted", "scripted", "")
}

/// A stream as `{"events": [...], "final": message}`: each event serialized when it
/// arrived, without its `partial`. `abort_after_deltas` fires the signal after that many
/// delta events.
pub async fn collect(
    mut stream: AssistantMessageEventStream,
    signal: &CancellationToken,
    abort_after_deltas: Option<usize>,
) -> Value {
    let mut events = Vec::new();
    let mut deltas = 0;
    while let Some(event) = stream.next().await {
        let mut v = serde_json::to_value(&event).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("partial");
        }
        events.push(v);
        if event.delta().is_some() {
            deltas += 1;
            if Some(deltas) == abort_after_deltas {
                signal.cancel();
            }
        }
    }
    let last = stream.result().await;
    json!({"events": events, "final": Message::from((*last).clone())})
}

/// tern's client once against `url`.
pub async fn tern_client(url: &str, token: &str, case: &str, abort: Option<usize>) -> Value {
    let client = ProxyStreamFn::new(url, token);
    let signal = CancellationToken::new();
    let options = StreamOptions {
        signal: signal.clone(),
        ..StreamOptions::default()
    };
    let stream = client.stream(&model(case), context(), &options).unwrap();
    collect(stream, &signal, abort).await
}

/// A trace normalized as in the conformance traces (FORMAT.md 2.1): no `timestamp`,
/// `durationMs` as a presence marker, all-zero `usage` dropped, assistant `api`/`provider`
/// dropped; numbers compared by value; a tool call's own `type` dropped (tern's events carry
/// the call, the reference's the block).
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let assistant = o.get("role").and_then(Value::as_str) == Some("assistant");
            let mut out = Map::new();
            for (k, val) in o {
                match k.as_str() {
                    "timestamp" => continue,
                    "durationMs" => {
                        out.insert(k.clone(), Value::Bool(true));
                        continue;
                    }
                    "usage" if all_zero(val) => continue,
                    "api" | "provider" if assistant => continue,
                    "toolCall" => {
                        let mut call = normalize(val);
                        if let Some(c) = call.as_object_mut() {
                            c.remove("type");
                        }
                        out.insert(k.clone(), call);
                        continue;
                    }
                    _ => {}
                }
                out.insert(k.clone(), normalize(val));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => v.clone(),
        },
        other => other.clone(),
    }
}

fn all_zero(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Object(o) => o.values().all(all_zero),
        _ => false,
    }
}

/// Panics with both traces when they differ after normalization.
pub fn assert_same(what: &str, expected: &Value, actual: &Value) {
    let (e, a) = (normalize(expected), normalize(actual));
    assert!(
        e == a,
        "{what}: traces differ\n--- expected\n{}\n--- actual\n{}",
        serde_json::to_string_pretty(&e).unwrap(),
        serde_json::to_string_pretty(&a).unwrap()
    );
}

/// `v` without `durationMs` keys. A proxied message is always timed (the client stamps it
/// after its stream started), a direct one only when its upstream stamped it after the
/// stream started, which the reference's faux model does not: compare with a direct run
/// without them.
pub fn without_duration(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "durationMs")
                .map(|(k, v)| (k.clone(), without_duration(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_duration).collect()),
        other => other.clone(),
    }
}

/// A stream function that splits each tool-call delta into pieces of `size` characters
/// (tern's faux model sends the arguments in one piece).
pub struct Fragmented<S>(pub S, pub usize);

impl<S: StreamFn> StreamFn for Fragmented<S> {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        let mut inner = self.0.stream(model, context, options)?;
        let (tx, rx) = assistant_stream();
        let size = self.1;
        tokio::spawn(async move {
            while let Some(event) = inner.next().await {
                match event {
                    AssistantMessageEvent::ToolcallDelta {
                        content_index,
                        delta,
                        partial,
                    } => {
                        let chars: Vec<char> = delta.chars().collect();
                        for piece in chars.chunks(size) {
                            tx.push(AssistantMessageEvent::ToolcallDelta {
                                content_index,
                                delta: piece.iter().collect::<String>().into(),
                                partial: partial.clone(),
                            });
                        }
                    }
                    other => tx.push(other),
                }
            }
        });
        Ok(rx)
    }
}

/// The requests a [`Recorded`] stream function passed on.
pub type Seen = Arc<Mutex<Vec<(Model, StreamOptions)>>>;

/// A stream function that keeps the options of each request it passes on (to see the
/// signal fire when the client goes away, and what the options carried).
pub struct Recorded<S> {
    pub inner: S,
    pub seen: Seen,
}

impl<S> Recorded<S> {
    pub fn new(inner: S) -> (Self, Seen) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (
            Recorded {
                inner,
                seen: seen.clone(),
            },
            seen,
        )
    }
}

impl<S: StreamFn> StreamFn for Recorded<S> {
    fn stream(
        &self,
        model: &Model,
        context: Context,
        options: &StreamOptions,
    ) -> tern_ai::StreamStart {
        self.seen.lock().push((model.clone(), options.clone()));
        self.inner.stream(model, context, options)
    }
}

/// Waits until `signal` fires, at most `secs` seconds; whether it fired.
pub async fn fires_within(signal: &CancellationToken, secs: u64) -> bool {
    tokio::time::timeout(Duration::from_secs(secs), signal.cancelled())
        .await
        .is_ok()
}

/// A bare HTTP server for what a real proxy server would not do: it answers every
/// connection with `response` (bytes as given) and then keeps the connection open.
/// Received requests (head and body) go to the returned channel.
pub async fn raw_server(
    response: &'static [u8],
) -> (String, tokio::sync::mpsc::UnboundedReceiver<http::Request>) {
    use tokio::io::AsyncWriteExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let url = http::serve_tasks(move |mut socket| {
        let tx = tx.clone();
        async move {
            let Ok(Some(request)) = http::read_request_async(&mut socket).await else {
                return;
            };
            let _ = tx.send(request);
            let _ = socket.write_all(response).await;
            let _ = socket.flush().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    })
    .await
    .unwrap();
    (url, rx)
}
