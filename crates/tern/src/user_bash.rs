//! A command the person runs (pi's `executeBash`: RPC `bash`, and `!cmd` / `!!cmd` in
//! interactive mode): runs a command line in the working directory, gives its output, and
//! keeps a `bashExecution` message for the next prompt, which [`to_llm`] turns into the user
//! message pi sends (`Ran \`cmd\`` and the output), unless it is excluded from the context.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tern_ai::{ContentBlock, CustomMessage, Message, UserMessage};
use tern_tools::truncate::{truncate_tail, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// What a finished command left.
#[derive(Debug)]
pub struct BashResult {
    /// The output (stdout and stderr interleaved), its tail when truncated.
    pub output: String,
    /// The exit code; `None` when cancelled or killed by a signal.
    pub exit_code: Option<i32>,
    /// Whether `abort_bash` stopped it.
    pub cancelled: bool,
    /// Whether `output` is only the tail.
    pub truncated: bool,
    /// The whole output, when truncated.
    pub full_output_path: Option<PathBuf>,
}

impl BashResult {
    /// The response data, as pi's `BashResult`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
        });
        if let Some(p) = &self.full_output_path {
            v["fullOutputPath"] = json!(p);
        }
        v
    }

    /// pi's `bashExecution` message.
    pub fn message(&self, command: &str, exclude_from_context: bool) -> Message {
        let mut v = self.to_json();
        v["role"] = json!("bashExecution");
        v["command"] = json!(command);
        v["timestamp"] = json!(tern_ai::clock::now_ms());
        if exclude_from_context {
            v["excludeFromContext"] = json!(true);
        }
        let Value::Object(map) = v else {
            unreachable!("built as an object")
        };
        Message::Custom(Arc::new(CustomMessage(map)))
    }
}

/// Runs `command` with `sh -c` in `cwd` until it ends or `cancel` fires; `on_chunk` hears
/// the output as it comes (whole UTF-8 characters only).
pub async fn run(
    command: &str,
    cwd: &Path,
    cancel: CancellationToken,
    mut on_chunk: impl FnMut(&str),
) -> Result<BashResult, String> {
    // One pipe for both streams keeps their interleaving.
    let script = format!("{{ {command}\n}} 2>&1");
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run sh: {e} (is /bin/sh installed?)"))?;
    let mut out = child.stdout.take();
    let mut bytes = Vec::new();
    let read = async {
        let Some(o) = out.as_mut() else { return };
        let mut buf = [0u8; 8192];
        // Bytes of a character split across reads wait for the rest of it.
        let mut sent = 0;
        while let Ok(n) = o.read(&mut buf).await {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
            let fresh = &bytes[sent..];
            let whole = match std::str::from_utf8(fresh) {
                Ok(s) => s.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                // Not UTF-8: sent as it will be shown, replacement characters and all.
                Err(_) => fresh.len(),
            };
            if whole > 0 {
                on_chunk(&String::from_utf8_lossy(&fresh[..whole]));
                sent += whole;
            }
        }
    };
    let (cancelled, status) = tokio::select! {
        () = read => (false, child.wait().await.ok()),
        () = cancel.cancelled() => {
            let _ = child.kill().await;
            (true, None)
        }
    };
    let full = String::from_utf8_lossy(&bytes).into_owned();
    let t = truncate_tail(&full, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let full_output_path = if t.truncated {
        let path = std::env::temp_dir().join(format!("tern-bash-{}.log", std::process::id()));
        std::fs::write(&path, &full)
            .map_err(|e| format!("cannot keep the full output in {}: {e}", path.display()))?;
        Some(path)
    } else {
        None
    };
    Ok(BashResult {
        output: t.content,
        exit_code: if cancelled {
            None
        } else {
            status.and_then(|s| s.code())
        },
        cancelled,
        truncated: t.truncated,
        full_output_path,
    })
}

/// pi's text for a `bashExecution` message in the model's context.
fn context_text(m: &Map<String, Value>) -> String {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut text = format!("Ran `{}`\n", s("command"));
    let output = s("output");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    let code = m.get("exitCode").and_then(Value::as_i64);
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    let path = s("fullOutputPath");
    if m.get("truncated").and_then(Value::as_bool) == Some(true) && !path.is_empty() {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// The request messages: `bashExecution` messages as pi's user messages (dropped when
/// excluded from context), other custom roles dropped, the rest as they are.
pub fn to_llm(messages: Arc<Vec<Message>>) -> Arc<Vec<Message>> {
    if !messages.iter().any(|m| matches!(m, Message::Custom(_))) {
        return messages;
    }
    let converted = messages
        .iter()
        .filter_map(|m| match m {
            Message::Custom(c) if c.role() == "bashExecution" => {
                let excluded = c.0.get("excludeFromContext").and_then(Value::as_bool) == Some(true);
                (!excluded).then(|| {
                    Message::from(UserMessage {
                        content: tern_ai::Content::Blocks(vec![ContentBlock::text(context_text(
                            &c.0,
                        ))]),
                        timestamp: c
                            .0
                            .get("timestamp")
                            .and_then(Value::as_u64)
                            .unwrap_or_default(),
                        extra: None,
                    })
                })
            }
            Message::Custom(_) => None,
            other => Some(other.clone()),
        })
        .collect();
    Arc::new(converted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_runs_and_reaches_the_context_as_pi_words_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut chunks = String::new();
        let r = run(
            "echo out; echo err >&2; exit 3",
            dir.path(),
            CancellationToken::new(),
            |c| chunks.push_str(c),
        )
        .await
        .expect("ran");
        assert_eq!(chunks, "out\nerr\n");
        assert_eq!(
            (r.output.as_str(), r.exit_code, r.cancelled),
            ("out\nerr\n", Some(3), false)
        );
        let m = r.message("x", false);
        let llm = to_llm(Arc::new(vec![m, r.message("y", true)]));
        assert_eq!(llm.len(), 1);
        assert_eq!(
            llm[0].content_json(),
            json!([{"type": "text", "text": "Ran `x`\n```\nout\nerr\n\n```\n\nCommand exited with code 3"}])
        );
    }

    #[tokio::test]
    async fn a_cancelled_command_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            c.cancel();
        });
        let r = run("sleep 5", dir.path(), cancel, |_| {})
            .await
            .expect("ran");
        assert!(r.cancelled && r.exit_code.is_none(), "{r:?}");
    }
}
