//! Console sessions (`aws login`) refreshed as `@aws-sdk/credential-provider-login` refreshes
//! them, against a local sign-in service: keys within five minutes of expiring are renewed
//! with `POST /v1/token` and a DPoP proof (checked here with the key's own public half), the
//! cache file is rewritten with the new keys (everything else in it, and its permissions,
//! kept) and they sign the Bedrock request; a refused session ends with the SDK's words; any
//! other failure keeps keys that have not expired yet.
//!
//! Each test has its own HOME and names its profile through the options, so nothing here
//! reads or changes the process environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::digest;
use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, CapturedRequest, ReplayServer};
use tern_ai::stream_fn::StreamOptions;
use tern_ai::AssistantMessage;

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime;

#[path = "support/endpoints.rs"]
mod endpoints;
use endpoints::header;

#[path = "support/final_message.rs"]
mod final_message;

#[path = "support/bedrock.rs"]
mod bedrock;
use bedrock::{bedrock_run_with, iso};

/// A throwaway P-256 key in the SEC1 PEM form `aws login` caches.
const DPOP_KEY: &str = "-----BEGIN EC PRIVATE KEY-----\n\
    MHcCAQEEIMvC1A5YIpcsAem25uzk55NpEdwrhxhaRLlR0MHvTAhhoAoGCCqGSM49\n\
    AwEHoUQDQgAEYm5wnDcN0gQQv0d1HLWmHRqVGP5JI+kWS7Y8cDdPnFip/z7ZFHdS\n\
    19Pzx9l1nOKHiOVYZWD9LPXtDclJ19qlbA==\n\
    -----END EC PRIVATE KEY-----\n";
const SESSION: &str = "arn:aws:iam::111122223333:user/me";

/// A HOME with a `console` profile whose cached keys expire at `expires`.
fn home(name: &str, expires: SystemTime) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("tern-login-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".aws/login/cache")).unwrap();
    std::fs::write(
        dir.join(".aws/config"),
        format!("[profile console]\nlogin_session = {SESSION}\nregion = us-west-2\n"),
    )
    .unwrap();
    let sum = digest::digest(&digest::SHA256, SESSION.as_bytes());
    let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let cache = dir.join(format!(".aws/login/cache/{hex}.json"));
    let token = json!({
        "accessToken": {"accessKeyId": "ASIAOLD", "secretAccessKey": "old-secret",
                        "sessionToken": "old-token", "accountId": "111122223333",
                        "expiresAt": iso(expires)},
        "tokenType": "urn:aws:params:oauth:token-type:access_token_sigv4",
        "clientId": "arn:aws:signin:::devtools/same-device",
        "refreshToken": "refresh-1",
        "idToken": "id-token",
        "dpopKey": DPOP_KEY,
    });
    std::fs::write(&cache, serde_json::to_string_pretty(&token).unwrap()).unwrap();
    set_mode(&cache, 0o600);
    (dir, cache)
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A Bedrock request with profile `console` of `home`, the sign-in service at `signin`.
async fn bedrock_run(
    home: &Path,
    signin: &ReplayServer,
) -> (AssistantMessage, Vec<CapturedRequest>) {
    let mut options = StreamOptions::default();
    options.bedrock.profile = Some("console".into());
    for (k, v) in [
        ("HOME", home.display().to_string()),
        ("AWS_ENDPOINT_URL_SIGNIN", format!("{}/", signin.origin)),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
    ] {
        options.env.insert(k.into(), v);
    }
    bedrock_run_with(options).await
}

fn signin_answer(status: u16, error_type: Option<&str>, body: Value) -> Value {
    let mut headers = json!({"content-type": "application/json"});
    if let Some(t) = error_type {
        headers["x-amzn-errortype"] = json!(t);
    }
    json!({"status": status, "headers": headers, "chunks": [body.to_string()]})
}

/// The key id in a SigV4 `authorization` header.
fn signing_key_id(r: &CapturedRequest) -> &str {
    let auth = header(r, "authorization").unwrap();
    let credential = auth.split("Credential=").nth(1).unwrap();
    credential.split('/').next().unwrap()
}

fn jwt_part(p: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
}

#[test]
fn expiring_console_keys_are_refreshed_with_a_dpop_proof() {
    runtime().block_on(async {
        let (dir, cache) = home("refresh", SystemTime::now() + Duration::from_secs(120));
        let signin = start_server(vec![signin_answer(
            200,
            None,
            json!({"accessToken": {"accessKeyId": "ASIANEW", "secretAccessKey": "new-secret",
                                   "sessionToken": "new-token"},
                   "tokenType": "aws_sigv4", "expiresIn": 900, "refreshToken": "refresh-2"}),
        )])
        .await
        .unwrap();
        let (m, sent) = bedrock_run(&dir, &signin).await;
        assert_eq!(m.error_message, None);
        assert_eq!(signing_key_id(&sent[0]), "ASIANEW");
        assert_eq!(header(&sent[0], "x-amz-security-token"), Some("new-token"));

        // The refresh request, as the SDK sends it.
        let asked = signin.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!((asked[0].method.as_str(), asked[0].path.as_str()), ("POST", "/v1/token"));
        assert_eq!(header(&asked[0], "content-type"), Some("application/json"));
        assert_eq!(
            asked[0].body,
            r#"{"clientId":"arn:aws:signin:::devtools/same-device","grantType":"refresh_token","refreshToken":"refresh-1"}"#
        );
        // The DPoP proof: for this request, signed with the cached key.
        let proof = header(&asked[0], "dpop").expect("a DPoP header");
        let parts: Vec<&str> = proof.split('.').collect();
        let (head, claims) = (jwt_part(parts[0]), jwt_part(parts[1]));
        assert_eq!((head["alg"].as_str(), head["typ"].as_str()), (Some("ES256"), Some("dpop+jwt")));
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], format!("{}/v1/token", signin.origin));
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(now.abs_diff(claims["iat"].as_u64().unwrap()) < 60);
        let der: String = DPOP_KEY.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = STANDARD.decode(der).unwrap();
        let point = &der[der.len() - 65..];
        let jwk_point: Vec<u8> = [
            vec![4u8],
            URL_SAFE_NO_PAD.decode(head["jwk"]["x"].as_str().unwrap()).unwrap(),
            URL_SAFE_NO_PAD.decode(head["jwk"]["y"].as_str().unwrap()).unwrap(),
        ]
        .concat();
        assert_eq!(jwk_point, point, "the jwk is the cached key's public half");
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .expect("signed with the cached key");

        // The cache file: new keys, expiry and refresh token; the rest and its mode kept.
        let text = std::fs::read_to_string(&cache).unwrap();
        let saved: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(saved["accessToken"]["accessKeyId"], "ASIANEW");
        assert_eq!(saved["accessToken"]["secretAccessKey"], "new-secret");
        assert_eq!(saved["accessToken"]["sessionToken"], "new-token");
        assert_eq!(saved["accessToken"]["accountId"], "111122223333");
        assert_eq!(saved["refreshToken"], "refresh-2");
        assert_eq!(saved["idToken"], "id-token");
        assert_eq!(saved["dpopKey"], DPOP_KEY);
        let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["accessToken", "tokenType", "clientId", "refreshToken", "idToken", "dpopKey"]);
        let expires = saved["accessToken"]["expiresAt"].as_str().unwrap();
        assert!(expires.ends_with('Z') && expires.contains('.'), "{expires}");
        assert!(text.starts_with("{\n  \"accessToken\": {\n    \"accessKeyId\""), "{text}");
        #[cfg(unix)]
        assert_eq!(mode(&cache), 0o600);

        // Fresh for fifteen minutes: the next request asks nothing.
        let (m, sent) = bedrock_run(&dir, &signin).await;
        assert_eq!(m.error_message, None);
        assert_eq!(signing_key_id(&sent[0]), "ASIANEW");
        assert_eq!(signin.requests.lock().len(), 1);
        let _ = std::fs::remove_dir_all(dir);
    });
}

#[test]
fn a_refused_session_ends_with_the_sdk_s_words() {
    runtime().block_on(async {
        // Even keys not expired yet: the service said the session is over.
        let (dir, cache) = home("denied", SystemTime::now() + Duration::from_secs(120));
        let before = std::fs::read_to_string(&cache).unwrap();
        let signin = start_server(vec![signin_answer(
            400,
            Some("AccessDeniedException:http://internal.amazon.com/coral/com.amazonaws.signin/"),
            json!({"error": "TOKEN_EXPIRED", "message": "Session expired"}),
        )])
        .await
        .unwrap();
        let (m, sent) = bedrock_run(&dir, &signin).await;
        let e = m.error_message.unwrap();
        assert!(
            e.contains("Your session has expired. Please reauthenticate."),
            "{e}"
        );
        assert!(sent.is_empty());
        assert_eq!(std::fs::read_to_string(&cache).unwrap(), before);
        let _ = std::fs::remove_dir_all(dir);
    });
}

#[test]
fn other_failures_keep_keys_until_they_expire() {
    runtime().block_on(async {
        let failing = || {
            signin_answer(
                500,
                Some("InternalServerException"),
                json!({"error": "server_error", "message": "try later"}),
            )
        };
        let (dir, cache) = home("kept", SystemTime::now() + Duration::from_secs(120));
        let before = std::fs::read_to_string(&cache).unwrap();
        let signin = start_server(vec![failing()]).await.unwrap();
        let (m, sent) = bedrock_run(&dir, &signin).await;
        assert_eq!(m.error_message, None);
        assert_eq!(signing_key_id(&sent[0]), "ASIAOLD");
        assert_eq!(signin.requests.lock().len(), 1);
        assert_eq!(std::fs::read_to_string(&cache).unwrap(), before);
        let _ = std::fs::remove_dir_all(dir);

        let (dir, _) = home("expired", SystemTime::now() - Duration::from_secs(60));
        let signin = start_server(vec![failing()]).await.unwrap();
        let (m, sent) = bedrock_run(&dir, &signin).await;
        let e = m.error_message.unwrap();
        assert!(
            e.contains("Failed to refresh token: InternalServerException: try later. Please re-authenticate using aws login"),
            "{e}"
        );
        assert!(sent.is_empty());
        let _ = std::fs::remove_dir_all(dir);
    });
}
