//! What a key does: answer a permission question, edit the line, walk the history, send a
//! line (a prompt, a steering message, a follow-up or a `/command`), abort, exit.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tern_ai::Message;

use super::line_editor::LineEditor;
use super::screen::{Dialog, Ui};
use super::{start_recovery, start_run, UiSender};
use crate::terminal_text::{clean, tool_label, truncate, Style};
use tern_tools::policy::Answer;

/// The keys and commands, as `/help` lists them.
pub const HELP: &str =
    "Enter: send (steers the agent while it works) · Alt+Enter or /follow TEXT: \
queue a follow-up · /steer TEXT · /new: new session · /recover: finish an interrupted run · \
/compact [focus]: summarize older messages · /export [FILE]: the session as HTML · \
/model [N|NAME] · /thinking [LEVEL] · /session · /name NAME · /tools · /copy: the last answer · \
/resume [N]: another session of this directory · /fork [N]: a new session from before a prompt · \
!cmd: run a command, its output for the model (!!cmd: not for the model) · Up/Down: history · \
Shift+Enter or Ctrl+J: a new line · Alt+Up: edit the queued messages · \
Ctrl+R: search the history · \
Tab: complete · Ctrl+O: the last tool output in full · Ctrl+T: hide or show thinking · \
Ctrl+C: abort the turn (twice: exit) · \
Ctrl+D or /quit: exit";

/// Handles a key; returns true to exit.
pub fn handle_key(ui: &mut Ui, k: KeyEvent, ui_tx: &UiSender) -> bool {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let alt = k.modifiers.contains(KeyModifiers::ALT);
    // A pending permission question takes the key.
    if let Some(dialog) = ui.asking.take() {
        answer_dialog(ui, dialog, k);
        return false;
    }
    // A reverse search (Ctrl+R) takes the keys until it ends.
    if ui.editor.searching().is_some() {
        match k.code {
            KeyCode::Char('r') if ctrl => ui.editor.search_older(),
            KeyCode::Char('g') if ctrl => ui.editor.search_cancel(),
            KeyCode::Esc => ui.editor.search_cancel(),
            KeyCode::Char(c) if !ctrl => ui.editor.search_type(c),
            KeyCode::Backspace => ui.editor.search_back(),
            _ => ui.editor.search_accept(),
        }
        ui.redraw();
        return false;
    }
    let was_armed = ui.armed;
    ui.armed = false;
    ui.hint = None;
    let editor = &mut ui.editor;
    match k.code {
        KeyCode::Char('c') if ctrl => {
            if let Some(command) = &ui.bash {
                command.cancel();
                ui.hint = Some("stopping the command…".into());
            } else if ui.running {
                // What was queued comes back to the input instead of waiting for a run that
                // is not coming (pi's abort).
                if ui.rt.agent.has_queued_messages() {
                    dequeue(ui);
                }
                ui.rt.abort_by_user();
                ui.armed = true;
                ui.hint = Some("aborting… (Ctrl+C again to exit)".into());
            } else if was_armed {
                return true;
            } else {
                editor.clear();
                ui.armed = true;
                ui.hint = Some("Ctrl+C again or Ctrl+D to exit".into());
            }
        }
        KeyCode::Char('d') if ctrl => {
            if editor.is_empty() {
                return true;
            }
            editor.delete();
        }
        // Shift+Enter (where the terminal tells it apart) or Ctrl+J: a new line (pi's keys).
        KeyCode::Enter if k.modifiers.contains(KeyModifiers::SHIFT) => editor.insert('\n'),
        KeyCode::Char('j') if ctrl => editor.insert('\n'),
        KeyCode::Enter => {
            let text = editor.submit();
            if text.trim().is_empty() {
                ui.redraw();
                return false;
            }
            editor.remember(&text);
            return submit(ui, text, alt, ui_tx);
        }
        // Alt+Up: the queued messages come back to the input, to edit and send again.
        KeyCode::Up if alt => dequeue(ui),
        KeyCode::Tab => complete(ui),
        KeyCode::Char('r') if ctrl => editor.search_older(),
        KeyCode::Char('o') if ctrl => ui.expand_last_output(),
        KeyCode::Char('t') if ctrl => {
            ui.hide_thinking = !ui.hide_thinking;
            ui.hint = Some(
                if ui.hide_thinking {
                    "thinking hidden"
                } else {
                    "thinking shown"
                }
                .into(),
            );
        }
        // Up and Down move between the input's lines, and walk the history past them.
        KeyCode::Up if !editor.line_up() => editor.history_up(),
        KeyCode::Down if !editor.line_down() => editor.history_down(),
        _ => edit(editor, k),
    }
    ui.redraw();
    false
}

/// Alt+Up: takes every queued message back (journaled as withdrawn, so a recovery does not
/// deliver it) and puts their texts on the input before what it held, as pi's dequeue.
pub(super) fn dequeue(ui: &mut Ui) {
    let (steer, follow) = ui.rt.agent.take_queued();
    let taken: Vec<Message> = steer.into_iter().chain(follow).collect();
    if taken.is_empty() {
        ui.hint = Some("No queued messages to restore".into());
        return;
    }
    let mut texts: Vec<String> = taken
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(u.content.text("")),
            _ => None,
        })
        .collect();
    let current = ui.editor.text();
    if !current.trim().is_empty() {
        texts.push(current);
    }
    ui.editor.set_text(&texts.join("\n\n"));
    let n = taken.len();
    ui.hint = Some(format!(
        "Restored {n} queued message{} to editor",
        if n > 1 { "s" } else { "" }
    ));
    let rt = ui.rt.clone();
    tokio::spawn(async move { rt.withdraw(&taken).await });
}

/// A key while a permission question is open. y: allow this call; a: allow this tool for
/// the rest of the session; n: deny, after typing a reason for the model (Enter sends it,
/// Esc denies without one); Esc or Ctrl+C: deny. Other keys leave the question open.
fn answer_dialog(ui: &mut Ui, mut dialog: Dialog, k: KeyEvent) {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let answer = match (&mut dialog.reason, k.code) {
        (_, KeyCode::Char('c')) if ctrl => Some((Answer::Deny { reason: None }, "denied")),
        (Some(_), KeyCode::Esc) => Some((Answer::Deny { reason: None }, "denied")),
        (Some(reason), KeyCode::Enter) => Some((Answer::deny_because(reason.take()), "denied")),
        (Some(reason), _) => {
            edit(reason, k);
            None
        }
        (None, KeyCode::Char('y' | 'Y')) if !ctrl => Some((Answer::Allow, "allowed")),
        (None, KeyCode::Char('a' | 'A')) if !ctrl => {
            ui.always.insert(dialog.question.0.tool_name.clone());
            Some((Answer::Allow, "allowed for this session:"))
        }
        (None, KeyCode::Char('n' | 'N')) if !ctrl => {
            dialog.reason = Some(LineEditor::default());
            None
        }
        (None, KeyCode::Esc) => Some((Answer::Deny { reason: None }, "denied")),
        _ => None,
    };
    let Some((answer, word)) = answer else {
        ui.asking = Some(dialog);
        ui.redraw();
        return;
    };
    let (req, reply) = dialog.question;
    let label = truncate(&tool_label(&req.tool_name, &req.args), 80);
    let because = match &answer {
        Answer::Deny {
            reason: Some(reason),
        } => format!(" ({})", truncate(&clean(reason), 80)),
        _ => String::new(),
    };
    let _ = reply.send(answer);
    ui.print(&Style::Dim.paint(&format!("{word} {label}{because}")));
}

/// The editing keys of a line: the input's (its cursor line) and a denial's reason.
fn edit(field: &mut LineEditor, k: KeyEvent) {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    match k.code {
        KeyCode::Char('a') if ctrl => field.home(),
        KeyCode::Char('e') if ctrl => field.end(),
        KeyCode::Char('u') if ctrl => field.kill_to_start(),
        KeyCode::Char(c) if !ctrl => field.insert(c),
        KeyCode::Backspace => field.backspace(),
        KeyCode::Delete => field.delete(),
        KeyCode::Left => field.left(),
        KeyCode::Right => field.right(),
        KeyCode::Home => field.home(),
        KeyCode::End => field.end(),
        _ => {}
    }
}

/// Tab: completes the word before the cursor (a slash command, an `@` path); with several
/// candidates, their common start, and the candidates in the hint.
fn complete(ui: &mut Ui) {
    let (word, first) = ui.editor.word_at_cursor();
    let extra: Vec<String> = ui
        .rt
        .templates
        .iter()
        .map(|t| format!("/{}", t.name))
        .chain(
            ui.rt
                .skills
                .iter()
                .filter(|s| !s.hidden)
                .map(|s| format!("/skill:{}", s.name)),
        )
        .collect();
    let found = super::complete::candidates(&word, first, &ui.rt.cwd, &extra);
    match found.as_slice() {
        [] => {}
        [one] => {
            // A whole command or file is followed by a space; a folder is not.
            let space = if one.ends_with('/') { "" } else { " " };
            ui.editor.replace_word(&format!("{one}{space}"));
        }
        many => {
            let common = super::complete::common_prefix(many);
            if common.len() > word.len() {
                ui.editor.replace_word(&common);
            }
            let shown: Vec<&str> = many.iter().take(8).map(String::as_str).collect();
            let more = many.len().saturating_sub(8);
            let more = if more > 0 {
                format!(" (+{more})")
            } else {
                String::new()
            };
            ui.hint = Some(format!("{}{more}", shown.join("  ")));
        }
    }
}

/// Sends a line: a command, a prompt, a steering message or a follow-up.
fn submit(ui: &mut Ui, text: String, follow: bool, ui_tx: &UiSender) -> bool {
    let text = ui.expand_pastes(&text);
    // `!cmd` runs a command here and its output goes to the model with the next prompt;
    // `!!cmd` keeps it out of the model's context (pi's).
    if let Some(rest) = text.trim().strip_prefix('!') {
        let (exclude, command) = match rest.strip_prefix('!') {
            Some(c) => (true, c.trim()),
            None => (false, rest.trim()),
        };
        if !command.is_empty() {
            user_bash(ui, command.to_string(), exclude, ui_tx);
            return false;
        }
    }
    // A prompt template's `/name args` is its text, before any command is looked for.
    let text = ui.rt.expand_template(text.trim());
    let trimmed = text.trim();
    let (cmd, rest) = match trimmed.split_once(' ') {
        Some((c, r)) => (c, r.trim().to_string()),
        None => (trimmed, String::new()),
    };
    let (follow, body) = match cmd {
        "/quit" | "/exit" | "/q" => return true,
        "/help" => {
            ui.print_dim(HELP);
            return false;
        }
        "/new" => {
            new_session(ui);
            return false;
        }
        "/recover" => {
            recover(ui, ui_tx);
            return false;
        }
        "/compact" => {
            if ui.running {
                ui.print(&Style::Yellow.paint("the agent is working; wait for it, then /compact"));
            } else {
                ui.print(&Style::Dim.paint("compacting…"));
                ui.running = true;
                super::start_compaction(&ui.rt, rest, ui_tx);
            }
            ui.redraw();
            return false;
        }
        "/export" => {
            export(ui, &rest);
            return false;
        }
        "/follow" | "/f" => (true, rest),
        "/steer" | "/s" => (false, rest),
        c if c.starts_with('/') => {
            if !super::slash::run(ui, c, &rest) {
                ui.print(
                    &Style::Yellow.paint(&format!("unknown command {c}; /help lists the commands")),
                );
            }
            return false;
        }
        _ => (follow, trimmed.to_string()),
    };
    if body.is_empty() {
        ui.redraw();
        return false;
    }
    if ui.running {
        // Journaled at acceptance, then queued; the queue rows follow on the next redraw.
        let m = Message::user_text(body);
        let rt = ui.rt.clone();
        let tx = ui_tx.clone();
        tokio::spawn(async move {
            if follow {
                rt.follow_up(m).await;
            } else {
                rt.steer(m).await;
            }
            let _ = tx.send(super::UiEvent::Queued);
        });
    } else {
        ui.running = true;
        start_run(&ui.rt, body, ui_tx);
    }
    ui.redraw();
    false
}

/// `!cmd` / `!!cmd`: runs `command` in the working directory, its output on the screen as it
/// comes, and keeps it for the next prompt (unless `exclude`). Not while the agent works.
fn user_bash(ui: &mut Ui, command: String, exclude: bool, ui_tx: &UiSender) {
    if ui.running {
        ui.print(
            &Style::Yellow
                .paint("the agent is working; wait for it (or Ctrl+C), then run the command"),
        );
        ui.redraw();
        return;
    }
    let note = if exclude {
        " (not sent to the model)"
    } else {
        ""
    };
    ui.print(&format!(
        "{}{}",
        Style::Bold.paint(&format!("$ {}", clean(&command))),
        Style::Dim.paint(note)
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    ui.bash = Some(cancel.clone());
    ui.running = true;
    ui.redraw();
    super::start_user_bash(&ui.rt, command, exclude, cancel, ui_tx);
}

/// `/export [PATH]`: the session as an HTML page, or a copy of its file for a `.jsonl`
/// path, as pi's.
fn export(ui: &mut Ui, rest: &str) {
    let path = export_path(rest);
    let file = ui.rt.session_file().map(std::path::PathBuf::from);
    let done = match path.as_deref() {
        Some(p) if p.ends_with(".jsonl") => match file.as_deref().filter(|f| f.exists()) {
            Some(f) => std::fs::copy(f, ui.rt.cwd.join(p))
                .map(|_| ui.rt.cwd.join(p))
                .map_err(|e| e.to_string()),
            None => Err(crate::export::ExportError::Empty.to_string()),
        },
        _ => {
            let out = path.map(|p| ui.rt.cwd.join(p));
            let system = ui.rt.agent.system_prompt();
            crate::export::export_session(file.as_deref(), out.as_deref(), Some(&system))
                .map_err(|e| e.to_string())
        }
    };
    match done {
        Ok(p) => ui.print(&Style::Dim.paint(&format!("Session exported to: {}", p.display()))),
        Err(e) => ui.print(&Style::Red.paint(&format!("Failed to export session: {e}"))),
    }
    ui.redraw();
}

/// The first argument of `/export`: a quoted string or a word.
fn export_path(rest: &str) -> Option<String> {
    let rest = rest.trim_start();
    let mut chars = rest.chars();
    match chars.next()? {
        q @ ('"' | '\'') => {
            let body = &rest[1..];
            body.find(q).map(|end| body[..end].to_string())
        }
        _ => rest.split_whitespace().next().map(str::to_string),
    }
}

/// `/recover`: finish the session's interrupted run, unless the agent is working.
fn recover(ui: &mut Ui, ui_tx: &UiSender) {
    if ui.running {
        ui.print(&Style::Yellow.paint("the agent is working; wait for it, then /recover"));
        return;
    }
    match ui.rt.prepare_recovery() {
        Ok(None) => ui.print(&Style::Dim.paint("nothing to recover: the last run ended")),
        Ok(Some(prepared)) => {
            ui.print(&Style::Dim.paint("finishing the interrupted run…"));
            ui.running = true;
            start_recovery(&ui.rt, prepared, ui_tx);
        }
        Err(e) => ui.print(&Style::Red.paint(&format!("cannot recover: {e}"))),
    }
    ui.redraw();
}

/// `/new`: a new session, unless the agent is working.
fn new_session(ui: &mut Ui) {
    if ui.running {
        ui.print(&Style::Yellow.paint("the agent is working; Ctrl+C first, then /new"));
        return;
    }
    match ui.rt.new_session() {
        Ok(()) => {
            ui.reset_totals();
            let f = ui.rt.session_file().unwrap_or_else(|| "in memory".into());
            ui.print(&Style::Dim.paint(&format!("new session: {f}")));
        }
        Err(e) => ui.print(&Style::Red.paint(&e)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn export_takes_a_word_or_a_quoted_path() {
        use super::export_path;
        assert_eq!(export_path(""), None);
        assert_eq!(export_path(" out.html more").as_deref(), Some("out.html"));
        assert_eq!(
            export_path("\"my page.html\" x").as_deref(),
            Some("my page.html")
        );
        assert_eq!(export_path("'unclosed"), None);
    }
}
