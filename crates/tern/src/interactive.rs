//! Interactive mode: a small terminal UI on crossterm.
//!
//! The screen is the terminal's own scrollback plus a few live rows at the bottom that are
//! redrawn in place: the line being streamed, a spinner per running tool, the queued
//! messages, a status line (turns, tokens, cost, model) and the input line. Finished output
//! is printed above the live rows and scrolls away normally.
//!
//! Keys: Enter sends (a steering message while the agent works), Alt+Enter or `/follow TEXT`
//! queues a follow-up, Up/Down walk the history, Ctrl+C aborts the running turn (the session
//! is kept), a second Ctrl+C or Ctrl+D on an empty line exits. `/help` lists the commands.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, style, terminal};
use futures::StreamExt;
use tern_agent::AgentEvent;
use tern_ai::{AssistantMessageEvent, Message, StopReason};
use tern_tools::policy::{AskFn, AskRequest};
use tokio::sync::{mpsc, oneshot};

use crate::oneshot::{short_args, truncate};
use crate::setup::Runtime;

/// A permission question on its way to the UI.
pub type Question = (AskRequest, oneshot::Sender<bool>);

/// The permission gate's asker for interactive mode, and the UI's end of it.
pub fn asker() -> (AskFn, mpsc::UnboundedReceiver<Question>) {
    let (tx, rx) = mpsc::unbounded_channel::<Question>();
    let ask: AskFn = Arc::new(move |req, _signal| {
        let tx = tx.clone();
        Box::pin(async move {
            let (answer_tx, answer_rx) = oneshot::channel();
            if tx.send((req, answer_tx)).is_err() {
                return false;
            }
            answer_rx.await.unwrap_or(false)
        })
    });
    (ask, rx)
}

enum UiEvent {
    Agent(Box<AgentEvent>),
    Settled,
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const HELP: &str = "Enter: send (steers the agent while it works) · Alt+Enter or /follow TEXT: \
queue a follow-up · /steer TEXT · /new: new session · Up/Down: history · Ctrl+C: abort the \
turn (twice: exit) · Ctrl+D or /quit: exit";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Text,
    Thinking,
}

struct Ui {
    rt: Arc<Runtime>,
    out: std::io::Stdout,
    input: Vec<char>,
    cursor: usize,
    history: Vec<String>,
    hist_pos: Option<usize>,
    partial: String,
    partial_kind: Stream,
    running: bool,
    tools: Vec<(String, String)>,
    tick: usize,
    turns: u64,
    tokens_in: u64,
    tokens_out: u64,
    cost: f64,
    asking: Option<Question>,
    armed: bool,
    hint: Option<String>,
    drawn: u16,
    width: usize,
}

struct RawGuard;

impl Drop for RawGuard {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

fn paint(code: &str, s: &str) -> String {
    format!("\x1b[{code}m{s}\x1b[0m")
}

impl Ui {
    fn clear_live(&mut self) {
        if self.drawn > 1 {
            let _ = queue!(self.out, cursor::MoveUp(self.drawn - 1));
        }
        let _ = queue!(
            self.out,
            cursor::MoveToColumn(0),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        self.drawn = 0;
    }

    fn live_rows(&self) -> (Vec<String>, usize) {
        let w = self.width.saturating_sub(1).max(10);
        let mut rows = Vec::new();
        if !self.partial.is_empty() {
            let t = tail(&self.partial, w);
            rows.push(match self.partial_kind {
                Stream::Text => t,
                Stream::Thinking => paint("2", &t),
            });
        }
        for (_, label) in &self.tools {
            rows.push(format!(
                "{} {}",
                paint("36", SPINNER[self.tick % SPINNER.len()]),
                truncate(label, w.saturating_sub(2))
            ));
        }
        let (steer, follow) = self.rt.agent.queued();
        for (kind, ms) in [("steer", steer), ("follow-up", follow)] {
            for m in ms {
                let text = match &m {
                    Message::User(u) => u.content.text(" "),
                    other => other.role().to_string(),
                };
                rows.push(paint(
                    "33",
                    &truncate(&format!("  queued {kind}: {text}"), w),
                ));
            }
        }
        let model = self.rt.agent.state().model.id;
        let activity = if self.running {
            format!("{} working", SPINNER[self.tick % SPINNER.len()])
        } else {
            "ready".to_string()
        };
        let mut status = format!(
            "{activity} · turn {} · {} in / {} out tokens · ${:.4} · {model}",
            self.turns, self.tokens_in, self.tokens_out, self.cost
        );
        if let Some(h) = &self.hint {
            status.push_str(" · ");
            status.push_str(h);
        }
        rows.push(paint("2", &truncate(&status, w)));
        if let Some((req, _)) = &self.asking {
            rows.push(paint(
                "1;33",
                &truncate(
                    &format!(
                        "Allow {} {}? [y/N] ({})",
                        req.tool_name,
                        short_args(&req.args),
                        req.prompt
                    ),
                    w,
                ),
            ));
        }
        let prompt = if self.running { "steer> " } else { "> " };
        let room = w.saturating_sub(prompt.len()).max(1);
        let start = self.cursor.saturating_sub(room.saturating_sub(1));
        let visible: String = self.input[start..].iter().take(room).collect();
        let col = prompt.len() + (self.cursor - start);
        rows.push(format!("{}{visible}", paint("1;32", prompt)));
        (rows, col)
    }

    fn draw_live(&mut self) {
        let (rows, col) = self.live_rows();
        let _ = queue!(self.out, style::Print(rows.join("\r\n")));
        let _ = queue!(self.out, cursor::MoveToColumn(col as u16));
        self.drawn = rows.len() as u16;
        let _ = self.out.flush();
    }

    fn redraw(&mut self) {
        self.clear_live();
        self.draw_live();
    }

    /// Prints finished lines above the live rows.
    fn print(&mut self, text: &str) {
        self.clear_live();
        for line in text.split('\n') {
            let _ = queue!(self.out, style::Print(line), style::Print("\r\n"));
        }
        self.draw_live();
    }

    fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let p = std::mem::take(&mut self.partial);
            let line = match self.partial_kind {
                Stream::Text => p,
                Stream::Thinking => paint("2", &p),
            };
            self.print(&line);
        }
    }

    fn stream(&mut self, kind: Stream, delta: &str) {
        if kind != self.partial_kind {
            self.flush_partial();
            self.partial_kind = kind;
        }
        self.partial.push_str(&clean(delta));
        let w = self.width.saturating_sub(1).max(10);
        let mut done = Vec::new();
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial[..i].to_string();
            self.partial.drain(..=i);
            done.push(line);
        }
        while self.partial.chars().count() > w {
            let head: String = self.partial.chars().take(w).collect();
            self.partial = self.partial.chars().skip(w).collect();
            done.push(head);
        }
        if done.is_empty() {
            self.redraw();
        } else {
            let styled: Vec<String> = done
                .into_iter()
                .map(|l| match kind {
                    Stream::Text => l,
                    Stream::Thinking => paint("2", &l),
                })
                .collect();
            self.print(&styled.join("\n"));
        }
    }

    fn on_agent(&mut self, e: &AgentEvent) {
        match e {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => match assistant_message_event {
                AssistantMessageEvent::TextDelta { delta, .. } => self.stream(Stream::Text, delta),
                AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                    self.stream(Stream::Thinking, delta)
                }
                _ => {}
            },
            AgentEvent::MessageStart {
                message: Message::User(u),
            } => {
                let text = clean(&u.content.text(" ")).replace('\n', " ");
                self.print(&paint("1", &format!("› {}", truncate(&text, 500))));
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(a),
            } => {
                self.flush_partial();
                self.tokens_in += a.usage.input;
                self.tokens_out += a.usage.output;
                self.cost += a.usage.cost.total;
                match a.stop_reason {
                    StopReason::Error => self.print(&paint(
                        "31",
                        &format!(
                            "error: {}",
                            a.error_message.as_deref().unwrap_or("the request failed")
                        ),
                    )),
                    StopReason::Aborted => self.print(&paint("33", "(aborted)")),
                    _ => self.redraw(),
                }
            }
            AgentEvent::TurnEnd { .. } => {
                self.turns += 1;
                self.redraw();
            }
            AgentEvent::ToolExecutionStart { tool_call } => {
                self.flush_partial();
                self.tools.push((
                    tool_call.id.clone(),
                    format!("{} {}", tool_call.name, short_args(&tool_call.arguments)),
                ));
                self.redraw();
            }
            AgentEvent::ToolExecutionEnd {
                tool_call,
                result,
                is_error,
                ..
            } => {
                let label = self
                    .tools
                    .iter()
                    .position(|(id, _)| *id == tool_call.id)
                    .map(|i| self.tools.remove(i).1)
                    .unwrap_or_else(|| tool_call.name.clone());
                let text = clean(&tern_ai::content_text(result.content(), "\n"));
                let first = text.lines().next().unwrap_or("").to_string();
                let n = text.lines().count();
                let mark = if *is_error {
                    paint("31", "✗")
                } else {
                    paint("32", "✓")
                };
                self.print(&format!(
                    "{mark} {} {}",
                    paint("36", &truncate(&label, 60)),
                    paint("2", &format!("→ {} ({n} lines)", truncate(&first, 60)))
                ));
            }
            _ => {}
        }
    }

    fn on_settled(&mut self) {
        self.running = false;
        self.hint = None;
        // A question left open by an aborted run was already answered "no" by the gate.
        self.asking = None;
        self.tools.clear();
        self.flush_partial();
        let l = &self.rt.limits;
        let note = if l.timed_out.load(Ordering::SeqCst) {
            Some("timeout reached (--timeout); the run was aborted and the task was not confirmed complete")
        } else if l.turn_limit_hit.load(Ordering::SeqCst) {
            Some("turn limit reached (--max-turns); the task was not confirmed complete")
        } else if l.user_aborted.load(Ordering::SeqCst) {
            Some("aborted; the session is kept, type to go on")
        } else {
            None
        };
        match note {
            Some(n) => self.print(&paint("33", n)),
            None => self.redraw(),
        }
    }
}

/// Model and tool text made safe for the screen: tabs become spaces, other control characters
/// (escape sequences included) are dropped, newlines stay.
fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    s.chars().skip(count - n).collect()
}

fn start_run(rt: &Arc<Runtime>, text: String, ui_tx: &mpsc::UnboundedSender<UiEvent>) {
    let rt = rt.clone();
    let tx = ui_tx.clone();
    tokio::spawn(async move {
        rt.limits.reset_run();
        let timer = rt.limits.start_timer(&rt.agent);
        let mut result = rt.agent.prompt(&text).await;
        while result.is_ok()
            && !rt.limits.user_aborted.load(Ordering::SeqCst)
            && !rt.limits.timed_out.load(Ordering::SeqCst)
            && !rt.limits.turn_limit_hit.load(Ordering::SeqCst)
            && rt.agent.has_queued_messages()
        {
            result = rt.agent.continue_run().await;
        }
        if let Some(t) = timer {
            t.abort();
        }
        let _ = tx.send(UiEvent::Settled);
    });
}

/// Runs the interactive UI; returns the exit code.
pub async fn run(
    rt: Runtime,
    first_prompt: String,
    mut questions: mpsc::UnboundedReceiver<Question>,
) -> i32 {
    let rt = Arc::new(rt);
    if let Err(e) = terminal::enable_raw_mode() {
        eprintln!("tern: cannot put the terminal in raw mode ({e}); use -p for print mode");
        return crate::exit::USAGE;
    }
    let _guard = RawGuard;
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
                | AgentEvent::ToolExecutionEnd { .. }
        ) {
            let _ = tx.send(UiEvent::Agent(Box::new(e.clone())));
        }
    });
    let width = terminal::size().map(|(w, _)| w as usize).unwrap_or(80);
    let mut ui = Ui {
        rt: rt.clone(),
        out: std::io::stdout(),
        input: Vec::new(),
        cursor: 0,
        history: Vec::new(),
        hist_pos: None,
        partial: String::new(),
        partial_kind: Stream::Text,
        running: false,
        tools: Vec::new(),
        tick: 0,
        turns: 0,
        tokens_in: 0,
        tokens_out: 0,
        cost: 0.0,
        asking: None,
        armed: false,
        hint: None,
        drawn: 0,
        width,
    };
    let session = rt
        .session_file()
        .map(|f| format!("session {f}"))
        .unwrap_or_else(|| "session not saved (--no-session)".into());
    ui.print(&paint(
        "2",
        &format!("tern · {} · {session}\n{HELP}", rt.agent.state().model.id),
    ));
    let history_len = rt.agent.message_count();
    if history_len > 1 {
        ui.print(&paint(
            "2",
            &format!("(resumed: {history_len} messages in the transcript)"),
        ));
    }
    if !first_prompt.trim().is_empty() {
        ui.running = true;
        ui.history.push(first_prompt.clone());
        start_run(&rt, first_prompt, &ui_tx);
    }
    let mut keys = EventStream::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(120));
    loop {
        tokio::select! {
            ev = keys.next() => {
                match ev {
                    Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                        if handle_key(&mut ui, k, &ui_tx) {
                            break;
                        }
                    }
                    Some(Ok(Event::Resize(w, _))) => {
                        ui.width = w as usize;
                        ui.redraw();
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
            Some(ev) = ui_rx.recv() => match ev {
                UiEvent::Agent(e) => ui.on_agent(&e),
                UiEvent::Settled => ui.on_settled(),
            },
            Some(q) = questions.recv() => {
                ui.asking = Some(q);
                ui.redraw();
            }
            _ = ticker.tick(), if ui.running => {
                ui.tick += 1;
                ui.redraw();
            }
        }
    }
    if ui.running {
        rt.limits.user_aborted.store(true, Ordering::SeqCst);
        rt.agent.abort();
        let _ = tokio::time::timeout(Duration::from_secs(3), rt.agent.wait_for_idle()).await;
    }
    ui.clear_live();
    let _ = ui.out.flush();
    sub.unsubscribe();
    drop(_guard);
    if let Some(f) = rt.session_file() {
        eprintln!("tern: session saved to {f} (resume with --continue)");
    }
    crate::exit::OK
}

/// Handles a key; returns true to exit.
fn handle_key(ui: &mut Ui, k: KeyEvent, ui_tx: &mpsc::UnboundedSender<UiEvent>) -> bool {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let alt = k.modifiers.contains(KeyModifiers::ALT);
    // A pending permission question takes the key.
    if let Some((req, answer)) = ui.asking.take() {
        let yes = matches!(k.code, KeyCode::Char('y') | KeyCode::Char('Y')) && !ctrl;
        let _ = answer.send(yes);
        ui.print(&paint(
            "2",
            &format!(
                "{} {}",
                if yes { "allowed" } else { "denied" },
                truncate(&format!("{} {}", req.tool_name, short_args(&req.args)), 80)
            ),
        ));
        return false;
    }
    let was_armed = ui.armed;
    ui.armed = false;
    ui.hint = None;
    match k.code {
        KeyCode::Char('c') if ctrl => {
            if ui.running {
                ui.rt.limits.user_aborted.store(true, Ordering::SeqCst);
                ui.rt.agent.abort();
                ui.armed = true;
                ui.hint = Some("aborting… (Ctrl+C again to exit)".into());
            } else if was_armed {
                return true;
            } else {
                ui.input.clear();
                ui.cursor = 0;
                ui.armed = true;
                ui.hint = Some("Ctrl+C again or Ctrl+D to exit".into());
            }
        }
        KeyCode::Char('d') if ctrl => {
            if ui.input.is_empty() {
                return true;
            }
            if ui.cursor < ui.input.len() {
                ui.input.remove(ui.cursor);
            }
        }
        KeyCode::Enter => {
            let text: String = ui.input.iter().collect();
            ui.input.clear();
            ui.cursor = 0;
            ui.hist_pos = None;
            if text.trim().is_empty() {
                ui.redraw();
                return false;
            }
            if ui.history.last() != Some(&text) {
                ui.history.push(text.clone());
            }
            return submit(ui, text, alt, ui_tx);
        }
        KeyCode::Char('a') if ctrl => ui.cursor = 0,
        KeyCode::Char('e') if ctrl => ui.cursor = ui.input.len(),
        KeyCode::Char('u') if ctrl => {
            ui.input.drain(..ui.cursor);
            ui.cursor = 0;
        }
        KeyCode::Char('j') if ctrl => {
            // Ctrl+J: some terminals send it for Alt/Shift+Enter; treat as follow-up.
            let text: String = ui.input.drain(..).collect();
            ui.cursor = 0;
            if !text.trim().is_empty() {
                ui.history.push(text.clone());
                return submit(ui, text, true, ui_tx);
            }
        }
        KeyCode::Char(c) if !ctrl => {
            ui.input.insert(ui.cursor, c);
            ui.cursor += 1;
        }
        KeyCode::Backspace if ui.cursor > 0 => {
            ui.cursor -= 1;
            ui.input.remove(ui.cursor);
        }
        KeyCode::Delete if ui.cursor < ui.input.len() => {
            ui.input.remove(ui.cursor);
        }
        KeyCode::Left => ui.cursor = ui.cursor.saturating_sub(1),
        KeyCode::Right => ui.cursor = (ui.cursor + 1).min(ui.input.len()),
        KeyCode::Home => ui.cursor = 0,
        KeyCode::End => ui.cursor = ui.input.len(),
        KeyCode::Up if !ui.history.is_empty() => {
            let pos = match ui.hist_pos {
                None => ui.history.len() - 1,
                Some(p) => p.saturating_sub(1),
            };
            ui.hist_pos = Some(pos);
            ui.input = ui.history[pos].chars().collect();
            ui.cursor = ui.input.len();
        }
        KeyCode::Down => match ui.hist_pos {
            Some(p) if p + 1 < ui.history.len() => {
                ui.hist_pos = Some(p + 1);
                ui.input = ui.history[p + 1].chars().collect();
                ui.cursor = ui.input.len();
            }
            _ => {
                ui.hist_pos = None;
                ui.input.clear();
                ui.cursor = 0;
            }
        },
        _ => {}
    }
    ui.redraw();
    false
}

/// Sends a line: a command, a prompt, a steering message or a follow-up.
fn submit(ui: &mut Ui, text: String, follow: bool, ui_tx: &mpsc::UnboundedSender<UiEvent>) -> bool {
    let trimmed = text.trim();
    let (cmd, rest) = match trimmed.split_once(' ') {
        Some((c, r)) => (c, r.trim().to_string()),
        None => (trimmed, String::new()),
    };
    let (follow, body) = match cmd {
        "/quit" | "/exit" | "/q" => return true,
        "/help" => {
            ui.print(&paint("2", HELP));
            return false;
        }
        "/new" => {
            if ui.running {
                ui.print(&paint(
                    "33",
                    "the agent is working; Ctrl+C first, then /new",
                ));
            } else {
                match ui.rt.new_session() {
                    Ok(()) => {
                        ui.turns = 0;
                        let f = ui.rt.session_file().unwrap_or_else(|| "in memory".into());
                        ui.print(&paint("2", &format!("new session: {f}")));
                    }
                    Err(e) => ui.print(&paint("31", &e)),
                }
            }
            return false;
        }
        "/follow" | "/f" => (true, rest),
        "/steer" | "/s" => (false, rest),
        c if c.starts_with('/') => {
            ui.print(&paint("33", &format!("unknown command {c}; {HELP}")));
            return false;
        }
        _ => (follow, trimmed.to_string()),
    };
    if body.is_empty() {
        ui.redraw();
        return false;
    }
    if ui.running {
        let m = Message::user_text(body);
        if follow {
            ui.rt.agent.follow_up(m);
        } else {
            ui.rt.agent.steer(m);
        }
        ui.redraw();
    } else {
        ui.running = true;
        start_run(&ui.rt, body, ui_tx);
        ui.redraw();
    }
    false
}
