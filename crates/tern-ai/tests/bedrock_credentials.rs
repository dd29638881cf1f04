//! Bedrock's AWS credential chain end to end: real shared files in a temporary HOME, real
//! local HTTP servers standing in for STS, the container endpoint and IMDS, and the
//! Bedrock request's SigV4 signature recomputed here, independently, from the request the
//! server received and the secret the test wrote.
//!
//! The chain reads the process environment, so the tests take one lock and set the
//! variables they need (every `AWS_*` variable cleared first; IMDS always disabled or local).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};
use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, CapturedRequest, ReplayServer};
use tern_ai::providers::run;
use tern_ai::stream_fn::{Context, StreamOptions};
use tern_ai::{AssistantMessage, Model};

static ENV: Mutex<()> = Mutex::new(());

#[path = "support/runtime.rs"]
mod runtime;
use runtime::runtime as rt;

#[path = "support/final_message.rs"]
mod final_message;
use final_message::Final;

#[path = "support/endpoints.rs"]
mod endpoints;
use endpoints::{header, json_response};

#[path = "support/bedrock.rs"]
mod bedrock;
use bedrock::{bedrock_run_with, iso};

/// A temporary HOME with `~/.aws`, and the environment reset around it.
struct Home {
    dir: PathBuf,
}

impl Home {
    fn new(name: &str, vars: &[(&str, &str)]) -> Self {
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                std::env::remove_var(k);
            }
        }
        let dir = std::env::temp_dir().join(format!("tern-aws-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::env::set_var("HOME", &dir);
        std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
        for (k, v) in vars {
            std::env::set_var(k, v);
        }
        Home { dir }
    }

    fn write(&self, rel: &str, text: &str) -> String {
        let path = self.dir.join(rel);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the case against a fresh Bedrock stand-in; the message and what it received.
async fn bedrock_run() -> (AssistantMessage, Vec<CapturedRequest>) {
    bedrock_run_with(StreamOptions::default()).await
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Checks `r`'s SigV4 `authorization` against one computed here with `secret`; returns the
/// access key id, region and service of its scope.
fn check_signature(r: &CapturedRequest, secret: &str) -> (String, String, String) {
    let auth = header(r, "authorization").expect("signed");
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 ").expect(auth);
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|p| p.strip_prefix(&format!("{name}=")))
            .expect(name)
            .to_string()
    };
    let credential = field("Credential");
    let signed = field("SignedHeaders");
    let parts: Vec<&str> = credential.split('/').collect();
    let (key_id, date, region, service) = (parts[0], parts[1], parts[2], parts[3]);
    let amz_date = header(r, "x-amz-date").unwrap();
    assert!(amz_date.starts_with(date));
    let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
    // Non-S3 services sign the path encoded once more, segment by segment.
    let canonical_path = path.split('/').map(encode).collect::<Vec<_>>().join("/");
    let mut headers = String::new();
    for name in signed.split(';') {
        let value = header(r, name).unwrap_or_else(|| panic!("{name} signed but not sent"));
        headers.push_str(&format!("{name}:{}\n", value.trim()));
    }
    let body_hash = hex(digest::digest(&digest::SHA256, r.body.as_bytes()).as_ref());
    let canonical = format!(
        "{}\n{canonical_path}\n{query}\n{headers}\n{signed}\n{body_hash}",
        r.method
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mut key = format!("AWS4{secret}").into_bytes();
    for part in [date, region, service, "aws4_request"] {
        key = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes())
            .as_ref()
            .to_vec();
    }
    let expected =
        hex(hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), to_sign.as_bytes()).as_ref());
    assert_eq!(field("Signature"), expected, "signature of {canonical}");
    (key_id.into(), region.into(), service.into())
}

fn in_secs(s: u64) -> String {
    iso(SystemTime::now() + Duration::from_secs(s))
}

fn sts_answer(key: &str, secret: &str, token: &str, expires: &str) -> Value {
    let xml = format!(
        "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult>\
         <Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>\
         <SessionToken>{token}</SessionToken><Expiration>{expires}</Expiration></Credentials>\
         </AssumeRoleResult></AssumeRoleResponse>"
    );
    json!({"status": 200, "headers": {"content-type": "text/xml"}, "chunks": [xml]})
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ENV.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_profile_s_static_keys_and_region_sign_the_request() {
    let _g = lock();
    let home = Home::new("static", &[("AWS_PROFILE", "dev")]);
    home.write(
        ".aws/credentials",
        "[default]\naws_access_key_id = AKIDEFAULT\naws_secret_access_key = wrong\n\
         [dev]\naws_access_key_id = AKIDEV\naws_secret_access_key = dev/secret+1\n\
         aws_session_token = tok-dev\n",
    );
    home.write(
        ".aws/config",
        "[profile dev]\nregion = eu-west-3\n[dev]\nregion = wrong-1\n",
    );
    rt().block_on(async {
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(m.text(), "Hello there.");
        assert_eq!(sent.len(), 1);
        let (key, region, service) = check_signature(&sent[0], "dev/secret+1");
        assert_eq!(
            (key.as_str(), region.as_str(), service.as_str()),
            ("AKIDEV", "eu-west-3", "bedrock")
        );
        assert_eq!(header(&sent[0], "x-amz-security-token"), Some("tok-dev"));
        assert_eq!(
            sent[0].path,
            "/model/apac.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
        );
    });
}

#[test]
fn environment_keys_win_over_the_profile_and_files_move_with_their_variables() {
    let _g = lock();
    let home = Home::new(
        "envkeys",
        &[
            ("AWS_ACCESS_KEY_ID", "AKIENV"),
            ("AWS_SECRET_ACCESS_KEY", "env-secret"),
        ],
    );
    let creds = home.write(
        "elsewhere-credentials",
        "[default]\naws_access_key_id = AKIFILE\naws_secret_access_key = file-secret\n",
    );
    rt().block_on(async {
        let (_, sent) = bedrock_run().await;
        assert_eq!(check_signature(&sent[0], "env-secret").0, "AKIENV");
        std::env::remove_var("AWS_ACCESS_KEY_ID");
        std::env::remove_var("AWS_SECRET_ACCESS_KEY");
        std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &creds);
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        let (key, region, _) = check_signature(&sent[0], "file-secret");
        assert_eq!((key.as_str(), region.as_str()), ("AKIFILE", "us-east-1"));
        assert_eq!(header(&sent[0], "x-amz-security-token"), None);
    });
}

#[test]
fn a_role_profile_assumes_its_role_at_sts_and_keeps_the_credentials() {
    let _g = lock();
    rt().block_on(async {
        let sts = start_server(vec![sts_answer("ASIAROLE", "role-secret", "role&token", &in_secs(3600))])
            .await
            .unwrap();
        let home = Home::new(
            "role",
            &[("AWS_PROFILE", "role"), ("AWS_ENDPOINT_URL_STS", &format!("{}/", sts.origin))],
        );
        home.write(".aws/credentials", "[base]\naws_access_key_id = AKIBASE\naws_secret_access_key = base-secret\n");
        home.write(
            ".aws/config",
            "[profile role]\nrole_arn = arn:aws:iam::123456789012:role/Dev Role\nsource_profile = base\n\
             role_session_name = tern-test\nexternal_id = ext-1\nregion = us-west-2\n",
        );
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        let (key, region, _) = check_signature(&sent[0], "role-secret");
        assert_eq!((key.as_str(), region.as_str()), ("ASIAROLE", "us-west-2"));
        assert_eq!(header(&sent[0], "x-amz-security-token"), Some("role&token"));
        let asked = sts.requests.lock().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].method, "POST");
        assert_eq!(
            asked[0].body,
            "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2FDev%20Role\
             &RoleSessionName=tern-test&ExternalId=ext-1"
        );
        let (key, region, service) = check_signature(&asked[0], "base-secret");
        assert_eq!((key.as_str(), region.as_str(), service.as_str()), ("AKIBASE", "us-west-2", "sts"));
        // Kept for the next request.
        let (m, _) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(sts.requests.lock().len(), 1);
    });
}

#[test]
fn credentials_about_to_expire_are_fetched_again() {
    let _g = lock();
    rt().block_on(async {
        let sts = start_server(vec![
            sts_answer("ASIAONE", "one", "t1", &in_secs(120)),
            sts_answer("ASIATWO", "two", "t2", &in_secs(3600)),
        ])
        .await
        .unwrap();
        let home = Home::new(
            "refresh",
            &[
                ("AWS_ENDPOINT_URL_STS", &sts.origin),
                ("AWS_REGION", "eu-central-1"),
            ],
        );
        home.write(
            ".aws/config",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n\
             aws_access_key_id = AKISELF\naws_secret_access_key = self-secret\n",
        );
        let (_, sent) = bedrock_run().await;
        assert_eq!(check_signature(&sent[0], "one").0, "ASIAONE");
        // Two minutes left is inside the refresh window: STS is asked again.
        let (_, sent) = bedrock_run().await;
        assert_eq!(check_signature(&sent[0], "two").0, "ASIATWO");
        let asked = sts.requests.lock().clone();
        assert_eq!(asked.len(), 2);
        // The profile is its own source: its keys sign the AssumeRole call.
        assert_eq!(check_signature(&asked[1], "self-secret").1, "eu-central-1");
    });
}

#[test]
fn sts_failures_and_hostile_answers_end_the_run_with_their_reason() {
    let _g = lock();
    rt().block_on(async {
        let denied = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>\
                      <Message>not allowed &amp; logged</Message></Error></ErrorResponse>";
        let sts = start_server(vec![
            json!({"status": 403, "chunks": [denied]}),
            json!({"status": 200, "chunks": ["<Credentials><AccessKeyId>A</AccessKeyId><Secret"]}),
            json!({"status": 200, "chunks": [{"hex": "fffe00"}]}),
        ])
        .await
        .unwrap();
        let home = Home::new("sts-fail", &[("AWS_ENDPOINT_URL_STS", &sts.origin)]);
        home.write(
            ".aws/config",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n\
             [profile src]\naws_access_key_id = AKISRC\naws_secret_access_key = src-secret\n",
        );
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("AccessDenied not allowed & logged"), "{e}");
        assert!(e.contains("profile default"), "{e}");
        assert!(sent.is_empty(), "nothing sent to Bedrock");
        for _ in 0..2 {
            let (m, sent) = bedrock_run().await;
            let e = m.error_message.unwrap();
            assert!(
                e.contains("STS AssumeRole for arn:aws:iam::1:role/r failed: HTTP 200"),
                "{e}"
            );
            assert!(!e.contains("src-secret"), "{e}");
            assert!(sent.is_empty());
        }
    });
}

#[test]
fn broken_or_looping_profiles_fail_clearly() {
    let _g = lock();
    let home = Home::new("broken", &[("AWS_PROFILE", "a")]);
    home.write(
        ".aws/config",
        "\u{0}[[[\n[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = b\n=\n\
         [profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n[profile",
    );
    rt().block_on(async {
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("source_profile chain loops"), "{e}");
        home.write(
            ".aws/config",
            "[profile a]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = nowhere\n",
        );
        std::env::set_var("AWS_PROFILE", "a");
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("source_profile nowhere is not in"), "{e}");
        // A role that needs an MFA code: nothing can ask for one (the SDK's words).
        home.write(
            ".aws/config",
            "[profile mfa]\nregion = us-east-1\nrole_arn = arn:aws:iam::1:role/m\n\
             source_profile = keys\nmfa_serial = arn:aws:iam::1:mfa/me\n\
             [profile keys]\naws_access_key_id = AKIK\naws_secret_access_key = s\n",
        );
        std::env::set_var("AWS_PROFILE", "mfa");
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(
            e.contains(
                "Profile mfa requires multi-factor authentication, but no MFA code callback was provided."
            ),
            "{e}"
        );
        assert!(sent.is_empty());
    });
}

#[test]
fn credential_process_output_signs_the_request() {
    let _g = lock();
    let home = Home::new("process", &[("AWS_PROFILE", "proc")]);
    let out = json!({"Version": 1, "AccessKeyId": "AKIPROC", "SecretAccessKey": "proc-secret",
                     "SessionToken": "proc-token", "Expiration": in_secs(3600)});
    let script = home.write("creds.sh", &format!("#!/bin/sh\ncat <<'EOF'\n{out}\nEOF\n"));
    let failing = home.write("fail.sh", "#!/bin/sh\necho 'sso expired, log in again' >&2\necho '{\"SecretAccessKey\":\"leak\"}'\nexit 3\n");
    home.write(
        ".aws/config",
        // A profile names its region: without one the SDK fails first (`Region is missing`).
        &format!("[profile proc]\nregion = us-east-1\ncredential_process = sh {script}\n[profile bad]\nregion = us-east-1\ncredential_process = sh {failing}\n"),
    );
    rt().block_on(async {
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "proc-secret").0, "AKIPROC");
        assert_eq!(header(&sent[0], "x-amz-security-token"), Some("proc-token"));
        std::env::set_var("AWS_PROFILE", "bad");
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("credential_process of profile bad"), "{e}");
        assert!(e.contains("sso expired, log in again"), "{e}");
        assert!(!e.contains("leak"), "stdout never shown: {e}");
        assert!(sent.is_empty());
    });
}

#[test]
fn a_web_identity_token_file_is_exchanged_at_sts() {
    let _g = lock();
    rt().block_on(async {
        let sts = start_server(vec![sts_answer("ASIAWEB", "web-secret", "web-token", &in_secs(3600))])
            .await
            .unwrap();
        let home = Home::new("web", &[("AWS_ENDPOINT_URL_STS", &sts.origin)]);
        let token = home.write("token", "eyJ.web+token/=\n");
        std::env::set_var("AWS_WEB_IDENTITY_TOKEN_FILE", &token);
        std::env::set_var("AWS_ROLE_ARN", "arn:aws:iam::1:role/web");
        std::env::set_var("AWS_ROLE_SESSION_NAME", "pod-1");
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "web-secret").0, "ASIAWEB");
        let asked = sts.requests.lock().clone();
        assert_eq!(
            asked[0].body,
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fweb\
             &RoleSessionName=pod-1&WebIdentityToken=eyJ.web%2Btoken%2F%3D"
        );
        assert_eq!(header(&asked[0], "authorization"), None, "unsigned");
    });
}

#[test]
fn container_credentials_with_an_authorization_token_file() {
    let _g = lock();
    rt().block_on(async {
        let ecs = start_server(vec![json_response(json!({"AccessKeyId": "AKIECS", "SecretAccessKey": "ecs-secret",
                                                        "Token": "ecs-token", "Expiration": in_secs(3600)}))])
            .await
            .unwrap();
        let home = Home::new("ecs", &[]);
        let token = home.write("ecs-auth", "Basic abc\n");
        std::env::set_var("AWS_CONTAINER_CREDENTIALS_FULL_URI", format!("{}/v1/credentials", ecs.origin));
        std::env::set_var("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token);
        std::env::set_var("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored");
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "ecs-secret").0, "AKIECS");
        let asked = ecs.requests.lock().clone();
        assert_eq!((asked[0].method.as_str(), asked[0].path.as_str()), ("GET", "/v1/credentials"));
        assert_eq!(header(&asked[0], "authorization"), Some("Basic abc"));
        // A plain-HTTP URI to anywhere else is refused before any request.
        let home = Home::new("ecs-refused", &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://metadata.example.invalid/creds")]);
        let (m, _) = bedrock_run().await;
        assert!(m.error_message.unwrap().contains("must be https"));
        drop(home);
    });
}

#[test]
fn instance_metadata_v2_token_then_role() {
    let _g = lock();
    rt().block_on(async {
        let imds: ReplayServer = start_server(vec![
            json!({"status": 200, "chunks": ["imds-session-token"]}),
            json!({"status": 200, "chunks": ["my-role\n"]}),
            json_response(json!({"Code": "Success", "AccessKeyId": "AKIIMDS", "SecretAccessKey": "imds-secret",
                               "Token": "imds-token", "Expiration": in_secs(3600)})),
        ])
        .await
        .unwrap();
        let _home = Home::new("imds", &[]);
        std::env::remove_var("AWS_EC2_METADATA_DISABLED");
        std::env::set_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.origin);
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "imds-secret").0, "AKIIMDS");
        let asked = imds.requests.lock().clone();
        let line = |r: &CapturedRequest| format!("{} {}", r.method, r.path);
        assert_eq!(
            asked.iter().map(line).collect::<Vec<_>>(),
            [
                "PUT /latest/api/token",
                "GET /latest/meta-data/iam/security-credentials/",
                "GET /latest/meta-data/iam/security-credentials/my-role"
            ]
        );
        assert_eq!(header(&asked[0], "x-aws-ec2-metadata-token-ttl-seconds"), Some("21600"));
        assert_eq!(header(&asked[1], "x-aws-ec2-metadata-token"), Some("imds-session-token"));
        assert_eq!(header(&asked[2], "x-aws-ec2-metadata-token"), Some("imds-session-token"));
    });
}

#[test]
fn without_credentials_the_error_lists_every_source_tried() {
    let _g = lock();
    let home = Home::new("none", &[("AWS_PROFILE", "ghost")]);
    home.write(".aws/config", "[profile other]\nregion = eu-west-1\n");
    rt().block_on(async {
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(
            e.starts_with("Could not load credentials from any providers (tried "),
            "{e}"
        );
        for part in [
            "AWS_ACCESS_KEY_ID",
            "profile ghost in",
            "no such profile",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_EC2_METADATA_DISABLED",
            "AWS_BEARER_TOKEN_BEDROCK",
        ] {
            assert!(e.contains(part), "{e} lacks {part}");
        }
        assert!(sent.is_empty());
    });
}

#[test]
fn an_sso_session_s_cached_token_becomes_role_credentials() {
    let _g = lock();
    rt().block_on(async {
        let expiration_ms = (SystemTime::now() + Duration::from_secs(3600))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let portal = start_server(vec![
            json_response(json!({"roleCredentials": {"accessKeyId": "ASIASSO", "secretAccessKey": "sso-secret",
                                                   "sessionToken": "sso-token", "expiration": expiration_ms}})),
            json!({"status": 401, "headers": {"content-type": "application/json"},
                   "chunks": [json!({"message": "Session token not found or invalid"}).to_string()]}),
        ])
        .await
        .unwrap();
        let home = Home::new(
            "sso",
            &[("AWS_PROFILE", "work"), ("AWS_ENDPOINT_URL_SSO", &portal.origin)],
        );
        home.write(
            ".aws/config",
            "[profile work]\nsso_session = corp\nsso_account_id = 111122223333\n\
             sso_role_name = Read Only\nregion = eu-north-1\n\
             [sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n\
             [profile legacy]\nsso_start_url = https://legacy.awsapps.com/start\nsso_region = us-east-2\n\
             sso_account_id = 1\nsso_role_name = r\n",
        );
        std::fs::create_dir_all(home.dir.join(".aws/sso/cache")).unwrap();
        // The file names are the SHA-1 of "corp" and of the legacy start URL (sha1sum).
        let sha1 = |s: &str| {
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf %s '{s}' | sha1sum")])
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()[..40].to_string()
        };
        home.write(
            &format!(".aws/sso/cache/{}.json", sha1("corp")),
            &json!({"accessToken": "sso-access", "expiresAt": in_secs(3600)}).to_string(),
        );
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        let (key, region, _) = check_signature(&sent[0], "sso-secret");
        assert_eq!((key.as_str(), region.as_str()), ("ASIASSO", "eu-north-1"));
        let asked = portal.requests.lock().clone();
        assert_eq!(
            asked[0].path,
            "/federation/credentials?account_id=111122223333&role_name=Read%20Only"
        );
        assert_eq!(header(&asked[0], "x-amz-sso_bearer_token"), Some("sso-access"));

        // The legacy profile's token is expired: nothing is asked, the message says to log in.
        home.write(
            &format!(".aws/sso/cache/{}.json", sha1("https://legacy.awsapps.com/start")),
            &json!({"accessToken": "old", "expiresAt": iso(SystemTime::now() - Duration::from_secs(60))}).to_string(),
        );
        std::env::set_var("AWS_PROFILE", "legacy");
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("token is expired") && e.contains("aws sso login"), "{e}");
        assert_eq!(portal.requests.lock().len(), 1);
        // A token the portal refuses.
        home.write(
            &format!(".aws/sso/cache/{}.json", sha1("https://legacy.awsapps.com/start")),
            &json!({"accessToken": "revoked", "expiresAt": in_secs(600)}).to_string(),
        );
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("HTTP 401 Session token not found or invalid"), "{e}");
        // A cache file that is not JSON.
        home.write(&format!(".aws/sso/cache/{}.json", sha1("https://legacy.awsapps.com/start")), "{\"accessToken\":");
        let (m, _) = bedrock_run().await;
        assert!(m.error_message.unwrap().contains("is not JSON"));
    });
}

#[test]
fn a_role_sourced_from_the_container_and_a_silent_instance_metadata_service() {
    let _g = lock();
    rt().block_on(async {
        let ecs = start_server(vec![json_response(json!({"AccessKeyId": "AKICONT", "SecretAccessKey": "cont-secret",
                                                        "Token": "cont-token", "Expiration": in_secs(3600)}))])
            .await
            .unwrap();
        let sts = start_server(vec![sts_answer("ASIAFROMECS", "from-ecs", "t", &in_secs(3600))])
            .await
            .unwrap();
        let home = Home::new(
            "credential-source",
            &[
                ("AWS_PROFILE", "task"),
                ("AWS_ENDPOINT_URL_STS", &sts.origin),
                ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &format!("{}/creds", ecs.origin)),
            ],
        );
        home.write(
            ".aws/config",
            "[profile task]\nregion = us-east-1\nrole_arn = arn:aws:iam::1:role/task\ncredential_source = EcsContainer\n",
        );
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "from-ecs").0, "ASIAFROMECS");
        let asked = sts.requests.lock().clone();
        assert_eq!(check_signature(&asked[0], "cont-secret").0, "AKICONT");
        assert_eq!(header(&asked[0], "x-amz-security-token"), Some("cont-token"));

        // IMDS that has no role: the chain's error says what it answered.
        let imds = start_server(vec![
            json!({"status": 200, "chunks": ["tok"]}),
            json!({"status": 404, "chunks": ["not found"]}),
        ])
        .await
        .unwrap();
        let _home = Home::new("imds-none", &[]);
        std::env::remove_var("AWS_EC2_METADATA_DISABLED");
        std::env::set_var("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.origin);
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("Could not load credentials from any providers"), "{e}");
        assert!(e.contains(&format!("instance metadata at {}: no instance role (HTTP 404", imds.origin)), "{e}");
        assert!(sent.is_empty());
    });
}

/// Runs the case with `options` against a fresh Bedrock stand-in.
#[test]
fn per_call_options_choose_the_profile_the_region_and_the_bearer_token() {
    let _g = lock();
    let home = Home::new(
        "options",
        &[
            ("AWS_ACCESS_KEY_ID", "AKIENV"),
            ("AWS_SECRET_ACCESS_KEY", "env-secret"),
            ("AWS_REGION", "us-west-2"),
        ],
    );
    home.write(
        ".aws/credentials",
        "[ops]\naws_access_key_id = AKIOPS\naws_secret_access_key = ops-secret\n",
    );
    rt().block_on(async {
        // The `profile` option wins over the environment's keys (pi-ai's #6957), the
        // `region` option over AWS_REGION.
        let options = StreamOptions {
            bedrock: tern_ai::BedrockOptions {
                profile: Some("ops".into()),
                region: Some("ap-south-1".into()),
                ..Default::default()
            },
            ..StreamOptions::default()
        };
        let (m, sent) = bedrock_run_with(options).await;
        assert_eq!(m.error_message, None);
        let (key, region, _) = check_signature(&sent[0], "ops-secret");
        assert_eq!((key.as_str(), region.as_str()), ("AKIOPS", "ap-south-1"));
        // Without them, the environment's keys and region sign, as before.
        let (_, sent) = bedrock_run_with(StreamOptions::default()).await;
        let (key, region, _) = check_signature(&sent[0], "env-secret");
        assert_eq!((key.as_str(), region.as_str()), ("AKIENV", "us-west-2"));
        // The `bearerToken` option comes before `apiKey`; `requestMetadata` goes in the body.
        let tags = json!({"team": "agents", "costCenter": "42"});
        let options = StreamOptions {
            api_key: Some("from-api-key".into()),
            bedrock: tern_ai::BedrockOptions {
                bearer_token: Some("from-bearer-option".into()),
                request_metadata: tags.as_object().cloned(),
                ..Default::default()
            },
            ..StreamOptions::default()
        };
        let (_, sent) = bedrock_run_with(options).await;
        assert_eq!(
            header(&sent[0], "authorization"),
            Some("Bearer from-bearer-option")
        );
        let body: Value = serde_json::from_str(&sent[0].body).unwrap();
        assert_eq!(body["requestMetadata"], tags);
    });
}

/// `tests/data/bedrock-region-missing.reference.json` is the reference runner's output for
/// `bedrock-region-missing.case.json`, run as its description says:
///
/// ```text
/// cd tests/providers/reference && AWS_PROFILE=nore AWS_CONFIG_FILE=<"[profile nore]"> \
///   node run.mjs ../../data/bedrock-region-missing.case.json
/// ```
#[test]
fn a_profile_without_a_region_is_the_sdk_s_region_is_missing() {
    let _g = lock();
    let home = Home::new("noregion", &[("AWS_PROFILE", "nore")]);
    home.write(".aws/config", "[profile nore]\n");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
    let read = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{data}{f}")).unwrap()).unwrap()
    };
    let (case, expected) = (
        read("bedrock-region-missing.case.json"),
        read("bedrock-region-missing.reference.json"),
    );
    rt().block_on(async {
        let server = start_server(vec![case["response"].clone()]).await.unwrap();
        let mut model: Model = serde_json::from_value(case["request"]["model"].clone()).unwrap();
        model.base_url = server.origin.clone();
        let context = Context::new(vec![tern_ai::Message::user_text("Say hello.")]);
        let options = StreamOptions {
            api_key: Some("test-api-key-0001".into()),
            ..StreamOptions::default()
        };
        let mut sink = Final::default();
        run(&model, &context, &options, &mut sink).await;
        let m = serde_json::to_value(sink.0.unwrap()).unwrap();
        let want = &expected["message"];
        for key in ["content", "stopReason", "errorMessage", "diagnostics"] {
            assert_eq!(m.get(key), want.get(key), "{key}: {m}");
        }
        assert_eq!(
            server.requests.lock().len() as u64,
            expected["requestCount"].as_u64().unwrap()
        );
    });
}

/// The SHA-1 of `s` in hex (as `sha1sum` prints it): an SSO cache file's name.
fn sha1_hex(s: &str) -> String {
    hex(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, s.as_bytes()).as_ref())
}

#[test]
fn a_session_token_about_to_expire_is_refreshed_at_sso_oidc_and_written_back() {
    let _g = lock();
    rt().block_on(async {
        let in_ms = |secs: u64| {
            (SystemTime::now() + Duration::from_secs(secs))
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        let role = |key: &str| {
            json_response(json!({"roleCredentials": {"accessKeyId": key, "secretAccessKey": "sso-secret",
                                                   "sessionToken": "t", "expiration": in_ms(3600)}}))
        };
        let portal = start_server(vec![role("ASIAREFRESHED"), role("ASIAKEPT")])
            .await
            .unwrap();
        let oidc = start_server(vec![
            json_response(json!({"accessToken": "refreshed-access", "expiresIn": 3600,
                               "refreshToken": "new-refresh", "tokenType": "Bearer"})),
            json!({"status": 400, "headers": {"content-type": "application/json"},
                   "chunks": [json!({"error": "invalid_grant"}).to_string()]}),
        ])
        .await
        .unwrap();
        let home = Home::new(
            "sso-refresh",
            &[
                ("AWS_PROFILE", "work"),
                ("AWS_ENDPOINT_URL_SSO", &portal.origin),
                ("AWS_ENDPOINT_URL_SSO_OIDC", &oidc.origin),
            ],
        );
        let session = |name: &str| {
            format!(
                "[sso-session {name}]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n"
            )
        };
        home.write(
            ".aws/config",
            &format!(
                "[profile work]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\nregion = eu-north-1\n\
                 [profile soon]\nsso_session = soon\nsso_account_id = 1\nsso_role_name = r\nregion = eu-north-1\n\
                 [profile bare]\nsso_session = bare\nsso_account_id = 1\nsso_role_name = r\nregion = eu-north-1\n\
                 {}{}{}",
                session("corp"),
                session("soon"),
                session("bare")
            ),
        );
        std::fs::create_dir_all(home.dir.join(".aws/sso/cache")).unwrap();
        let cache = |name: &str| format!(".aws/sso/cache/{}.json", sha1_hex(name));
        let cached = |secs_left: i64| {
            let at = if secs_left >= 0 {
                SystemTime::now() + Duration::from_secs(secs_left as u64)
            } else {
                SystemTime::now() - Duration::from_secs((-secs_left) as u64)
            };
            json!({"accessToken": "old-access", "expiresAt": iso(at), "clientId": "cid",
                   "clientSecret": "csecret", "refreshToken": "old-refresh", "region": "eu-west-1"})
        };
        // Two minutes left: refreshed, and the cache file gets the new token.
        home.write(&cache("corp"), &cached(120).to_string());
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "sso-secret").0, "ASIAREFRESHED");
        let asked = oidc.requests.lock().clone();
        assert_eq!((asked[0].method.as_str(), asked[0].path.as_str()), ("POST", "/token"));
        let body: Value = serde_json::from_str(&asked[0].body).unwrap();
        assert_eq!(
            body,
            json!({"clientId": "cid", "clientSecret": "csecret", "refreshToken": "old-refresh",
                   "grantType": "refresh_token"})
        );
        assert_eq!(
            header(&portal.requests.lock()[0], "x-amz-sso_bearer_token"),
            Some("refreshed-access")
        );
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(home.dir.join(cache("corp"))).unwrap())
                .unwrap();
        assert_eq!(written["accessToken"], "refreshed-access");
        assert_eq!(written["refreshToken"], "new-refresh");
        assert_eq!(written["clientId"], "cid", "the other fields are kept");
        let expires = written["expiresAt"].as_str().unwrap();
        assert!(expires.ends_with('Z') && expires > iso(SystemTime::now() + Duration::from_secs(3000)).as_str());

        // A refresh the service refuses keeps a token that has not expired yet.
        std::env::set_var("AWS_PROFILE", "soon");
        home.write(&cache("soon"), &cached(120).to_string());
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        assert_eq!(check_signature(&sent[0], "sso-secret").0, "ASIAKEPT");
        assert_eq!(oidc.requests.lock().len(), 2);
        assert_eq!(
            header(&portal.requests.lock()[1], "x-amz-sso_bearer_token"),
            Some("old-access")
        );

        // Without the refresh fields an expiring token cannot be refreshed (the SDK's words).
        std::env::set_var("AWS_PROFILE", "bare");
        home.write(
            &cache("bare"),
            &json!({"accessToken": "a", "expiresAt": iso(SystemTime::now() - Duration::from_secs(5))})
                .to_string(),
        );
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(
            e.contains("Value not present for 'clientId' in SSO Token. Cannot refresh."),
            "{e}"
        );
        assert_eq!(oidc.requests.lock().len(), 2, "nothing asked");
    });
}

#[test]
fn a_console_login_session_s_cached_keys_sign_the_request() {
    let _g = lock();
    let home = Home::new("login", &[("AWS_PROFILE", "console")]);
    home.write(
        ".aws/config",
        "[profile console]\nlogin_session = arn:aws:iam::111122223333:user/me\nregion = us-west-2\n\
         [profile stale]\nlogin_session = stale-session\nregion = us-west-2\n\
         [profile partial]\nlogin_session = partial-session\nregion = us-west-2\n",
    );
    std::fs::create_dir_all(home.dir.join(".aws/login/cache")).unwrap();
    let sha256 = |s: &str| hex(digest::digest(&digest::SHA256, s.as_bytes()).as_ref());
    let token = |expires: SystemTime| {
        json!({"accessToken": {"accessKeyId": "ASIALOGIN", "secretAccessKey": "login-secret",
                               "sessionToken": "login-token", "accountId": "111122223333",
                               "expiresAt": iso(expires)},
               "clientId": "arn:aws:signin:::devtools/same-device", "refreshToken": "r",
               "dpopKey": "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n",
               "idToken": "i"})
    };
    home.write(
        &format!(
            ".aws/login/cache/{}.json",
            sha256("arn:aws:iam::111122223333:user/me")
        ),
        &token(SystemTime::now() + Duration::from_secs(900)).to_string(),
    );
    rt().block_on(async {
        let (m, sent) = bedrock_run().await;
        assert_eq!(m.error_message, None);
        let (key, region, _) = check_signature(&sent[0], "login-secret");
        assert_eq!((key.as_str(), region.as_str()), ("ASIALOGIN", "us-west-2"));
        assert_eq!(
            header(&sent[0], "x-amz-security-token"),
            Some("login-token")
        );

        // Expired keys that cannot be refreshed (this dpopKey is no key): nothing sent, log
        // in again. (`tests/bedrock_login_refresh.rs` refreshes real ones.)
        home.write(
            &format!(".aws/login/cache/{}.json", sha256("stale-session")),
            &token(SystemTime::now() - Duration::from_secs(60)).to_string(),
        );
        std::env::set_var("AWS_PROFILE", "stale");
        let (m, sent) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(e.contains("re-authenticate using aws login"), "{e}");
        assert!(sent.is_empty());

        // A cache file without the fields the SDK requires (its words).
        let mut partial = token(SystemTime::now() + Duration::from_secs(900));
        partial.as_object_mut().unwrap().remove("dpopKey");
        home.write(
            &format!(".aws/login/cache/{}.json", sha256("partial-session")),
            &partial.to_string(),
        );
        std::env::set_var("AWS_PROFILE", "partial");
        let (m, _) = bedrock_run().await;
        let e = m.error_message.unwrap();
        assert!(
            e.contains("Token validation failed, missing fields: dpopKey"),
            "{e}"
        );
    });
}
