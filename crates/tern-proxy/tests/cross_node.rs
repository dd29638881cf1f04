//! Cross-implementation tests, both ways (they need Node.js 20+; see tests/common/node.rs):
//!
//! 1. the reference's `streamProxy` and tern's [`ProxyStreamFn`] against tern's
//!    [`ProxyServer`] serving tern's scripted faux model;
//! 2. both clients against a reference-shaped Node server (the reference's faux provider,
//!    events written without `partial`).
//!
//! In each case the two clients must produce the same events and final message, and, when
//! nothing aborts, the same ones as the scripted model called directly without a proxy.

mod common;

use std::time::Duration;

use serde_json::json;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{ContentBlock, StopReason, StreamFn};
use tern_proxy::ProxyServer;

use common::node::{reference_client, reference_direct, reference_server};
use common::{
    assert_same, collect, context, fires_within, model, serve, tern_client, without_duration,
    Fragmented, Recorded, Served, TOKEN,
};

/// tern's scripted upstream for a case: the same answers the Node cases give.
fn tern_upstream(case: &str) -> Box<dyn StreamFn> {
    let fast = |r: FauxResponse| FauxModel::new(vec![r]).streaming(4, Duration::ZERO);
    match case {
        "text" => Box::new(fast(FauxResponse::text(
            "Hello from the tern proxy server!",
        ))),
        "tool" => Box::new(Fragmented(
            fast(
                FauxResponse::tool_call(
                    "call_1",
                    "read",
                    json!({"path": "src/main.rs", "limit": 20, "flags": ["a", "b"]}),
                )
                .with_text_first("Reading."),
            ),
            4,
        )),
        "thinking" => Box::new(fast(
            FauxResponse::text("Forty-two.").with_thinking("Let me think about it."),
        )),
        "error" => Box::new(fast(FauxResponse {
            content: vec![ContentBlock::text("Half an ans")],
            stop_reason: StopReason::Error,
            error_message: Some("upstream failed".into()),
            ..FauxResponse::default()
        })),
        "abort" => Box::new(
            FauxModel::new(vec![FauxResponse::text(
                "one two three four five six seven eight nine ten",
            )])
            .streaming(4, Duration::from_millis(150)),
        ),
        other => panic!("no case {other}"),
    }
}

struct Boxed(Box<dyn StreamFn>);

impl StreamFn for Boxed {
    fn stream(
        &self,
        model: &tern_ai::Model,
        context: tern_ai::Context,
        options: &tern_ai::StreamOptions,
    ) -> tern_ai::StreamStart {
        self.0.stream(model, context, options)
    }
}

/// The upstream called directly, without a proxy.
/// A tern proxy server of `case`'s scripted upstream, accepting [`TOKEN`].
async fn serve_case(case: &str) -> Served {
    serve(ProxyServer::new(Boxed(tern_upstream(case))).authorize(|t| t == TOKEN)).await
}

async fn tern_direct(case: &str) -> serde_json::Value {
    let signal = tokio_util::sync::CancellationToken::new();
    let options = tern_ai::StreamOptions {
        signal: signal.clone(),
        ..Default::default()
    };
    let stream = tern_upstream(case)
        .stream(&model(case), context(), &options)
        .unwrap();
    collect(stream, &signal, None).await
}

fn final_of(trace: &serde_json::Value) -> &serde_json::Value {
    &trace["final"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_and_tern_client_agree_against_tern_server() {
    for case in ["text", "tool", "thinking", "error"] {
        let expected = tern_direct(case).await;
        let server = serve_case(case).await;
        let reference = reference_client(&server.url, TOKEN, case, None).await;
        assert_same(
            &format!("{case}: reference client vs direct"),
            &expected,
            &reference,
        );
        drop(server);
        let server = serve_case(case).await;
        let tern = tern_client(&server.url, TOKEN, case, None).await;
        assert_same(
            &format!("{case}: tern client vs reference client"),
            &reference,
            &tern,
        );
    }
    // The fragments reach the client one by one.
    let tool = tern_direct("tool").await;
    let fragments = tool["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "toolcall_delta")
        .count();
    assert!(fragments > 5, "{fragments} toolcall_delta events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_mid_stream_reads_the_same_and_cancels_the_upstream() {
    let mut traces = Vec::new();
    for which in ["reference", "tern"] {
        let (upstream, seen) = Recorded::new(Boxed(tern_upstream("abort")));
        let server = serve(ProxyServer::new(upstream).authorize(|t| t == TOKEN)).await;
        let trace = match which {
            "reference" => reference_client(&server.url, TOKEN, "abort", Some(2)).await,
            _ => tern_client(&server.url, TOKEN, "abort", Some(2)).await,
        };
        let signal = seen.lock()[0].1.signal.clone();
        assert!(
            fires_within(&signal, 5).await,
            "{which} client: the upstream request was not cancelled after the client went away"
        );
        traces.push(trace);
    }
    let reference = &traces[0];
    assert_same(
        "abort: tern client vs reference client",
        reference,
        &traces[1],
    );
    let last = final_of(reference);
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(last["errorMessage"], "Request aborted by user");
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "one two "}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_reads_the_same_from_both_clients() {
    let server = serve_case("text").await;
    let reference = reference_client(&server.url, "wrong", "text", None).await;
    let tern = tern_client(&server.url, "wrong", "text", None).await;
    assert_same("401: tern client vs reference client", &reference, &tern);
    assert_eq!(
        final_of(&tern)["errorMessage"],
        "Proxy error: Unauthorized: the proxy did not accept this token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tern_client_and_reference_client_agree_against_a_reference_shaped_server() {
    let server = reference_server().await;
    for case in ["text", "tool", "thinking", "error"] {
        let expected = reference_direct(case).await;
        let reference = reference_client(&server.url, TOKEN, case, None).await;
        assert_same(
            &format!("{case}: reference client vs direct"),
            &without_duration(&expected),
            &without_duration(&reference),
        );
        let tern = tern_client(&server.url, TOKEN, case, None).await;
        assert_same(
            &format!("{case}: tern client vs reference client"),
            &reference,
            &tern,
        );
    }
    for (case, token, abort) in [
        ("abort", TOKEN, Some(2)),
        ("cut", TOKEN, None),
        ("text", "wrong", None),
    ] {
        let reference = reference_client(&server.url, token, case, abort).await;
        let tern = tern_client(&server.url, token, case, abort).await;
        assert_same(
            &format!("{case}/{token}: tern client vs reference client"),
            &reference,
            &tern,
        );
    }
    let cut = tern_client(&server.url, TOKEN, "cut", None).await;
    assert_eq!(
        final_of(&cut)["errorMessage"],
        "Connection closed by proxy server before the response completed"
    );
    assert_eq!(
        final_of(&cut)["content"],
        json!([{"type": "text", "text": "cut sh"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_clients_send_the_same_request_and_read_an_error_status_alike() {
    const ANSWER: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: 20\r\nconnection: close\r\n\r\n{\"error\":\"captured\"}";
    let (url, mut requests) = common::raw_server(ANSWER).await;
    let reference = reference_client(&url, "tok-1", "text", None).await;
    let from_reference = requests.recv().await.unwrap();
    let tern = tern_client(&url, "tok-1", "text", None).await;
    let from_tern = requests.recv().await.unwrap();
    assert_same("500: tern client vs reference client", &reference, &tern);
    assert_eq!(final_of(&tern)["errorMessage"], "Proxy error: captured");
    for r in [&from_reference, &from_tern] {
        assert!(
            r.head.starts_with("POST /api/stream HTTP/1.1\r\n"),
            "{}",
            r.head
        );
        assert_eq!(r.header("authorization"), Some("Bearer tok-1"));
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    // Numbers by value: tern writes a model's prices as floats, Node as integers.
    let body = |r: &tern_testkit::http::Request| {
        common::normalize(&serde_json::from_slice::<serde_json::Value>(&r.body).unwrap())
    };
    assert_eq!(body(&from_tern), body(&from_reference));
    assert_eq!(body(&from_tern)["options"], json!({}));
}
