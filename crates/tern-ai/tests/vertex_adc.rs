//! Vertex AI without an API key: Application Default Credentials minted into a bearer token
//! at the file's token endpoint (a real local server), for a user's refresh token and for a
//! service account's RS256-signed assertion; the token is reused; missing pieces fail before
//! any request, saying what was tried.
//!
//! One test: the credentials come from the process environment.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, ReplayServer};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, Model};

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime;

#[path = "support/final_message.rs"]
mod final_message;
use final_message::Final;

#[path = "support/endpoints.rs"]
mod endpoints;
use endpoints::*;

fn token_response(token: &str) -> Value {
    json!({"status": 200, "headers": {"content-type": "application/json"},
           "chunks": [json!({"access_token": token, "expires_in": 3600, "token_type": "Bearer"}).to_string()]})
}

async fn once(case: &Value, server: &ReplayServer) -> AssistantMessage {
    let mut model: Model = serde_json::from_value(case["request"]["model"].clone()).unwrap();
    model.api = "google-vertex".into();
    model.base_url = server.origin.clone();
    let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
    let mut sink = Final::default();
    run(&model, &context, &StreamOptions::default(), &mut sink).await;
    sink.0.unwrap()
}

fn write_credentials(name: &str, value: &Value) -> String {
    let path = std::env::temp_dir().join(format!("tern-vertex-{}-{name}.json", std::process::id()));
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn application_default_credentials_become_a_bearer_token() {
    let rt = runtime();
    rt.block_on(async {
        let case = plain_text_case("google-vertex");
        std::env::remove_var("GOOGLE_CLOUD_API_KEY");
        std::env::set_var("GOOGLE_CLOUD_PROJECT", "proj-1");
        std::env::set_var("GOOGLE_CLOUD_LOCATION", "us-central1");

        // A user's refresh token (gcloud auth application-default login).
        let tokens = start_server(vec![token_response("tok-user")]).await.unwrap();
        let user = write_credentials(
            "user",
            &json!({"type": "authorized_user", "client_id": "cid", "client_secret": "c s",
                    "refresh_token": "rt/1", "token_uri": format!("{}/token", tokens.origin)}),
        );
        std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &user);
        let model_server = start_server(vec![case["response"].clone()]).await.unwrap();
        let m = once(&case, &model_server).await;
        assert_eq!(m.error_message, None);
        assert_eq!(m.text(), "Hello! How can I help you today?");
        let sent = model_server.requests.lock().clone();
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer tok-user"));
        assert_eq!(header(&sent[0], "x-goog-api-key"), None);
        assert_eq!(
            sent[0].path,
            "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        let asked = tokens.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            asked[0].body,
            "grant_type=refresh_token&client_id=cid&client_secret=c+s&refresh_token=rt%2F1"
        );
        // The token is kept for the next request.
        let again = start_server(vec![case["response"].clone()]).await.unwrap();
        assert_eq!(once(&case, &again).await.error_message, None);
        assert_eq!(tokens.requests.lock().len(), 1);

        // A service account's key: a signed JWT assertion.
        let pem = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/throwaway-test-rsa-key.pem"
        ))
        .unwrap();
        let tokens = start_server(vec![token_response("tok-sa")]).await.unwrap();
        let audience = format!("{}/token", tokens.origin);
        let account = write_credentials(
            "account",
            &json!({"type": "service_account", "client_email": "sa@proj-1.iam.gserviceaccount.com",
                    "private_key": pem, "token_uri": audience}),
        );
        std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &account);
        let model_server = start_server(vec![case["response"].clone()]).await.unwrap();
        let m = once(&case, &model_server).await;
        assert_eq!(m.error_message, None);
        let sent = model_server.requests.lock().clone();
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer tok-sa"));
        let body = tokens.requests.lock()[0].body.clone();
        let assertion = body
            .strip_prefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=")
            .unwrap();
        let parts: Vec<&str> = assertion.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |p: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap() };
        assert_eq!(decode(parts[0]), json!({"alg": "RS256", "typ": "JWT"}));
        let claims = decode(parts[1]);
        assert_eq!(claims["iss"], "sa@proj-1.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], audience);
        assert_eq!(claims["scope"], "https://www.googleapis.com/auth/cloud-platform");
        assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 3600);
        let der = pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>();
        let der = base64::engine::general_purpose::STANDARD.decode(der).unwrap();
        let key = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
        use ring::signature::KeyPair as _;
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            key.public_key().as_ref(),
        )
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
        )
        .expect("the assertion is signed with the account's key");

        // A file that is not there: nothing is sent, the message names it.
        std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/tern-adc.json");
        let model_server = start_server(vec![case["response"].clone()]).await.unwrap();
        let m = once(&case, &model_server).await;
        let message = m.error_message.unwrap();
        assert!(message.contains("/nonexistent/tern-adc.json (from GOOGLE_APPLICATION_CREDENTIALS)"), "{message}");
        assert!(message.contains("GOOGLE_CLOUD_API_KEY"), "{message}");
        assert!(model_server.requests.lock().is_empty());

        // No project: the reference's words, before anything else.
        std::env::remove_var("GOOGLE_CLOUD_PROJECT");
        let m = once(&case, &model_server).await;
        assert_eq!(
            m.error_message.as_deref(),
            Some("Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.")
        );
        for f in [user, account] {
            let _ = std::fs::remove_file(f);
        }
    });
}

/// Workload identity federation, its settings scoped to the request (`StreamOptions::env`,
/// so this test shares nothing with the one above): a subject token from a file exchanged at
/// a local STS, then a service account impersonated; and one from a URL answering JSON.
#[test]
fn an_external_account_exchanges_its_subject_token_at_the_sts() {
    runtime().block_on(async {
        let case = plain_text_case("google-vertex");
        let sts = start_server(vec![
            json_response(json!({"access_token": "federated-1", "expires_in": 3600,
                                 "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})),
            json_response(json!({"access_token": "federated-2", "expires_in": 3600})),
        ])
        .await
        .unwrap();
        let iam = start_server(vec![json_response(
            json!({"accessToken": "impersonated", "expireTime": "2099-01-01T00:00:00Z"}),
        )])
        .await
        .unwrap();
        let subject_file =
            std::env::temp_dir().join(format!("tern-vertex-{}-subject", std::process::id()));
        std::fs::write(&subject_file, "oidc-subject-token").unwrap();
        let creds = write_credentials(
            "external",
            &json!({"type": "external_account",
                    "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                    "token_url": format!("{}/v1/token", sts.origin),
                    "service_account_impersonation_url": format!("{}/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken", iam.origin),
                    "service_account_impersonation": {"token_lifetime_seconds": 1800},
                    "credential_source": {"file": subject_file.display().to_string()}}),
        );
        let options = |creds: &str| {
            let mut o = StreamOptions::default();
            for (k, v) in [
                ("GOOGLE_APPLICATION_CREDENTIALS", creds),
                ("GOOGLE_CLOUD_PROJECT", "proj-wif"),
                ("GOOGLE_CLOUD_LOCATION", "us-central1"),
            ] {
                o.env.insert(k.into(), v.into());
            }
            o
        };
        let once_with = |o: StreamOptions| {
            let case = case.clone();
            async move {
                let server = start_server(vec![case["response"].clone()]).await.unwrap();
                let mut model: Model =
                    serde_json::from_value(case["request"]["model"].clone()).unwrap();
                model.api = "google-vertex".into();
                model.base_url = server.origin.clone();
                let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
                let mut sink = Final::default();
                run(&model, &context, &o, &mut sink).await;
                let sent = server.requests.lock().clone();
                (sink.0.unwrap(), sent)
            }
        };
        let (m, sent) = once_with(options(&creds)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer impersonated"));
        let exchange = sts.requests.lock()[0].clone();
        let form: std::collections::HashMap<String, String> =
            url_form(&exchange.body).into_iter().collect();
        assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:token-exchange");
        assert_eq!(form["subject_token"], "oidc-subject-token");
        assert_eq!(form["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt");
        assert_eq!(form["requested_token_type"], "urn:ietf:params:oauth:token-type:access_token");
        assert_eq!(form["scope"], "https://www.googleapis.com/auth/cloud-platform");
        assert!(form["audience"].ends_with("/providers/q"));
        let asked = iam.requests.lock()[0].clone();
        assert_eq!(header(&asked, "authorization"), Some("Bearer federated-1"));
        let body: Value = serde_json::from_str(&asked.body).unwrap();
        assert_eq!(
            body,
            json!({"scope": ["https://www.googleapis.com/auth/cloud-platform"], "lifetime": "1800s"})
        );

        // A URL source answering JSON, no impersonation: the STS token is the bearer.
        let metadata = start_server(vec![json_response(json!({"id_token": "from-url"}))])
            .await
            .unwrap();
        let creds = write_credentials(
            "external-url",
            &json!({"type": "external_account", "audience": "aud",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "token_url": format!("{}/v1/token", sts.origin),
                    "credential_source": {"url": format!("{}/token", metadata.origin),
                                          "headers": {"Metadata": "True"},
                                          "format": {"type": "json", "subject_token_field_name": "id_token"}}}),
        );
        let (m, sent) = once_with(options(&creds)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer federated-2"));
        assert_eq!(header(&metadata.requests.lock()[0], "metadata"), Some("True"));
        let form: std::collections::HashMap<String, String> =
            url_form(&sts.requests.lock()[1].body).into_iter().collect();
        assert_eq!(form["subject_token"], "from-url");
    });
}
