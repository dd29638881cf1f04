//! `OTEL_EXPORTER_OTLP_ENDPOINT` turns on the traces of a run: they reach a receiver on
//! 127.0.0.1; without it nothing is sent.

mod common;

use std::time::Duration;

use common::{command, dirs, run, stderr, Reply, Server};
use tern_telemetry::testing::OtlpReceiver;

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_run_exports_its_spans_when_the_endpoint_is_set_and_nothing_otherwise() {
    let (home, cwd) = dirs();
    let OtlpReceiver { port, exports } = OtlpReceiver::start().unwrap();
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
        .find(|p| p.path == "/v1/traces")
        .map(|p| p.body.clone())
        .unwrap_or_else(|| {
            panic!(
                "no trace export in {:?}",
                posts.iter().map(|p| &p.path).collect::<Vec<_>>()
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
        .find(|p| p.path == "/v1/metrics")
        .expect("a metrics export");
    assert!(contains(&metrics.body, "gen_ai.client.operation.duration"));

    let server = Server::start(vec![Reply::text("hello")]);
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", &server.url, "-p", "hi"]);
    assert_eq!(run(c).status.code(), Some(0));
    assert!(
        exports.recv_timeout(Duration::from_millis(500)).is_err(),
        "nothing is sent when off"
    );
}
