//! tern's client against tern's server (and against bare servers that misbehave), over real
//! HTTP on 127.0.0.1: options, refusals, failures, aborts, disconnects.

mod common;

use std::time::Duration;

use serde_json::json;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{
    assistant_stream, AssistantMessageEvent, AssistantMessageEventStream, Context, Model,
    PartialMessage, StopReason, StreamFn, StreamOptions, ThinkingLevel,
};
use tern_proxy::{ProxyServer, ProxyStreamFn};
use tokio_util::sync::CancellationToken;

use common::{context, fires_within, model, raw_server, serve, Recorded, TOKEN};

fn faux(text: &str) -> FauxModel {
    FauxModel::new(vec![FauxResponse::text(text)])
}

/// The final message a default client of `url` gets with `token`.
async fn plain_result(url: &str, token: &str) -> tern_ai::AssistantMessage {
    result_of(&ProxyStreamFn::new(url, token), StreamOptions::default()).await
}

/// A stream of a client of `url` under a signal the test fires: the signal and the stream.
fn abortable(url: &str) -> (CancellationToken, AssistantMessageEventStream) {
    let signal = CancellationToken::new();
    let options = StreamOptions {
        signal: signal.clone(),
        ..StreamOptions::default()
    };
    let client = ProxyStreamFn::new(url, "any");
    let stream = client.stream(&model("m"), context(), &options).unwrap();
    (signal, stream)
}

/// Fires `signal`; `stream` then ends `aborted` with `text`.
async fn assert_aborted(
    signal: &CancellationToken,
    stream: AssistantMessageEventStream,
    text: &str,
) {
    signal.cancel();
    let message = stream.result().await;
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.error_message.as_deref(), Some(text));
}

async fn result_of(client: &ProxyStreamFn, options: StreamOptions) -> tern_ai::AssistantMessage {
    let stream = client.stream(&model("m"), context(), &options).unwrap();
    (*stream.result().await).clone()
}

#[tokio::test]
async fn options_reach_the_upstream_and_the_key_stays_home() {
    let (upstream, seen) = Recorded::new(faux("ok"));
    let server = serve(ProxyServer::new(upstream).authorize(|t| t == TOKEN)).await;
    let client = ProxyStreamFn::new(&server.url, TOKEN).with_transport("sse");
    let mut headers = serde_json::Map::new();
    headers.insert("x-trace".into(), json!("1"));
    let options = StreamOptions {
        temperature: Some(0.25),
        max_tokens: Some(99),
        reasoning: Some(ThinkingLevel::Low),
        session_id: Some("s-1".into()),
        headers,
        api_key: Some("client-side-key".into()),
        ..StreamOptions::default()
    };
    let message = result_of(&client, options).await;
    assert_eq!(message.text(), "ok");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert!(message.duration_ms.is_some());
    let seen = seen.lock();
    let (m, o) = &seen[0];
    assert_eq!(m.id, "m");
    assert_eq!(o.temperature, Some(0.25));
    assert_eq!(o.max_tokens, Some(99));
    assert_eq!(o.reasoning, Some(ThinkingLevel::Low));
    assert_eq!(o.session_id.as_deref(), Some("s-1"));
    assert_eq!(o.headers["x-trace"], "1");
    assert!(
        o.api_key.is_none(),
        "the API key must not travel to the proxy"
    );
}

#[tokio::test]
async fn refusals_are_json_errors_the_client_words_as_the_reference() {
    let server = serve(
        ProxyServer::new(faux("never"))
            .authorize(|t| t == TOKEN)
            .resolve_model(|m| {
                if m.id == "allowed" {
                    Ok(m)
                } else {
                    Err(format!("Model {} is not served here", m.id))
                }
            }),
    )
    .await;
    let message = plain_result(&server.url, TOKEN).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Proxy error: Model m is not served here")
    );
    assert!(message.content.is_empty());

    let http = reqwest::Client::new();
    let url = format!("{}/api/stream", server.url);
    let missing = http.post(&url).body("{}").send().await.unwrap();
    assert_eq!(missing.status(), 401);
    let text = missing.text().await.unwrap();
    assert!(text.contains("Authorization: Bearer"), "{text}");
    let bad = http
        .post(&url)
        .header("Authorization", format!("Bearer {TOKEN}"))
        .body("{\"model\":")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: serde_json::Value = serde_json::from_str(&bad.text().await.unwrap()).unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid request body"),
        "{body}"
    );
}

#[tokio::test]
async fn a_stream_function_that_cannot_start_answers_502() {
    let failing = |_: &Model, _: Context, _: &StreamOptions| -> tern_ai::StreamStart {
        Err("no provider key configured".into())
    };
    let server = serve(ProxyServer::new(failing)).await;
    let message = plain_result(&server.url, "any").await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Proxy error: The stream function could not start: no provider key configured")
    );
}

#[tokio::test]
async fn an_upstream_that_ends_without_a_final_event_still_gets_one() {
    let dropping = |_: &Model, _: Context, _: &StreamOptions| -> tern_ai::StreamStart {
        let (tx, rx) = assistant_stream();
        let partial = PartialMessage::new(tern_ai::AssistantMessage::default());
        tx.push(AssistantMessageEvent::Start { partial });
        drop(tx);
        Ok(rx)
    };
    let server = serve(ProxyServer::new(dropping)).await;
    let message = plain_result(&server.url, "any").await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("The response stream ended without a final message")
    );
}

/// An upstream that sends nothing until its signal fires.
fn silent() -> impl StreamFn {
    |_: &Model, _: Context, options: &StreamOptions| -> tern_ai::StreamStart {
        let (tx, rx) = assistant_stream();
        let signal = options.signal.clone();
        tokio::spawn(async move {
            signal.cancelled().await;
            drop(tx);
        });
        Ok(rx)
    }
}

#[tokio::test]
async fn a_silent_upstream_is_cancelled_when_the_client_leaves_and_keep_alives_are_not_events() {
    let (upstream, seen) = Recorded::new(silent());
    let server =
        serve(ProxyServer::new(upstream).keep_alive(Some(Duration::from_millis(50)))).await;
    let (signal, stream) = abortable(&server.url);
    while seen.lock().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Keep-alive comments are not events: nothing arrives, the client keeps waiting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_aborted(&signal, stream, "Request aborted by user").await;
    let upstream_signal = seen.lock()[0].1.signal.clone();
    assert!(
        fires_within(&upstream_signal, 5).await,
        "the upstream was not cancelled"
    );
}

#[tokio::test]
async fn an_abort_before_the_response_head_reads_as_the_reference_fetch_rejection() {
    // A server that reads the request and never answers.
    let (url, mut requests) = raw_server(b"").await;
    let (signal, stream) = abortable(&url);
    requests.recv().await.unwrap();
    assert_aborted(&signal, stream, "This operation was aborted").await;
}

#[tokio::test]
async fn a_stalled_body_ends_at_the_idle_timeout() {
    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n17\r\ndata: {\"type\":\"start\"}\n\r\n";
    let (url, _requests) = raw_server(HEAD).await;
    let client = ProxyStreamFn::new(&url, "any");
    let options = StreamOptions {
        idle_timeout_ms: Some(300),
        ..StreamOptions::default()
    };
    let mut stream = client.stream(&model("m"), context(), &options).unwrap();
    let first = stream.next().await.unwrap();
    assert_eq!(first.kind(), "start");
    let message = stream.result().await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let text = message.error_message.clone().unwrap_or_default();
    assert!(
        text.starts_with("Idle timeout: the proxy server sent nothing for 300 ms"),
        "{text}"
    );
}

#[tokio::test]
async fn an_unreachable_server_fails_as_a_value() {
    // Bind and drop: nothing listens on the port now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = ProxyStreamFn::new(format!("http://127.0.0.1:{port}"), "any");
    let message = result_of(&client, StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    let text = message.error_message.clone().unwrap_or_default();
    assert!(text.starts_with("fetch failed: "), "{text}");

    let bad = ProxyStreamFn::new("not a url", "any");
    let message = result_of(&bad, StreamOptions::default()).await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Failed to parse URL from not a url/api/stream")
    );
}

#[test]
fn outside_a_runtime_the_client_says_what_it_needs() {
    let client = ProxyStreamFn::new("http://127.0.0.1:1", "any");
    let err = client
        .stream(&model("m"), context(), &StreamOptions::default())
        .err()
        .expect("no runtime, no stream");
    assert_eq!(
        err.to_string(),
        "ProxyStreamFn needs a tokio runtime: call it from async code"
    );
    assert_eq!(
        err.downcast_ref::<tern_proxy::ProxyClientError>(),
        Some(&tern_proxy::ProxyClientError::NoRuntime)
    );
}

#[tokio::test]
async fn a_server_below_a_prefix_is_reached_through_the_prefixed_url() {
    let router = axum::Router::new().nest("/llm", ProxyServer::new(faux("nested")).router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/llm", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let message = plain_result(&url, "any").await;
    assert_eq!(message.text(), "nested");
    task.abort();
}
