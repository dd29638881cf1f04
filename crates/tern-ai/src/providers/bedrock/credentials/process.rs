//! `credential_process`: a profile's command, run through the shell, printing `{"Version":
//! 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}` on stdout.

use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

use super::wire::json_fresh;
use super::Fresh;
use crate::providers::subprocess;
use crate::stream_fn::StreamOptions;

/// The most of its stdout and of its stderr that is read (credentials are a few KB).
const MAX_OUTPUT: u64 = 1 << 20;

/// Runs `command` for `profile` and reads its credentials.
pub(crate) async fn run(
    profile: &str,
    command: &str,
    options: &StreamOptions,
) -> Result<Fresh, String> {
    let context = |what: String| format!("credential_process of profile {profile}: {what}");
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(command);
    let child = subprocess::spawn(sh).map_err(|e| context(format!("cannot start it ({e})")))?;
    // An abort drops the run, and with it the command.
    let output = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err("aborted".into()),
        o = child.output(MAX_OUTPUT) => o.map_err(|e| context(format!("failed ({e})")))?,
    };
    if !output.status.success() {
        // Its stderr is the command's own words; they are shown, its stdout never is.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr: String = stderr.trim().chars().take(500).collect();
        return Err(context(format!("exited with {} {stderr}", output.status))
            .trim_end()
            .to_string());
    }
    parse(&output.stdout, SystemTime::now()).map_err(context)
}

/// The credentials a command printed, checked as the SDK checks them.
pub(crate) fn parse(stdout: &[u8], now: SystemTime) -> Result<Fresh, String> {
    let doc: Value =
        serde_json::from_slice(stdout).map_err(|e| format!("its output is not JSON ({e})"))?;
    if doc.get("Version").and_then(Value::as_u64) != Some(1) {
        return Err("its output has no \"Version\": 1".into());
    }
    let fresh = json_fresh(
        &doc,
        ["AccessKeyId", "SecretAccessKey", "SessionToken"],
        "its output lacks AccessKeyId or SecretAccessKey",
    )?;
    if fresh.expires.is_some_and(|e| e <= now) {
        return Err("it returned expired credentials".into());
    }
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::super::wire::parse_time;
    use super::*;

    #[test]
    fn outputs_as_the_sdk_checks_them() {
        let now = parse_time("2026-01-01T00:00:00Z").unwrap();
        let ok = br#"{"Version":1,"AccessKeyId":"AK","SecretAccessKey":"SK","SessionToken":"T","Expiration":"2026-01-01T01:00:00Z"}"#;
        let f = parse(ok, now).unwrap();
        assert_eq!(f.credentials.access_key_id, "AK");
        assert_eq!(f.credentials.session_token.as_deref(), Some("T"));
        assert_eq!(f.expires, parse_time("2026-01-01T01:00:00Z"));
        let long_lived = parse(
            br#"{"Version":1,"AccessKeyId":"AK","SecretAccessKey":"SK"}"#,
            now,
        );
        assert_eq!(long_lived.unwrap().expires, None);
        for (bad, why) in [
            (&b""[..], "not JSON"),
            (b"[]", "Version"),
            (b"{\"Version\":2,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\"}", "Version"),
            (b"{\"Version\":1,\"AccessKeyId\":\"A\"}", "lacks"),
            (b"{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Expiration\":\"x\"}", "not a time"),
            (b"{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Expiration\":3}", "not a string"),
            (b"{\"Version\":1,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\",\"Expiration\":\"2025-01-01T00:00:00Z\"}", "expired"),
            (b"\xff\xfe{", "not JSON"),
        ] {
            let e = parse(bad, now).err().unwrap();
            assert!(e.contains(why), "{e}");
            assert!(!e.contains("\"S\""), "no secret in {e}");
        }
    }
}
