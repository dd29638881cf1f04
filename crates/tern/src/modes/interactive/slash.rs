//! The slash commands about the session and its model, as pi's: `/model`, `/thinking`,
//! `/session`, `/name`, `/tools`, `/copy`, `/resume`, `/fork`.

use base64::Engine;
use tern_ai::providers::{clamp_thinking_level, supported_thinking_levels};
use tern_ai::{Message, Model, ThinkingLevel};

use super::screen::Ui;
use crate::model_lookup::{self, Lookup};
use crate::models_file;
use crate::terminal_text::{clean, truncate, Style};

/// Carries out `/cmd rest`; `false` when `cmd` is none of these.
pub fn run(ui: &mut Ui, cmd: &str, rest: &str) -> bool {
    match cmd {
        "/model" => model(ui, rest),
        "/thinking" => thinking(ui, rest),
        "/session" => session(ui),
        "/name" => name(ui, rest),
        "/tools" => tools(ui),
        "/copy" => copy(ui),
        "/resume" => resume(ui, rest),
        "/fork" => fork(ui, rest),
        _ => return false,
    }
    ui.redraw();
    true
}

fn note(ui: &mut Ui, text: &str) {
    ui.print_dim(text);
}

fn warn(ui: &mut Ui, text: &str) {
    ui.print(&Style::Yellow.paint(text));
}

/// Switches to `m` (the thinking level clamped to it), recorded in the session.
fn switch_model(ui: &mut Ui, m: Model, level: Option<ThinkingLevel>) {
    let agent = &ui.rt.agent;
    let before = agent.state().thinking_level;
    let level = clamp_thinking_level(&m, level.unwrap_or(before));
    agent.set_model(m.clone());
    agent.set_thinking_level(level);
    {
        let mut rec = ui.rt.recorder.lock();
        rec.record_model_change(&m.provider, &m.id);
        if level != before {
            rec.record_thinking_change(level.as_str());
        }
    }
    note(
        ui,
        &format!(
            "model: {}/{} · thinking {}",
            m.provider,
            m.id,
            level.as_str()
        ),
    );
}

/// `/model`: the models there are keys for, numbered; `/model N` or `/model QUERY` (pi's
/// matching: `provider/id`, a partial or fuzzy name, a `:level` suffix) switches.
fn model(ui: &mut Ui, rest: &str) {
    if ui.running {
        return warn(ui, "the agent is working; wait for it, then /model");
    }
    let current = ui.rt.agent.state().model;
    let models = models_file::available(&current);
    let rest = rest.trim();
    if rest.is_empty() {
        let rows: Vec<String> = models
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mark = if m.provider == current.provider && m.id == current.id {
                    "•"
                } else {
                    " "
                };
                format!("{mark} {:>3}. {}/{}", i + 1, m.provider, m.id)
            })
            .collect();
        return note(
            ui,
            &format!("{}\n/model N or /model NAME switches", rows.join("\n")),
        );
    }
    if let Ok(n) = rest.parse::<usize>() {
        return match n.checked_sub(1).and_then(|i| models.get(i)) {
            Some(m) => switch_model(ui, m.clone(), None),
            None => warn(ui, &format!("no model {n}: /model lists {}", models.len())),
        };
    }
    match model_lookup::find(rest, None, &|p| models_file::has_key(p, false)) {
        Lookup::Found(m, level) => switch_model(ui, m.clone(), level),
        Lookup::Ambiguous(ms) => {
            let names: Vec<String> = ms
                .iter()
                .map(|m| format!("{}/{}", m.provider, m.id))
                .collect();
            warn(
                ui,
                &format!("{rest} names several models: {}", names.join(", ")),
            );
        }
        Lookup::NotFound => warn(ui, &format!("no model matches {rest}; /model lists them")),
    }
}

/// `/thinking`: the level and the ones the model supports; `/thinking LEVEL` sets it.
fn thinking(ui: &mut Ui, rest: &str) {
    let st = ui.rt.agent.state();
    let levels: Vec<&str> = supported_thinking_levels(&st.model)
        .iter()
        .map(|l| l.as_str())
        .collect();
    let rest = rest.trim();
    if rest.is_empty() {
        return note(
            ui,
            &format!(
                "thinking {} (this model: {})",
                st.thinking_level.as_str(),
                levels.join(", ")
            ),
        );
    }
    let Some(level) = ThinkingLevel::parse(rest) else {
        return warn(
            ui,
            &format!("no thinking level {rest}: {}", levels.join(", ")),
        );
    };
    let level = clamp_thinking_level(&st.model, level);
    ui.rt.agent.set_thinking_level(level);
    ui.rt.recorder.lock().record_thinking_change(level.as_str());
    note(ui, &format!("thinking {}", level.as_str()));
}

/// `/session`: where the session is, its id and what it holds and cost.
fn session(ui: &mut Ui) {
    let file = ui
        .rt
        .session_file()
        .unwrap_or_else(|| "not saved (--no-session)".into());
    let (mut user, mut assistant, mut results) = (0, 0, 0);
    ui.rt.agent.with_messages(|ms| {
        for m in ms {
            match m {
                Message::User(_) => user += 1,
                Message::Assistant(_) => assistant += 1,
                Message::ToolResult(_) => results += 1,
                _ => {}
            }
        }
    });
    let text = format!(
        "session {}\nfile {file}\nmessages: {user} user, {assistant} assistant, {results} tool results\n\
         tokens: {} in, {} out, {} cache read, {} cache write · cost ${:.4}",
        ui.rt.session_id(),
        ui.tokens_in,
        ui.tokens_out,
        ui.cache_read,
        ui.cache_write,
        ui.cost
    );
    note(ui, &text);
}

/// `/name NAME`: the session's display name (a `session_info` entry).
fn name(ui: &mut Ui, rest: &str) {
    let name = rest.trim().replace(['\r', '\n'], " ");
    if name.is_empty() {
        return warn(ui, "/name NAME gives the session a name");
    }
    let written = ui
        .rt
        .recorder
        .lock()
        .session_mut()
        .append_session_info(&name);
    match written {
        Ok(()) => note(ui, &format!("session named {name}")),
        Err(e) => ui.print(&Style::Red.paint(&format!("cannot name the session: {e}"))),
    }
}

/// `/tools`: the tools the model has, with the first line of each description.
fn tools(ui: &mut Ui) {
    let rows: Vec<String> = ui
        .rt
        .agent
        .state()
        .tools
        .iter()
        .map(|t| {
            let about = t.description().lines().next().unwrap_or_default();
            format!("{} — {}", clean(t.name()), truncate(&clean(about), 80))
        })
        .collect();
    if rows.is_empty() {
        return note(ui, "no tools");
    }
    note(ui, &rows.join("\n"));
}

/// `/copy`: the last answer's text to the clipboard, through the terminal (OSC 52).
fn copy(ui: &mut Ui) {
    let text = ui.rt.agent.with_messages(|ms| {
        ms.iter()
            .rev()
            .filter_map(Message::as_assistant)
            .map(|a| a.text())
            .find(|t| !t.is_empty())
    });
    let Some(text) = text else {
        return warn(ui, "no answer to copy yet");
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    ui.write_raw(&format!("\x1b]52;c;{encoded}\x07"));
    note(
        ui,
        &format!(
            "copied the last answer ({} characters)",
            text.chars().count()
        ),
    );
}

/// `/resume`: this directory's sessions, newest first, numbered; `/resume N` continues one,
/// its conversation shown again.
fn resume(ui: &mut Ui, rest: &str) {
    if ui.running {
        return warn(ui, "the agent is working; wait for it, then /resume");
    }
    let Some(folder) = ui.rt.session_root.clone() else {
        return warn(
            ui,
            "this session is kept in memory (--no-session): no sessions to resume",
        );
    };
    let current = ui.rt.session_file();
    let sessions: Vec<crate::session_picker::Summary> =
        tern_session::sessions_in(&folder, Some(&ui.rt.cwd))
            .into_iter()
            .filter(|p| current.as_deref() != Some(&*p.to_string_lossy()))
            .filter_map(|p| crate::session_picker::summary(&p))
            .take(20)
            .collect();
    if sessions.is_empty() {
        return note(ui, "no other session of this directory");
    }
    let rest = rest.trim();
    if rest.is_empty() {
        let rows = crate::session_picker::lines(&sessions);
        return note(ui, &format!("{}\n/resume N continues one", rows.join("\n")));
    }
    let Some(chosen) = numbered(ui, rest, &sessions, "session", "/resume") else {
        return;
    };
    match ui.rt.open_session(&chosen.path) {
        Ok(()) => opened(ui, &format!("resumed {}", chosen.path.display())),
        Err(e) => ui.print(&Style::Red.paint(&format!("cannot resume: {e}"))),
    }
}

/// Item `rest` (counted from 1) of the numbered list `cmd` shows, or a warning that says how
/// many it lists.
fn numbered<'a, T>(
    ui: &mut Ui,
    rest: &str,
    items: &'a [T],
    what: &str,
    cmd: &str,
) -> Option<&'a T> {
    let item = rest
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| items.get(i));
    if item.is_none() {
        warn(
            ui,
            &format!("no {what} {rest}: {cmd} lists {}", items.len()),
        );
    }
    item
}

/// Another session is open: its totals start over, its conversation shows again.
fn opened(ui: &mut Ui, line: &str) {
    ui.reset_totals();
    let messages = ui.rt.agent.state().messages;
    ui.show_history(&messages);
    note(ui, line);
}

/// `/fork`: the session's prompts, numbered; `/fork N` starts a new session holding the
/// conversation before prompt N, whose text goes back on the input to edit and send (pi's).
fn fork(ui: &mut Ui, rest: &str) {
    if ui.running {
        return warn(ui, "the agent is working; wait for it, then /fork");
    }
    let points = match crate::session_entries::active_branch(&ui.rt) {
        Ok(branch) => crate::session_entries::fork_messages(&branch),
        Err(e) => return ui.print(&Style::Red.paint(&format!("cannot fork: {e}"))),
    };
    if points.is_empty() {
        return note(ui, "no prompt to fork from yet");
    }
    let rest = rest.trim();
    if rest.is_empty() {
        let w = ui.width.saturating_sub(8).max(10);
        let rows: Vec<String> = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let text = clean(p["text"].as_str().unwrap_or_default()).replace('\n', " ");
                format!("{:>3}. {}", i + 1, truncate(&text, w))
            })
            .collect();
        return note(
            ui,
            &format!(
                "{}\n/fork N starts a new session from before prompt N",
                rows.join("\n")
            ),
        );
    }
    let Some(point) = numbered(ui, rest, &points, "prompt", "/fork") else {
        return;
    };
    let id = point["entryId"].as_str().unwrap_or_default();
    match crate::session_entries::fork(&ui.rt, id) {
        Ok(text) => {
            let file = ui.rt.session_file().unwrap_or_default();
            opened(ui, &format!("Forked to new session {file}"));
            ui.editor.set_text(&text);
        }
        Err(e) => ui.print(&Style::Red.paint(&format!("cannot fork: {e}"))),
    }
}
