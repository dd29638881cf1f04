//! The HTTP/1.1 a scripted test server speaks: reading one request (head and
//! `Content-Length` body) from a socket, blocking or on tokio; the heads and bodies it
//! answers with; chunked framing; and accept loops on 127.0.0.1.
//!
//! Deliberately minimal: no chunked request bodies, no `Expect: 100-continue`. The clients
//! under test (reqwest) send neither to these servers.

use std::future::Future;
use std::io::{self, BufRead};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A head longer than this is taken for a broken client: the connection is dropped.
pub const MAX_HEAD: usize = 64 * 1024;

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    /// The request line and the headers, as sent (CRLFs and the blank line included).
    pub head: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// The path of the request line (`""` when there is none).
    pub fn path(&self) -> &str {
        self.head.split_whitespace().nth(1).unwrap_or_default()
    }

    /// The value of header `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.head, name)
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The value of header `name` (any case) in `head`, trimmed.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn content_length(head: &str) -> usize {
    header(head, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Reads one request from a blocking reader. `None` when the connection ends (or the head
/// outgrows [`MAX_HEAD`]) before the head is complete; an error when it ends inside the
/// body.
pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut head = String::new();
    loop {
        let before = head.len();
        if reader.read_line(&mut head)? == 0 || head.len() > MAX_HEAD {
            return Ok(None);
        }
        if head[before..].trim_end().is_empty() {
            break;
        }
    }
    let mut body = vec![0u8; content_length(&head)];
    reader.read_exact(&mut body)?;
    Ok(Some(Request { head, body }))
}

/// Reads one request from a tokio socket, keeping the connection usable for the next one
/// (keep-alive). `None` when the connection ends before the request is complete, or the
/// head outgrows [`MAX_HEAD`].
pub async fn read_request_async(
    sock: &mut (impl AsyncRead + Unpin),
) -> io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len = content_length(&head);
    // A request arrives whole before its answer is asked for: what is read past its body
    // would be a pipelined request, which reqwest does not send.
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    buf.truncate(head_end + len);
    let body = buf.split_off(head_end);
    Ok(Some(Request { head, body }))
}

/// The head of a streamed answer that ends with the connection.
pub const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";

/// The head of a streamed answer in chunked framing (the connection stays open).
pub const CHUNKED_SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// The chunk that ends a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// `data` as one chunk of a chunked body.
pub fn chunked(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 12);
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A whole answer: `status` is the status line's tail (`"429 Too Many Requests"`),
/// `headers` more header lines, each ending in CRLF.
pub fn response(status: &str, content_type: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{headers}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Binds a free port of 127.0.0.1 and hands each connection to `handle` on a thread of its
/// own; returns the origin (`http://127.0.0.1:PORT`). The server lives as long as the
/// process.
pub fn serve_threads(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local addr").port();
    let handle = std::sync::Arc::new(handle);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let handle = handle.clone();
            thread::spawn(move || handle(stream));
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Binds a free port of 127.0.0.1 and hands each connection to `handle` as a task of its
/// own on the current tokio runtime; returns the origin (`http://127.0.0.1:PORT`). A failed
/// accept (out of descriptors, say) is waited out, as a server would.
pub async fn serve_tasks<F, Fut>(handle: F) -> io::Result<String>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((sock, _)) => {
                    tokio::spawn(handle(sock));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    Ok(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &[u8] =
        b"POST /v1/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}GET / HTTP/1.1\r\n\r\n";

    #[test]
    fn a_blocking_read_takes_one_request() {
        let mut reader = io::BufReader::new(RAW);
        let r = read_request(&mut reader).unwrap().unwrap();
        assert_eq!(r.path(), "/v1/chat");
        assert_eq!(r.header("content-length"), Some("7"));
        assert_eq!(r.json()["a"], 1);
        let next = read_request(&mut reader).unwrap().unwrap();
        assert_eq!((next.path(), next.body.len()), ("/", 0));
        assert!(read_request(&mut reader).unwrap().is_none());
    }

    #[tokio::test]
    async fn an_async_read_stops_at_a_cut_body() {
        let mut cut = &RAW[..50];
        assert!(read_request_async(&mut cut).await.unwrap().is_none());
        let mut whole = &RAW[..RAW.len() - 16];
        let r = read_request_async(&mut whole).await.unwrap().unwrap();
        assert_eq!(r.body, b"{\"a\":1}");
    }

    #[test]
    fn framing() {
        assert_eq!(chunked(b"hello, world"), b"c\r\nhello, world\r\n");
        let r = response("404 Not Found", "text/plain", "x-a: 1\r\n", b"no");
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nx-a: 1\r\n\r\nno"
        );
    }
}
