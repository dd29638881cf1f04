//! The input: characters (several lines of them), a cursor, and the history that Up/Down
//! walk from the first or last line.

/// A multi-line editor with history: Shift+Enter or Ctrl+J start a new line (pi's keys), Up
/// and Down move between lines and walk the history past the first and last.
#[derive(Debug, Default)]
pub struct LineEditor {
    input: Vec<char>,
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown, while walking it.
    hist_pos: Option<usize>,
    /// A reverse search of the history (Ctrl+R), while one is going.
    search: Option<Search>,
}

/// A reverse search: what is typed, the entry it found, the line before it began.
#[derive(Debug, Default)]
struct Search {
    query: String,
    found: Option<usize>,
    saved: Vec<char>,
}

impl LineEditor {
    /// Nothing typed.
    pub fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// Types `c` at the cursor.
    pub fn insert(&mut self, c: char) {
        self.input.insert(self.cursor, c);
        self.cursor += 1;
    }

    /// Deletes before the cursor.
    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.cursor -= 1;
            self.input.remove(self.cursor);
        }
    }

    /// Deletes under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.input.len() {
            self.input.remove(self.cursor);
        }
    }

    /// Cursor one left.
    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    /// Cursor one right.
    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.input.len());
    }

    /// Where the cursor's line starts.
    fn line_start(&self) -> usize {
        self.input[..self.cursor]
            .iter()
            .rposition(|&c| c == '\n')
            .map_or(0, |i| i + 1)
    }

    /// Where the cursor's line ends (its newline, or the end).
    fn line_end(&self) -> usize {
        self.input[self.cursor..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(self.input.len(), |i| self.cursor + i)
    }

    /// Cursor to the start of its line.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Cursor to the end of its line.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Deletes from the start of the cursor's line to the cursor (Ctrl+U).
    pub fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.input.drain(start..self.cursor);
        self.cursor = start;
    }

    /// Cursor to the line above, at the same column or its end; `false` on the first line
    /// (Up then walks the history).
    pub fn line_up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return false;
        }
        let column = self.cursor - start;
        let above = self.input[..start - 1]
            .iter()
            .rposition(|&c| c == '\n')
            .map_or(0, |i| i + 1);
        self.cursor = above + column.min(start - 1 - above);
        true
    }

    /// Cursor to the line below, at the same column or its end; `false` on the last line.
    pub fn line_down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.input.len() {
            return false;
        }
        let column = self.cursor - self.line_start();
        let below_end = self.input[end + 1..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(self.input.len(), |i| end + 1 + i);
        self.cursor = (end + 1 + column).min(below_end);
        true
    }

    /// Puts `text` on the input, the cursor at its end (queued messages taken back).
    pub fn set_text(&mut self, text: &str) {
        self.input = text.chars().collect();
        self.cursor = self.input.len();
        self.hist_pos = None;
    }

    /// The input's text.
    pub fn text(&self) -> String {
        self.input.iter().collect()
    }

    /// The word the cursor is at the end of (after the last white space before it), and
    /// whether it is the line's first word.
    pub fn word_at_cursor(&self) -> (String, bool) {
        let start = self.input[..self.cursor]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let first = self.input[..start].iter().all(|c| c.is_whitespace());
        (self.input[start..self.cursor].iter().collect(), first)
    }

    /// Replaces the word the cursor is at the end of with `word`.
    pub fn replace_word(&mut self, word: &str) {
        let start = self.input[..self.cursor]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let new: Vec<char> = word.chars().collect();
        let n = new.len();
        self.input.splice(start..self.cursor, new);
        self.cursor = start + n;
    }

    /// Empties the line.
    pub fn clear(&mut self) {
        self.input.clear();
        self.cursor = 0;
    }

    /// Takes the line's text, leaving it empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        self.input.drain(..).collect()
    }

    /// Takes the line's text to send it (Enter): the history walk ends too.
    pub fn submit(&mut self) -> String {
        self.hist_pos = None;
        self.take()
    }

    /// Adds `text` to the history.
    pub fn push_history(&mut self, text: String) {
        self.history.push(text);
    }

    /// Adds `text` to the history unless it repeats the last entry.
    pub fn remember(&mut self, text: &str) {
        if self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_string());
        }
    }

    /// Shows the previous history entry (Up).
    pub fn history_up(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let pos = match self.hist_pos {
            None => self.history.len() - 1,
            Some(p) => p.saturating_sub(1),
        };
        self.show(pos);
    }

    /// Shows the next history entry, or an empty line after the last (Down).
    pub fn history_down(&mut self) {
        match self.hist_pos {
            Some(p) if p + 1 < self.history.len() => self.show(p + 1),
            _ => {
                self.hist_pos = None;
                self.clear();
            }
        }
    }

    /// Ctrl+R: starts a reverse search of the history, or finds the next older match.
    pub fn search_older(&mut self) {
        let from = match &self.search {
            None => {
                self.search = Some(Search {
                    saved: self.input.clone(),
                    ..Search::default()
                });
                self.history.len()
            }
            Some(s) => s.found.unwrap_or(self.history.len()),
        };
        self.find_from(from, true);
    }

    /// Types `c` into the search's query: the newest entry holding it is found.
    pub fn search_type(&mut self, c: char) {
        if let Some(s) = &mut self.search {
            s.query.push(c);
        }
        self.find_from(self.history.len(), false);
    }

    /// Deletes the query's last character.
    pub fn search_back(&mut self) {
        if let Some(s) = &mut self.search {
            s.query.pop();
        }
        self.find_from(self.history.len(), false);
    }

    /// Ends the search with the entry found on the line (Enter, or any other key).
    pub fn search_accept(&mut self) {
        if let Some(s) = self.search.take() {
            match s.found {
                Some(i) => self.show(i),
                None => self.input = s.saved,
            }
            self.cursor = self.input.len();
        }
    }

    /// Ends the search and puts back the line it began on (Esc, Ctrl+G).
    pub fn search_cancel(&mut self) {
        if let Some(s) = self.search.take() {
            self.input = s.saved;
            self.cursor = self.input.len();
        }
    }

    /// The search going on: its query and the entry it found.
    pub fn searching(&self) -> Option<(&str, Option<&str>)> {
        self.search.as_ref().map(|s| {
            let found = s.found.map(|i| self.history[i].as_str());
            (s.query.as_str(), found)
        })
    }

    /// The newest history entry before `before` that holds the query; with `keep`, a
    /// search for an older one that finds none keeps what it had.
    fn find_from(&mut self, before: usize, keep: bool) {
        let Some(s) = &mut self.search else { return };
        let hit = self.history[..before.min(self.history.len())]
            .iter()
            .rposition(|h| h.contains(s.query.as_str()));
        if hit.is_some() || !keep {
            s.found = hit;
        }
    }

    fn show(&mut self, pos: usize) {
        self.hist_pos = Some(pos);
        self.input = self.history[pos].chars().collect();
        self.cursor = self.input.len();
    }

    /// The input as rows of at most `room` characters, at most `max_rows` of them around
    /// the cursor: the cursor's line scrolled to keep the cursor in view, the others cut.
    /// Returns the rows, the cursor's row and its column.
    pub fn rows(&self, room: usize, max_rows: usize) -> (Vec<String>, usize, usize) {
        let room = room.max(1);
        let mut rows = Vec::new();
        let (mut cursor_row, mut cursor_col) = (0, 0);
        let mut start = 0;
        for (i, line) in self.input.split(|&c| c == '\n').enumerate() {
            let end = start + line.len();
            if (start..=end).contains(&self.cursor) {
                let at = self.cursor - start;
                let from = at.saturating_sub(room.saturating_sub(1));
                rows.push(line[from..].iter().take(room).collect());
                (cursor_row, cursor_col) = (i, at - from);
            } else {
                rows.push(line.iter().take(room).collect());
            }
            start = end + 1;
        }
        let max_rows = max_rows.max(1);
        if rows.len() > max_rows {
            // The window of rows that keeps the cursor's row, as low as it can.
            let first = (cursor_row + 1).saturating_sub(max_rows);
            rows = rows.split_off(first);
            rows.truncate(max_rows);
            cursor_row -= first;
        }
        (rows, cursor_row, cursor_col)
    }

    /// The input on one row of `room` characters around the cursor, and the cursor's column
    /// (a one-line field: a denial's reason).
    pub fn window(&self, room: usize) -> (String, usize) {
        let (rows, _, col) = self.rows(room, 1);
        (rows.into_iter().next().unwrap_or_default(), col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_r_finds_older_entries_holding_the_query() {
        let mut e = LineEditor::default();
        for h in ["cargo build", "git status", "cargo test", "ls"] {
            e.remember(h);
        }
        e.insert('x');
        e.search_older();
        for c in "cargo".chars() {
            e.search_type(c);
        }
        assert_eq!(e.searching(), Some(("cargo", Some("cargo test"))));
        e.search_older();
        assert_eq!(e.searching(), Some(("cargo", Some("cargo build"))));
        // Nothing older: the last match stays.
        e.search_older();
        assert_eq!(e.searching(), Some(("cargo", Some("cargo build"))));
        e.search_accept();
        assert_eq!(e.take(), "cargo build");
        e.insert('y');
        e.search_older();
        e.search_type('q');
        assert_eq!(e.searching(), Some(("q", None)));
        e.search_cancel();
        assert_eq!(e.take(), "y", "Esc puts the line back");
    }

    fn typed(s: &str) -> LineEditor {
        let mut e = LineEditor::default();
        s.chars().for_each(|c| e.insert(c));
        e
    }

    #[test]
    fn editing_at_the_cursor() {
        let mut e = typed("helo");
        e.left();
        e.insert('l');
        e.home();
        e.delete();
        e.end();
        e.backspace();
        assert_eq!(e.window(80), ("ell".to_string(), 3));
        e.left();
        e.kill_to_start();
        assert_eq!(e.take(), "l");
        assert!(e.is_empty());
    }

    #[test]
    fn history_walks_back_and_forth() {
        let mut e = LineEditor::default();
        e.remember("one");
        e.remember("two");
        e.remember("two");
        e.history_up();
        e.history_up();
        e.history_up();
        assert_eq!(e.window(80).0, "one");
        e.history_down();
        assert_eq!(e.window(80).0, "two");
        e.history_down();
        assert!(e.is_empty());
    }

    #[test]
    fn several_lines_edit_and_show_around_the_cursor() {
        let mut e = typed("first line\nsecond\nthird one");
        assert_eq!(e.rows(80, 8).1, 2);
        assert!(e.line_up());
        // The column is kept where the line is long enough, else the line's end.
        assert_eq!(e.rows(80, 8).1, 1);
        assert_eq!(e.rows(80, 8).2, 6);
        assert!(e.line_up());
        assert_eq!((e.rows(80, 8).1, e.rows(80, 8).2), (0, 6));
        assert!(!e.line_up(), "the first line: Up walks the history");
        e.end();
        e.insert('!');
        e.home();
        e.insert('>');
        // Down keeps the column (1); Ctrl+U deletes to the start of that line only.
        assert!(e.line_down());
        e.kill_to_start();
        assert_eq!(e.text(), ">first line!\necond\nthird one");
        let (rows, row, col) = e.rows(80, 2);
        assert_eq!(
            (rows, row, col),
            (vec![">first line!".into(), "econd".into()], 1, 0)
        );
        assert!(e.line_down());
        assert!(!e.line_down(), "the last line: Down walks the history");
        let (rows, row, _) = e.rows(80, 2);
        assert_eq!((rows, row), (vec!["econd".into(), "third one".into()], 1));
        assert_eq!(e.take(), ">first line!\necond\nthird one");
    }

    #[test]
    fn a_long_line_scrolls_to_keep_the_cursor_visible() {
        let e = typed("abcdefghij");
        assert_eq!(e.window(4), ("hij".to_string(), 3));
    }
}
