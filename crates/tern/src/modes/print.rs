//! Print mode and JSON mode: run one prompt (or finish an interrupted run, `--recover`),
//! then exit with a code that says how it ended.

use std::io::Write;
use std::sync::atomic::Ordering;

use tern_agent::{AgentEvent, RunEnding, RunOutcome, StopCause};
use tern_ai::{AssistantMessageEvent, Message};

use crate::event_lines;
use crate::exit;
use crate::runs::Prepared;
use crate::runtime::Runtime;
use crate::secrets::eprintln_redacted;
use crate::secrets::redact;
use crate::signals;
use crate::terminal_text::{result_mark, sanitize, tool_label, truncate, Style};

/// How the output looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The final answer on stdout.
    Print,
    /// The answer streamed to stdout, tool calls and thinking on stderr (the demo).
    Stream,
    /// One JSON event per line on stdout.
    Json,
}

/// Writes a line on stdout, keys redacted.
fn out_line(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{}", redact(s));
    let _ = o.flush();
}

/// What the run starts from.
pub enum Start {
    /// Prompts, sent in order, each once the one before it has settled.
    Prompts(Vec<Message>),
    /// The session's interrupted run (`--recover`).
    Recover,
}

/// The note `--recover` leaves when the session's last run ended (or there was none).
pub fn nothing_to_recover(file: &str) {
    eprintln_redacted!("tern: nothing to recover: the last run in {file} ended");
}

/// The interrupted run to finish, or the exit code when there is none (a note on stderr
/// says why).
fn recovery(rt: &Runtime) -> Result<Prepared, i32> {
    let file = rt.session_file().unwrap_or_default();
    match rt.prepare_recovery() {
        Ok(Some(p)) => Ok(p),
        Ok(None) => {
            nothing_to_recover(&file);
            Err(exit::OK)
        }
        Err(e) => {
            eprintln_redacted!("tern: cannot recover {file}: {e}");
            Err(exit::USAGE)
        }
    }
}

/// Runs `start` and returns the exit code.
pub async fn run(rt: &Runtime, start: Start, output: Output) -> i32 {
    let agent = &rt.agent;
    let recovered = match start {
        Start::Recover => match recovery(rt) {
            Ok(p) => Some(p),
            Err(code) => return code,
        },
        Start::Prompts(_) => {
            if rt.interrupted_run() {
                eprintln_redacted!(
                    "tern: note: the previous run in {} was interrupted; it stays unfinished \
                     (--recover, instead of a new prompt, finishes such a run)",
                    rt.session_file().unwrap_or_default()
                );
            }
            None
        }
    };
    if output == Output::Json {
        out_line(&rt.session_header().to_string());
    }
    let sub =
        match output {
            Output::Json => {
                let retry = rt.retry.clone();
                Some(agent.subscribe_sync(move |e| {
                    out_line(&event_lines::event_json(e, &retry).to_string())
                }))
            }
            Output::Stream => Some(agent.subscribe_sync(stream_event)),
            Output::Print => None,
        };
    let observer = crate::compaction::run::print_observer(output == Output::Json, out_line);
    *rt.compaction.observer.lock() = Some(observer.clone());
    *rt.retry.observer.lock() = Some(observer);
    let ctrl_c = {
        let agent = agent.clone();
        let flag = rt.limits.user_aborted.clone();
        tokio::spawn(async move {
            signals::interrupted().await;
            flag.store(true, Ordering::SeqCst);
            agent.abort();
        })
    };
    let result = match (recovered, start) {
        (Some(p), _) => rt.run_recovered(p).await,
        (None, Start::Prompts(messages)) => {
            let mut last = None;
            for m in messages {
                let r = rt.run_prompt(vec![m]).await;
                // pi stops at the first prompt that fails; so do an abort and a limit.
                let stopped = r.is_err()
                    || rt.limits.user_aborted.load(Ordering::SeqCst)
                    || rt.limits.timed_out.load(Ordering::SeqCst)
                    || rt.limits.refused.lock().is_some()
                    || rt.limits.ended_by().is_some();
                last = Some(r);
                if stopped {
                    break;
                }
            }
            match last {
                Some(r) => r,
                None => return exit::USAGE,
            }
        }
        (None, Start::Recover) => return exit::ERROR,
    };
    ctrl_c.abort();
    agent.wait_for_idle().await;
    if let Some(s) = sub {
        s.unsubscribe();
    }
    if let Some((limit, why)) = rt.limits.refused.lock().clone() {
        eprintln_redacted!("tern: {why}");
        if output == Output::Json {
            out_line(&event_lines::settled(false, Some(limit)).to_string());
        }
        return exit::LIMIT;
    }
    let run = match result {
        Ok(run) => run,
        Err(e) => {
            eprintln_redacted!("tern: {e}");
            return exit::ERROR;
        }
    };
    let code = outcome(rt, &run);
    if output == Output::Json {
        let aborted = code == exit::ABORTED || rt.limits.timed_out.load(Ordering::SeqCst);
        out_line(&event_lines::settled(aborted, rt.limits.ended_by()).to_string());
    }
    if output == Output::Print {
        // Model text may hold escape sequences meant to move the cursor or retitle the
        // terminal: only printable text, newlines and tabs reach it.
        let text = sanitize(&run.final_text().unwrap_or_default());
        if !text.is_empty() {
            out_line(&text);
            if code == exit::ERROR {
                eprintln_redacted!(
                    "tern: the answer above is partial: the request failed before the model finished"
                );
            }
        }
        // pi's print mode: a reply cut at the output limit is printed, then fails the run.
        if code == exit::OK && run.ending == RunEnding::Stopped(StopCause::OutputLimit) {
            eprintln_redacted!(
                "tern: Response was truncated: the model reached its output token limit. \
                 (--max-output-tokens sets the limit of a --base-url model)"
            );
            return exit::ERROR;
        }
    }
    code
}

/// The exit code of the run that just ended; explains non-zero ones on stderr.
pub fn outcome(rt: &Runtime, run: &RunOutcome) -> i32 {
    let l = &rt.limits;
    if l.user_aborted.load(Ordering::SeqCst) {
        eprintln_redacted!("tern: aborted");
        return exit::ABORTED;
    }
    if l.timed_out.load(Ordering::SeqCst) {
        eprintln_redacted!(
            "tern: timeout reached after {:.0} s (--timeout) and the run did not wrap up within \
             {:.0} s more; it was aborted and the task was not confirmed complete",
            l.timeout().map(|d| d.as_secs_f64()).unwrap_or_default(),
            l.timeout()
                .map(|d| crate::limits::grace(d).as_secs_f64())
                .unwrap_or_default()
        );
        return exit::LIMIT;
    }
    if let Some(limit) = *l.ended_by.lock() {
        eprintln_redacted!("tern: {}", l.limit_note(limit));
        return exit::LIMIT;
    }
    match &run.ending {
        RunEnding::Failed(message) => {
            // The library names no flag; say which one sets it here.
            let hint = if message.starts_with("Idle timeout") {
                " (set it with --idle-timeout SECONDS or `idle_timeout` in the config)"
            } else if message.contains("the run was not continued") {
                " (a recovered run needs what it was started with: the same --tools, \
                 --allow/--deny and limit flags)"
            } else {
                ""
            };
            let message = sanitize(message);
            eprintln_redacted!("tern: the model request failed: {message}{hint}");
            exit::ERROR
        }
        RunEnding::Aborted => {
            eprintln_redacted!("tern: aborted");
            exit::ABORTED
        }
        _ => exit::OK,
    }
}

fn stream_event(e: &AgentEvent) {
    match e {
        AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } => match assistant_message_event {
            AssistantMessageEvent::TextDelta { delta, .. } => {
                let mut o = std::io::stdout().lock();
                let _ = write!(o, "{}", redact(&sanitize(delta)));
                let _ = o.flush();
            }
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                eprint!("{}", Style::Dim.paint_stderr(&redact(&sanitize(delta))));
            }
            AssistantMessageEvent::ThinkingEnd { .. } => eprintln!(),
            _ => {}
        },
        AgentEvent::MessageEnd {
            message: Message::Assistant(a),
        } if !a.text().is_empty() => out_line(""),
        AgentEvent::ToolExecutionStart { tool_call } => eprintln_redacted!(
            "{}",
            Style::Cyan.paint_stderr(&format!(
                "→ {}",
                tool_label(&tool_call.name, &tool_call.arguments)
            )),
        ),
        AgentEvent::ToolExecutionEnd {
            result, is_error, ..
        } => {
            let text = tern_ai::content_text(result.content(), "\n");
            let lines = text.lines().count();
            let first = text.lines().next().unwrap_or("");
            let (style, mark) = result_mark(*is_error);
            eprintln_redacted!(
                "{} {} ({lines} lines)",
                style.paint_stderr(mark),
                truncate(&sanitize(first), 80)
            );
        }
        _ => {}
    }
}
