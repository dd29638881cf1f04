//! Splitting a response body into lines the way the reference does: at `\n` only (a `\r`
//! before it stays on the line and is trimmed with the payload), each line decoded as
//! UTF-8 with replacement characters, a byte-order mark at the start of the body dropped.
//!
//! `tern_ai::sse::LineSplitter` also ends lines at a lone `\r`, which the reference does not,
//! so a payload with a raw `\r` inside would read differently; hence this small splitter.

use tern_ai::sse::{TooLong, MAX_EVENT_BYTES};

/// The unfinished tail of the body and where the next line starts in it.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    // Where the next line starts in `buf`.
    start: usize,
    // How far past `start` is known to hold no `\n`.
    scanned: usize,
    // Whether the first line was handed out (the BOM check is done).
    first_done: bool,
}

impl Lines {
    /// Adds a body chunk. Fails once the unfinished line is longer than
    /// [`MAX_EVENT_BYTES`].
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), TooLong> {
        if self.start > 0 {
            // Only the unfinished tail is moved, never a whole body.
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
        let open = memchr::memchr(b'\n', &self.buf[self.scanned..])
            .map_or(self.buf.len(), |i| self.scanned + i);
        if open > MAX_EVENT_BYTES {
            self.buf = Vec::new();
            self.scanned = 0;
            return Err(TooLong {
                limit: MAX_EVENT_BYTES,
            });
        }
        Ok(())
    }

    /// The next complete line, without its `\n`.
    pub(crate) fn next_line(&mut self) -> Option<String> {
        let from = self.start + self.scanned;
        match memchr::memchr(b'\n', &self.buf[from..]) {
            Some(i) => {
                let end = from + i;
                let line = self.decode(self.start, end);
                self.start = end + 1;
                self.scanned = 0;
                Some(line)
            }
            None => {
                self.scanned = self.buf.len() - self.start;
                None
            }
        }
    }

    /// What is left at the end of the body (a last line without `\n`), if anything.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let rest = (self.start < self.buf.len()).then(|| self.decode(self.start, self.buf.len()));
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        rest
    }

    fn decode(&mut self, from: usize, to: usize) -> String {
        let text = String::from_utf8_lossy(&self.buf[from..to]).into_owned();
        if std::mem::replace(&mut self.first_done, true) {
            return text;
        }
        match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for c in chunks {
            lines.push(c).unwrap();
            while let Some(l) = lines.next_line() {
                out.push(l);
            }
        }
        out.extend(lines.finish());
        out
    }

    #[test]
    fn lines_end_at_newline_only() {
        assert_eq!(
            split(&[b"a\r\nb\rc\n", b"\nlast"]),
            ["a\r", "b\rc", "", "last"]
        );
    }

    #[test]
    fn chunks_may_split_lines_and_characters() {
        let text = "data: é€\ndata: 😀\n".as_bytes();
        for cut in 0..text.len() {
            assert_eq!(
                split(&[&text[..cut], &text[cut..]]),
                ["data: é€", "data: 😀"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_bom_is_dropped_at_the_start_only_and_bad_bytes_become_replacements() {
        assert_eq!(
            split(&[b"\xEF\xBB", b"\xBFa\n\xEF\xBB\xBFb\n\xFF"]),
            ["a", "\u{feff}b", "\u{fffd}"]
        );
    }

    #[test]
    fn an_endless_line_is_refused() {
        let mut lines = Lines::default();
        let big = vec![b'x'; MAX_EVENT_BYTES / 2 + 1];
        lines.push(&big).unwrap();
        assert!(lines.next_line().is_none());
        assert!(lines.push(&big).is_err());
    }
}
