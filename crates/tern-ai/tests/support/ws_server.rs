//! The WebSocket side of a replay (the Rust twin of reference/run_ws.mjs): one listener on
//! 127.0.0.1 that answers WebSocket upgrades with the case's per-connection scripts and
//! hands every other request to the HTTP replay server (the SSE fallback).

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// One upgrade request the server received.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    /// Path and query.
    pub path: String,
    /// The headers that matter, lower-case names, a UUIDv7 value read as `<uuidv7>`.
    pub headers: serde_json::Map<String, Value>,
    /// The status the upgrade was refused with.
    pub refused: Option<u64>,
    /// The messages the client sent, parsed (`{"$raw": text}` when not JSON).
    pub sent: Vec<Value>,
}

impl Connection {
    /// As the output document reports it.
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("path".into(), json!(self.path));
        o.insert("headers".into(), Value::Object(self.headers.clone()));
        if let Some(status) = self.refused {
            o.insert("refused".into(), json!(status));
        }
        o.insert("sent".into(), Value::Array(self.sent.clone()));
        Value::Object(o)
    }
}

/// A running WebSocket replay server.
pub struct WsServer {
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    /// The upgrade requests so far.
    pub connections: Arc<Mutex<Vec<Connection>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn is_uuid_v7(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b[14] == b'7'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
        && s.chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// Starts the server: `scripts` are the case's `websocket` entries, `wanted` the header
/// names reported, `http` the address of the HTTP replay server.
pub async fn start(scripts: Vec<Value>, wanted: Vec<String>, http: String) -> WsServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let connections: Arc<Mutex<Vec<Connection>>> = Arc::default();
    let conns = connections.clone();
    let task = tokio::spawn(async move {
        let scripts = Arc::new(scripts);
        let wanted = Arc::new(wanted);
        // Dropped with this task: every connection's task ends with the server.
        let mut tasks = tokio::task::JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            let (scripts, wanted, conns, http) =
                (scripts.clone(), wanted.clone(), conns.clone(), http.clone());
            tasks.spawn(serve(stream, scripts, wanted, conns, http));
        }
    });
    WsServer {
        origin,
        connections,
        task,
    }
}

/// Reads the request head (through the blank line).
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(head)
}

async fn serve(
    mut stream: TcpStream,
    scripts: Arc<Vec<Value>>,
    wanted: Arc<Vec<String>>,
    connections: Arc<Mutex<Vec<Connection>>>,
    http: String,
) {
    stream.set_nodelay(true).ok();
    let Some(head) = read_head(&mut stream).await else {
        return;
    };
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    if !header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket")) {
        // Plain HTTP: the replay server answers it.
        let Ok(mut upstream) = TcpStream::connect(&http).await else {
            return;
        };
        if upstream.write_all(&head).await.is_err() {
            return;
        }
        let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
        return;
    }
    let mut reported = serde_json::Map::new();
    let mut names: Vec<&String> = wanted.iter().collect();
    names.sort();
    names.dedup();
    for name in names {
        let values: Vec<String> = headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect();
        if !values.is_empty() {
            let v = values.join(", ");
            let v = if is_uuid_v7(&v) { "<uuidv7>".into() } else { v };
            reported.insert(name.clone(), json!(v));
        }
    }
    let index = {
        let mut c = connections.lock();
        c.push(Connection {
            path,
            headers: reported,
            ..Connection::default()
        });
        c.len() - 1
    };
    let script = scripts
        .get(index)
        .cloned()
        .unwrap_or_else(|| json!({"refuse": 500}));
    if let Some(status) = script.get("refuse").and_then(Value::as_u64) {
        connections.lock()[index].refused = Some(status);
        let reply =
            format!("HTTP/1.1 {status} Refused\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        return;
    }
    if script.get("hang").is_some() {
        tokio::time::sleep(Duration::from_secs(60)).await;
        return;
    }
    let key = header("sec-websocket-key").unwrap_or_default();
    let reply = format!(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    if stream.write_all(reply.as_bytes()).await.is_err() {
        return;
    }
    let mut ws = WebSocketStream::from_raw_socket(stream, Role::Server, None).await;
    let replies = script
        .get("replies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let delay = Duration::from_millis(script.get("delayMs").and_then(Value::as_u64).unwrap_or(3));
    let mut n = 0;
    while let Some(Ok(message)) = ws.next().await {
        let text = match message {
            Message::Text(t) => t.as_str().to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        let sent = serde_json::from_str(&text).unwrap_or_else(|_| json!({"$raw": text}));
        connections.lock()[index].sent.push(sent);
        let answer = replies
            .get(n)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        n += 1;
        if !play(&mut ws, &answer, delay).await {
            return;
        }
    }
}

/// Sends one scripted answer; `false` once the socket is closed or dropped.
async fn play(ws: &mut WebSocketStream<TcpStream>, messages: &[Value], delay: Duration) -> bool {
    for m in messages {
        if let Some(ms) = m.get("$wait").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            continue;
        }
        if let Some(close) = m.get("$close") {
            let code = close.get("code").and_then(Value::as_u64).unwrap_or(1000) as u16;
            let reason = close.get("reason").and_then(Value::as_str).unwrap_or("");
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: reason.to_string().into(),
            };
            let _ = ws.close(Some(frame)).await;
            return false;
        }
        if m.get("$terminate").is_some() {
            return false;
        }
        let sent = if let Some(parts) = m.get("$fragments").and_then(Value::as_array) {
            let mut ok = true;
            for (i, part) in parts.iter().enumerate() {
                let opcode = OpCode::Data(if i == 0 { Data::Text } else { Data::Continue });
                let payload = part.as_str().unwrap_or("").as_bytes().to_vec();
                let frame = Frame::message(payload, opcode, i + 1 == parts.len());
                ok &= ws.send(Message::Frame(frame)).await.is_ok();
            }
            ok
        } else {
            let text = match m.get("$text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => m.to_string(),
            };
            ws.send(Message::text(text)).await.is_ok()
        };
        if !sent {
            return false;
        }
        tokio::time::sleep(delay).await;
    }
    true
}
