//! `bash`: run a shell command in its own process group, streaming its output.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::sync::Mutex;
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult, ToolUpdater};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::cancel::ABORTED;
use crate::config::{config_tool, ToolConfig};
use crate::confine::real_path;
use crate::sandbox::reaper::descendants;
use crate::sandbox::{env, spawn_guarded, Confinement};
use crate::truncate::{format_size, truncate_tail, Truncation};

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// Shell command to execute
    pub command: String,
    /// Timeout in seconds (optional)
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// How often streamed output is sent to the updater at most (pi's throttle).
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// After the shell exits, output is still read until the pipes stay quiet this long: a
/// background process may hold them open forever.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);
/// After the shell exits with nothing left running, how long the readers may stay quiet
/// before the output is taken as complete (they are only waiting for the runtime).
const EXIT_DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The `bash` tool (sequential).
///
/// The command runs as `SHELL -c COMMAND` in the working directory, in a new process group,
/// under a guard process and in the sandbox of [`ToolConfig::sandbox`] (see
/// [`crate::sandbox`]), with secret-looking variables dropped from its environment.
/// Cancellation and timeout kill every process the command started, also those that left
/// the group; so does tern's death. A normal end leaves background processes running (as
/// pi does, until tern exits) and lists them in `details.backgroundProcesses`. A non-zero
/// exit is an error result that still carries the output; a timeout or an abort fails the
/// call with the output and the reason. A sandbox that cannot be set up fails the call with
/// an error that says what to do.
///
/// ```
/// let tool = tern_tools::bash_tool(&tern_tools::ToolConfig::new("."));
/// assert_eq!(tool.parameters()["required"], serde_json::json!(["command"]));
/// ```
pub fn bash_tool(config: &ToolConfig) -> AgentTool {
    let description = format!(
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last {} lines or {} (whichever is hit first). Optionally provide a timeout in seconds.",
        config.max_output_lines,
        format_size(config.max_output_bytes)
    );
    config_tool(
        config,
        "bash",
        &description,
        |config, args: BashArgs, call| async move {
            run_bash(&config, &args, &call.signal, &call.updater)
                .await
                .map_err(Into::into)
        },
    )
    .with_execution_mode(ToolExecutionMode::Sequential)
}

/// Bytes waiting in a pipe (`FIONREAD`); 0 when it cannot be told.
fn pending_bytes(fd: &OwnedFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer; the fd is open (owned).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// Kills a process group when dropped, unless disarmed: a dropped tool future (the caller
/// gave up on it) must not leave the command running.
struct GroupKiller {
    pgid: Option<i32>,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Output kept with bounded memory: the total counts, and a rolling tail.
struct Output {
    tail: Vec<u8>,
    keep: usize,
    tail_starts_at_line: bool,
    total_bytes: usize,
    newlines: usize,
    ends_with_newline: bool,
    dirty: bool,
    max_lines: usize,
    max_bytes: usize,
}

impl Output {
    fn new(max_lines: usize, max_bytes: usize) -> Self {
        Output {
            tail: Vec::new(),
            keep: max_bytes.saturating_mul(2).max(1),
            tail_starts_at_line: true,
            total_bytes: 0,
            newlines: 0,
            ends_with_newline: true,
            dirty: false,
            max_lines,
            max_bytes,
        }
    }

    fn append(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.total_bytes += data.len();
        self.newlines += data.iter().filter(|&&b| b == b'\n').count();
        self.ends_with_newline = data.last() == Some(&b'\n');
        self.tail.extend_from_slice(data);
        if self.tail.len() > self.keep * 2 {
            let cut = self.tail.len() - self.keep;
            self.tail_starts_at_line = self.tail[cut - 1] == b'\n';
            self.tail.drain(..cut);
        }
        self.dirty = true;
    }

    fn total_lines(&self) -> usize {
        self.newlines + usize::from(self.total_bytes > 0 && !self.ends_with_newline)
    }

    fn snapshot(&self) -> Truncation {
        let mut bytes: &[u8] = &self.tail;
        if !self.tail_starts_at_line {
            if let Some(i) = bytes.iter().position(|&b| b == b'\n') {
                bytes = &bytes[i + 1..];
            }
        }
        let text = String::from_utf8_lossy(bytes);
        let mut t = truncate_tail(&text, self.max_lines, self.max_bytes);
        t.total_lines = self.total_lines();
        t.total_bytes = self.total_bytes;
        t.truncated = t.total_lines > self.max_lines || t.total_bytes > self.max_bytes;
        if t.truncated && t.truncated_by.is_none() {
            t.truncated_by = Some(if t.total_bytes > self.max_bytes {
                crate::truncate::TruncatedBy::Bytes
            } else {
                crate::truncate::TruncatedBy::Lines
            });
        }
        t
    }
}

fn send_update(output: &Mutex<Output>, updater: &ToolUpdater) {
    let snapshot = {
        let mut out = match output.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        if !out.dirty {
            return;
        }
        out.dirty = false;
        out.snapshot()
    };
    let details = snapshot
        .truncated
        .then(|| json!({ "truncation": snapshot }));
    let mut partial = ToolResult::text(snapshot.content.clone());
    partial.details = details;
    updater.update(partial);
}

enum Outcome {
    Exited(std::process::ExitStatus),
    TimedOut,
    Aborted,
}

async fn run_bash(
    config: &ToolConfig,
    args: &BashArgs,
    signal: &tokio_util::sync::CancellationToken,
    updater: &ToolUpdater,
) -> Result<ToolResult, String> {
    if signal.is_cancelled() {
        return Err(ABORTED.to_string());
    }
    let timeout = match args.timeout {
        None => config.bash_timeout,
        Some(t) if t.is_finite() && t > 0.0 && t <= 2_147_483.0 => Some(Duration::from_secs_f64(t)),
        Some(_) => {
            return Err("Invalid timeout: must be a positive, finite number of seconds".into())
        }
    };
    let cwd = real_path(&config.cwd).map_err(|e| {
        format!(
            "Working directory does not exist: {} ({e})\nCannot execute bash commands.",
            config.cwd.display()
        )
    })?;
    if !cwd.is_dir() {
        return Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        ));
    }

    let confinement = Confinement::build(&config.sandbox, &cwd).map_err(|e| e.to_string())?;
    let mut command = tokio::process::Command::new(&config.shell);
    command
        .arg("-c")
        .arg(&args.command)
        .current_dir(&cwd)
        .env_clear()
        .envs(env::filtered(std::env::vars_os(), &config.sandbox.pass_env))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut guarded = spawn_guarded(&mut command, confinement)
        .map_err(|e| format!("Failed to start {}: {e}", config.shell.display()))?;
    let mut killer = GroupKiller {
        pgid: guarded.shell_pid().await,
    };
    let shell_status = guarded.shell_status();
    tokio::pin!(shell_status);
    let started = Instant::now();

    let output = Arc::new(Mutex::new(Output::new(
        config.max_output_lines,
        config.max_output_bytes,
    )));
    let mut readers = Vec::new();
    // Copies of the pipes' read ends, to see whether bytes wait there that the readers have
    // not taken yet (closed with this call).
    let mut probes = Vec::new();
    if let Some(stdout) = guarded.child.stdout.take() {
        probes.extend(stdout.as_fd().try_clone_to_owned());
        readers.push(tokio::spawn(pump(stdout, output.clone())));
    }
    if let Some(stderr) = guarded.child.stderr.take() {
        probes.extend(stderr.as_fd().try_clone_to_owned());
        readers.push(tokio::spawn(pump(stderr, output.clone())));
    }
    updater.update(ToolResult::default());

    let deadline = timeout.map(|t| started + t);
    let sleep_deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep_deadline);
    let mut ticker = tokio::time::interval(UPDATE_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    let mut outcome = loop {
        tokio::select! {
            biased;
            _ = signal.cancelled() => break Outcome::Aborted,
            _ = &mut sleep_deadline => break Outcome::TimedOut,
            status = &mut shell_status => match status {
                Some(status) => break Outcome::Exited(std::process::ExitStatus::from_raw(status)),
                None => return Err("The shell's guard process ended without reporting the shell's status".into()),
            },
            _ = ticker.tick() => send_update(&output, updater),
        }
    };

    if matches!(outcome, Outcome::Exited(_)) {
        // Drain what is still coming: until both pipes close, or, while something the command
        // left running may hold them open, until they stay quiet (nothing read, nothing
        // waiting in them) for a grace period. With
        // nothing left running the pipes are closed and the readers reach the end however
        // late the runtime gets to them: quiet then only means they have not run yet (a busy
        // process), so wait for them, up to a longer limit.
        let mut seen = total_bytes(&output);
        let mut quiet = Duration::ZERO;
        loop {
            if readers.iter().all(|r| r.is_finished()) {
                break;
            }
            tokio::select! {
                biased;
                _ = signal.cancelled() => { outcome = Outcome::Aborted; break; }
                _ = &mut sleep_deadline => { outcome = Outcome::TimedOut; break; }
                _ = tokio::time::sleep(EXIT_STDIO_GRACE) => {
                    let now = total_bytes(&output);
                    if now != seen {
                        seen = now;
                        quiet = Duration::ZERO;
                        send_update(&output, updater);
                        continue;
                    }
                    // Bytes in a pipe: the readers have not run yet, this is no silence.
                    if probes.iter().any(|fd| pending_bytes(fd) > 0) {
                        continue;
                    }
                    quiet += EXIT_STDIO_GRACE;
                    let left_running = guarded
                        .guard_pid()
                        .map(descendants)
                        .is_some_and(|d| !d.is_empty());
                    if left_running || quiet >= EXIT_DRAIN_LIMIT {
                        break;
                    }
                }
            }
        }
    }

    let mut background = Vec::new();
    match outcome {
        Outcome::Exited(_) => {
            killer.pgid = None;
            // What the command left running lives on, as in pi, until tern exits.
            background = guarded.guard_pid().map(descendants).unwrap_or_default();
            if !background.is_empty() {
                guarded.leave_running();
            }
        }
        Outcome::TimedOut | Outcome::Aborted => {
            killer.kill();
            guarded.kill_all().await;
            // Everything in the group is dead, so the pipes close; wait briefly for the last bytes.
            for r in readers.iter_mut() {
                let _ = tokio::time::timeout(EXIT_STDIO_GRACE * 5, r).await;
            }
        }
    }
    for r in &readers {
        r.abort();
    }
    send_update(&output, updater);

    let snapshot = {
        let out = match output.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        out.snapshot()
    };
    let mut text = snapshot.content.clone();
    if snapshot.truncated {
        let end = snapshot.total_lines;
        let start = end + 1 - snapshot.output_lines.min(end);
        let cut = format_size(snapshot.total_bytes.saturating_sub(snapshot.output_bytes));
        let notice = if snapshot.last_line_partial {
            format!(
                "[Showing last {} of line {end}; {cut} of earlier output cut. Redirect the output to a file in the working directory and read it to see everything.]",
                format_size(snapshot.output_bytes)
            )
        } else {
            format!(
                "[Showing lines {start}-{end} of {end}; {cut} of earlier output cut. Redirect the output to a file in the working directory and read it to see everything.]"
            )
        };
        text = format!("{text}\n\n{notice}");
    }
    let with_status = |text: &str, status: &str| {
        if text.is_empty() {
            status.to_string()
        } else {
            format!("{text}\n\n{status}")
        }
    };
    let truncation = snapshot.truncated.then(|| json!(snapshot));
    match outcome {
        Outcome::Aborted => Err(with_status(&text, "Command aborted")),
        Outcome::TimedOut => {
            let secs = timeout.map(|t| t.as_secs_f64()).unwrap_or_default();
            Err(with_status(
                &text,
                &format!("Command timed out after {secs} seconds"),
            ))
        }
        Outcome::Exited(status) => {
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
            let mut details = json!({
                "exitCode": code,
                "truncation": truncation,
                "wallTimeSeconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            });
            if !background.is_empty() {
                details["backgroundProcesses"] = background
                    .iter()
                    .map(|(pid, command)| json!({"pid": pid, "command": command}))
                    .collect();
            }
            let text = if text.is_empty() {
                "(no output)".to_string()
            } else {
                text
            };
            if code != 0 {
                let mut r = ToolResult::text(with_status(
                    &text,
                    &format!("Command exited with code {code}"),
                ))
                .with_details(details);
                r.is_error = Some(true);
                Ok(r)
            } else {
                Ok(ToolResult::text(text).with_details(details))
            }
        }
    }
}

fn total_bytes(output: &Mutex<Output>) -> usize {
    match output.lock() {
        Ok(o) => o.total_bytes,
        Err(p) => p.into_inner().total_bytes,
    }
}

async fn pump(mut pipe: impl tokio::io::AsyncRead + Unpin, output: Arc<Mutex<Output>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => match output.lock() {
                Ok(mut o) => o.append(&buf[..n]),
                Err(p) => p.into_inner().append(&buf[..n]),
            },
        }
    }
}
