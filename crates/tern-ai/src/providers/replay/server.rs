//! The replay HTTP server: answers the n-th request with the n-th recorded response, chunk
//! by chunk (HTTP/1.1, chunked), and captures every request it receives.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request the replay server received.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CapturedRequest {
    /// `POST`.
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

/// A running replay server.
pub struct ReplayServer {
    /// `http://127.0.0.1:<port>`.
    pub origin: String,
    /// Requests received so far.
    pub requests: Arc<Mutex<Vec<CapturedRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One AWS event-stream message a case describes, encoded as the reference runner encodes
/// it: `{"event": TYPE, "payload": JSON}`, `{"exception": TYPE, ...}`, `{"error": CODE,
/// "message": TEXT}` or `{"frame": {NAME: TEXT}, ...}` (string headers), a payload that is
/// not a string written as compact JSON; `badCrc` (`prelude` or `message`) corrupts a
/// checksum and `truncate: N` keeps the first N bytes.
fn frame_bytes(o: &serde_json::Map<String, Value>) -> Option<Vec<u8>> {
    use crate::providers::bedrock::event_stream::{encode, HeaderValue, Message};
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| headers.push((k.to_string(), v));
    if let Some(t) = o.get("event") {
        put(":event-type", text(t));
        put(":content-type", "application/json".into());
        put(":message-type", "event".into());
    } else if let Some(t) = o.get("exception") {
        put(":exception-type", text(t));
        put(":content-type", "application/json".into());
        put(":message-type", "exception".into());
    } else if let Some(code) = o.get("error") {
        put(":error-code", text(code));
        put(
            ":error-message",
            o.get("message").map(text).unwrap_or_default(),
        );
        put(":message-type", "error".into());
    } else {
        for (k, v) in o.get("frame")?.as_object()? {
            put(k, text(v));
        }
    }
    let payload = match o.get("payload") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let mut bytes = encode(&Message {
        headers: headers
            .into_iter()
            .map(|(k, v)| (k, HeaderValue::String(v)))
            .collect(),
        payload: payload.into_bytes(),
    });
    match o.get("badCrc").and_then(Value::as_str) {
        Some("prelude") => bytes[8] ^= 0xff,
        Some("message") => {
            if let Some(last) = bytes.last_mut() {
                *last ^= 0xff;
            }
        }
        _ => {}
    }
    if let Some(n) = o.get("truncate").and_then(Value::as_u64) {
        bytes.truncate(n as usize);
    }
    Some(bytes)
}

/// The bytes of one recorded chunk: a string, `{"b64"}`, `{"hex"}`, `{"text"}` or an
/// event-stream message (see `frame_bytes`).
pub fn chunk_bytes(chunk: &Value) -> Vec<u8> {
    match chunk {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(o) => {
            if ["event", "exception", "error", "frame"]
                .iter()
                .any(|k| o.contains_key(*k))
            {
                return frame_bytes(o).unwrap_or_default();
            }
            if let Some(b) = o.get("b64").and_then(Value::as_str) {
                return base64_decode(b);
            }
            if let Some(h) = o.get("hex").and_then(Value::as_str) {
                return (0..h.len() / 2)
                    .filter_map(|i| u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok())
                    .collect();
            }
            o.get("text")
                .and_then(Value::as_str)
                .map(|t| t.as_bytes().to_vec())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Standard base64 (padding optional) to bytes; invalid characters are skipped.
pub fn base64_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// The responses of a case (`responses`, or the single `response`).
pub fn responses_of(case: &Value) -> Vec<Value> {
    match case.get("responses").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a.clone(),
        _ => vec![case.get("response").cloned().unwrap_or(Value::Null)],
    }
}

/// Starts a server on 127.0.0.1 answering the n-th request with `responses[n]` (or the
/// last one).
pub async fn start_server(responses: Vec<Value>) -> std::io::Result<ReplayServer> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://{}", listener.local_addr()?);
    let requests: Arc<Mutex<Vec<CapturedRequest>>> = Arc::default();
    let reqs = requests.clone();
    let responses = Arc::new(responses);
    let task = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let reqs = reqs.clone();
            let responses = responses.clone();
            tokio::spawn(async move {
                let _ = serve_connection(sock, reqs, responses).await;
            });
        }
    });
    Ok(ReplayServer {
        origin,
        requests,
        task,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A connection's socket and the bytes read from it but not used yet.
struct Connection {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Connection {
    /// Reads until `ready` holds for the buffer; `false` when the peer closed first.
    async fn fill(&mut self, ready: impl Fn(&[u8]) -> bool) -> std::io::Result<bool> {
        while !ready(&self.buf) {
            let mut tmp = [0u8; 8192];
            let n = self.sock.read(&mut tmp).await?;
            if n == 0 {
                return Ok(false);
            }
            self.buf.extend_from_slice(&tmp[..n]);
        }
        Ok(true)
    }

    /// The buffered text up to `needle`, both taken out of the buffer.
    async fn take_until(&mut self, needle: &[u8]) -> std::io::Result<Option<String>> {
        if !self.fill(|b| find(b, needle).is_some()).await? {
            return Ok(None);
        }
        let end = find(&self.buf, needle).unwrap_or(0);
        let text = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + needle.len());
        Ok(Some(text))
    }

    /// The next `len` bytes.
    async fn take(&mut self, len: usize) -> std::io::Result<Option<Vec<u8>>> {
        if !self.fill(|b| b.len() >= len).await? {
            return Ok(None);
        }
        Ok(Some(self.buf.drain(..len).collect()))
    }

    /// One request; `None` when the peer closed the connection.
    async fn read_request(&mut self) -> std::io::Result<Option<CapturedRequest>> {
        let Some(head) = self.take_until(b"\r\n\r\n").await? else {
            return Ok(None);
        };
        let mut lines = head.split("\r\n");
        let mut parts = lines.next().unwrap_or("").split(' ');
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let body = if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            self.read_chunked_body().await?
        } else {
            let len = get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            self.take(len).await?
        };
        Ok(body.map(|body| CapturedRequest {
            method,
            path,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }))
    }

    async fn read_chunked_body(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let mut body = Vec::new();
        loop {
            let Some(size_line) = self.take_until(b"\r\n").await? else {
                return Ok(None);
            };
            let size = size_line.split(';').next().unwrap_or("0").trim();
            let size = usize::from_str_radix(size, 16).unwrap_or(0);
            let Some(chunk) = self.take(size + 2).await? else {
                return Ok(None);
            };
            body.extend_from_slice(&chunk[..size]);
            if size == 0 {
                return Ok(Some(body));
            }
        }
    }

    /// Writes `response` (status, headers, chunks with their delay) as a chunked body.
    async fn write_response(&mut self, response: &Value) -> std::io::Result<()> {
        let status = response
            .get("status")
            .and_then(Value::as_u64)
            .unwrap_or(200);
        let reason = reqwest::StatusCode::from_u16(status as u16)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unknown");
        let mut head = format!("HTTP/1.1 {status} {reason}\r\n");
        for (k, v) in response
            .get("headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let lk = k.to_ascii_lowercase();
            if lk == "content-length" || lk == "transfer-encoding" || lk == "connection" {
                continue;
            }
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n");
        self.write(head.as_bytes()).await?;
        let delay = response
            .get("chunkDelayMs")
            .and_then(Value::as_u64)
            .unwrap_or(3);
        for chunk in response
            .get("chunks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let bytes = chunk_bytes(chunk);
            if !bytes.is_empty() {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                self.write(&frame).await?;
            }
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
        }
        self.write(b"0\r\n\r\n").await
    }

    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.sock.write_all(bytes).await?;
        self.sock.flush().await
    }
}

async fn serve_connection(
    sock: TcpStream,
    reqs: Arc<Mutex<Vec<CapturedRequest>>>,
    responses: Arc<Vec<Value>>,
) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut conn = Connection {
        sock,
        buf: Vec::new(),
    };
    while let Some(request) = conn.read_request().await? {
        let index = {
            let mut r = reqs.lock();
            r.push(request);
            r.len() - 1
        };
        let Some(response) = responses.get(index.min(responses.len().saturating_sub(1))) else {
            return Ok(());
        };
        conn.write_response(response).await?;
    }
    Ok(())
}
