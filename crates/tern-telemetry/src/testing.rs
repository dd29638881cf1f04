//! A local OTLP/HTTP receiver for tests (the `testing` feature): it accepts exports on
//! 127.0.0.1 and hands over each request's path and body, so a test checks what a run really
//! sent over the wire.
//!
//! ```
//! use std::time::Duration;
//! use tern_telemetry::testing::OtlpReceiver;
//!
//! let receiver = OtlpReceiver::start().expect("a port on 127.0.0.1");
//! let endpoint = format!("http://127.0.0.1:{}/v1/traces", receiver.port);
//! # let _ = endpoint;
//! // nothing was exported yet
//! assert!(receiver.exports.recv_timeout(Duration::from_millis(10)).is_err());
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;

/// One export as the receiver read it.
#[derive(Clone, Debug)]
pub struct Export {
    /// The request's path (`/v1/traces`, `/v1/metrics`).
    pub path: String,
    /// The request's body (an OTLP protobuf message).
    pub body: Vec<u8>,
}

/// A receiver listening on 127.0.0.1; it answers every export with `200 OK`.
pub struct OtlpReceiver {
    /// The port it listens on.
    pub port: u16,
    /// Each export, in the order they arrived.
    pub exports: mpsc::Receiver<Export>,
}

/// Bodies larger than this are refused: a test's export is small.
const MAX_BODY: usize = 64 << 20;

impl OtlpReceiver {
    /// Binds a free port on 127.0.0.1 and serves it on a thread of its own (which ends when
    /// `exports` is dropped and the next connection comes, or with the process).
    pub fn start() -> io::Result<OtlpReceiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let (tx, exports) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                // A request it cannot read is dropped; the exporter reports its own error.
                if let Ok(export) = serve(stream) {
                    if tx.send(export).is_err() {
                        return;
                    }
                }
            }
        });
        Ok(OtlpReceiver { port, exports })
    }
}

/// Reads one request (request line, headers, a `content-length` body) and answers it.
fn serve(mut stream: TcpStream) -> io::Result<Export> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v
                    .trim()
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content-length"))?;
            }
        }
    }
    if length > MAX_BODY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
    )?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    Ok(Export { path, body })
}
