//! Managed identity (App Service, Azure Arc's challenge, IMDS behind its probe) at local
//! endpoints, and the Azure CLI as a fake `az` script on a scoped PATH.

use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::*;

/// A managed identity endpoint's token answer (`expires_on` as the string the endpoints
/// send).
fn identity_answer(token: &str) -> Value {
    let expires = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    json!({"status": 200, "headers": {"content-type": "application/json"},
           "chunks": [json!({"access_token": token, "expires_on": expires.to_string(),
                             "resource": "https://cognitiveservices.azure.com",
                             "token_type": "Bearer"}).to_string()]})
}

fn json_answer(status: u16, body: Value) -> Value {
    json!({"status": status, "headers": {"content-type": "application/json"},
           "chunks": [body.to_string()]})
}

/// A directory holding an executable `az` with `script` as its body; the PATH to use.
fn fake_az(name: &str, script: &str) -> String {
    let dir = scratch_dir(name);
    let az = format!("{dir}/az");
    std::fs::write(&az, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&az, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{dir}:/usr/bin:/bin")
}

#[test]
fn app_service_managed_identity_and_its_fallback_to_the_cli() {
    clear_process_env();
    runtime().block_on(async {
        let endpoint = start_server(vec![identity_answer("mi-app-token")]).await.unwrap();
        let url = format!("{}/msi/token", endpoint.origin);
        let no_az = scratch_dir("app-no-az");
        let vars = [
            ("IDENTITY_ENDPOINT", url.as_str()),
            ("IDENTITY_HEADER", "header-secret"),
            ("AZURE_CLIENT_ID", "uami-1"),
            ("PATH", no_az.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer mi-app-token"));
        let asked = endpoint.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].method, "GET");
        assert_eq!(
            asked[0].path,
            "/msi/token?api-version=2019-08-01&resource=https%3A%2F%2Fcognitiveservices.azure.com&client_id=uami-1"
        );
        assert_eq!(header(&asked[0], "x-identity-header"), Some("header-secret"));
        // Kept.
        let (m, _) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(endpoint.requests.lock().len(), 1);

        // The endpoint refuses: the chain goes on to the CLI, which answers.
        let refusing = start_server(vec![json_answer(
            400,
            json!({"error": {"code": "BadRequest", "message": "No managed identity found"}}),
        )])
        .await
        .unwrap();
        let url = format!("{}/msi/token", refusing.origin);
        let path = fake_az(
            "app-az",
            r#"echo '{"accessToken":"cli-after-mi","expires_on":4070908800,"tokenType":"Bearer"}'"#,
        );
        let vars = [
            ("IDENTITY_ENDPOINT", url.as_str()),
            ("IDENTITY_HEADER", "header-secret"),
            ("PATH", path.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer cli-after-mi"));
        assert_eq!(refusing.requests.lock().len(), 1);

        // Neither works: both reasons, the header's secret nowhere.
        let vars = [
            ("IDENTITY_ENDPOINT", url.as_str()),
            ("IDENTITY_HEADER", "header-secret"),
            ("PATH", no_az.as_str()),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(message.contains(&format!("managed identity: App Service (IDENTITY_ENDPOINT) at {url}: HTTP 400, BadRequest: No managed identity found; check that this resource has a system-assigned identity, or set AZURE_CLIENT_ID to a user-assigned one; the Azure CLI: Azure CLI could not be found")), "{message}");
        assert!(!message.contains("header-secret"));
        assert!(sent.is_empty());
    });
}

#[test]
fn azure_arc_answers_its_challenge_only_from_the_agent_folder() {
    clear_process_env();
    runtime().block_on(async {
        let dir = scratch_dir("arc");
        let key = format!("{dir}/stolen.key");
        std::fs::write(&key, "not-to-be-sent").unwrap();
        let agent = start_server(vec![json!({"status": 401,
            "headers": {"www-authenticate": format!("Basic realm={key}")}, "chunks": []})])
        .await
        .unwrap();
        let url = format!("{}/metadata/identity/oauth2/token", agent.origin);
        let vars = [
            ("IDENTITY_ENDPOINT", url.as_str()),
            ("IMDS_ENDPOINT", "http://localhost:40342"),
            ("AZURE_TOKEN_CREDENTIALS", "ManagedIdentityCredential"),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        let message = m.error_message.unwrap();
        assert!(message.contains(&format!("managed identity: Azure Arc (IDENTITY_ENDPOINT) at {url}: the agent named a key file outside /var/opt/azcmagent/tokens/: {key}")), "{message}");
        let asked = agent.requests.lock().clone();
        assert_eq!(asked.len(), 1, "no second request with the file's text");
        assert_eq!(
            asked[0].path,
            "/metadata/identity/oauth2/token?api-version=2020-06-01&resource=https%3A%2F%2Fcognitiveservices.azure.com"
        );
        assert_eq!(header(&asked[0], "metadata"), Some("true"));
        assert!(sent.is_empty());
    });
}

#[test]
fn imds_is_probed_then_asked_with_retries() {
    clear_process_env();
    runtime().block_on(async {
        let imds = start_server(vec![
            // The probe (no Metadata header) gets IMDS's refusal: it is there.
            json_answer(400, json!({"error": "invalid_request",
                "error_description": "Required metadata header not specified"})),
            json_answer(503, json!({"error": "busy"})),
            identity_answer("mi-imds-token"),
        ])
        .await
        .unwrap();
        let vars = [
            ("TERN_AZURE_IMDS_HOST", imds.origin.as_str()),
            ("AZURE_CLIENT_ID", "uami-vm"),
            ("AZURE_TOKEN_CREDENTIALS", "prod"),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer mi-imds-token"));
        let asked = imds.requests.lock().clone();
        assert_eq!(asked.len(), 3);
        assert_eq!(asked[0].path, "/metadata/identity/oauth2/token");
        assert_eq!(header(&asked[0], "metadata"), None);
        for a in &asked[1..] {
            assert_eq!(
                a.path,
                "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fcognitiveservices.azure.com&client_id=uami-vm"
            );
            assert_eq!(header(a, "metadata"), Some("true"));
        }

        // AZURE_POD_IDENTITY_AUTHORITY_HOST: no probe.
        let pod = start_server(vec![identity_answer("mi-pod-token")]).await.unwrap();
        let vars = [
            ("AZURE_POD_IDENTITY_AUTHORITY_HOST", pod.origin.as_str()),
            ("AZURE_TOKEN_CREDENTIALS", "prod"),
        ];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer mi-pod-token"));
        let asked = pod.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert!(asked[0].path.ends_with("&resource=https%3A%2F%2Fcognitiveservices.azure.com"));

        // A host that accepts and never answers: the probe gives up within a second or so.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_origin = format!("http://{}", silent.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((sock, _)) = silent.accept().await {
                open.push(sock);
            }
        });
        let vars = [
            ("TERN_AZURE_IMDS_HOST", silent_origin.as_str()),
            ("AZURE_TOKEN_CREDENTIALS", "prod"),
        ];
        let started = Instant::now();
        let (m, sent) = once(&with_env(&vars)).await;
        let elapsed = started.elapsed();
        let message = m.error_message.unwrap();
        assert!(message.contains(&format!("managed identity: no IMDS endpoint answered at {silent_origin} within a second (Request timed out.")), "{message}");
        assert!(message.ends_with("no other source (AZURE_TOKEN_CREDENTIALS is prod)); set AZURE_OPENAI_API_KEY, or for Entra ID AZURE_TENANT_ID and AZURE_CLIENT_ID with AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH or AZURE_FEDERATED_TOKEN_FILE, or run where a managed identity is assigned, or run `az login`"), "{message}");
        assert!(elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4), "{elapsed:?}");
        assert!(sent.is_empty());
        held.abort();
    });
}

#[test]
fn the_azure_cli_token_is_used_and_its_failures_say_what_to_do() {
    clear_process_env();
    runtime().block_on(async {
        let log = format!("{}/calls", scratch_dir("cli-log"));
        let path = fake_az(
            "cli-ok",
            &format!(
                "echo \"$(pwd) $*\" >> {log}\n\
                 echo '{{\"accessToken\":\"cli-token\",\"expiresOn\":\"2099-01-01 00:00:00.000000\",\"expires_on\":4070908800,\"subscription\":\"s\",\"tenant\":\"t\",\"tokenType\":\"Bearer\"}}'"
            ),
        );
        let vars = [("PATH", path.as_str()), ("AZURE_TOKEN_CREDENTIALS", "dev")];
        let (m, sent) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer cli-token"));
        let (m, _) = once(&with_env(&vars)).await;
        assert_eq!(m.error_message, None);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            format!(
                "{} account get-access-token --output json --resource https://cognitiveservices.azure.com\n",
                // `/bin` may be a link to `/usr/bin`.
                std::fs::canonicalize("/bin").unwrap().display()
            ),
            "run once from /bin, then kept"
        );

        let not_logged_in = fake_az(
            "cli-login",
            "echo \"ERROR: Please run 'az login' to setup account.\" >&2; exit 1",
        );
        let consent = fake_az(
            "cli-consent",
            "echo 'ERROR: AADSTS65001: consent required.' >&2; \
             echo 'Run the command below to authenticate interactively:' >&2; \
             echo 'az login --scope https://cognitiveservices.azure.com/.default' >&2; exit 1",
        );
        let printed_secret = fake_az("cli-garbage", "echo 'eyJ0eXAi-not-json-secret'");
        let failing = fake_az("cli-failing", "echo 'ERROR: the subscription is disabled' >&2; exit 2");
        let slow = fake_az("cli-slow", "exec sleep 30");
        for (path, timeout, expected) in [
            (&not_logged_in, None, "the Azure CLI: not logged in; run `az login`; no other source (AZURE_TOKEN_CREDENTIALS is AzureCliCredential)"),
            (&consent, None, "the Azure CLI: the CLI asks for a new login; run `az login --scope https://cognitiveservices.azure.com/.default`; no other source (AZURE_TOKEN_CREDENTIALS is AzureCliCredential)"),
            (&printed_secret, None, "the Azure CLI: `az account get-access-token` printed no JSON; no other source (AZURE_TOKEN_CREDENTIALS is AzureCliCredential)"),
            (&failing, None, "the Azure CLI: `az account get-access-token` exited with code 2: ERROR: the subscription is disabled; no other source (AZURE_TOKEN_CREDENTIALS is AzureCliCredential)"),
            (&slow, Some(400), "the Azure CLI: `az account get-access-token` did not finish within 400 ms; check that `az` runs without prompting (`az account show`); no other source (AZURE_TOKEN_CREDENTIALS is AzureCliCredential)"),
        ] {
            let mut o = with_env(&[("PATH", path.as_str()), ("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")]);
            o.timeout_ms = timeout;
            let started = Instant::now();
            let (m, sent) = once(&o).await;
            let message = m.error_message.unwrap();
            assert!(message.contains(expected), "{message}");
            assert!(!message.contains("eyJ0eXAi"), "{message}");
            assert!(started.elapsed() < Duration::from_secs(5));
            assert!(sent.is_empty());
        }
    });
}
