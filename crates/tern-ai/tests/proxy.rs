//! Provider requests go through the proxy the environment names (`HTTP_PROXY` /
//! `HTTPS_PROXY` / `ALL_PROXY`, with `NO_PROXY` exceptions), as pi's do: a real forwarding
//! proxy on 127.0.0.1 relays a recorded exchange to the replay server and notes each
//! request line it relayed.
//!
//! The HTTP client reads the proxy variables once, when it is built: this file holds one test,
//! so its process sets them before any request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tern_ai::providers::replay::{case_inputs, start_server};
use tern_ai::providers::run;

#[path = "support/runtime.rs"]
mod runtime;

#[path = "support/final_message.rs"]
mod final_message;
use final_message::Final;

/// A forward proxy for plain HTTP: reads an absolute-form request, sends it on in origin
/// form to the host it names, and copies the answer back. Returns its address and the
/// request lines it relayed.
fn forward_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    let addr = listener.local_addr().expect("proxy address").to_string();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || relay(client, &log));
        }
    });
    (addr, seen)
}

fn relay(client: TcpStream, log: &Mutex<Vec<String>>) -> Option<()> {
    let mut reader = BufReader::new(client.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    log.lock().ok()?.push(line.trim_end().to_string());
    // `POST http://host:port/path HTTP/1.1`
    let mut parts = line.split_whitespace();
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let rest = target.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut head = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if !h.to_ascii_lowercase().starts_with("proxy-") {
            head.push(h);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let mut upstream = TcpStream::connect(host).ok()?;
    write!(upstream, "{method} /{path} {version}\r\n").ok()?;
    for h in head {
        upstream.write_all(h.as_bytes()).ok()?;
    }
    upstream.write_all(b"\r\n").ok()?;
    upstream.write_all(&body).ok()?;
    let mut answer = upstream;
    let mut client = client;
    std::io::copy(&mut answer, &mut client).ok()?;
    Some(())
}

#[test]
fn requests_go_through_the_proxy_the_environment_names() {
    let (proxy, seen) = forward_proxy();
    std::env::set_var("HTTP_PROXY", format!("http://{proxy}"));
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");
    let case: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/providers/streams/openai-completions/plain-text.json"
        ))
        .expect("the recorded case"),
    )
    .expect("case JSON");
    runtime::runtime().block_on(async {
        let server = start_server(vec![case["response"].clone(), case["response"].clone()])
            .await
            .expect("replay server");
        let (model, context, options) =
            case_inputs(&case, &server.origin).expect("the case's inputs");
        let mut sink = Final::default();
        run(&model, &context, &options, &mut sink).await;
        let message = sink.0.expect("a final message");
        assert_eq!(message.error_message, None);
        assert!(!message.text().is_empty());
        let relayed = seen.lock().unwrap().clone();
        assert_eq!(relayed.len(), 1, "{relayed:?}");
        assert!(
            relayed[0].starts_with(&format!("POST {}/", server.origin)),
            "absolute-form request line through the proxy: {relayed:?}"
        );
        assert_eq!(
            server.requests.lock().len(),
            1,
            "the server got it from the proxy"
        );
    });
}
