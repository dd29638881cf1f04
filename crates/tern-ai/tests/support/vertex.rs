//! One keyless Vertex request against a local model server, for the ADC tests, and the
//! answers of a federation's STS.

#![allow(dead_code)]

use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, CapturedRequest};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, Model};

use super::endpoints::{json_response, plain_text_case};
use super::final_message::Final;

/// Options for a keyless Vertex request (a project and a location) with these extra
/// variables, all scoped to the request.
pub fn options(vars: &[(&str, &str)]) -> StreamOptions {
    let mut o = StreamOptions::default();
    for (k, v) in [
        ("GOOGLE_CLOUD_PROJECT", "proj-adc"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ]
    .iter()
    .chain(vars)
    {
        o.env.insert(k.to_string(), v.to_string());
    }
    o
}

/// One keyless Vertex request: the final message and what the model server received.
pub async fn once(o: &StreamOptions) -> (AssistantMessage, Vec<CapturedRequest>) {
    let case = plain_text_case("google-vertex");
    let server = start_server(vec![case["response"].clone()]).await.unwrap();
    let mut model: Model = serde_json::from_value(case["request"]["model"].clone()).unwrap();
    model.api = "google-vertex".into();
    model.base_url = server.origin.clone();
    let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
    let mut sink = Final::default();
    run(&model, &context, o, &mut sink).await;
    let sent = server.requests.lock().clone();
    (sink.0.unwrap(), sent)
}

/// A request with `GOOGLE_APPLICATION_CREDENTIALS` naming `creds` (and these variables).
pub async fn with_creds(
    creds: &str,
    vars: &[(&str, &str)],
) -> (AssistantMessage, Vec<CapturedRequest>) {
    let mut all = vec![("GOOGLE_APPLICATION_CREDENTIALS", creds)];
    all.extend_from_slice(vars);
    once(&options(&all)).await
}

/// `n` answers of an STS token endpoint, handing out `federated-0`, `federated-1`, ...
pub fn sts_answers(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json_response(json!({"access_token": format!("federated-{i}"), "expires_in": 3600}))
        })
        .collect()
}
