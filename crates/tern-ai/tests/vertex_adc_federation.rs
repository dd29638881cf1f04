//! Vertex AI's Application Default Credentials for identity federation beyond the plain
//! subject token, against real local endpoints and files: the STS request's client
//! authentication and a workforce pool's user project, the quota project header,
//! and `external_account_authorized_user` files (a workforce user's refresh token).
//!
//! Every setting is scoped to its request (`StreamOptions::env`), so the tests run side by
//! side; each credentials file is used once per kept token, as tokens are kept per file.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, CapturedRequest};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, Model};

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime;

#[path = "support/final_message.rs"]
mod final_message;
use final_message::Final;

const WORKFORCE_AUDIENCE: &str =
    "//iam.googleapis.com/locations/global/workforcePools/pool-1/providers/provider-1";
const WORKLOAD_AUDIENCE: &str =
    "//iam.googleapis.com/projects/9/locations/global/workloadIdentityPools/p/providers/q";

fn plain_text_case() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/providers/streams/google-vertex/plain-text.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn json_response(v: Value) -> Value {
    json!({"status": 200, "headers": {"content-type": "application/json"}, "chunks": [v.to_string()]})
}

fn json_error(status: u16, v: Value) -> Value {
    json!({"status": status, "headers": {"content-type": "application/json"}, "chunks": [v.to_string()]})
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tern-adc-fed-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn header<'a>(r: &'a CapturedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The pairs of an `application/x-www-form-urlencoded` body.
fn url_form(body: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://form.invalid/?{body}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn basic(pair: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// Options for a keyless Vertex request with these extra variables.
fn options(vars: &[(&str, &str)]) -> StreamOptions {
    let mut o = StreamOptions::default();
    for (k, v) in [
        ("GOOGLE_CLOUD_PROJECT", "proj-fed"),
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
async fn once(o: &StreamOptions) -> (AssistantMessage, Vec<CapturedRequest>) {
    let case = plain_text_case();
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
async fn with_creds(
    creds: &str,
    vars: &[(&str, &str)],
) -> (AssistantMessage, Vec<CapturedRequest>) {
    let mut all = vec![("GOOGLE_APPLICATION_CREDENTIALS", creds)];
    all.extend_from_slice(vars);
    once(&options(&all)).await
}

fn write(dir: &std::path::Path, name: &str, v: &Value) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path.display().to_string()
}

fn sts_answers(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json_response(json!({"access_token": format!("federated-{i}"), "expires_in": 3600}))
        })
        .collect()
}

/// The STS request: client authentication as HTTP Basic auth when the file names a client
/// id (then no workforce user project in `options`), the user project when it does not, the
/// SDK's refusal of a user project for a workload pool, its OAuth error wording, and the
/// quota project header.
#[test]
fn the_sts_request_carries_client_auth_or_the_workforce_user_project() {
    runtime().block_on(async {
        let dir = scratch("sts");
        let subject = dir.join("subject.txt");
        std::fs::write(&subject, "oidc-subject").unwrap();
        let mut answers = sts_answers(3);
        answers.push(json_error(
            400,
            json!({"error": "invalid_grant", "error_description": "The subject token expired.",
                   "error_uri": "https://example.test/errors"}),
        ));
        answers.push(json_error(400, json!({"error": "invalid_request"})));
        let sts = start_server(answers).await.unwrap();
        let file = |name: &str, extra: Value| {
            let mut creds = json!({"type": "external_account",
                "audience": WORKFORCE_AUDIENCE,
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "token_url": format!("{}/v1/token", sts.origin),
                "credential_source": {"file": subject.display().to_string()}});
            for (k, v) in extra.as_object().unwrap() {
                creds[k] = v.clone();
            }
            write(&dir, name, &creds)
        };

        // A client id: Basic auth; the user project is then not sent.
        let creds = file(
            "client-auth",
            json!({"client_id": "client-1", "client_secret": "shh",
                   "workforce_pool_user_project": "user-project-1",
                   "quota_project_id": "quota-1"}),
        );
        let (m, sent) = with_creds(&creds, &[]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer federated-0")
        );
        assert_eq!(header(&sent[0], "x-goog-user-project"), Some("quota-1"));
        let exchange = sts.requests.lock()[0].clone();
        assert_eq!(
            header(&exchange, "authorization"),
            Some(basic("client-1:shh").as_str())
        );
        let form = url_form(&exchange.body);
        assert_eq!(form["audience"], WORKFORCE_AUDIENCE);
        assert_eq!(form["subject_token"], "oidc-subject");
        assert!(!form.contains_key("options"), "{form:?}");
        assert!(!form.contains_key("client_id") && !form.contains_key("client_secret"));

        // No client id: the workforce user project goes in `options`, no authorization;
        // GOOGLE_CLOUD_QUOTA_PROJECT wins over the file's quota project.
        let creds = file(
            "user-project",
            json!({"workforce_pool_user_project": "user-project-1",
                   "quota_project_id": "quota-1"}),
        );
        let (m, sent) = with_creds(&creds, &[("GOOGLE_CLOUD_QUOTA_PROJECT", "quota-env")]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "x-goog-user-project"), Some("quota-env"));
        let exchange = sts.requests.lock()[1].clone();
        assert_eq!(header(&exchange, "authorization"), None);
        let options: Value = serde_json::from_str(&url_form(&exchange.body)["options"]).unwrap();
        assert_eq!(options, json!({"userProject": "user-project-1"}));

        // A client id without a secret: the secret is empty.
        let creds = file("no-secret", json!({"client_id": "client-2"}));
        let (m, sent) = with_creds(&creds, &[]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "x-goog-user-project"), None);
        let exchange = sts.requests.lock()[2].clone();
        assert_eq!(
            header(&exchange, "authorization"),
            Some(basic("client-2:").as_str())
        );

        // A user project with a workload pool's audience: refused before anything is sent.
        let creds = file(
            "workload-with-user-project",
            json!({"audience": WORKLOAD_AUDIENCE, "workforce_pool_user_project": "p"}),
        );
        let (m, sent) = with_creds(&creds, &[]).await;
        let message = m.error_message.unwrap();
        assert!(
            message.contains(
                "workforcePoolUserProject should not be set for non-workforce pool credentials."
            ),
            "{message}"
        );
        assert!(sent.is_empty());
        assert_eq!(sts.requests.lock().len(), 3);

        // The STS's OAuth errors, worded as the SDK words them.
        let creds = file("rejected", json!({}));
        let message = with_creds(&creds, &[]).await.0.error_message.unwrap();
        assert!(
            message.contains(
                "Error code invalid_grant: The subject token expired. - https://example.test/errors"
            ),
            "{message}"
        );
        assert!(!message.contains("oidc-subject"), "{message}");
        let creds = file("rejected-bare", json!({}));
        let message = with_creds(&creds, &[]).await.0.error_message.unwrap();
        assert!(message.ends_with("Error code invalid_request"), "{message}");

        // Two identity pool sources at once are refused, as the SDK refuses them.
        let creds = file(
            "two-sources",
            json!({"credential_source": {"file": subject.display().to_string(),
                                          "url": "http://127.0.0.1:9/token"}}),
        );
        let message = with_creds(&creds, &[]).await.0.error_message.unwrap();
        assert!(
            message.contains(
                "No valid Identity Pool \"credential_source\" provided, must be either file, \
                 url, or certificate."
            ),
            "{message}"
        );
        assert_eq!(sts.requests.lock().len(), 5);
    });
}

/// `external_account_authorized_user`: the refresh token posted to `token_url` with the
/// client's Basic auth, a rotated refresh token used next time, the quota project sent,
/// `revoke_url` never called, and the endpoint's OAuth errors worded as the SDK words them.
#[test]
fn a_workforce_user_refreshes_at_the_token_url() {
    runtime().block_on(async {
        let dir = scratch("wf-user");
        let token = start_server(vec![
            // Under a minute left: not kept, so the next request refreshes again.
            json_response(json!({"access_token": "wf-access-1", "expires_in": 30,
                                 "refresh_token": "rotated-refresh"})),
            json_response(json!({"access_token": "wf-access-2", "expires_in": 30})),
            json_error(
                400,
                json!({"error": "invalid_grant", "error_description": "Bad refresh token."}),
            ),
        ])
        .await
        .unwrap();
        let revoke = start_server(vec![]).await.unwrap();
        let creds = write(
            &dir,
            "user",
            &json!({"type": "external_account_authorized_user",
                    "audience": WORKFORCE_AUDIENCE,
                    "client_id": "wf-client", "client_secret": "wf-secret",
                    "refresh_token": "file-refresh",
                    "token_url": format!("{}/v1/oauthtoken", token.origin),
                    "token_info_url": format!("{}/v1/introspect", token.origin),
                    "revoke_url": format!("{}/v1/revoke", revoke.origin),
                    "quota_project_id": "wf-quota",
                    "universe_domain": "googleapis.com"}),
        );
        let (m, sent) = with_creds(&creds, &[]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer wf-access-1")
        );
        assert_eq!(header(&sent[0], "x-goog-user-project"), Some("wf-quota"));
        let asked = token.requests.lock()[0].clone();
        assert_eq!(asked.path, "/v1/oauthtoken");
        assert_eq!(
            header(&asked, "authorization"),
            Some(basic("wf-client:wf-secret").as_str())
        );
        assert_eq!(
            header(&asked, "content-type"),
            Some("application/x-www-form-urlencoded;charset=UTF-8")
        );
        let form = url_form(&asked.body);
        assert_eq!(
            form,
            HashMap::from([
                ("grant_type".to_string(), "refresh_token".to_string()),
                ("refresh_token".to_string(), "file-refresh".to_string()),
            ])
        );

        // The rotated refresh token replaces the file's.
        let (m, sent) = with_creds(&creds, &[]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer wf-access-2")
        );
        assert_eq!(
            url_form(&token.requests.lock()[1].body)["refresh_token"],
            "rotated-refresh"
        );

        // A refused refresh, in the SDK's words; no token is quoted.
        let message = with_creds(&creds, &[]).await.0.error_message.unwrap();
        assert!(
            message.contains("Error code invalid_grant: Bad refresh token."),
            "{message}"
        );
        assert!(message.contains(&creds), "{message}");
        assert!(!message.contains("rotated-refresh") && !message.contains("wf-secret"));
        assert!(revoke.requests.lock().is_empty());

        // A file without a client id says what to do.
        let broken = write(
            &dir,
            "no-client",
            &json!({"type": "external_account_authorized_user", "refresh_token": "r",
                    "token_url": format!("{}/v1/oauthtoken", token.origin)}),
        );
        let message = with_creds(&broken, &[]).await.0.error_message.unwrap();
        assert!(message.contains("has no client_id"), "{message}");
        assert!(
            message.contains("gcloud auth application-default login"),
            "{message}"
        );
        assert_eq!(token.requests.lock().len(), 3);
    });
}
