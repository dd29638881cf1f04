//! Azure OpenAI without an API key (a tern addition): a Microsoft Entra ID token sent as
//! `Authorization: Bearer` instead of `api-key` — from the `azure` options (a token, or an
//! async provider called per request), else from azure-identity's chain: the environment's
//! client secret, certificate ([`certificate`]) or federated token file, minted at a local
//! authority and kept; managed identity and the Azure CLI ([`ambient`]) at local endpoints
//! and as a fake `az`. A key still wins; nothing that works fails before any model request,
//! naming what was tried and what to set.
//!
//! Settings are scoped to each request (`StreamOptions::env`); the process environment's
//! Azure variables are cleared once, before any test reads them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, CapturedRequest};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, AzureTokenProvider, Model};

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime;

#[path = "support/final_message.rs"]
mod final_message;
use final_message::Final;

#[path = "support/endpoints.rs"]
mod endpoints;
use endpoints::*;

fn clear_process_env() {
    static CLEARED: Once = Once::new();
    CLEARED.call_once(|| {
        for v in [
            "AZURE_OPENAI_API_KEY",
            "AZURE_TENANT_ID",
            "AZURE_CLIENT_ID",
            "AZURE_CLIENT_SECRET",
            "AZURE_FEDERATED_TOKEN_FILE",
            "AZURE_AUTHORITY_HOST",
            "AZURE_CLIENT_CERTIFICATE_PATH",
            "AZURE_CLIENT_CERTIFICATE_PASSWORD",
            "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN",
            "AZURE_TOKEN_CREDENTIALS",
            "AZURE_POD_IDENTITY_AUTHORITY_HOST",
            "TERN_AZURE_IMDS_HOST",
            "IDENTITY_ENDPOINT",
            "IDENTITY_HEADER",
            "IDENTITY_SERVER_THUMBPRINT",
            "IMDS_ENDPOINT",
            "MSI_ENDPOINT",
            "MSI_SECRET",
            "DEFAULT_IDENTITY_CLIENT_ID",
        ] {
            std::env::remove_var(v);
        }
    });
}

fn case() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/providers/streams/azure-openai-responses/plain-text.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One Azure request: the final message and what the model server received.
async fn once(o: &StreamOptions) -> (AssistantMessage, Vec<CapturedRequest>) {
    let case = case();
    let server = start_server(vec![case["response"].clone()]).await.unwrap();
    let mut model: Model = serde_json::from_value(case["request"]["model"].clone()).unwrap();
    model.base_url = format!("{}/openai/v1", server.origin);
    model.api = "azure-openai-responses".into();
    let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
    let mut sink = Final::default();
    run(&model, &context, o, &mut sink).await;
    let sent = server.requests.lock().clone();
    (sink.0.unwrap(), sent)
}

/// `http://127.0.0.1:PORT` where nothing listens.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    origin
}

/// A fresh, empty directory of this test process.
fn scratch_dir(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("tern-azure-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.display().to_string()
}

fn with_env(vars: &[(&str, &str)]) -> StreamOptions {
    let mut o = StreamOptions::default();
    for (k, v) in vars {
        o.env.insert(k.to_string(), v.to_string());
    }
    o
}

fn token_answer(token: &str) -> Value {
    json!({"status": 200, "headers": {"content-type": "application/json"},
           "chunks": [json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                             "access_token": token}).to_string()]})
}

#[test]
fn tokens_from_the_options_replace_the_api_key_header() {
    clear_process_env();
    runtime().block_on(async {
        // A static token.
        let mut o = StreamOptions::default();
        o.azure.ad_token = Some("static-entra".into());
        let (m, sent) = once(&o).await;
        assert_eq!(m.error_message, None);
        assert_eq!(m.text(), "Hello! How can I help?");
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer static-entra")
        );
        assert_eq!(header(&sent[0], "api-key"), None);

        // A provider, called for each request.
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let mut o = StreamOptions::default();
        o.azure.ad_token_provider = Some(AzureTokenProvider::new(move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(format!("provided-{n}")) }
        }));
        for n in 1..=2 {
            let (m, sent) = once(&o).await;
            assert_eq!(m.error_message, None);
            assert_eq!(
                header(&sent[0], "authorization"),
                Some(format!("Bearer provided-{n}").as_str())
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        // A key wins over both (the reference's way is kept whenever it works).
        o.azure.ad_token = Some("unused".into());
        o.api_key = Some("key-1".into());
        let (m, sent) = once(&o).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "api-key"), Some("key-1"));
        assert_eq!(header(&sent[0], "authorization"), None);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let o = StreamOptions {
            azure: tern_ai::AzureOptions {
                ad_token: Some("unused".into()),
                ..Default::default()
            },
            ..with_env(&[("AZURE_OPENAI_API_KEY", "env-key")])
        };
        let (_, sent) = once(&o).await;
        assert_eq!(header(&sent[0], "api-key"), Some("env-key"));

        // A failing provider ends the run before the request, with its error.
        let mut o = StreamOptions::default();
        o.azure.ad_token_provider = Some(AzureTokenProvider::new(|| async {
            Err::<String, tern_ai::BoxError>("credential chain exhausted".into())
        }));
        let (m, sent) = once(&o).await;
        assert_eq!(
            m.error_message.as_deref(),
            Some("Azure OpenAI: the ad_token_provider failed: credential chain exhausted")
        );
        assert!(sent.is_empty());
    });
}

#[test]
fn the_environment_client_secret_is_exchanged_and_the_token_kept() {
    clear_process_env();
    runtime().block_on(async {
        let authority = start_server(vec![token_answer("entra-secret-token")]).await.unwrap();
        let vars = [
            ("AZURE_TENANT_ID", "tenant-1"),
            ("AZURE_CLIENT_ID", "client-1"),
            ("AZURE_CLIENT_SECRET", "s3cret&+="),
            ("AZURE_AUTHORITY_HOST", &format!("{}/", authority.origin)),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer entra-secret-token"));
        assert_eq!(header(&sent[0], "api-key"), None);
        let asked = authority.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].method, "POST");
        assert_eq!(asked[0].path, "/tenant-1/oauth2/v2.0/token");
        assert_eq!(
            header(&asked[0], "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        let form = url_form(&asked[0].body);
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["client_id"], "client-1");
        assert_eq!(form["client_secret"], "s3cret&+=");
        assert_eq!(form["scope"], "https://cognitiveservices.azure.com/.default");
        // Kept for the next request.
        let (m, _) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(authority.requests.lock().len(), 1);

        // Refused: the authority's error and the variables to check; no model request.
        let refusing = start_server(vec![json!({"status": 401,
            "headers": {"content-type": "application/json"},
            "chunks": [json!({"error": "invalid_client",
                "error_description": "AADSTS7000215: Invalid client secret provided.\r\nTrace ID: x",
                "error_codes": [7000215]}).to_string()]})])
        .await
        .unwrap();
        let vars = [
            ("AZURE_TENANT_ID", "tenant-2"),
            ("AZURE_CLIENT_ID", "client-2"),
            ("AZURE_CLIENT_SECRET", "wrong"),
            ("AZURE_AUTHORITY_HOST", refusing.origin.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(message.contains("/tenant-2/oauth2/v2.0/token failed: HTTP 401, invalid_client: AADSTS7000215: Invalid client secret provided."), "{message}");
        assert!(message.ends_with("check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET"), "{message}");
        assert!(!message.contains("wrong"), "{message}");
        assert!(sent.is_empty());
    });
}

#[test]
fn a_federated_token_file_is_the_client_assertion() {
    clear_process_env();
    runtime().block_on(async {
        let authority = start_server(vec![token_answer("entra-workload-token")])
            .await
            .unwrap();
        let file =
            std::env::temp_dir().join(format!("tern-azure-{}-federated", std::process::id()));
        std::fs::write(&file, "eyJhbGciOi.kubernetes.projected\n").unwrap();
        let file = file.display().to_string();
        let vars = [
            ("AZURE_TENANT_ID", "tenant-w"),
            ("AZURE_CLIENT_ID", "client-w"),
            ("AZURE_FEDERATED_TOKEN_FILE", file.as_str()),
            ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer entra-workload-token")
        );
        let form = url_form(&authority.requests.lock()[0].body);
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["client_id"], "client-w");
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert_eq!(form["client_assertion"], "eyJhbGciOi.kubernetes.projected");
        assert!(!form.contains_key("client_secret"));
        let _ = std::fs::remove_file(&file);

        // A file that went away: named, nothing sent.
        let vars = [
            ("AZURE_TENANT_ID", "tenant-w2"),
            ("AZURE_CLIENT_ID", "client-w"),
            ("AZURE_FEDERATED_TOKEN_FILE", file.as_str()),
            ("AZURE_AUTHORITY_HOST", authority.origin.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(
            message.contains(&format!("AZURE_FEDERATED_TOKEN_FILE {file}")),
            "{message}"
        );
        assert!(
            message
                .ends_with("check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE"),
            "{message}"
        );
        assert!(sent.is_empty());
    });
}

#[test]
fn nothing_configured_names_every_source() {
    clear_process_env();
    runtime().block_on(async {
        // No IMDS (a closed port) and no `az` (an empty PATH): every source fails, quickly.
        let closed = closed_port().await;
        let empty = scratch_dir("empty-path");
        let vars = [
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("TERN_AZURE_IMDS_HOST", closed.as_str()),
            ("PATH", empty.as_str()),
        ];
        let started = std::time::Instant::now();
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(message.starts_with("No API key for provider: azure (tried the apiKey option, AZURE_OPENAI_API_KEY, the azure ad_token and ad_token_provider options, and Microsoft Entra ID: the environment, where AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH, AZURE_FEDERATED_TOKEN_FILE are unset; managed identity: no IMDS endpoint answered at "), "{message}");
        assert!(message.contains(&format!("at {closed} within a second")), "{message}");
        assert!(message.contains("; the Azure CLI: Azure CLI could not be found; install it (https://aka.ms/azure-cli) and run `az login`); set AZURE_OPENAI_API_KEY, or for Entra ID AZURE_TENANT_ID and AZURE_CLIENT_ID with AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH or AZURE_FEDERATED_TOKEN_FILE, or run where a managed identity is assigned, or run `az login`"), "{message}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(sent.is_empty());

        // AZURE_TOKEN_CREDENTIALS keeps the environment only: refused before any request.
        let vars = [("AZURE_TOKEN_CREDENTIALS", "EnvironmentCredential")];
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(message.contains("Microsoft Entra ID: the environment, where AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH, AZURE_FEDERATED_TOKEN_FILE are unset; no other source (AZURE_TOKEN_CREDENTIALS is EnvironmentCredential))"), "{message}");
        assert!(sent.is_empty());
        let (m, _) = once(&with_env(&[("AZURE_TOKEN_CREDENTIALS", "all")])).await;
        assert!(m.error_message.unwrap().starts_with("Invalid value for AZURE_TOKEN_CREDENTIALS = all."));
    });
}

#[cfg(unix)]
#[path = "azure_entra/ambient.rs"]
mod ambient;
#[path = "azure_entra/certificate.rs"]
mod certificate;
