//! Vertex AI's Application Default Credentials for identity federation beyond the plain
//! subject token, against real local endpoints and files: the STS request's client
//! authentication and a workforce pool's user project, the quota project header,
//! `external_account_authorized_user` files (a workforce user's refresh token), and X.509
//! certificate sources exchanged over mutual TLS with a local HTTPS STS that requires a client
//! certificate (the fixtures under `tests/data/vertex-mtls/`: a test CA, an intermediate, the
//! STS's certificate for 127.0.0.1 and the workload's, issued by the intermediate).
//!
//! Every setting is scoped to its request (`StreamOptions::env`), so the tests run side by
//! side; each credentials file is used once per kept token, as tokens are kept per file.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use tern_ai::providers::replay::start_server;
use tern_testkit::http::read_request_async;
use tokio::io::AsyncWriteExt;

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime;

#[path = "support/final_message.rs"]
mod final_message;

#[path = "support/endpoints.rs"]
mod endpoints;
use endpoints::*;

#[path = "support/vertex.rs"]
mod vertex;
use vertex::{sts_answers, with_creds};

const WORKFORCE_AUDIENCE: &str =
    "//iam.googleapis.com/locations/global/workforcePools/pool-1/providers/provider-1";
const WORKLOAD_AUDIENCE: &str =
    "//iam.googleapis.com/projects/9/locations/global/workloadIdentityPools/p/providers/q";

fn basic(pair: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

fn write(dir: &std::path::Path, name: &str, v: &Value) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, v.to_string()).unwrap();
    path.display().to_string()
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
        answers.push(json_answer(
            400,
            json!({"error": "invalid_grant", "error_description": "The subject token expired.",
                   "error_uri": "https://example.test/errors"}),
        ));
        answers.push(json_answer(400, json!({"error": "invalid_request"})));
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
            json_answer(
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

// ---- mutual TLS ----

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/data/vertex-mtls/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn der(name: &str) -> Vec<u8> {
    CertificateDer::from_pem_file(fixture(name))
        .unwrap()
        .to_vec()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One request the HTTPS server read: path, `authorization` header, body, and the
/// certificates the client presented.
#[derive(Clone, Debug)]
struct TlsRequest {
    path: String,
    authorization: Option<String>,
    body: String,
    client_certs: Vec<Vec<u8>>,
}

/// An HTTPS server (the fixtures' STS certificate) that requires a client certificate issued
/// under the test CA, and answers each request with the next JSON body, in order.
struct TlsServer {
    origin: String,
    requests: Arc<Mutex<Vec<TlsRequest>>>,
}

async fn start_tls(answers: Vec<Value>) -> TlsServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for name in ["ca.pem", "intermediate.pem"] {
        roots
            .add(CertificateDer::from_pem_file(fixture(name)).unwrap())
            .unwrap();
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_file(fixture("server.pem")).unwrap()],
            PrivateKeyDer::from_pem_file(fixture("server.key")).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("https://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let seen = requests.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen, answers) = (acceptor.clone(), seen.clone(), answers.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let client_certs = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(|c| c.iter().map(|c| c.to_vec()).collect())
                    .unwrap_or_default();
                let Ok(Some(request)) = read_request_async(&mut tls).await else {
                    return;
                };
                seen.lock().push(TlsRequest {
                    path: request.path().to_string(),
                    authorization: request.header("authorization").map(str::to_string),
                    body: String::from_utf8_lossy(&request.body).into_owned(),
                    client_certs,
                });
                let answer = answers
                    .lock()
                    .next()
                    .unwrap_or(json!({"error": "no answer left"}));
                let text = answer.to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    TlsServer { origin, requests }
}

/// A certificate config file naming the workload's certificate and key.
fn cert_config(dir: &std::path::Path, name: &str, cert: &str, key: &str) -> String {
    write(
        dir,
        &format!("{name}-cert-config"),
        &json!({"cert_configs": {"workload": {"cert_path": cert, "key_path": key}}}),
    )
}

fn certificate_account(
    dir: &std::path::Path,
    name: &str,
    sts: &TlsServer,
    certificate: Value,
) -> String {
    write(
        dir,
        name,
        &json!({"type": "external_account",
                "audience": WORKLOAD_AUDIENCE,
                "subject_token_type": "urn:ietf:params:oauth:token-type:mtls",
                "token_url": format!("{}/v1/token", sts.origin),
                "credential_source": {"certificate": certificate}}),
    )
}

/// A certificate source: the subject token is the chain as the SDK builds it, and the STS
/// exchange and the impersonation go over mutual TLS with the workload's certificate.
#[test]
fn a_certificate_source_exchanges_over_mutual_tls() {
    runtime().block_on(async {
        let dir = scratch("mtls");
        let sts = start_tls(vec![
            json!({"access_token": "mtls-0", "expires_in": 3600}),
            json!({"accessToken": "mtls-impersonated", "expireTime": "2099-01-01T00:00:00Z"}),
            json!({"access_token": "mtls-1", "expires_in": 3600}),
            json!({"access_token": "mtls-2", "expires_in": 3600}),
            json!({"access_token": "mtls-3", "expires_in": 3600}),
        ])
        .await;
        let ca = fixture("ca.pem");
        let trusted = [("NODE_EXTRA_CA_CERTS", ca.as_str())];
        let (client, intermediate) = (der("client.pem"), der("intermediate.pem"));
        let config = cert_config(&dir, "config", &fixture("client.pem"), &fixture("client.key"));

        // The config file's location: the leaf alone is the subject token; the STS saw the
        // workload's certificate; so did the impersonation endpoint.
        let creds = write(
            &dir,
            "located",
            &json!({"type": "external_account",
                    "audience": WORKLOAD_AUDIENCE,
                    "subject_token_type": "urn:ietf:params:oauth:token-type:mtls",
                    "token_url": format!("{}/v1/token", sts.origin),
                    "client_id": "mtls-client",
                    "service_account_impersonation_url": format!(
                        "{}/v1/projects/-/serviceAccounts/robot@p.iam.gserviceaccount.com:generateAccessToken",
                        sts.origin),
                    "credential_source": {"certificate": {"certificate_config_location": config}}}),
        );
        let (m, sent) = with_creds(&creds, &trusted).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer mtls-impersonated"));
        let seen = sts.requests.lock().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].path, "/v1/token");
        assert_eq!(seen[0].client_certs, vec![client.clone()]);
        let form = url_form(&seen[0].body);
        assert_eq!(form["subject_token"], json!([b64(&client)]).to_string());
        assert_eq!(form["subject_token_type"], "urn:ietf:params:oauth:token-type:mtls");
        assert_eq!(seen[0].authorization, Some(basic("mtls-client:")));
        assert!(seen[1].path.ends_with(":generateAccessToken"));
        assert_eq!(seen[1].client_certs, vec![client.clone()]);

        // A trust chain without the leaf: the leaf is put first.
        let creds = certificate_account(
            &dir,
            "chain",
            &sts,
            json!({"certificate_config_location": config,
                   "trust_chain_path": fixture("intermediate.pem")}),
        );
        let (m, _) = with_creds(&creds, &trusted).await;
        assert_eq!(m.error_message, None);
        let form = url_form(&sts.requests.lock()[2].body);
        assert_eq!(
            form["subject_token"],
            json!([b64(&client), b64(&intermediate)]).to_string()
        );
        // Byte for byte what google-auth-library 10.9.1's CertificateSubjectTokenSupplier
        // returned for the same certificate and trust chain.
        let sdk = std::fs::read_to_string(fixture("sdk-chain-token.txt")).unwrap();
        assert_eq!(form["subject_token"], sdk);

        // A chain led by the leaf is sent as it is; the default config (under
        // CLOUDSDK_CONFIG) is found; the workload's certificate file may hold the chain.
        let gcloud = dir.join("gcloud");
        std::fs::create_dir_all(&gcloud).unwrap();
        let bundle = dir.join("bundle.pem");
        std::fs::write(
            &bundle,
            std::fs::read_to_string(fixture("client.pem")).unwrap()
                + &std::fs::read_to_string(fixture("intermediate.pem")).unwrap(),
        )
        .unwrap();
        let default_config = json!({"cert_configs": {"workload": {
            "cert_path": bundle.display().to_string(), "key_path": fixture("client.key")}}});
        std::fs::write(gcloud.join("certificate_config.json"), default_config.to_string()).unwrap();
        let creds = certificate_account(
            &dir,
            "default",
            &sts,
            json!({"use_default_certificate_config": true,
                   "trust_chain_path": bundle.display().to_string()}),
        );
        let gcloud_dir = gcloud.display().to_string();
        let vars = [trusted[0], ("CLOUDSDK_CONFIG", gcloud_dir.as_str())];
        let (m, _) = with_creds(&creds, &vars).await;
        assert_eq!(m.error_message, None);
        let seen = sts.requests.lock()[3].clone();
        assert_eq!(seen.client_certs, vec![client.clone(), intermediate.clone()]);
        assert_eq!(
            url_form(&seen.body)["subject_token"],
            json!([b64(&client), b64(&intermediate)]).to_string()
        );

        // The STS's certificate is checked: without the test CA, no exchange happens.
        let creds = certificate_account(&dir, "untrusted", &sts, json!({"certificate_config_location": config}));
        let message = with_creds(&creds, &[]).await.0.error_message.unwrap();
        assert!(message.contains("/v1/token failed"), "{message}");
        assert_eq!(sts.requests.lock().len(), 4);

        // With it, the same file exchanges (the last answer).
        let (m, sent) = with_creds(&creds, &trusted).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer mtls-3"));
    });
}

/// The certificate source's failures, in the SDK's words, none quoting a key.
#[test]
fn certificate_source_failures_are_worded_as_the_sdk_words_them() {
    runtime().block_on(async {
        let dir = scratch("mtls-errors");
        let sts = start_tls(vec![]).await;
        let ca = fixture("ca.pem");
        let trusted = [("NODE_EXTRA_CA_CERTS", ca.as_str())];
        let fail = |name: &'static str, certificate: Value, vars: Vec<(&'static str, String)>| {
            let creds = certificate_account(&dir, name, &sts, certificate);
            async move {
                let mut all: Vec<(&str, &str)> = trusted.to_vec();
                all.extend(vars.iter().map(|(k, v)| (*k, v.as_str())));
                with_creds(&creds, &all).await.0.error_message.unwrap()
            }
        };
        let empty_gcloud = dir.join("gcloud");
        std::fs::create_dir_all(&empty_gcloud).unwrap();
        let home = empty_gcloud.display().to_string();

        let message = fail("neither", json!({}), vec![]).await;
        assert!(
            message.contains(
                "Either `useDefaultCertificateConfig` must be true or a \
                 `certificateConfigLocation` must be provided."
            ),
            "{message}"
        );
        let message = fail(
            "both",
            json!({"use_default_certificate_config": true, "certificate_config_location": "/x"}),
            vec![],
        )
        .await;
        assert!(message.contains("Both `useDefaultCertificateConfig` and"), "{message}");

        let missing = dir.join("missing.json").display().to_string();
        let message = fail(
            "bad-location",
            json!({"certificate_config_location": missing}),
            vec![],
        )
        .await;
        assert!(
            message.contains(&format!("Provided certificate config path is invalid: {missing}")),
            "{message}"
        );
        let message = fail(
            "bad-variable",
            json!({"use_default_certificate_config": true}),
            vec![("GOOGLE_API_CERTIFICATE_CONFIG", missing.clone())],
        )
        .await;
        assert!(
            message.contains(&format!(
                "Path from environment variable \"GOOGLE_API_CERTIFICATE_CONFIG\" is invalid: {missing}"
            )),
            "{message}"
        );
        let message = fail(
            "nowhere",
            json!({"use_default_certificate_config": true}),
            vec![("CLOUDSDK_CONFIG", home.clone())],
        )
        .await;
        assert!(
            message.contains(&format!(
                "Could not find certificate configuration file. Searched override path, the \
                 \"GOOGLE_API_CERTIFICATE_CONFIG\" env var, and the gcloud path \
                 ({home}/certificate_config.json)."
            )),
            "{message}"
        );

        let no_paths = write(&dir, "no-paths", &json!({"cert_configs": {"workload": {"cert_path": "/c"}}}));
        let message = fail("no-paths", json!({"certificate_config_location": no_paths}), vec![]).await;
        assert!(
            message.contains(&format!(
                "Certificate config file ({no_paths}) is missing required \"cert_path\" or \
                 \"key_path\" in the workload config."
            )),
            "{message}"
        );

        // The key file holds a certificate, not a key: its path is named, nothing quoted.
        let swapped = cert_config(&dir, "swapped", &fixture("client.pem"), &fixture("client.pem"));
        let message = fail("swapped", json!({"certificate_config_location": swapped}), vec![]).await;
        assert!(
            message.contains(&format!("Failed to read private key file at {}", fixture("client.pem"))),
            "{message}"
        );
        assert!(!message.contains("BEGIN"), "{message}");
        let not_cert = cert_config(&dir, "not-cert", &fixture("client.key"), &fixture("client.key"));
        let message = fail("not-cert", json!({"certificate_config_location": not_cert}), vec![]).await;
        assert!(
            message.contains(&format!("Failed to read certificate file at {}", fixture("client.key"))),
            "{message}"
        );
        assert!(!message.contains("BEGIN") && !message.contains("MHcC"), "{message}");

        // The leaf in the trust chain, but not first.
        let config = cert_config(&dir, "config", &fixture("client.pem"), &fixture("client.key"));
        let reversed = dir.join("reversed.pem");
        std::fs::write(
            &reversed,
            std::fs::read_to_string(fixture("intermediate.pem")).unwrap()
                + &std::fs::read_to_string(fixture("client.pem")).unwrap(),
        )
        .unwrap();
        let message = fail(
            "reversed",
            json!({"certificate_config_location": config,
                   "trust_chain_path": reversed.display().to_string()}),
            vec![],
        )
        .await;
        assert!(
            message.contains(
                "Leaf certificate exists in the trust chain but is not the first entry (found at \
                 index 1)."
            ),
            "{message}"
        );
        assert!(sts.requests.lock().is_empty());
    });
}
