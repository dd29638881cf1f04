//! `OTEL_EXPORTER_OTLP_ENDPOINT` turns on the traces of a run: they reach a receiver on
//! 127.0.0.1; without it nothing is sent.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::{command, dirs, run, stderr, Reply, Server};

/// Accepts OTLP/HTTP posts; sends (path, body) for each.
fn receiver() -> (u16, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
            let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
            let _ = tx.send((path, body));
        }
    });
    (port, rx)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_run_exports_its_spans_when_the_endpoint_is_set_and_nothing_otherwise() {
    let (home, cwd) = dirs();
    let (port, exports) = receiver();
    let server = Server::start(vec![Reply::text("hello")]);
    let mut c = command(home.path(), cwd.path());
    c.env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{port}"),
    )
    .args([
        "--base-url",
        &server.url,
        "--model",
        "local-1",
        "-p",
        "my private prompt",
    ]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    // Both exports were flushed before tern exited.
    let mut posts = Vec::new();
    while let Ok(post) =
        exports.recv_timeout(Duration::from_secs(if posts.is_empty() { 10 } else { 1 }))
    {
        posts.push(post);
    }
    let body = posts
        .iter()
        .find(|(path, _)| path == "/v1/traces")
        .map(|(_, body)| body.clone())
        .unwrap_or_else(|| {
            panic!(
                "no trace export in {:?}",
                posts.iter().map(|p| &p.0).collect::<Vec<_>>()
            )
        });
    assert!(
        contains(&body, "invoke_agent tern"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert!(contains(&body, "chat local-1"));
    assert!(contains(&body, "gen_ai.request.model"));
    assert!(
        !contains(&body, "my private prompt"),
        "content is not recorded unless asked"
    );
    let metrics = posts
        .iter()
        .find(|(path, _)| path == "/v1/metrics")
        .expect("a metrics export");
    assert!(contains(&metrics.1, "gen_ai.client.operation.duration"));

    let server = Server::start(vec![Reply::text("hello")]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-p", "hi"]);
    assert_eq!(run(c).status.code(), Some(0));
    assert!(
        exports.recv_timeout(Duration::from_millis(500)).is_err(),
        "nothing is sent when off"
    );
}
