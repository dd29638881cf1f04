//! Fault injection: every provider against a local HTTP server that misbehaves. Each fault
//! must end the stream with exactly one terminal event, an error with a message saying what
//! happened, within a generous timeout, with memory bounded. No timing assertions beyond the
//! timeouts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tern_ai::providers::{run, ProviderSink};
use tern_ai::{AssistantMessageEvent, Model, StopReason, StreamOptions};
use tern_testkit::http;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const APIS: [&str; 4] = [
    "openai-completions",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
];

/// How long any single fault may take before we call it a hang.
const HANG: Duration = Duration::from_secs(60);

#[derive(Clone)]
enum Fault {
    /// Head and part of the body, then a TCP reset.
    Reset(Vec<u8>),
    /// Head and part of the body, then silence forever.
    StallAfterHead(Vec<u8>),
    /// The request is read, nothing is ever answered.
    StallBeforeHead,
    /// A valid body, one byte per chunk.
    Drip(Vec<u8>),
    /// One SSE line of this many bytes, in 64 KiB chunks.
    HugeLine(usize),
    /// A complete response.
    Full {
        status: u16,
        content_type: &'static str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
}

#[derive(Default)]
struct Stats {
    requests: AtomicUsize,
    body_bytes_sent: AtomicUsize,
}

async fn chunk(sock: &mut TcpStream, stats: &Stats, data: &[u8]) -> std::io::Result<()> {
    sock.write_all(&http::chunked(data)).await?;
    sock.flush().await?;
    stats
        .body_bytes_sent
        .fetch_add(data.len(), Ordering::SeqCst);
    Ok(())
}

async fn serve(mut sock: TcpStream, fault: Fault, stats: Arc<Stats>) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    loop {
        if http::read_request_async(&mut sock).await?.is_none() {
            return Ok(());
        }
        stats.requests.fetch_add(1, Ordering::SeqCst);
        match &fault {
            Fault::Reset(prefix) => {
                sock.write_all(http::CHUNKED_SSE_HEAD).await?;
                chunk(&mut sock, &stats, prefix).await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                // Linger 0 does not block on drop; it makes the close a reset.
                #[allow(deprecated)]
                sock.set_linger(Some(Duration::ZERO))?;
                return Ok(()); // dropped with linger 0: RST
            }
            Fault::StallAfterHead(prefix) => {
                sock.write_all(http::CHUNKED_SSE_HEAD).await?;
                chunk(&mut sock, &stats, prefix).await?;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Fault::StallBeforeHead => tokio::time::sleep(Duration::from_secs(3600)).await,
            Fault::Drip(body) => {
                sock.write_all(http::CHUNKED_SSE_HEAD).await?;
                for b in body {
                    chunk(&mut sock, &stats, std::slice::from_ref(b)).await?;
                }
                sock.write_all(http::LAST_CHUNK).await?;
            }
            Fault::HugeLine(len) => {
                sock.write_all(http::CHUNKED_SSE_HEAD).await?;
                chunk(&mut sock, &stats, b"data: {\"x\":\"").await?;
                let block = vec![b'a'; 64 * 1024];
                let mut sent = 0;
                while sent < *len {
                    chunk(&mut sock, &stats, &block).await?;
                    sent += block.len();
                }
                chunk(&mut sock, &stats, b"\"}\n\n").await?;
                sock.write_all(http::LAST_CHUNK).await?;
            }
            Fault::Full {
                status,
                content_type,
                headers,
                body,
            } => {
                let headers: String = headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}\r\n"))
                    .collect();
                let answer = http::response(&format!("{status} X"), content_type, &headers, body);
                sock.write_all(&answer).await?;
                sock.flush().await?;
                stats
                    .body_bytes_sent
                    .fetch_add(body.len(), Ordering::SeqCst);
            }
        }
    }
}

async fn start(fault: Fault) -> (String, Arc<Stats>) {
    let stats = Arc::new(Stats::default());
    let st = stats.clone();
    let origin = http::serve_tasks(move |sock| {
        let serving = serve(sock, fault.clone(), st.clone());
        async move {
            let _ = serving.await;
        }
    })
    .await
    .unwrap();
    (origin, stats)
}

fn case(api: &str) -> Value {
    let path = format!(
        "{}/tests/providers/streams/{api}/plain-text.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn model(api: &str, origin: &str) -> Model {
    let mut m = case(api)["request"]["model"].clone();
    let base = m["baseUrl"].as_str().unwrap().replace("{{origin}}", origin);
    m["baseUrl"] = Value::String(base);
    m["api"] = Value::String(api.into());
    serde_json::from_value(m).unwrap()
}

/// The valid streaming body of the `plain-text` case.
fn valid_body(api: &str) -> Vec<u8> {
    let c = case(api);
    let r = c
        .get("response")
        .cloned()
        .unwrap_or_else(|| c["responses"][0].clone());
    r["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c.as_str().unwrap().as_bytes().to_vec())
        .collect()
}

struct Collect(Vec<AssistantMessageEvent>);

impl ProviderSink for Collect {
    fn emit(&mut self, event: AssistantMessageEvent) {
        self.0.push(event);
    }
}

struct Outcome {
    reason: StopReason,
    message: String,
    stats: Arc<Stats>,
}

/// A `200` with `content_type` and `body`, default options.
async fn ok_response(api: &str, content_type: &'static str, body: Vec<u8>) -> Outcome {
    let fault = Fault::Full {
        status: 200,
        content_type,
        headers: vec![],
        body,
    };
    drive(api, fault, StreamOptions::default()).await
}

async fn drive(api: &str, fault: Fault, options: StreamOptions) -> Outcome {
    let (origin, stats) = start(fault).await;
    let model = model(api, &origin);
    let options = StreamOptions {
        api_key: Some("test-key".into()),
        ..options
    };
    let context = tern_ai::Context::new(vec![tern_ai::Message::user_text("hi")]);
    let mut sink = Collect(Vec::new());
    tokio::time::timeout(HANG, run(&model, &context, &options, &mut sink))
        .await
        .unwrap_or_else(|_| panic!("{api}: hung past {HANG:?}"));
    let events = sink.0;
    let terminal: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
            )
        })
        .collect();
    assert_eq!(terminal.len(), 1, "{api}: one terminal event");
    let (reason, message) = match events.last().unwrap() {
        AssistantMessageEvent::Done { message, .. } => (message.stop_reason, String::new()),
        AssistantMessageEvent::Error { error, .. } => (
            error.stop_reason,
            error.error_message.clone().unwrap_or_default(),
        ),
        other => panic!("{api}: last event is {}", other.kind()),
    };
    eprintln!("{api}: {reason:?} {message:.200}");
    Outcome {
        reason,
        message,
        stats,
    }
}

fn assert_error(api: &str, o: &Outcome, needle: &str) {
    assert_eq!(o.reason, StopReason::Error, "{api}: {}", o.message);
    assert!(!o.message.trim().is_empty(), "{api}: empty error message");
    assert!(
        o.message.contains(needle),
        "{api}: {:?} does not mention {needle:?}",
        o.message
    );
}

async fn each_api<F, Fut>(f: F)
where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::future::join_all(APIS.iter().map(|api| f(api))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_reset_mid_stream() {
    each_api(|api| async move {
        let body = valid_body(api);
        let prefix = body[..body.len() / 2].to_vec();
        let o = drive(api, Fault::Reset(prefix), StreamOptions::default()).await;
        assert_error(api, &o, "");
    })
    .await;
}

/// Options whose idle timeout (300 ms) a stalled server trips quickly.
fn idle_300ms() -> StreamOptions {
    StreamOptions {
        idle_timeout_ms: Some(300),
        ..StreamOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_after_head_hits_the_idle_timeout() {
    each_api(|api| async move {
        let body = valid_body(api);
        let prefix = body[..body.len() / 3].to_vec();
        let o = drive(api, Fault::StallAfterHead(prefix), idle_300ms()).await;
        assert_error(api, &o, "Idle timeout");
        assert!(o.message.contains("300 ms"), "{}", o.message);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_before_head_hits_the_idle_timeout() {
    each_api(|api| async move {
        let o = drive(api, Fault::StallBeforeHead, idle_300ms()).await;
        assert_error(api, &o, "Idle timeout");
        assert!(o.message.contains("response head"), "{}", o.message);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_at_a_time_drip_still_succeeds() {
    each_api(|api| async move {
        let o = drive(api, Fault::Drip(valid_body(api)), StreamOptions::default()).await;
        assert_eq!(o.reason, StopReason::Stop, "{api}: {}", o.message);
    })
    .await;
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_megabyte_line_fails_cleanly_with_bounded_memory() {
    const LINE: usize = 50 * 1024 * 1024;
    // One provider at a time, so that the peak-memory figure means something.
    for api in APIS {
        let o = drive(api, Fault::HugeLine(LINE), StreamOptions::default()).await;
        assert_error(api, &o, "exceeded");
        let sent = o.stats.body_bytes_sent.load(Ordering::SeqCst);
        // The client gave up at the 16 MiB cap: the server could not push the whole line
        // (what it did push is the cap plus socket buffers).
        assert!(
            sent < LINE,
            "{api}: server sent {sent} bytes, the client read the whole line"
        );
    }
    if let Some(kib) = peak_rss_kib() {
        eprintln!("peak RSS {} MiB", kib / 1024);
        // Generous: the cap is 16 MiB per stream; a client buffering the line would need
        // well over 100 MiB (the bytes, then the String) per provider.
        assert!(kib < 400 * 1024, "peak RSS {kib} KiB");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_never_panics() {
    each_api(|api| async move {
        // Garbage records only: nothing parses.
        let garbage = b"data: \xff\xfe\xfd\x80\n\n\xc3\x28\xa0\xa1\n\n".repeat(4);
        let o = ok_response(api, "text/event-stream", garbage).await;
        assert_error(api, &o, "");
        // Invalid bytes inside an otherwise valid stream: lossily decoded, never a panic.
        let mut body = b": \xff\xfe comment\n\n".to_vec();
        body.extend(valid_body(api));
        let o = ok_response(api, "text/event-stream", body).await;
        assert!(
            matches!(o.reason, StopReason::Stop | StopReason::Error),
            "{api}"
        );
    })
    .await;
}

fn too_many(headers: Vec<(&'static str, String)>) -> Fault {
    Fault::Full {
        status: 429,
        content_type: "application/json",
        headers,
        body: br#"{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":429}}"#
            .to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storm_of_429s() {
    each_api(|api| async move {
        // No retries (the default): one request, an error.
        let o = drive(api, too_many(vec![]), StreamOptions::default()).await;
        assert_error(api, &o, "");
        assert_eq!(o.stats.requests.load(Ordering::SeqCst), 1, "{api}");
        // Retries with backoff, no Retry-After: every retry is spent, then an error.
        let retries = StreamOptions {
            max_retries: Some(2),
            ..StreamOptions::default()
        };
        let o = drive(api, too_many(vec![]), retries.clone()).await;
        assert_error(api, &o, "");
        assert_eq!(o.stats.requests.load(Ordering::SeqCst), 3, "{api}");
        // Retry-After: 1 is honoured (Gemini's SDK ignores it and backs off).
        let o = drive(
            api,
            too_many(vec![("retry-after", "1".into())]),
            retries.clone(),
        )
        .await;
        assert_error(api, &o, "");
        assert_eq!(o.stats.requests.load(Ordering::SeqCst), 3, "{api}");
        // A Retry-After of an hour is refused at once rather than slept through.
        let o = drive(api, too_many(vec![("retry-after", "3600".into())]), retries).await;
        assert_error(api, &o, "");
        if api != "google-generative-ai" {
            assert!(o.message.contains("3600s retry delay"), "{}", o.message);
            assert_eq!(o.stats.requests.load(Ordering::SeqCst), 1, "{api}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_with_status_200() {
    each_api(|api| async move {
        let o = ok_response(api, "text/html; charset=utf-8", b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n\n<body><h1>Bad Gateway</h1></body></html>\n".to_vec()).await;
        // The error says what arrived instead of events.
        assert_error(api, &o, "not an event stream");
        assert_error(api, &o, "text/html");
        assert_error(api, &o, "502 Bad Gateway");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_with_status_200() {
    each_api(|api| async move {
        // A proxy's gzip of a stream, passed on without `Content-Encoding`.
        let mut body = vec![0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03];
        body.extend((0..200u8).map(|b| b.wrapping_mul(37)));
        let o = ok_response(api, "text/event-stream", body).await;
        assert_error(api, &o, "gzip-compressed data");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_closes_before_answering() {
    // A listener that accepts and closes at once.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            drop(sock);
        }
    });
    for api in APIS {
        let model = model(api, &origin);
        let options = StreamOptions {
            api_key: Some("k".into()),
            ..StreamOptions::default()
        };
        let context = tern_ai::Context::new(vec![tern_ai::Message::user_text("hi")]);
        let mut sink = Collect(Vec::new());
        tokio::time::timeout(HANG, run(&model, &context, &options, &mut sink))
            .await
            .expect("hang");
        match sink.0.last() {
            Some(AssistantMessageEvent::Error { error, .. }) => {
                assert!(error
                    .error_message
                    .as_deref()
                    .is_some_and(|m| !m.is_empty()))
            }
            _ => panic!("{api}: no error"),
        }
    }
}
