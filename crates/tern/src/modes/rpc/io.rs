//! The two ends of RPC mode that do not depend on where the session runs: typed commands off
//! stdin (bad lines answered, a signal noticed) and the ordered, redacted lines on stdout.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader, Stdin};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::command::Command;
use super::line_reader::{self, Next};
use super::parse::{failure, read_command_bytes};

/// What [`Commands::next_command`] gives: a command, or why there are no more.
pub(super) enum Input {
    /// A command: its kind (`type`) and `id`.
    Command(Command, String, Option<Value>),
    /// Stdin closed (or could not be read).
    End,
    /// SIGINT, SIGTERM or SIGHUP arrived.
    Interrupted,
}

/// What [`Commands::next`] read.
enum Read {
    /// A command: its kind (`type`) and `id`.
    Command(Command, String, Option<Value>),
    /// A line that is no command: the failure response to send instead.
    Failure(Value),
    /// Stdin closed (or could not be read).
    End,
    /// SIGINT, SIGTERM or SIGHUP arrived.
    Interrupted,
}

/// Command lines off stdin, at most `max` bytes each.
pub(super) struct Commands {
    stdin: BufReader<Stdin>,
    max: usize,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Commands {
    pub(super) fn new(max: usize) -> Self {
        Commands {
            stdin: BufReader::new(tokio::io::stdin()),
            max,
            stop: Box::pin(crate::signals::interrupted()),
        }
    }

    /// The next command, end, or signal; a line that is no command gets its failure
    /// response through `answer`, and reading goes on.
    pub(super) async fn next_command(&mut self, mut answer: impl FnMut(Value)) -> Input {
        loop {
            match self.next().await {
                Read::Command(c, kind, id) => return Input::Command(c, kind, id),
                Read::Failure(response) => answer(response),
                Read::End => return Input::End,
                Read::Interrupted => return Input::Interrupted,
            }
        }
    }

    /// The next command, failure to answer, end, or signal (blank lines are skipped).
    async fn next(&mut self) -> Read {
        loop {
            let next = tokio::select! {
                n = line_reader::next_line(&mut self.stdin, self.max) => n,
                () = &mut self.stop => return Read::Interrupted,
            };
            let line = match next {
                Ok(Next::Line(l)) => l,
                Ok(Next::TooLong(n)) => {
                    return Read::Failure(failure(
                        "parse",
                        format!(
                            "Failed to parse command: the line has {n} bytes, over the limit \
                             of {} (raise it with --rpc-max-line-bytes)",
                            self.max
                        ),
                    ))
                }
                Ok(Next::End) => return Read::End,
                Err(e) => {
                    eprintln!("tern: cannot read stdin: {e}");
                    return Read::End;
                }
            };
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return match read_command_bytes(line) {
                Ok((command, kind, id)) => Read::Command(command, kind, id),
                Err(resp) => Read::Failure(resp),
            };
        }
    }
}

/// The output: lines sent to the returned channel reach stdout in order, each redacted and
/// flushed; the task ends when every sender is dropped (or stdout closes).
pub(super) fn stdout_lines() -> (mpsc::UnboundedSender<String>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(line) = rx.recv().await {
            let line = crate::secrets::redact(&line);
            if out.write_all(line.as_bytes()).await.is_err()
                || out.write_all(b"\n").await.is_err()
                || out.flush().await.is_err()
            {
                break;
            }
        }
    });
    (tx, writer)
}
