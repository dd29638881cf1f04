//! The input line: characters, a cursor, and the history that Up/Down walk.

/// A one-line editor with history.
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

    /// Cursor to the start.
    pub fn home(&mut self) {
        self.cursor = 0;
    }

    /// Cursor to the end.
    pub fn end(&mut self) {
        self.cursor = self.input.len();
    }

    /// Deletes from the start to the cursor (Ctrl+U).
    pub fn kill_to_start(&mut self) {
        self.input.drain(..self.cursor);
        self.cursor = 0;
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

    /// The part of the line that fits in `room` columns around the cursor, and the cursor's
    /// column within it.
    pub fn window(&self, room: usize) -> (String, usize) {
        let start = self.cursor.saturating_sub(room.saturating_sub(1));
        let visible: String = self.input[start..].iter().take(room).collect();
        (visible, self.cursor - start)
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
    fn a_long_line_scrolls_to_keep_the_cursor_visible() {
        let e = typed("abcdefghij");
        assert_eq!(e.window(4), ("hij".to_string(), 3));
    }
}
