//! The screen: the terminal's own scrollback for finished output, and a few live rows at the
//! bottom redrawn in place (the line being streamed, a spinner per running tool, queued
//! messages, the status line, a permission question, the input line).

use std::io::Write;
use std::sync::Arc;

use crossterm::{cursor, queue, style, terminal};
use tern_ai::Message;

use super::line_editor::LineEditor;
use super::Question;
use crate::runtime::Runtime;
use crate::terminal_text::{clean, tail, truncate, Style};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The most rows the input takes; a longer input scrolls with its cursor.
const INPUT_ROWS: usize = 8;

/// The longest one-line paste that goes on the line as typed.
const PASTE_INLINE: usize = 200;

/// The marker the `n`-th paste (from 1) stands as on the line.
fn paste_marker(n: usize, text: &str) -> String {
    format!("[paste #{n} +{} lines]", text.lines().count())
}

/// `line` with the markers of `pastes` replaced by their texts.
fn expand_markers(line: &str, pastes: &[String]) -> String {
    pastes
        .iter()
        .enumerate()
        .fold(line.to_string(), |out, (i, text)| {
            out.replace(&paste_marker(i + 1, text), text)
        })
}

/// A permission question on screen: it takes the keys until it is answered.
pub struct Dialog {
    /// The question and where its answer goes.
    pub question: Question,
    /// The reason being typed, after `n` (deny with a reason).
    pub reason: Option<LineEditor>,
}

/// What the streamed partial line holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Answer text.
    Text,
    /// Thinking (dim).
    Thinking,
}

impl Stream {
    fn styled(self, line: String) -> String {
        match self {
            Stream::Text => line,
            Stream::Thinking => Style::Dim.paint(&line),
        }
    }
}

/// The UI's state.
pub struct Ui {
    /// The agent and its session.
    pub rt: Arc<Runtime>,
    /// The terminal.
    pub out: std::io::Stdout,
    /// The input line.
    pub editor: LineEditor,
    /// The line being streamed, not finished yet.
    pub partial: String,
    /// What `partial` holds.
    pub partial_kind: Stream,
    /// A run is going (an agent run, a compaction or a `!` command).
    pub running: bool,
    /// Whether the last run ended on its own (not aborted or stopped by a limit): a message
    /// queued after it settled runs at once if so, else comes back to the input.
    pub last_on_its_own: bool,
    /// The `!` command running, to stop with Ctrl+C.
    pub bash: Option<tokio_util::sync::CancellationToken>,
    /// The last tool call's label and whole output (Ctrl+O shows it).
    pub last_output: Option<(String, String)>,
    /// Pasted texts of several lines (or long): the line holds `[paste #N +L lines]` for
    /// each, and sending puts the text back (pi's).
    pub pastes: Vec<String>,
    /// Thinking is hidden (Ctrl+T): a dim `thinking…` stands for each block.
    pub hide_thinking: bool,
    /// A thinking block is being hidden (its `thinking…` line is out).
    pub hiding: bool,
    /// The answer's Markdown, as far as its lines went (an open code block).
    pub markdown: super::markdown::Markdown,
    /// Running tools: (call id, label, the last line of their output so far).
    pub tools: Vec<(String, String, String)>,
    /// Spinner frame.
    pub tick: usize,
    /// Input tokens so far.
    pub tokens_in: u64,
    /// Output tokens so far.
    pub tokens_out: u64,
    /// Cache reads and writes so far, in tokens.
    pub cache_read: u64,
    pub cache_write: u64,
    /// The context's size as the last answer reported it (`None`: not known yet).
    pub context: Option<u64>,
    /// Cost so far, in dollars.
    pub cost: f64,
    /// The permission question waiting for an answer.
    pub asking: Option<Dialog>,
    /// Tools allowed for the rest of the session (answered `a`): not asked about again.
    pub always: std::collections::HashSet<String>,
    /// Ctrl+C was pressed once: another one exits.
    pub armed: bool,
    /// A note after the status line.
    pub hint: Option<String>,
    /// The live row the cursor is on (the input's cursor row), from the first live row.
    pub cursor_row: u16,
    /// The display width of each live row drawn, to know how a terminal reflowed them.
    pub drawn_widths: Vec<usize>,
    /// The cursor's column on its row.
    pub cursor_col: usize,
    /// Terminal width in columns.
    pub width: usize,
}

impl Ui {
    /// A fresh UI for `rt` on a terminal `width` columns wide.
    pub fn new(rt: Arc<Runtime>, width: usize) -> Self {
        Ui {
            rt,
            out: std::io::stdout(),
            editor: LineEditor::default(),
            partial: String::new(),
            partial_kind: Stream::Text,
            running: false,
            last_on_its_own: true,
            bash: None,
            last_output: None,
            pastes: Vec::new(),
            hide_thinking: false,
            hiding: false,
            markdown: Default::default(),
            tools: Vec::new(),
            tick: 0,
            tokens_in: 0,
            tokens_out: 0,
            cache_read: 0,
            cache_write: 0,
            context: None,
            cost: 0.0,
            asking: None,
            always: Default::default(),
            armed: false,
            hint: None,
            cursor_row: 0,
            drawn_widths: Vec::new(),
            cursor_col: 0,
            width,
        }
    }

    /// Erases the live rows.
    pub fn clear_live(&mut self) {
        if self.cursor_row > 0 {
            let _ = queue!(self.out, cursor::MoveUp(self.cursor_row));
        }
        let _ = queue!(
            self.out,
            cursor::MoveToColumn(0),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        self.cursor_row = 0;
    }

    /// The terminal is `width` columns wide now. A terminal that got narrower reflowed the
    /// live rows wider than it: each takes as many rows as it wraps into, and the cursor
    /// moved with its text; the live rows are erased from where the first one now starts,
    /// so none is left behind in the scrollback, and drawn again.
    pub fn resize(&mut self, width: usize) {
        if width > 0 && width < self.width {
            let row = self.cursor_row as usize;
            let above: usize = self
                .drawn_widths
                .iter()
                .take(row)
                .map(|w| w.div_ceil(width).max(1))
                .sum();
            self.cursor_row = (above + self.cursor_col / width).min(u16::MAX as usize) as u16;
        }
        self.width = width;
        self.redraw();
    }

    fn live_rows(&self) -> (Vec<String>, usize, usize) {
        let w = self.width.saturating_sub(1).max(10);
        let mut rows = Vec::new();
        if !self.partial.is_empty() {
            rows.push(
                self.partial_kind
                    .styled(tail(&crate::secrets::redact(&self.partial), w)),
            );
        }
        for (_, label, tail) in &self.tools {
            let label = truncate(label, w.saturating_sub(2));
            // The output's last line, live, in what room the label leaves.
            let room = w.saturating_sub(label.chars().count() + 5);
            let tail = match tail.is_empty() || room < 8 {
                true => String::new(),
                false => Style::Dim.paint(&format!(" │ {}", super::markdown::tail_fit(tail, room))),
            };
            rows.push(format!(
                "{} {label}{tail}",
                Style::Cyan.paint(SPINNER[self.tick % SPINNER.len()]),
            ));
        }
        let (steer, follow) = self.rt.agent.queued();
        let any_queued = !(steer.is_empty() && follow.is_empty());
        for (kind, ms) in [("steer", steer), ("follow-up", follow)] {
            for m in ms {
                let text = match &m {
                    Message::User(u) => clean(&u.content.text(" ")).replace('\n', " "),
                    other => other.role().to_string(),
                };
                rows.push(Style::Yellow.paint(&truncate(&format!("  queued {kind}: {text}"), w)));
            }
        }
        if any_queued {
            // pi's hint: the queue comes back to the input to be edited.
            rows.push(Style::Dim.paint(&truncate("  ↳ Alt+Up to edit all queued messages", w)));
        }
        let state = self.rt.agent.state();
        let activity = if self.running {
            format!("{} working", SPINNER[self.tick % SPINNER.len()])
        } else {
            "ready".to_string()
        };
        let footer = super::footer::Footer {
            cwd: &self.rt.cwd,
            activity: &activity,
            input: self.tokens_in,
            output: self.tokens_out,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            cost: self.cost,
            context: self.context,
            window: state.model.context_window,
            auto_compaction: self.rt.compaction.settings().enabled,
            model: &state.model.id,
            reasoning: state.model.reasoning,
            thinking: state.thinking_level,
            hint: self.hint.as_deref(),
        };
        rows.extend(footer.rows(w));
        if let Some(dialog) = &self.asking {
            // The dialog has the focus: its question, its keys, and a reason being typed.
            let (req, _) = &dialog.question;
            rows.push(Style::BoldYellow.paint(&truncate(
                // The policy's question names the call and why it asks.
                &clean(&req.prompt),
                w,
            )));
            let Some(reason) = &dialog.reason else {
                rows.push(Style::Yellow.paint(&truncate(
                    "  [y] allow once · [a] always this session · [n] deny with a reason · [Esc] deny",
                    w,
                )));
                return (rows.clone(), rows.len() - 1, 0);
            };
            let label = "  reason (Enter denies, Esc: no reason): ";
            let room = w.saturating_sub(label.chars().count()).max(1);
            let (visible, at) = reason.window(room);
            rows.push(format!("{}{visible}", Style::Yellow.paint(label)));
            return (rows.clone(), rows.len() - 1, label.chars().count() + at);
        }
        if let Some((query, found)) = self.editor.searching() {
            let label = format!("(search '{query}'): ");
            let shown = truncate(
                &clean(found.unwrap_or("")).replace('\n', " "),
                w.saturating_sub(label.chars().count()),
            );
            let col = label.chars().count() + shown.chars().count();
            rows.push(format!("{}{shown}", Style::BoldGreen.paint(&label)));
            return (rows.clone(), rows.len() - 1, col.min(w));
        }
        let prompt = if self.running { "steer> " } else { "> " };
        let room = w.saturating_sub(prompt.len()).max(1);
        let (lines, at_row, at) = self.editor.rows(room, INPUT_ROWS);
        let first = rows.len();
        for (i, line) in lines.into_iter().enumerate() {
            let lead = match i {
                0 => Style::BoldGreen.paint(prompt),
                _ => " ".repeat(prompt.len()),
            };
            rows.push(format!("{lead}{line}"));
        }
        (rows, first + at_row, prompt.len() + at)
    }

    fn draw_live(&mut self) {
        let (rows, row, col) = self.live_rows();
        let _ = queue!(self.out, style::Print(rows.join("\r\n")));
        let below = rows.len().saturating_sub(row + 1) as u16;
        if below > 0 {
            let _ = queue!(self.out, cursor::MoveUp(below));
        }
        let _ = queue!(self.out, cursor::MoveToColumn(col as u16));
        self.cursor_row = row as u16;
        self.cursor_col = col;
        self.drawn_widths = rows
            .iter()
            .map(|r| crate::terminal_text::shown_width(r))
            .collect();
        let _ = self.out.flush();
    }

    /// Draws the live rows again.
    pub fn redraw(&mut self) {
        self.clear_live();
        self.draw_live();
    }

    /// Prints finished lines above the live rows.
    pub fn print(&mut self, text: &str) {
        self.clear_live();
        // Keys are redacted per printed block (a key split across streamed lines is caught
        // once the line is whole).
        let text = crate::secrets::redact(text);
        for line in text.split('\n') {
            let _ = queue!(self.out, style::Print(line), style::Print("\r\n"));
        }
        self.draw_live();
    }

    /// A paste: short text goes on the line as typed; several lines or a long text go in as
    /// a `[paste #N +L lines]` marker that sending expands.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines <= 1 && text.chars().count() <= PASTE_INLINE {
            text.trim_end_matches('\n')
                .chars()
                .for_each(|c| self.editor.insert(c));
            return;
        }
        self.pastes.push(text);
        let marker = paste_marker(self.pastes.len(), &self.pastes[self.pastes.len() - 1]);
        marker.chars().for_each(|c| self.editor.insert(c));
    }

    /// `line` with each paste marker it holds replaced by its text.
    pub fn expand_pastes(&self, line: &str) -> String {
        expand_markers(line, &self.pastes)
    }

    /// Writes an escape sequence for the terminal itself (OSC 52), nothing shown.
    pub fn write_raw(&mut self, sequence: &str) {
        let _ = queue!(self.out, style::Print(sequence));
        let _ = self.out.flush();
    }

    /// Prints `text` dim, wrapped between words at the screen's width.
    pub fn print_dim(&mut self, text: &str) {
        let w = self.width.saturating_sub(1).max(10);
        let rows: Vec<String> = text
            .split('\n')
            .flat_map(|l| super::markdown::wrap_plain(l, w, true))
            .collect();
        self.print(&rows.join("\n"));
    }

    /// The end of an answer: what its Markdown still held (a table it ended with).
    pub fn finish_markdown(&mut self) {
        let w = self.width.saturating_sub(1).max(10);
        let rows = self.markdown.finish(w);
        if !rows.is_empty() {
            self.print(&rows.join("\n"));
        }
    }

    /// Prints the streamed partial line as finished.
    pub fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let rows = self.render_line(self.partial_kind, &line);
            self.print(&rows.join("\n"));
        }
    }

    /// Adds streamed text; whole lines go to the scrollback, rendered (answers as
    /// Markdown, thinking dim) and wrapped between words. The line still streaming shows in
    /// the live rows, as far as it fits.
    pub fn stream(&mut self, kind: Stream, delta: &str) {
        if kind == Stream::Thinking && self.hide_thinking {
            if !self.hiding {
                self.hiding = true;
                self.flush_partial();
                self.print(&Style::Dim.paint("thinking… (Ctrl+T shows it)"));
            }
            return;
        }
        self.hiding = false;
        if kind != self.partial_kind {
            self.flush_partial();
            self.partial_kind = kind;
        }
        self.partial.push_str(&clean(delta));
        let mut rows = Vec::new();
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial[..i].to_string();
            self.partial.drain(..=i);
            rows.extend(self.render_line(kind, &line));
        }
        if rows.is_empty() {
            self.redraw();
        } else {
            self.print(&rows.join("\n"));
        }
    }

    /// A whole streamed line as screen rows. Keys are redacted before rendering: styles
    /// could otherwise split one.
    fn render_line(&mut self, kind: Stream, line: &str) -> Vec<String> {
        let w = self.width.saturating_sub(1).max(10);
        let line = crate::secrets::redact(line);
        match kind {
            Stream::Text => self.markdown.line(&line, w),
            Stream::Thinking => super::markdown::wrap_plain(&line, w, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paste_markers_expand_to_their_texts() {
        let pastes = vec!["a\nb\n".to_string(), "x\ny\nz".to_string()];
        assert_eq!(paste_marker(1, &pastes[0]), "[paste #1 +2 lines]");
        assert_eq!(
            expand_markers("see [paste #2 +3 lines] and [paste #1 +2 lines]!", &pastes),
            "see x\ny\nz and a\nb\n!"
        );
        assert_eq!(
            expand_markers("[paste #3 +1 lines]", &pastes),
            "[paste #3 +1 lines]"
        );
    }
}
