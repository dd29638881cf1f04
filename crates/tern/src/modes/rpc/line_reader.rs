//! Command lines off stdin, bounded: a line is bytes up to a newline, at most `max` of them.
//! A longer line is skipped to its newline without being kept (so one huge line cannot
//! exhaust memory), and bytes that are not UTF-8 are the caller's to answer; neither ends
//! the loop.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The default cap on one command line: 16 MiB (a prompt with a few images fits).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the next read found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A line, without its newline.
    Line(Vec<u8>),
    /// A line over the cap, skipped; how many bytes it had.
    TooLong(usize),
    /// End of input.
    End,
}

/// Reads the next line of at most `max` bytes (the newline not counted).
pub async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Next> {
    let mut line = Vec::new();
    let mut len = 0usize;
    let mut over = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (len, over) {
                (0, _) => Next::End,
                (n, true) => Next::TooLong(n),
                _ => Next::Line(line),
            });
        }
        let (chunk, found) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        len += chunk.len();
        if !over && len > max {
            over = true;
            line = Vec::new();
        }
        if !over {
            line.extend_from_slice(chunk);
        }
        let used = found.unwrap_or(buf.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(if over {
                Next::TooLong(len)
            } else {
                Next::Line(line)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<Next> {
        // A small buffer, so lines span several reads.
        let mut r = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match next_line(&mut r, max).await.expect("in memory") {
                Next::End => return out,
                n => out.push(n),
            }
        }
    }

    #[tokio::test]
    async fn lines_over_the_cap_are_skipped_to_their_newline() {
        let got = all(b"ab\nabcdefghij\n\xff\ncd", 5).await;
        assert_eq!(
            got,
            [
                Next::Line(b"ab".to_vec()),
                Next::TooLong(10),
                Next::Line(b"\xff".to_vec()),
                Next::Line(b"cd".to_vec()),
            ]
        );
        assert_eq!(all(b"abcdefgh", 5).await, [Next::TooLong(8)]);
        assert_eq!(all(b"abcde\n", 5).await, [Next::Line(b"abcde".to_vec())]);
    }
}
