//! Vertex AI's Application Default Credentials from the sources beyond files and URLs, each
//! against real local endpoints and real processes: workload identity federation whose
//! subject token an executable prints (gated by `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES`,
//! its output file used as a cache, its failures worded), or a signed AWS GetCallerIdentity
//! request (the region and keys from a local IMDS with a session token, or from the
//! environment); and the GCE metadata server when no credentials file exists.
//!
//! Every setting is scoped to its request (`StreamOptions::env`), so the tests run side by
//! side; each uses its own credentials file, as tokens are kept per file.

use std::collections::HashMap;

use serde_json::{json, Value};
use tern_ai::providers::replay::{start_server, ReplayServer};

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
use vertex::{once, options, sts_answers, with_creds};

fn text_response(status: u16, text: &str) -> Value {
    json!({"status": status, "headers": {"content-type": "text/plain"}, "chunks": [text]})
}

fn metadata_response(status: u16, body: Value) -> Value {
    json!({"status": status,
           "headers": {"content-type": "application/json", "Metadata-Flavor": "Google"},
           "chunks": [body.to_string()]})
}

/// `decodeURIComponent` (the AWS subject token is URI-encoded JSON; it never holds a raw
/// `+`, so form decoding reads it the same).
fn uri_decoded(s: &str) -> String {
    assert!(!s.contains('+'));
    url_form(&format!("v={s}"))["v"].clone()
}

/// The form of the STS's `i`th token exchange, and its subject token: a serialized AWS
/// GetCallerIdentity request.
fn aws_exchange(sts: &ReplayServer, i: usize) -> (HashMap<String, String>, Value) {
    let form = url_form(&sts.requests.lock()[i].body);
    let subject = serde_json::from_str(&uri_decoded(&form["subject_token"])).unwrap();
    (form, subject)
}

/// An `external_account` file exchanging at `sts` with this credential source, then
/// impersonating `robot@p.iam.gserviceaccount.com` at `iam` when there is one.
fn external_account(
    dir: &std::path::Path,
    name: &str,
    sts: &ReplayServer,
    iam: Option<&ReplayServer>,
    source: Value,
) -> String {
    let path = dir.join(format!("{name}.json"));
    let mut creds = json!({"type": "external_account",
        "audience": "//iam.googleapis.com/projects/9/locations/global/workloadIdentityPools/p/providers/q",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{}/v1/token", sts.origin),
        "credential_source": source});
    if let Some(iam) = iam {
        creds["service_account_impersonation_url"] = json!(format!(
            "{}/v1/projects/-/serviceAccounts/robot@p.iam.gserviceaccount.com:generateAccessToken",
            iam.origin
        ));
    }
    std::fs::write(&path, creds.to_string()).unwrap();
    path.display().to_string()
}

/// The opt-in that lets an `external_account` file run its executable.
const ALLOW_EXECUTABLES: (&str, &str) = ("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1");

#[cfg(unix)]
fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A pluggable-auth executable: nothing runs without the opt-in; with it, the command gets
/// the SDK's variables and its printed token reaches the STS; a valid output file is used
/// instead of running it, an expired one is not; failures are worded as the SDK words them.
#[cfg(unix)]
#[test]
fn an_executable_prints_the_subject_token() {
    runtime().block_on(async {
        let dir = scratch("exec");
        let sts = start_server(sts_answers(3)).await.unwrap();
        let iam = start_server(vec![json_response(
            json!({"accessToken": "impersonated", "expireTime": "2099-01-01T00:00:00Z"}),
        )])
        .await
        .unwrap();
        let log = dir.join("ran.log");
        let ok = r#"{"version":1,"success":true,"token_type":"urn:ietf:params:oauth:token-type:jwt","id_token":"from-exec","expiration_time":4000000000}"#;
        let tool = script(
            &dir,
            "tool.sh",
            &format!(
                "printf '%s|%s|%s|%s|%s|%s\\n' \"$1\" \"$GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE\" \
                 \"$GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE\" \"$GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE\" \
                 \"$GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL\" \"$GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE\" >> {}\n\
                 echo '{ok}'",
                log.display()
            ),
        );
        // An `external_account` file whose credential source is this executable.
        let exec_account = |name: &str, executable: Value| {
            external_account(&dir, name, &sts, Some(&iam), json!({"executable": executable}))
        };
        let creds = exec_account(
            "exec",
            json!({"command": format!("{tool} \"first arg\""), "timeout_millis": 5000}),
        );

        // Not allowed: nothing runs, nothing is exchanged.
        let (m, sent) = with_creds(&creds, &[]).await;
        let message = m.error_message.unwrap();
        assert!(message.contains("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"), "{message}");
        assert!(message.contains(&creds), "{message}");
        assert!(sent.is_empty() && !log.exists() && sts.requests.lock().is_empty());

        // Allowed: the printed token is exchanged, then the account impersonated.
        let (m, sent) = with_creds(&creds, &[ALLOW_EXECUTABLES]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer impersonated"));
        let exchange = url_form(&sts.requests.lock()[0].body);
        assert_eq!(exchange["subject_token"], "from-exec");
        let ran = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            ran.trim(),
            "first arg|//iam.googleapis.com/projects/9/locations/global/workloadIdentityPools/p/providers/q|\
             urn:ietf:params:oauth:token-type:jwt|0|robot@p.iam.gserviceaccount.com|"
        );

        // An output file with a valid response is read instead of running the command.
        let cache = dir.join("cache.json");
        std::fs::write(
            &cache,
            r#"{"version":1,"success":true,"token_type":"urn:ietf:params:oauth:token-type:id_token","id_token":"from-cache","expiration_time":4000000000}"#,
        )
        .unwrap();
        let cached = json!({"command": tool, "output_file": cache.display().to_string()});
        let creds = exec_account("exec-cached", cached.clone());
        assert_eq!(with_creds(&creds, &[ALLOW_EXECUTABLES]).await.0.error_message, None);
        assert_eq!(url_form(&sts.requests.lock()[1].body)["subject_token"], "from-cache");
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);

        // An expired one is not: the command runs, told where the output file is.
        std::fs::write(
            &cache,
            r#"{"version":1,"success":true,"token_type":"urn:ietf:params:oauth:token-type:id_token","id_token":"stale","expiration_time":1}"#,
        )
        .unwrap();
        let creds = exec_account("exec-expired", cached);
        assert_eq!(with_creds(&creds, &[ALLOW_EXECUTABLES]).await.0.error_message, None);
        assert_eq!(url_form(&sts.requests.lock()[2].body)["subject_token"], "from-exec");
        let ran = std::fs::read_to_string(&log).unwrap();
        assert!(ran.lines().nth(1).unwrap().ends_with(&format!("|{}", cache.display())), "{ran}");

        // Failures, in the SDK's words; none reaches the STS.
        let failing = [
            (
                "exit 3",
                "echo 'no credentials here' >&2; exit 3".to_string(),
                "The executable failed with exit code: 3 and error message: no credentials here.",
            ),
            (
                "unsuccessful",
                r#"echo '{"version":1,"success":false,"code":"401","message":"denied"}'"#.into(),
                "The executable failed with exit code: 401 and error message: denied.",
            ),
            (
                "not json",
                "echo 'raw-secret-token'".into(),
                "The executable returned an invalid response (not JSON",
            ),
            (
                "newer version",
                r#"echo '{"version":2,"success":true,"token_type":"urn:ietf:params:oauth:token-type:jwt","id_token":"t"}'"#.into(),
                "maximum supported version is 1.",
            ),
            (
                "expired",
                r#"echo '{"version":1,"success":true,"token_type":"urn:ietf:params:oauth:token-type:jwt","id_token":"t","expiration_time":1}'"#.into(),
                "Executable response is expired.",
            ),
        ];
        for (i, (what, body, words)) in failing.iter().enumerate() {
            let bad = script(&dir, &format!("bad{i}.sh"), body);
            let creds = exec_account(&format!("exec-bad{i}"), json!({"command": bad}));
            let (m, sent) = with_creds(&creds, &[ALLOW_EXECUTABLES]).await;
            let message = m.error_message.unwrap();
            assert!(message.contains(words), "{what}: {message}");
            assert!(!message.contains("raw-secret-token"), "{what}: {message}");
            assert!(sent.is_empty(), "{what}");
        }
        assert_eq!(sts.requests.lock().len(), 3);

        // A timeout out of range, and a command that outlives its timeout.
        let creds = exec_account("exec-range", json!({"command": tool, "timeout_millis": 100}));
        let (m, _) = with_creds(&creds, &[ALLOW_EXECUTABLES]).await;
        assert!(m
            .error_message
            .unwrap()
            .contains("Timeout must be between 5000 and 120000 milliseconds."));
        let slow = script(&dir, "slow.sh", &format!("sleep 30\necho '{ok}'"));
        let creds = exec_account("exec-slow", json!({"command": slow, "timeout_millis": 5000}));
        let started = std::time::Instant::now();
        let (m, _) = with_creds(&creds, &[ALLOW_EXECUTABLES]).await;
        assert!(m
            .error_message
            .unwrap()
            .contains("The executable failed to finish within the timeout specified."));
        let took = started.elapsed();
        assert!(took >= std::time::Duration::from_secs(5) && took < std::time::Duration::from_secs(20), "{took:?}");
        let _ = std::fs::remove_dir_all(dir);
    });
}

/// AWS: the region and the role's keys from a local IMDS (each read with an IMDSv2 session
/// token), the GetCallerIdentity request signed with them and serialized as the subject
/// token; then the same from the environment, without a metadata request.
#[test]
fn an_aws_workload_signs_get_caller_identity() {
    for var in [
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ] {
        std::env::remove_var(var);
    }
    runtime().block_on(async {
        let dir = scratch("aws");
        let sts = start_server(sts_answers(2)).await.unwrap();
        let imds = start_server(vec![
            text_response(200, "session-1"),
            text_response(200, "us-west-1b"),
            text_response(200, "session-2"),
            text_response(200, "ec2-role"),
            json_response(json!({"Code": "Success", "AccessKeyId": "ASIAIMDS",
                "SecretAccessKey": "imds-secret", "Token": "imds-token",
                "Expiration": "2099-01-01T00:00:00Z"})),
        ])
        .await
        .unwrap();
        let verification = "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15";
        let creds = external_account(
            &dir,
            "aws-imds",
            &sts,
            None,
            json!({"environment_id": "aws1",
                   "region_url": format!("{}/latest/meta-data/placement/availability-zone", imds.origin),
                   "url": format!("{}/latest/meta-data/iam/security-credentials", imds.origin),
                   "imdsv2_session_token_url": format!("{}/latest/api/token", imds.origin),
                   "regional_cred_verification_url": verification}),
        );
        let (m, sent) = with_creds(&creds, &[]).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer federated-0"));
        let asked = imds.requests.lock().clone();
        let seen: Vec<(&str, &str)> = asked
            .iter()
            .map(|r| (r.method.as_str(), r.path.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("PUT", "/latest/api/token"),
                ("GET", "/latest/meta-data/placement/availability-zone"),
                ("PUT", "/latest/api/token"),
                ("GET", "/latest/meta-data/iam/security-credentials"),
                ("GET", "/latest/meta-data/iam/security-credentials/ec2-role"),
            ]
        );
        assert_eq!(header(&asked[0], "x-aws-ec2-metadata-token-ttl-seconds"), Some("300"));
        assert_eq!(header(&asked[1], "x-aws-ec2-metadata-token"), Some("session-1"));
        assert_eq!(header(&asked[4], "x-aws-ec2-metadata-token"), Some("session-2"));

        let (form, subject) = aws_exchange(&sts, 0);
        assert_eq!(
            subject["url"],
            "https://sts.us-west-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
        );
        assert_eq!(subject["method"], "POST");
        let headers: Vec<(String, String)> = subject["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["key"].as_str().unwrap().into(), h["value"].as_str().unwrap().into()))
            .collect();
        let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["authorization", "host", "x-amz-date", "x-amz-security-token", "x-goog-cloud-target-resource"]
        );
        let value = |k: &str| headers.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert!(value("authorization").starts_with("AWS4-HMAC-SHA256 Credential=ASIAIMDS/"));
        assert!(value("authorization").contains("/us-west-1/sts/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature="));
        assert_eq!(value("host"), "sts.us-west-1.amazonaws.com");
        assert_eq!(value("x-amz-security-token"), "imds-token");
        assert!(value("x-goog-cloud-target-resource").ends_with("/providers/q"));
        assert_eq!(form["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt");

        // The environment's region and keys: no metadata request at all.
        let creds = external_account(
            &dir,
            "aws-env",
            &sts,
            None,
            json!({"environment_id": "aws1",
                   "region_url": format!("{}/nothing", imds.origin),
                   "url": format!("{}/nothing", imds.origin),
                   "imdsv2_session_token_url": format!("{}/nothing", imds.origin),
                   "regional_cred_verification_url": verification}),
        );
        let (m, _) = with_creds(
            &creds,
            &[
                ("AWS_DEFAULT_REGION", "eu-north-1"),
                ("AWS_ACCESS_KEY_ID", "AKIAENV"),
                ("AWS_SECRET_ACCESS_KEY", "env-secret"),
            ],
        )
        .await;
        assert_eq!(m.error_message, None);
        assert_eq!(imds.requests.lock().len(), 5);
        let (_, subject) = aws_exchange(&sts, 1);
        let auth = subject["headers"][0]["value"].as_str().unwrap();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIAENV/"), "{auth}");
        assert!(auth.contains("/eu-north-1/sts/aws4_request, SignedHeaders=host;x-amz-date, "), "{auth}");

        // No region anywhere: the SDK's words, nothing sent.
        let creds = external_account(
            &dir,
            "aws-noregion",
            &sts,
            None,
            json!({"environment_id": "aws1", "regional_cred_verification_url": verification}),
        );
        let (m, sent) = with_creds(&creds, &[]).await;
        assert!(m.error_message.unwrap().contains("Unable to determine AWS region"));
        assert!(sent.is_empty());
        let _ = std::fs::remove_dir_all(dir);
    });
}

/// Where `server` listens, as `GCE_METADATA_HOST` names it (no scheme).
fn host_of(server: &ReplayServer) -> String {
    server.origin.trim_start_matches("http://").to_string()
}

/// No credentials file (HOME without gcloud's, no GOOGLE_APPLICATION_CREDENTIALS): the
/// metadata server answers the probe and hands out the default service account's token;
/// a server that does not answer as Google's, or is switched off, is no source; a refused
/// token is worded as google-auth-library words it. (Off Google Cloud, as tests run.)
#[test]
fn the_metadata_server_is_the_last_source() {
    runtime().block_on(async {
        let home = scratch("gce-home");
        let home = home.display().to_string();
        let token = json!({"access_token": "gce-token", "expires_in": 3599, "token_type": "Bearer"});
        let server = start_server(vec![
            metadata_response(200, json!("instance")),
            metadata_response(200, token),
        ])
        .await
        .unwrap();
        let host = host_of(&server);
        let (m, sent) = once(&options(&[("HOME", &home), ("GCE_METADATA_HOST", &host)])).await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer gce-token"));
        let asked = server.requests.lock().clone();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0].path, "/computeMetadata/v1/instance");
        assert_eq!(
            asked[1].path,
            "/computeMetadata/v1/instance/service-accounts/default/token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform"
        );
        assert!(asked.iter().all(|r| header(r, "metadata-flavor") == Some("Google")));
        // Kept: the next request asks nothing.
        let (m, _) = once(&options(&[("HOME", &home), ("GCE_METADATA_HOST", &host)])).await;
        assert_eq!(m.error_message, None);
        assert_eq!(server.requests.lock().len(), 2);

        // A server without Google's flavor is no metadata server.
        let impostor = start_server(vec![text_response(200, "hello")]).await.unwrap();
        let host = host_of(&impostor);
        let (m, sent) = once(&options(&[("HOME", &home), ("GCE_METADATA_IP", &host)])).await;
        let message = m.error_message.unwrap();
        assert!(message.starts_with("Could not load the default credentials"), "{message}");
        assert!(message.contains("incorrect Metadata-Flavor header"), "{message}");
        assert!(message.contains("application_default_credentials.json (not found)"), "{message}");
        assert!(message.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{message}");
        assert!(sent.is_empty());

        // Detection switched off: not even the probe.
        let quiet = start_server(vec![metadata_response(200, json!("instance"))]).await.unwrap();
        let host = host_of(&quiet);
        let (m, _) = once(&options(&[
            ("HOME", &home),
            ("GCE_METADATA_HOST", &host),
            ("METADATA_SERVER_DETECTION", "none"),
        ]))
        .await;
        assert!(m.error_message.unwrap().contains("METADATA_SERVER_DETECTION is none"));
        assert!(quiet.requests.lock().is_empty());

        // A token refused for want of scopes.
        let refusing = start_server(vec![
            metadata_response(200, json!("instance")),
            metadata_response(403, json!({"error": "insufficient scopes"})),
        ])
        .await
        .unwrap();
        let host = host_of(&refusing);
        let (m, _) = once(&options(&[("HOME", &home), ("GCE_METADATA_HOST", &host)])).await;
        let message = m.error_message.unwrap();
        assert!(message.contains("A Forbidden error was returned"), "{message}");

        // gcloud's file under CLOUDSDK_CONFIG comes before the metadata server.
        let config = scratch("gce-config");
        let tokens = start_server(vec![json_response(json!({"access_token": "from-gcloud", "expires_in": 3600}))])
            .await
            .unwrap();
        std::fs::write(
            config.join("application_default_credentials.json"),
            json!({"type": "authorized_user", "client_id": "c", "client_secret": "s",
                   "refresh_token": "r", "token_uri": format!("{}/token", tokens.origin)})
            .to_string(),
        )
        .unwrap();
        let (m, sent) = once(&options(&[
            ("HOME", &home),
            ("CLOUDSDK_CONFIG", &config.display().to_string()),
            ("GCE_METADATA_HOST", &host),
        ]))
        .await;
        assert_eq!(m.error_message, None);
        assert_eq!(header(&sent[0], "authorization"), Some("Bearer from-gcloud"));
        assert_eq!(refusing.requests.lock().len(), 2);
        let _ = std::fs::remove_dir_all(config);
    });
}
