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
                self.markdown.reset();
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
                    tool_call.id.clone(),
                    tool_label(&tool_call.name, &tool_call.arguments),
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
                    .unwrap_or_else(|| clean(&tool_call.name));
                self.print(&tool_row(&label, result.content(), *is_error));
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
                                labels.push((c.id.clone(), tool_label(&c.name, &c.arguments)))
                            }
                            _ => {}
                        }
                    }
                    self.flush_partial();
                    self.markdown.reset();
                }
                Message::ToolResult(r) => {
                    let label = labels
                        .iter()
                        .find(|(id, _)| *id == r.tool_call_id)
                        .map(|(_, l)| l.clone())
                        .unwrap_or_else(|| clean(&r.tool_name));
                    self.print(&tool_row(&label, &r.content, r.is_error));
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
    pub fn on_settled(&mut self) {
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
        match note {
            Some(n) => self.print(&Style::Yellow.paint(&n)),
            None => self.redraw(),
        }
    }
}

/// A finished tool call's row: its mark, its label, the first line of its result and how
/// many lines the result has.
fn tool_row(label: &str, content: &[ContentBlock], is_error: bool) -> String {
    let text = clean(&tern_ai::content_text(content, "\n"));
    let first = text.lines().next().unwrap_or("").to_string();
    let n = text.lines().count();
    let (style, mark) = result_mark(is_error);
    format!(
        "{} {} {}",
        style.paint(mark),
        Style::Cyan.paint(&truncate(label, 80)),
        Style::Dim.paint(&format!("→ {} ({n} lines)", truncate(&first, 60)))
    )
}
