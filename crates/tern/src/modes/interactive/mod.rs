//! Interactive mode: a small terminal UI on crossterm.
//!
//! The screen is the terminal's own scrollback plus a few live rows at the bottom that are
//! redrawn in place: the line being streamed, a spinner per running tool, the queued
//! messages, a footer (working directory, tokens, cost, context use, model) and the input
//! line. Finished output is printed above the live rows and scrolls away normally.
//!
//! Keys: Enter sends (a steering message while the agent works), Alt+Enter or `/follow TEXT`
//! queues a follow-up, Shift+Enter or Ctrl+J starts a new line, Alt+Up takes the queued
//! messages back to edit, Up/Down move between lines and walk the history, Ctrl+C aborts the running turn (the session
//! is kept), a second Ctrl+C or Ctrl+D on an empty line exits. `/help` lists the commands.
//! A resumed session whose last run was cut off says so; `/recover` finishes that run.
//!
//! - `screen.rs`: the UI state and the live rows.
//! - `agent_view.rs`: agent events on the screen, and a resumed session's conversation.
//! - `markdown.rs`: answers rendered line by line and wrapped by display width.
//! - `highlight.rs`: code blocks coloured by language.
//! - `footer.rs`: the footer, as pi's.
//! - `keys.rs`: what each key, `/command` and `!command` does.
//! - `slash.rs`: the commands about the session and its model (`/model`, `/thinking`, ...).
//! - `complete.rs`: Tab completion of slash commands and `@` paths.
//! - `line_editor.rs`: the input (several lines) and its history.
//! - here: the permission asker, the event loop, runs.

mod agent_view;
mod complete;
mod footer;
mod highlight;
mod keys;
mod line_editor;
mod markdown;
mod screen;
mod slash;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::terminal;
use futures::StreamExt;
use tern_agent::AgentEvent;
use tern_ai::Message;
use tern_tools::policy::{Answer, AskFn, AskRequest};
use tokio::sync::{mpsc, oneshot};

use crate::runtime::Runtime;
use crate::terminal_text::{clean, Style};
use keys::{handle_key, HELP};
use screen::Ui;

/// A permission question on its way to the UI.
pub type Question = (AskRequest, oneshot::Sender<Answer>);

/// The permission gate's asker for interactive mode, and the UI's end of it.
pub fn asker() -> (AskFn, mpsc::UnboundedReceiver<Question>) {
    let (tx, rx) = mpsc::unbounded_channel::<Question>();
    let ask: AskFn = Arc::new(move |req, _signal| {
        let tx = tx.clone();
        Box::pin(async move {
            let (answer_tx, answer_rx) = oneshot::channel();
            if tx.send((req, answer_tx)).is_err() {
                return Answer::Deny { reason: None };
            }
            answer_rx.await.unwrap_or(Answer::Deny { reason: None })
        })
    });
    (ask, rx)
}

/// What reaches the UI loop besides keys and questions.
enum UiEvent {
    Agent(Box<AgentEvent>),
    /// A line to show (what a compaction did).
    Note(String),
    Settled,
    /// A message typed during a run was journaled and queued. The run may have settled
    /// meanwhile, after its last look at its queues: then nothing would take the message.
    Queued,
}

type UiSender = mpsc::UnboundedSender<UiEvent>;

/// Leaves raw mode when dropped, however the UI ends.
struct RawGuard;

impl Drop for RawGuard {
    fn drop(&mut self) {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
        let _ = terminal::disable_raw_mode();
    }
}

/// Runs `text` (and what gets queued meanwhile) in its own task; the UI hears `Settled`.
fn start_run(rt: &Arc<Runtime>, text: String, ui_tx: &UiSender) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        let _ = rt.run_prompt(vec![Message::user_text(text)]).await;
        let _ = tx.send(UiEvent::Settled);
    });
}

/// Messages still queued when a run settles (typed after its last look at its queues, during
/// a compaction or a `!` command, or queued only after the UI heard it settle) would wait for
/// a run that is not coming: after a run that ended on its own they run now, as the next
/// prompt (taken back from the ended run's journal first); after an abort or a limit they
/// come back to the input.
fn run_left_over(ui: &mut Ui, ui_tx: &UiSender) {
    if ui.running || !ui.rt.agent.has_queued_messages() {
        return;
    }
    if !ui.last_on_its_own {
        keys::dequeue(ui);
        ui.redraw();
        return;
    }
    let (steer, follow) = ui.rt.agent.take_queued();
    let messages: Vec<Message> = steer.into_iter().chain(follow).collect();
    ui.running = true;
    let rt = ui.rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        rt.withdraw(&messages).await;
        let _ = rt.run_prompt(messages).await;
        let _ = tx.send(UiEvent::Settled);
    });
    ui.redraw();
}

/// Compacts the transcript in its own task (`/compact [instructions]`); the compaction's
/// note comes from the observer, then the UI hears `Settled`.
fn start_compaction(rt: &Arc<Runtime>, instructions: String, ui_tx: &UiSender) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        let focus = Some(instructions.as_str()).filter(|i| !i.is_empty());
        let _ = rt.compact(focus).await;
        let _ = tx.send(UiEvent::Settled);
    });
}

/// Runs a `!` command in its own task: its output as notes, line by line, then what it
/// ended with; the message is kept for the next prompt. The UI hears `Settled`.
fn start_user_bash(
    rt: &Arc<Runtime>,
    command: String,
    exclude: bool,
    cancel: tokio_util::sync::CancellationToken,
    ui_tx: &UiSender,
) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        let mut pending = String::new();
        let line = |l: &str| {
            let _ = tx.send(UiEvent::Note(Style::Dim.paint(&clean(l))));
        };
        let ran = crate::user_bash::run(&command, &rt.cwd, cancel, |chunk| {
            pending.push_str(chunk);
            while let Some(at) = pending.find('\n') {
                line(&pending[..at]);
                pending.drain(..=at);
            }
        })
        .await;
        if !pending.is_empty() {
            line(&pending);
        }
        let end = match &ran {
            Ok(r) if r.cancelled => Style::Yellow.paint("(command stopped)"),
            Ok(r) => match r.exit_code {
                Some(0) => Style::Dim.paint("(exit 0)"),
                Some(c) => Style::Red.paint(&format!("(exit {c})")),
                None => Style::Red.paint("(killed by a signal)"),
            },
            Err(e) => Style::Red.paint(&format!("cannot run the command: {}", clean(e))),
        };
        let _ = tx.send(UiEvent::Note(end));
        if let Ok(r) = ran {
            rt.keep_user_bash(r.message(&command, exclude));
        }
        let _ = tx.send(UiEvent::Settled);
    });
}

/// Runs the command line's prompts in order in one task, each after the one before it
/// settles (pi's further message arguments), stopping at an abort.
fn start_prompts(rt: &Arc<Runtime>, messages: Vec<Message>, ui_tx: &UiSender) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        for m in messages {
            let failed = rt.run_prompt(vec![m]).await.is_err();
            if failed
                || rt
                    .limits
                    .user_aborted
                    .load(std::sync::atomic::Ordering::SeqCst)
            {
                break;
            }
        }
        let _ = tx.send(UiEvent::Settled);
    });
}

/// Finishes the session's interrupted run in its own task (`/recover`).
fn start_recovery(rt: &Arc<Runtime>, prepared: crate::runs::Prepared, ui_tx: &UiSender) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        let _ = rt.run_recovered(prepared).await;
        let _ = tx.send(UiEvent::Settled);
    });
}

/// The line shown on opening a session whose last run was cut off.
pub fn interrupted_note(interrupted: bool) -> Option<&'static str> {
    interrupted.then_some(
        "the last run in this session was interrupted before it ended; /recover finishes it \
         (nothing it recorded is sent or run again)",
    )
}

/// Runs the interactive UI; returns the exit code.
pub async fn run(
    rt: Runtime,
    first_prompt: String,
    first_messages: Vec<Message>,
    mut questions: mpsc::UnboundedReceiver<Question>,
) -> i32 {
    let rt = Arc::new(rt);
    if let Err(e) = terminal::enable_raw_mode() {
        eprintln!("tern: cannot put the terminal in raw mode ({e}); use -p for print mode");
        return crate::exit::USAGE;
    }
    let _guard = RawGuard;
    // A paste arrives whole (Event::Paste), not as keys: Enter inside it must not send.
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    let (ui_tx, mut ui_rx) = mpsc::unbounded_channel::<UiEvent>();
    let tx = ui_tx.clone();
    let sub = rt.agent.subscribe_sync(move |e| {
        if matches!(
            e,
            AgentEvent::MessageUpdate { .. }
                | AgentEvent::MessageStart { .. }
                | AgentEvent::MessageEnd { .. }
                | AgentEvent::TurnEnd { .. }
                | AgentEvent::ToolExecutionStart { .. }
                | AgentEvent::ToolExecutionUpdate { .. }
                | AgentEvent::ToolExecutionEnd { .. }
        ) {
            let _ = tx.send(UiEvent::Agent(Box::new(e.clone())));
        }
    });
    let notes = ui_tx.clone();
    let observer: crate::compaction::run::Observer = Arc::new(move |v: &serde_json::Value| {
        let note = crate::compaction::run::note(v).or_else(|| crate::auto_retry::note(v));
        if let Some(note) = note {
            let _ = notes.send(UiEvent::Note(note));
        }
    });
    *rt.compaction.observer.lock() = Some(observer.clone());
    *rt.retry.observer.lock() = Some(observer);
    let width = terminal::size().map(|(w, _)| w as usize).unwrap_or(80);
    let mut ui = Ui::new(rt.clone(), width);
    let session = rt
        .session_file()
        .map(|f| format!("session {f}"))
        .unwrap_or_else(|| "session not saved (--no-session)".into());
    ui.print_dim(&format!(
        "tern · {} · {session}\n{HELP}",
        rt.agent.state().model.id
    ));
    let history_len = rt.agent.message_count();
    if history_len > 1 {
        ui.show_history(&rt.agent.state().messages);
        ui.print(&Style::Dim.paint(&format!(
            "(resumed: {history_len} messages in the transcript)"
        )));
    }
    if let Some(note) = interrupted_note(rt.interrupted_run()) {
        ui.print(&Style::Yellow.paint(note));
    }
    if !first_messages.is_empty() {
        ui.running = true;
        if !first_prompt.trim().is_empty() {
            ui.editor.push_history(first_prompt);
        }
        start_prompts(&rt, first_messages, &ui_tx);
    }
    let mut keys = EventStream::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(120));
    // SIGTERM or SIGHUP (the terminal closed): abort the run below and leave; in raw mode
    // Ctrl+C arrives as a key, not as SIGINT.
    let signalled = crate::signals::interrupted();
    tokio::pin!(signalled);
    let mut code = crate::exit::OK;
    loop {
        tokio::select! {
            () = &mut signalled => {
                if ui.running {
                    code = crate::exit::ABORTED;
                }
                break;
            }
            ev = keys.next() => {
                match ev {
                    Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                        if handle_key(&mut ui, k, &ui_tx) {
                            break;
                        }
                    }
                    Some(Ok(Event::Paste(text))) => {
                        ui.paste(&text);
                        ui.redraw();
                    }
                    Some(Ok(Event::Resize(w, _))) => ui.resize(w as usize),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
            Some(ev) = ui_rx.recv() => match ev {
                UiEvent::Agent(e) => ui.on_agent(&e),
                UiEvent::Note(n) => {
                    ui.print(&n);
                    ui.redraw();
                }
                UiEvent::Settled => {
                    ui.last_on_its_own = ui.on_settled();
                    run_left_over(&mut ui, &ui_tx);
                }
                UiEvent::Queued => {
                    run_left_over(&mut ui, &ui_tx);
                    ui.redraw();
                }
            },
            Some(q) = questions.recv() => {
                if ui.always.contains(&q.0.tool_name) {
                    // Allowed for the rest of the session: answered without asking.
                    let label = crate::terminal_text::tool_label(&q.0.tool_name, &q.0.args);
                    let _ = q.1.send(Answer::Allow);
                    ui.print(&Style::Dim.paint(&format!("allowed (this session) {label}")));
                } else {
                    ui.asking = Some(screen::Dialog { question: q, reason: None });
                }
                ui.redraw();
            }
            _ = ticker.tick(), if ui.running => {
                ui.tick += 1;
                ui.redraw();
            }
        }
    }
    if ui.running {
        rt.abort_by_user();
        let _ = tokio::time::timeout(Duration::from_secs(3), rt.agent.wait_for_idle()).await;
    }
    ui.clear_live();
    let _ = ui.out.flush();
    sub.unsubscribe();
    drop(_guard);
    if let (Some(f), Some(cmd)) = (rt.session_file(), rt.resume_command()) {
        // The command on a line of its own, so a triple-click selects it (pi's layout).
        eprintln!("tern: session saved to {f}\nTo resume this session:\n{cmd}");
    }
    code
}
