//! The Azure CLI (azure-identity's `AzureCliCredential`): `az account get-access-token
//! --output json --resource https://cognitiveservices.azure.com`, run from `/bin` with the
//! request's environment, its `accessToken` kept until `expires_on` (seconds, az 2.54 and
//! later) or a zoned `expiresOn` (an older az's local time without a zone is not kept). It
//! must finish within ten seconds (azure-identity sets no limit; its Python and .NET
//! siblings use ten) or the request's timeout, if shorter. Its stdout is never quoted; its
//! stderr is, cut, when it is not one of the failures named here.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{Minted, ABORTED, RESOURCE};
use crate::providers::subprocess;
use crate::stream_fn::StreamOptions;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_OUTPUT: u64 = 1 << 20;
const MAX_QUOTED: usize = 300;
const NOT_INSTALLED: &str = "Azure CLI could not be found; install it \
                             (https://aka.ms/azure-cli) and run `az login`";
const LOGIN: &str = "not logged in; run `az login`";

/// The CLI's token, or why there is none.
pub(super) async fn token(options: &StreamOptions) -> Result<Minted, String> {
    let args = [
        "account",
        "get-access-token",
        "--output",
        "json",
        "--resource",
        RESOURCE,
    ];
    let mut cmd = if cfg!(windows) {
        let mut c = Command::new("cmd.exe");
        c.args(["/d", "/c", "az"]).args(args);
        c.current_dir(std::env::var("SystemRoot").unwrap_or_else(|_| "C:\\Windows".into()));
        c
    } else {
        let mut c = Command::new("az");
        c.args(args).current_dir("/bin");
        c
    };
    // The request's scoped environment reaches the CLI (and its PATH finds it).
    for (k, v) in &options.env {
        if !v.is_empty() {
            cmd.env(k, v);
        }
    }
    let child = match subprocess::spawn(cmd) {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NOT_INSTALLED.into()),
        Err(e) => return Err(format!("`az` could not be started ({e})")),
    };
    let work = async {
        let done = child.output(MAX_OUTPUT).await?;
        Ok::<_, std::io::Error>((done.status, done.stdout, done.stderr))
    };
    let limit = options
        .timeout_ms
        .map_or(TIMEOUT, |ms| TIMEOUT.min(Duration::from_millis(ms)));
    let (status, out, err) = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err(ABORTED.into()),
        r = tokio::time::timeout(limit, work) => match r {
            Ok(r) => r.map_err(|e| format!("`az` failed ({e})"))?,
            Err(_) => return Err(format!(
                "`az account get-access-token` did not finish within {} ms; check that `az` \
                 runs without prompting (`az account show`)",
                limit.as_millis()
            )),
        },
    };
    let stderr = String::from_utf8_lossy(&err);
    let stderr = stderr.trim();
    if stderr.contains("az: not found")
        || stderr.contains("az: command not found")
        || stderr.starts_with("'az' is not recognized")
    {
        return Err(NOT_INSTALLED.into());
    }
    if let Some(at) = stderr.find("az login --scope") {
        // The CLI's own command for a scope that needs consent.
        let line = stderr[at..].lines().next().unwrap_or("az login").trim();
        return Err(format!("the CLI asks for a new login; run `{line}`"));
    }
    if stderr.contains("az login") {
        return Err(LOGIN.into());
    }
    if !status.success() {
        let mut quoted: String = stderr.chars().take(MAX_QUOTED).collect();
        if quoted.len() < stderr.len() {
            quoted.push_str("...");
        }
        let code = status
            .code()
            .map_or_else(|| "a signal".to_string(), |c| format!("code {c}"));
        return Err(format!(
            "`az account get-access-token` exited with {code}: {}",
            if quoted.is_empty() {
                "no message"
            } else {
                &quoted
            }
        ));
    }
    parse(&out)
}

/// The token of `az account get-access-token --output json`.
fn parse(stdout: &[u8]) -> Result<Minted, String> {
    let doc: Value = serde_json::from_slice(stdout)
        .map_err(|_| "`az account get-access-token` printed no JSON".to_string())?;
    let token = doc
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("`az account get-access-token` printed no accessToken")?
        .to_string();
    if let Some(at) = super::epoch(doc.get("expires_on")) {
        return Ok(Minted::until(token, at));
    }
    match doc.get("expiresOn").and_then(Value::as_str) {
        Some(text) => Ok(match super::epoch(doc.get("expiresOn")) {
            Some(at) => Minted::until(token, at),
            // Local time of unknown zone: used for this request only.
            None if crate::providers::bedrock::parse_time(text).is_some() => {
                Minted::lasting(token, 0)
            }
            None => {
                return Err(format!(
                    "Unexpected response from Azure CLI when getting token. Expected \
                     \"expiresOn\" to be a RFC3339 date string. Got: \"{}\"",
                    text.chars().take(40).collect::<String>()
                ))
            }
        }),
        None => Err("`az account get-access-token` printed no expires_on or expiresOn".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_of_old_and_new_clis() {
        let new = br#"{"accessToken":"t1","expiresOn":"2099-01-01 00:00:00.000000","expires_on":4070908800,"tokenType":"Bearer"}"#;
        let m = parse(new).unwrap();
        assert_eq!(m.token, "t1");
        assert!(m.lifetime > Duration::from_secs(3600));
        let old = br#"{"accessToken":"t2","expiresOn":"2099-01-01 00:00:00.000000"}"#;
        let m = parse(old).unwrap();
        assert_eq!((m.token.as_str(), m.lifetime), ("t2", Duration::ZERO));
        assert!(parse(br#"{"accessToken":"t3","expiresOn":"tomorrow"}"#)
            .err()
            .unwrap()
            .contains("Got: \"tomorrow\""));
        assert!(parse(br#"{"expires_on":1}"#)
            .err()
            .unwrap()
            .contains("no accessToken"));
        assert!(parse(b"ERROR").err().unwrap().contains("no JSON"));
    }
}
