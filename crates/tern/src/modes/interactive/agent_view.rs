//! How agent events show on the screen: streamed text and thinking, the user's messages,
//! tool calls with their results, errors, and the note a run ends with.

use std::sync::atomic::Ordering;

use tern_agent::AgentEvent;
use tern_ai::{AssistantMessageEvent, ContentBlock, Message, StopReason};

use super::screen::{Stream, Ui};
use crate::terminal_text::{clean, result_mark, tool_label, truncate, Style};

impl Ui {
    /// Shows an agent event.
    pub fn on_agent(&mut self, e: &AgentEvent) {
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
            } => self.user_row(&u.content.text(" ")),
            AgentEvent::MessageEnd {
                message: Message::Assistant(a),
            } => {
                self.flush_partial();
                self.finish_markdown();
                self.count_usage(a);
                match a.stop_reason {
                    StopReason::Error => self.print(&Style::Red.paint(&format!(
                        "error: {}",
                        clean(a.error_message.as_deref().unwrap_or("the request failed"))
                    ))),
                    StopReason::Aborted => self.print(&Style::Yellow.paint("(aborted)")),
                    _ => self.redraw(),
                }
            }
            AgentEvent::TurnEnd { .. } => self.redraw(),
            AgentEvent::ToolExecutionStart { tool_call } => {
                self.flush_partial();
                self.tools.push((
                    tool_call.id.to_string(),
                    tool_label(&tool_call.name, &tool_call.arguments),
                    String::new(),
                ));
                self.redraw();
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call,
                partial_result,
            } => {
                let text = tern_ai::content_text(partial_result.content(), "\n");
                let last = text.lines().rev().find(|l| !l.trim().is_empty());
                if let (Some(row), Some(last)) = (
                    self.tools.iter_mut().find(|(id, ..)| *id == tool_call.id),
                    last,
                ) {
                    row.2 = clean(last);
                    self.redraw();
                }
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
                    .position(|(id, ..)| *id == tool_call.id)
                    .map(|i| self.tools.remove(i).1)
                    .unwrap_or_else(|| clean(&tool_call.name));
                self.print(&tool_row(&label, &tool_call.name, result, *is_error));
                if let Some(diff) = diff_of(&tool_call.name, result, *is_error) {
                    let w = self.width.saturating_sub(1).max(10);
                    self.print(&diff_rows(diff, w).join("\n"));
                }
                // Ctrl+O shows the whole output of the last call.
                let text = tern_ai::content_text(result.content(), "\n");
                let whole = diff_of(&tool_call.name, result, *is_error).unwrap_or(&text);
                self.last_output = Some((label, whole.to_string()));
            }
            _ => {}
        }
    }

    /// Shows a resumed session's conversation as it showed while it ran: the prompts, the
    /// answers rendered, each tool call's row, the commands run with `!`.
    pub fn show_history(&mut self, messages: &[Message]) {
        let mut labels: Vec<(String, String)> = Vec::new();
        for m in messages {
            match m {
                Message::User(u) => self.user_row(&u.content.text(" ")),
                Message::Assistant(a) => {
                    self.count_usage(a);
                    for block in &a.content {
                        match block {
                            ContentBlock::Text(t) => {
                                for line in t.text.lines() {
                                    self.stream(Stream::Text, line);
                                    self.stream(Stream::Text, "\n");
                                }
                            }
                            ContentBlock::Thinking(t) if !t.thinking.is_empty() => {
                                self.stream(Stream::Thinking, &t.thinking);
                                self.stream(Stream::Thinking, "\n");
                            }
                            ContentBlock::ToolCall(c) => {
                                labels.push((c.id.to_string(), tool_label(&c.name, &c.arguments)))
                            }
                            _ => {}
                        }
                    }
                    self.flush_partial();
                    self.finish_markdown();
                }
                Message::ToolResult(r) => {
                    let label = labels
                        .iter()
                        .find(|(id, _)| *id == r.tool_call_id)
                        .map(|(_, l)| l.clone())
                        .unwrap_or_else(|| clean(&r.tool_name));
                    let result = tern_agent::ToolResult {
                        content: Some(r.content.clone()),
                        details: r.details.clone(),
                        ..Default::default()
                    };
                    self.print(&tool_row(&label, &r.tool_name, &result, r.is_error));
                    if let Some(diff) = diff_of(&r.tool_name, &result, r.is_error) {
                        let w = self.width.saturating_sub(1).max(10);
                        self.print(&diff_rows(diff, w).join("\n"));
                    }
                }
                Message::Custom(c)
                    if c.0.get("role").and_then(|r| r.as_str()) == Some("bashExecution") =>
                {
                    let command =
                        c.0.get("command")
                            .and_then(|v| v.as_str())
                            .unwrap_or_default();
                    self.print(&Style::Bold.paint(&format!("$ {}", clean(command))));
                }
                _ => {}
            }
        }
    }

    /// Adds an answer's usage to the session's totals; a whole answer's usage also says how
    /// full the context is.
    fn count_usage(&mut self, a: &tern_ai::AssistantMessage) {
        self.tokens_in += a.usage.input;
        self.tokens_out += a.usage.output;
        self.cache_read += a.usage.cache_read;
        self.cache_write += a.usage.cache_write;
        self.cost += a.usage.cost.total;
        let tokens = crate::compaction::estimate::context_tokens(&a.usage);
        if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) && tokens > 0 {
            self.context = Some(tokens);
        }
    }

    /// Ctrl+O: the whole output of the last tool call (its diff for an edit), at most
    /// [`EXPANDED_ROWS`] lines, in the scrollback.
    pub fn expand_last_output(&mut self) {
        let Some((label, text)) = self.last_output.clone() else {
            self.hint = Some("no tool output yet".into());
            return;
        };
        let w = self.width.saturating_sub(1).max(10);
        let lines: Vec<&str> = text.lines().collect();
        let mut rows = vec![Style::Dim.paint(&truncate(&format!("── output of {label} ──"), w))];
        rows.extend(
            lines
                .iter()
                .take(EXPANDED_ROWS)
                .map(|l| truncate(&clean(l), w)),
        );
        if lines.len() > EXPANDED_ROWS {
            rows.push(Style::Dim.paint(&format!("… {} more lines", lines.len() - EXPANDED_ROWS)));
        }
        self.print(&rows.join("\n"));
    }

    /// Starts the session's totals again (a new session).
    pub fn reset_totals(&mut self) {
        (
            self.tokens_in,
            self.tokens_out,
            self.cache_read,
            self.cache_write,
        ) = (0, 0, 0, 0);
        self.cost = 0.0;
        self.context = None;
    }

    /// A prompt's row.
    fn user_row(&mut self, text: &str) {
        let text = clean(text).replace('\n', " ");
        self.print(&Style::Bold.paint(&format!("› {}", truncate(&text, 500))));
    }

    /// Shows that the run ended, and why when a limit or the user ended it.
    /// The run (or compaction, or `!` command) ended; returns whether it ended on its own
    /// (not aborted, refused, timed out or stopped by a limit).
    pub fn on_settled(&mut self) -> bool {
        self.running = false;
        self.bash = None;
        self.hint = None;
        // A question left open by an aborted run was already answered "no" by the gate.
        self.asking = None;
        self.tools.clear();
        self.flush_partial();
        let l = &self.rt.limits;
        let ended_by = *l.ended_by.lock();
        let refused = l.refused.lock().clone();
        let note = if let Some((_, why)) = refused {
            Some(why)
        } else if l.timed_out.load(Ordering::SeqCst) {
            Some("timeout reached (--timeout) and the run did not wrap up; it was aborted and the task was not confirmed complete".to_string())
        } else if let Some(limit) = ended_by {
            Some(l.limit_note(limit))
        } else if l.user_aborted.load(Ordering::SeqCst) {
            Some("aborted; the session is kept, type to go on".to_string())
        } else {
            None
        };
        let on_its_own = note.is_none();
        match note {
            Some(n) => self.print(&Style::Yellow.paint(&n)),
            None => self.redraw(),
        }
        on_its_own
    }
}

/// How many lines Ctrl+O shows of a tool call's output.
const EXPANDED_ROWS: usize = 500;

/// How many lines of an edit's diff show before the rest is folded.
const DIFF_ROWS: usize = 40;

/// A finished tool call's row: its mark, its label, a line of its result (the last of a
/// command's output, the first otherwise; red with an error), how many lines the result
/// has, and a command's exit code.
fn tool_row(label: &str, tool: &str, result: &tern_agent::ToolResult, is_error: bool) -> String {
    let text = clean(&tern_ai::content_text(result.content(), "\n"));
    let bash = tool == "bash";
    let shown = match bash {
        true => text.lines().rev().find(|l| !l.trim().is_empty()),
        false => text.lines().next(),
    }
    .unwrap_or("")
    .to_string();
    let n = text.lines().count();
    // The bash tool reports its exit code in the details (none when aborted or timed out).
    let exit = result
        .details
        .as_ref()
        .and_then(|d| d.get("exitCode"))
        .and_then(serde_json::Value::as_i64)
        .filter(|_| bash)
        .map(|c| format!(" · exit {c}"));
    let (style, mark) = result_mark(is_error);
    let lines = if n == 1 { "line" } else { "lines" };
    let detail = format!(
        "→ {} ({n} {lines}){}",
        truncate(&shown, 60),
        exit.unwrap_or_default()
    );
    let detail = match is_error {
        true => Style::Red.paint(&detail),
        false => Style::Dim.paint(&detail),
    };
    format!(
        "{} {} {detail}",
        style.paint(mark),
        Style::Cyan.paint(&truncate(label, 80)),
    )
}

/// The unified diff a successful `edit` left in its details.
fn diff_of<'a>(tool: &str, result: &'a tern_agent::ToolResult, is_error: bool) -> Option<&'a str> {
    if tool != "edit" || is_error {
        return None;
    }
    result
        .details
        .as_ref()?
        .get("diff")?
        .as_str()
        .filter(|d| !d.is_empty())
}

/// An edit's diff in colour (added green, removed red, hunks cyan), folded after
/// [`DIFF_ROWS`] lines.
fn diff_rows(diff: &str, width: usize) -> Vec<String> {
    let lines: Vec<&str> = diff
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++"))
        .collect();
    let mut rows: Vec<String> = lines
        .iter()
        .take(DIFF_ROWS)
        .map(|l| {
            let l = truncate(&clean(l), width);
            match l.chars().next() {
                Some('+') => Style::Green.paint(&l),
                Some('-') => Style::Red.paint(&l),
                Some('@') => Style::Cyan.paint(&l),
                _ => Style::Dim.paint(&l),
            }
        })
        .collect();
    if lines.len() > DIFF_ROWS {
        rows.push(Style::Dim.paint(&format!("… {} more lines", lines.len() - DIFF_ROWS)));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal_text::strip_sgr as plain;
    use serde_json::json;

    #[test]
    fn a_commands_row_has_its_last_line_and_exit_code() {
        let ok = tern_agent::ToolResult::text("compiling\ntest result: ok\n")
            .with_details(json!({"exitCode": 0}));
        assert_eq!(
            plain(&tool_row("bash cargo test", "bash", &ok, false)),
            "✓ bash cargo test → test result: ok (2 lines) · exit 0"
        );
        let failed = tern_agent::ToolResult::text("boom\n\nCommand exited with code 101")
            .with_details(json!({"exitCode": 101}));
        let row = tool_row("bash cargo test", "bash", &failed, true);
        assert_eq!(
            plain(&row),
            "✗ bash cargo test → Command exited with code 101 (3 lines) · exit 101"
        );
        assert!(row.contains("\x1b[31m→"), "the reason in red: {row:?}");
        let read = tern_agent::ToolResult::text("first\nsecond");
        assert_eq!(
            plain(&tool_row("read a.txt", "read", &read, false)),
            "✓ read a.txt → first (2 lines)"
        );
    }

    #[test]
    fn an_edits_diff_shows_in_colour_and_folds() {
        let diff = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
        let result = tern_agent::ToolResult::text("ok").with_details(json!({ "diff": diff }));
        let shown = diff_of("edit", &result, false).expect("a diff");
        let rows = diff_rows(shown, 80);
        assert_eq!(
            rows.iter().map(|r| plain(r)).collect::<Vec<_>>(),
            ["@@ -1,2 +1,2 @@", " keep", "-old", "+new"]
        );
        assert!(rows[2].starts_with("\x1b[31m") && rows[3].starts_with("\x1b[32m"));
        assert!(
            diff_of("edit", &result, true).is_none(),
            "not for a failed edit"
        );
        assert!(diff_of("write", &result, false).is_none());
        let long: String = (0..50).map(|i| format!("+line {i}\n")).collect();
        let rows = diff_rows(&long, 80);
        assert_eq!(rows.len(), DIFF_ROWS + 1);
        assert_eq!(plain(&rows[DIFF_ROWS]), "… 10 more lines");
    }
}
