//! Running a helper command (a credential process, a token CLI) and collecting what it prints.
//!
//! The child is a `std` process whose pipes are read through the runtime's I/O driver and
//! whose exit is asked for with `try_wait`. `tokio::process` would do the same work but brings
//! the runtime's signal driver (a SIGCHLD handler, its socket pair and 64 signal slots) into
//! every program that builds a runtime with `enable_all` and links tern-ai, whether or not
//! it ever runs a command: four system calls and ten page faults of each start.
//!
//! The child is owned by one value at a time, so it is killed only while it has not been
//! reaped and its pid cannot belong to another process: dropping the future (an abort, a
//! timeout) kills it and reaps it.

use std::io;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// What a command left when it exited.
#[derive(Debug)]
pub(crate) struct Output {
    pub status: ExitStatus,
    /// Its stdout, at most the limit's bytes.
    pub stdout: Vec<u8>,
    /// Its stderr, at most the limit's bytes.
    pub stderr: Vec<u8>,
}

/// Starts `command` with stdin closed and its stdout and stderr piped.
///
/// The error is [`Command::spawn`]'s ([`io::ErrorKind::NotFound`] when the program does not
/// exist).
pub(crate) fn spawn(mut command: Command) -> io::Result<Running> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(Running(Some(command.spawn()?)))
}

/// A started command. Dropping it, or the future of [`Running::output`], kills the command.
pub(crate) struct Running(Option<Child>);

impl Running {
    /// Reads at most `limit` bytes of its stdout and of its stderr, and waits for it to exit.
    pub(crate) async fn output(mut self, limit: u64) -> io::Result<Output> {
        let pipes = self.0.as_mut().map(|c| (c.stdout.take(), c.stderr.take()));
        let Some((Some(stdout), Some(stderr))) = pipes else {
            return Err(io::Error::other("the command's output pipes are missing"));
        };
        let (stdout, stderr) = tokio::try_join!(read(stdout, limit), read(stderr, limit))?;
        let status = self.exit().await?;
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }

    /// Waits for the child to exit. Its pipes have ended (or were let go at the limit, which
    /// ends a child that writes on), so this is nearly always at once; a child that closed
    /// them and goes on is asked again at growing intervals.
    async fn exit(&mut self) -> io::Result<ExitStatus> {
        let mut pause = Duration::from_millis(1);
        loop {
            let Some(child) = self.0.as_mut() else {
                return Err(io::Error::other("the command was already waited for"));
            };
            if let Some(status) = child.try_wait()? {
                self.0 = None;
                return Ok(status);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        // Not reaped yet, so the pid is still this child's.
        let _ = child.kill();
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // SIGKILL ends it promptly; reap it off the caller's thread so no zombie is left.
        let _ = std::thread::Builder::new()
            .name("tern-reap".into())
            .spawn(move || {
                let _ = child.wait();
            });
    }
}

/// Reads at most `limit` bytes of a pipe, to its end or to the limit.
#[cfg(unix)]
async fn read(pipe: impl Into<std::os::fd::OwnedFd>, limit: u64) -> io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(pipe.into())?;
    let mut out = Vec::new();
    pipe.take(limit).read_to_end(&mut out).await?;
    Ok(out)
}

/// Reads at most `limit` bytes of a pipe, to its end or to the limit.
#[cfg(not(unix))]
async fn read(pipe: impl io::Read + Send + 'static, limit: u64) -> io::Result<Vec<u8>> {
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(pipe, limit), &mut out)?;
        Ok(out)
    })
    .await
    .map_err(io::Error::other)?
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[tokio::test]
    async fn collects_both_streams_and_the_status() {
        let out = spawn(sh("printf out; printf err >&2; exit 3"))
            .unwrap()
            .output(1 << 20)
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out");
        assert_eq!(out.stderr, b"err");
    }

    #[tokio::test]
    async fn keeps_at_most_the_limit_of_a_long_output() {
        // 200 KB on each stream: more than a pipe holds, so both are read at once.
        let script = "head -c 200000 /dev/zero; head -c 200000 /dev/zero >&2";
        let out = spawn(sh(script)).unwrap().output(100_000).await.unwrap();
        assert_eq!((out.stdout.len(), out.stderr.len()), (100_000, 100_000));
    }

    #[tokio::test]
    async fn a_missing_program_is_not_found() {
        let Err(err) = spawn(Command::new("/nonexistent/tern-no-such-program")) else {
            panic!("a missing program started");
        };
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn a_child_that_closes_its_output_is_still_waited_for() {
        let out = spawn(sh("exec >&- 2>&-; sleep 0.1; exit 7"))
            .unwrap()
            .output(10)
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(7));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn dropping_the_future_kills_the_command() {
        let dir = std::env::temp_dir().join(format!("tern-subprocess-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("pid");
        let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
        let run = spawn(sh(&script)).unwrap().output(10);
        let waited = tokio::time::timeout(Duration::from_millis(300), run).await;
        assert!(waited.is_err(), "sleep 30 finished early");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The child is killed and reaped: its /proc entry goes away.
        let proc_dir = format!("/proc/{pid}");
        for _ in 0..200 {
            if !std::path::Path::new(&proc_dir).exists() {
                std::fs::remove_dir_all(&dir).unwrap();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the command {pid} still runs (or is a zombie) after its future was dropped");
    }
}
