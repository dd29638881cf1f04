//! Pluggable auth: a subject token printed by a command (`credential_source.executable`), as
//! google-auth-library's `PluggableAuthClient` runs it. Nothing runs unless
//! `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES` is `1`. The command is split on spaces
//! (double quotes group), run with the environment plus `GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE`,
//! `_TOKEN_TYPE`, `_INTERACTIVE=0`, `_OUTPUT_FILE` and `_IMPERSONATED_EMAIL`, and killed after
//! `timeout_millis` (30 s by default, 5 to 120 s allowed). Its output (stdout, then stderr)
//! is the JSON response format: `{"version": 1, "success": true, "token_type": ...,
//! "id_token" or "saml_response": ..., "expiration_time": ...}` or `{"version": 1,
//! "success": false, "code": ..., "message": ...}`. With an `output_file`, a valid unexpired
//! response the command left there is used without running it.
//!
//! Unlike the SDK, messages never quote the output of a command that exited 0 or of the
//! output file (either may hold a token): they say why it is not a response instead.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::external::{impersonated_email, text, truthy};
use crate::providers::subprocess;
use crate::stream_fn::StreamOptions;

const DEFAULT_TIMEOUT_MS: u64 = 30_000;
const MIN_TIMEOUT_MS: u64 = 5_000;
const MAX_TIMEOUT_MS: u64 = 120_000;
const MAX_VERSION: u64 = 1;
/// The most of a failed command's output a message quotes.
const MAX_QUOTED: usize = 4096;
/// The most output read from the command.
const MAX_OUTPUT: u64 = 1024 * 1024;

const SAML: &str = "urn:ietf:params:oauth:token-type:saml2";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const JWT: &str = "urn:ietf:params:oauth:token-type:jwt";

/// A checked executable response.
#[derive(Debug, PartialEq)]
struct Response {
    version: f64,
    success: bool,
    /// Seconds since the epoch.
    expiration_time: Option<f64>,
    subject_token: String,
    error_code: String,
    error_message: String,
}

impl Response {
    /// The SDK's `ExecutableResponse` checks, with its words.
    fn parse(doc: &Value) -> Result<Self, String> {
        if !truthy(doc.get("version")) {
            return Err("Executable response must contain a 'version' field.".into());
        }
        if doc.get("success").is_none() {
            return Err("Executable response must contain a 'success' field.".into());
        }
        let success = truthy(doc.get("success"));
        let mut r = Response {
            version: doc.get("version").and_then(Value::as_f64).unwrap_or(0.0),
            success,
            expiration_time: None,
            subject_token: String::new(),
            error_code: String::new(),
            error_message: String::new(),
        };
        let show = |k: &str| match doc.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        if success {
            r.expiration_time = doc.get("expiration_time").and_then(Value::as_f64);
            let token_type = text(doc, "token_type").unwrap_or_default();
            if ![SAML, ID_TOKEN, JWT].contains(&token_type.as_str()) {
                return Err(format!(
                    "Executable response must contain a 'token_type' field when successful and \
                     it must be one of {ID_TOKEN}, {JWT}, or {SAML}."
                ));
            }
            let (field, why) = match token_type.as_str() {
                SAML => ("saml_response", format!("token_type={SAML}")),
                _ => ("id_token", format!("token_type={ID_TOKEN} or {JWT}")),
            };
            if !truthy(doc.get(field)) {
                return Err(format!(
                    "Executable response must contain a '{field}' field when {why}."
                ));
            }
            r.subject_token = show(field);
        } else {
            if !truthy(doc.get("code")) {
                return Err(
                    "Executable response must contain a 'code' field when unsuccessful.".into(),
                );
            }
            if !truthy(doc.get("message")) {
                return Err(
                    "Executable response must contain a 'message' field when unsuccessful.".into(),
                );
            }
            r.error_code = show("code");
            r.error_message = show("message");
        }
        Ok(r)
    }

    fn expired(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64().round());
        self.expiration_time.is_some_and(|t| t < now)
    }
}

/// The command's words as the SDK splits them: runs of non-space characters, where a
/// double-quoted part may hold spaces; quotes around a whole word are dropped.
fn split_command(command: &str) -> Vec<String> {
    static WORD: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let Some(word) = WORD
        .get_or_init(|| regex::Regex::new(r#"(?:[^\s"]+|"[^"]*")+"#).ok())
        .as_ref()
    else {
        return Vec::new();
    };
    word.find_iter(command)
        .map(|m| m.as_str())
        .map(
            |w| match w.len() >= 2 && w.starts_with('"') && w.ends_with('"') {
                true => w[1..w.len() - 1].to_string(),
                false => w.to_string(),
            },
        )
        .collect()
}

/// The subject token of an `executable` credential source.
pub(super) async fn subject_token(
    creds: &Value,
    source: &Value,
    options: &StreamOptions,
) -> Result<String, String> {
    let config = source.get("executable").unwrap_or(&Value::Null);
    let command = text(config, "command")
        .filter(|c| !c.is_empty())
        .ok_or("No valid Pluggable Auth \"credential_source\" provided (executable.command).")?;
    let timeout_ms = match config.get("timeout_millis") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_MS,
        Some(v) => v
            .as_u64()
            .filter(|ms| (MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(ms))
            .ok_or(format!(
                "Timeout must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS} milliseconds."
            ))?,
    };
    let output_file = text(config, "output_file").filter(|f| !f.is_empty());
    if options
        .env_var("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES")
        .as_deref()
        != Some("1")
    {
        return Err(
            "Pluggable Auth executables need to be explicitly allowed to run by setting the \
             GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES environment Variable to 1."
                .into(),
        );
    }
    let cached = match &output_file {
        Some(file) => cached_response(file).await?,
        None => None,
    };
    let response = match cached {
        Some(r) => r,
        None => {
            let mut env = vec![
                (
                    "GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE",
                    text(creds, "audience").unwrap_or_default(),
                ),
                (
                    "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE",
                    text(creds, "subject_token_type").unwrap_or_default(),
                ),
                ("GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE", "0".to_string()),
            ];
            if let Some(file) = &output_file {
                env.push(("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE", file.clone()));
            }
            if let Some(email) = impersonated_email(creds)? {
                env.push(("GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL", email));
            }
            run(&command, &env, Duration::from_millis(timeout_ms), options).await?
        }
    };
    if response.version > MAX_VERSION as f64 {
        return Err(format!(
            "Version of executable is not currently supported, maximum supported version is \
             {MAX_VERSION}."
        ));
    }
    if !response.success {
        return Err(format!(
            "The executable failed with exit code: {} and error message: {}.",
            response.error_code, response.error_message
        ));
    }
    if output_file.is_some() && response.expiration_time.is_none() {
        return Err(
            "The executable response must contain the `expiration_time` field for \
                    successful responses when an output_file has been specified in the \
                    configuration."
                .into(),
        );
    }
    if response.expired() {
        return Err("Executable response is expired.".into());
    }
    Ok(response.subject_token)
}

/// A response the command left in `file`, if it is there, valid and unexpired.
async fn cached_response(file: &str) -> Result<Option<Response>, String> {
    let Ok(path) = tokio::fs::canonicalize(file).await else {
        return Ok(None);
    };
    if !tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let Ok(text) = tokio::fs::read_to_string(&path).await else {
        return Ok(None);
    };
    if text.is_empty() {
        return Ok(None);
    }
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        format!("The output file {file} contained an invalid response (not JSON: {e}).")
    })?;
    let response = Response::parse(&doc)?;
    Ok((!response.expired() && response.success).then_some(response))
}

/// Runs the command; its response, or why there is none.
async fn run(
    command: &str,
    env: &[(&str, String)],
    timeout: Duration,
    options: &StreamOptions,
) -> Result<Response, String> {
    let words = split_command(command);
    let Some((program, args)) = words.split_first() else {
        return Err(format!(
            "Provided command: \"{command}\" could not be parsed."
        ));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    // The request's scoped environment reaches the command too.
    for (k, v) in &options.env {
        if !v.is_empty() {
            cmd.env(k, v);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = subprocess::spawn(cmd)
        .map_err(|e| format!("The executable {program} could not be started ({e})."))?;
    let work = async {
        let done = child.output(MAX_OUTPUT).await.map_err(|e| e.to_string())?;
        let mut out = done.stdout;
        out.extend_from_slice(&done.stderr);
        Ok::<_, String>((done.status, String::from_utf8_lossy(&out).into_owned()))
    };
    let (status, output) = tokio::select! {
        biased;
        _ = options.signal.cancelled() => return Err("Request was aborted".into()),
        r = tokio::time::timeout(timeout, work) => match r {
            Ok(r) => r.map_err(|e| format!("The executable {program} failed: {e}"))?,
            Err(_) => {
                return Err("The executable failed to finish within the timeout specified."
                    .into())
            }
        },
    };
    if !status.success() {
        let code = status.code().map_or_else(
            || "none (killed by a signal)".to_string(),
            |c| c.to_string(),
        );
        let mut quoted: String = output.chars().take(MAX_QUOTED).collect();
        if quoted.len() < output.len() {
            quoted.push_str("...");
        }
        return Err(format!(
            "The executable failed with exit code: {code} and error message: {}.",
            quoted.trim()
        ));
    }
    let doc: Value = serde_json::from_str(&output).map_err(|e| {
        format!(
            "The executable returned an invalid response (not JSON: {e}); it must print the \
             executable response format"
        )
    })?;
    Response::parse(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_split_on_spaces_with_double_quotes_grouping() {
        assert_eq!(
            split_command("/bin/tool --flag x"),
            ["/bin/tool", "--flag", "x"]
        );
        assert_eq!(
            split_command("  \"/path with/space\" a\"b c\"d   \"e f\" "),
            ["/path with/space", "a\"b c\"d", "e f"]
        );
        assert!(split_command("   ").is_empty());
        assert_eq!(split_command("a\"b c"), ["a", "b", "c"]);
    }

    #[test]
    fn responses_are_checked_as_the_sdk_checks_them() {
        let ok = Response::parse(&json!({"version": 1, "success": true,
            "token_type": JWT, "id_token": "tok", "expiration_time": 4_000_000_000u64}))
        .unwrap();
        assert_eq!(ok.subject_token, "tok");
        assert!(!ok.expired());
        let saml = Response::parse(&json!({"version": 1, "success": true,
            "token_type": SAML, "saml_response": "<xml/>"}))
        .unwrap();
        assert_eq!(saml.subject_token, "<xml/>");
        let failed = Response::parse(
            &json!({"version": 1, "success": false, "code": "401", "message": "no"}),
        )
        .unwrap();
        assert_eq!(
            (failed.error_code.as_str(), failed.error_message.as_str()),
            ("401", "no")
        );
        let expired = Response::parse(&json!({"version": 1, "success": true,
            "token_type": ID_TOKEN, "id_token": "t", "expiration_time": 1}))
        .unwrap();
        assert!(expired.expired());
        for (bad, words) in [
            (json!({"success": true}), "'version'"),
            (json!({"version": 0, "success": true}), "'version'"),
            (json!({"version": 1}), "'success'"),
            (
                json!({"version": 1, "success": true, "token_type": "x"}),
                "'token_type'",
            ),
            (
                json!({"version": 1, "success": true, "token_type": JWT}),
                "'id_token'",
            ),
            (
                json!({"version": 1, "success": true, "token_type": SAML, "id_token": "t"}),
                "'saml_response'",
            ),
            (
                json!({"version": 1, "success": false, "message": "m"}),
                "'code'",
            ),
            (
                json!({"version": 1, "success": false, "code": "c"}),
                "'message'",
            ),
        ] {
            let e = Response::parse(&bad).unwrap_err();
            assert!(e.contains(words), "{bad}: {e}");
        }
    }
}
