//! Incremental server-sent-events parsing over raw byte chunks.
//!
//! Chunks may split a record anywhere: inside a line, between the `\r` and `\n` of a CRLF
//! pair, inside a multi-byte UTF-8 character. Only the unfinished tail of a line is buffered
//! (bytes are copied once into that buffer); complete lines inside a chunk are handed out
//! straight from the chunk.
//!
//! ```
//! use tern_ai::sse::SseDecoder;
//! let mut d = SseDecoder::new();
//! let mut out = Vec::new();
//! d.feed(b"event: ping\r", &mut |e| out.push(e)).unwrap();
//! d.feed(b"\ndata: {\"a\":", &mut |e| out.push(e)).unwrap();
//! d.feed(b"1}\n\n: comment\n\n", &mut |e| out.push(e)).unwrap();
//! assert_eq!(out.len(), 1);
//! assert_eq!(out[0].event.as_deref(), Some("ping"));
//! assert_eq!(out[0].data, "{\"a\":1}");
//! ```
//!
//! Memory is bounded: a single line, a single event's data or a single Gemini record larger
//! than the limit ([`MAX_EVENT_BYTES`] by default) makes `feed` return [`TooLong`] and the
//! decoder stops buffering (every later `feed` fails the same way).

/// Default cap on one SSE line, one event's joined data, or one Gemini record: 16 MiB.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A line, event or record exceeded the decoder's limit; the stream cannot be read further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong {
    /// The limit in bytes.
    pub limit: usize,
}

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "A server-sent event exceeded {} bytes (the limit on one line or event); the stream was abandoned",
            self.limit
        )
    }
}

impl std::error::Error for TooLong {}

/// Splits bytes into lines ending at `\n`, `\r` or `\r\n`.
#[derive(Debug)]
pub struct LineSplitter {
    tail: Vec<u8>,
    skip_lf: bool,
    limit: usize,
    failed: bool,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl LineSplitter {
    /// A splitter with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// A splitter that refuses lines longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        LineSplitter {
            tail: Vec::new(),
            skip_lf: false,
            limit,
            failed: false,
        }
    }

    fn fail(&mut self) -> Result<(), TooLong> {
        self.failed = true;
        self.tail = Vec::new();
        Err(TooLong { limit: self.limit })
    }

    /// Feeds a chunk; `on_line` gets every completed line (without its terminator). Fails
    /// once a line is longer than the limit.
    pub fn feed(&mut self, chunk: &[u8], on_line: &mut dyn FnMut(&[u8])) -> Result<(), TooLong> {
        self.feed_at(chunk, &mut |line, _| on_line(line))
    }

    /// [`feed`](Self::feed), also telling where a line starts in `chunk` when it lies wholly
    /// in it (not for a line completed from an earlier chunk).
    fn feed_at(
        &mut self,
        chunk: &[u8],
        on_line: &mut dyn FnMut(&[u8], Option<usize>),
    ) -> Result<(), TooLong> {
        if self.failed {
            return Err(TooLong { limit: self.limit });
        }
        let mut start = 0;
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                start = 1;
            }
        }
        loop {
            let rest = &chunk[start..];
            // A record ends with a blank line: a line break right away needs no search.
            let len = match rest.first() {
                Some(b'\n' | b'\r') => 0,
                _ => match memchr::memchr2(b'\n', b'\r', rest) {
                    Some(len) => len,
                    None => break,
                },
            };
            let end = start + len;
            if self.tail.len() + len > self.limit {
                return self.fail();
            }
            if self.tail.is_empty() {
                on_line(&chunk[start..end], Some(start));
            } else {
                self.tail.extend_from_slice(&chunk[start..end]);
                on_line(&self.tail, None);
                self.tail.clear();
            }
            start = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(start) {
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        if start < chunk.len() {
            if self.tail.len() + (chunk.len() - start) > self.limit {
                return self.fail();
            }
            self.tail.extend_from_slice(&chunk[start..]);
        }
        Ok(())
    }

    /// The unterminated last line at the end of the body, if any.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        self.skip_lf = false;
        (!self.tail.is_empty()).then(|| std::mem::take(&mut self.tail))
    }
}

/// One dispatched server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the record had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Server-sent-event decoder: `event:`/`data:` fields, comments ignored, dispatch on a blank
/// line when the record had an event name or data (the OpenAI and Anthropic SDK behaviour).
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: LineSplitter,
    event: Option<String>,
    data: String,
    data_lines: usize,
}

impl SseDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that refuses a line or an event's data longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseDecoder {
            lines: LineSplitter::with_limit(limit),
            ..Self::default()
        }
    }

    /// Feeds a chunk; `on_event` gets every dispatched record. Fails once a line or the data
    /// of one event is longer than the limit; the decoder then stays failed.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(SseEvent),
    ) -> Result<(), TooLong> {
        self.feed_with(chunk, &mut owned(on_event))
    }

    /// Like [`feed`](Self::feed), but lends each record to `on_event` (event name, data)
    /// instead of handing it over, so the decoder keeps reusing its buffers: no allocation
    /// per record.
    pub fn feed_borrowed(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(Option<&str>, &str),
    ) -> Result<(), TooLong> {
        self.feed_with(chunk, &mut |event, data| on_event(event.as_deref(), data))
    }

    fn feed_with(&mut self, chunk: &[u8], dispatch: &mut Dispatch<'_>) -> Result<(), TooLong> {
        let Self {
            lines,
            event,
            data,
            data_lines,
        } = self;
        let limit = lines.limit;
        let mut too_long = false;
        // One UTF-8 check for the whole chunk costs a fraction of one per line. A chunk that
        // ends inside a character still vouches for the lines before it.
        let text = match std::str::from_utf8(chunk) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&chunk[..e.valid_up_to()]).unwrap_or_default(),
        };
        lines.feed_at(chunk, &mut |line, at| {
            if too_long {
                return;
            }
            let known = at.and_then(|a| text.get(a..a + line.len()));
            decode_line(line, known, event, data, data_lines, dispatch);
            if data.len() > limit {
                too_long = true;
                *data = String::new();
            }
        })?;
        if too_long {
            return lines.fail();
        }
        Ok(())
    }

    /// Ends the body: the unterminated last line is read, but a record without its blank line
    /// is not dispatched.
    pub fn finish(&mut self, on_event: &mut dyn FnMut(SseEvent)) {
        if let Some(line) = self.lines.finish() {
            decode_line(
                &line,
                None,
                &mut self.event,
                &mut self.data,
                &mut self.data_lines,
                &mut owned(on_event),
            );
        }
    }
}

impl SseDecoder {
    /// Ends the body like pi-ai's own reader: the unterminated last line is read and a
    /// pending record is dispatched even without its blank line.
    pub fn finish_and_flush(&mut self, on_event: &mut dyn FnMut(SseEvent)) {
        self.finish(on_event);
        decode_line(
            b"",
            None,
            &mut self.event,
            &mut self.data,
            &mut self.data_lines,
            &mut owned(on_event),
        );
    }
}

/// Receives a dispatched record's event name and data; whatever it leaves in them is cleared.
type Dispatch<'a> = dyn FnMut(&mut Option<String>, &mut String) + 'a;

/// Hands each record over as an [`SseEvent`].
fn owned(on_event: &mut dyn FnMut(SseEvent)) -> impl FnMut(&mut Option<String>, &mut String) + '_ {
    |event, data| {
        on_event(SseEvent {
            event: event.take(),
            data: std::mem::take(data),
        })
    }
}

/// Reads one line; `text` is the line as text when it is known to be valid UTF-8.
fn decode_line(
    line: &[u8],
    text: Option<&str>,
    event: &mut Option<String>,
    data: &mut String,
    data_lines: &mut usize,
    dispatch: &mut Dispatch<'_>,
) {
    if line.is_empty() {
        if event.is_none() && *data_lines == 0 {
            return;
        }
        dispatch(event, data);
        *event = None;
        data.clear();
        *data_lines = 0;
        return;
    }
    if line[0] == b':' {
        return;
    }
    // Nearly every line is `data:`, whose colon needs no search.
    let split = match line.starts_with(b"data:") {
        true => Some(4),
        false => memchr::memchr(b':', line),
    };
    let (field, value) = match split {
        Some(p) => {
            let v = &line[p + 1..];
            (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
        }
        None => (line, &b""[..]),
    };
    match field {
        b"event" => *event = Some(String::from_utf8_lossy(value).into_owned()),
        b"data" => {
            if *data_lines > 0 {
                data.push('\n');
            }
            // `value` ends the line, so it ends its text too. `from_utf8` is much faster
            // than the lossy decoder on the valid text it nearly always gets.
            let known = text.and_then(|t| t.get(line.len() - value.len()..));
            match known.map_or_else(|| std::str::from_utf8(value), Ok) {
                Ok(text) => data.push_str(text),
                Err(_) => data.push_str(&String::from_utf8_lossy(value)),
            }
            *data_lines += 1;
        }
        _ => {}
    }
}

/// Gemini's record splitter (the `@google/genai` SDK's): records end at the first of `\n\n`,
/// `\r\r` or `\r\n\r\n`; a trimmed record is used only when it starts with `data:`.
#[derive(Debug)]
pub struct GeminiRecordSplitter {
    buf: Vec<u8>,
    start: usize,
    scanned: usize,
    limit: usize,
    failed: bool,
}

impl Default for GeminiRecordSplitter {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

/// What [`GeminiRecordSplitter`] hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GeminiRecord {
    /// The text after `data:` of a data record.
    Data(String),
    /// A record that is not data (skipped by the client).
    Other,
}

impl GeminiRecordSplitter {
    /// A splitter with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// A splitter that refuses records longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        GeminiRecordSplitter {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            limit,
            failed: false,
        }
    }

    /// Feeds a chunk; `on_record` gets every complete record. Fails once a record is longer
    /// than the limit; the splitter then stays failed.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_record: &mut dyn FnMut(GeminiRecord),
    ) -> Result<(), TooLong> {
        if self.failed {
            return Err(TooLong { limit: self.limit });
        }
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
        loop {
            let hay = &self.buf[self.start..];
            let from = self.scanned.saturating_sub(self.start).saturating_sub(3);
            let mut found = None;
            let mut i = from;
            while i < hay.len() {
                let b = hay[i];
                if b == b'\n' && hay.get(i + 1) == Some(&b'\n') {
                    found = Some((i, 2));
                    break;
                }
                if b == b'\r' {
                    if hay.get(i + 1) == Some(&b'\r') {
                        found = Some((i, 2));
                        break;
                    }
                    if hay.get(i + 1) == Some(&b'\n')
                        && hay.get(i + 2) == Some(&b'\r')
                        && hay.get(i + 3) == Some(&b'\n')
                    {
                        found = Some((i, 4));
                        break;
                    }
                }
                i += 1;
            }
            match found {
                Some((pos, len)) => {
                    let record = classify(&hay[..pos]);
                    self.start += pos + len;
                    self.scanned = self.start;
                    on_record(record);
                }
                None => {
                    self.scanned = self.buf.len();
                    break;
                }
            }
        }
        if self.buf.len() - self.start > self.limit {
            self.failed = true;
            self.buf = Vec::new();
            self.start = 0;
            self.scanned = 0;
            return Err(TooLong { limit: self.limit });
        }
        Ok(())
    }

    /// Ends the body; returns the leftover text when it is not blank.
    pub fn finish(&mut self) -> Option<String> {
        let rest = String::from_utf8_lossy(&self.buf[self.start..]).into_owned();
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        (!rest.trim().is_empty()).then_some(rest)
    }
}

fn classify(record: &[u8]) -> GeminiRecord {
    let text = String::from_utf8_lossy(record);
    let t = text.trim();
    match t.strip_prefix("data:") {
        Some(rest) => GeminiRecord::Data(rest.trim().to_string()),
        None => GeminiRecord::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_enforced_and_sticky() {
        let mut d = SseDecoder::with_limit(8);
        let mut n = 0;
        assert!(d.feed(b"data: 1\n\n", &mut |_| n += 1).is_ok());
        assert_eq!(n, 1);
        // A long line split over chunks.
        assert!(d.feed(b"data: 12", &mut |_| n += 1).is_ok());
        assert!(d.feed(b"3456789", &mut |_| n += 1).is_err());
        assert!(d.feed(b"\n\n", &mut |_| n += 1).is_err());
        // A long line inside one chunk.
        let mut d = SseDecoder::with_limit(8);
        assert!(d.feed(b"data: 123456789\n", &mut |_| {}).is_err());
        // Many short data lines in one event.
        let mut d = SseDecoder::with_limit(8);
        assert!(d.feed(b"data: 12345\ndata: 12345\n", &mut |_| {}).is_err());
        let mut g = GeminiRecordSplitter::with_limit(8);
        assert!(g.feed(b"data: 1\n\n", &mut |_| {}).is_ok());
        assert!(g.feed(b"data: 123456789", &mut |_| {}).is_err());
        assert!(g.feed(b"\n\n", &mut |_| {}).is_err());
    }

    #[test]
    fn split_everywhere_gives_same_events() {
        let body = "data: {\"a\":\"é\"}\r\n\r\n: c\n\nevent: x\rdata: 1\rdata: 2\r\r";
        let bytes = body.as_bytes();
        let mut whole = Vec::new();
        SseDecoder::new()
            .feed(bytes, &mut |e| whole.push(e))
            .unwrap();
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[1].data, "1\n2");
        for cut in 0..bytes.len() {
            let mut d = SseDecoder::new();
            let mut got = Vec::new();
            d.feed(&bytes[..cut], &mut |e| got.push(e)).unwrap();
            d.feed(&bytes[cut..], &mut |e| got.push(e)).unwrap();
            assert_eq!(got, whole, "cut at {cut}");
            let mut d = SseDecoder::new();
            let mut lent = Vec::new();
            for part in [&bytes[..cut], &bytes[cut..]] {
                d.feed_borrowed(part, &mut |event, data| {
                    lent.push(SseEvent {
                        event: event.map(str::to_owned),
                        data: data.to_owned(),
                    })
                })
                .unwrap();
            }
            assert_eq!(lent, whole, "cut at {cut}");
        }
    }

    #[test]
    fn invalid_and_split_characters_read_alike_at_every_cut() {
        // Multi-byte characters, an invalid byte before and after valid lines, a
        // character cut by the chunk's end: each line reads as its lossy decoding.
        let body = b"data: \xc3\xa9\xff\xe2\x82\xac\n\ndata: ok\xf0\x9f\x98\x80\n\ndata: \xe2\x82\n\ndata: z\n\n";
        let expected = ["é\u{FFFD}€", "ok😀", "\u{FFFD}", "z"];
        for cut in 0..body.len() {
            for cut2 in cut..body.len() {
                let mut d = SseDecoder::new();
                let mut got = Vec::new();
                for part in [&body[..cut], &body[cut..cut2], &body[cut2..]] {
                    d.feed_borrowed(part, &mut |_, data| got.push(data.to_owned()))
                        .unwrap();
                }
                assert_eq!(got, expected, "cuts at {cut}, {cut2}");
            }
        }
    }

    #[test]
    fn gemini_records() {
        let body =
            b"data: {\"a\":1}\r\n\r\n: keepalive\n\nevent: x\ndata: {}\n\ndata: {\"b\":2}\n\n";
        for cut in 0..body.len() {
            let mut s = GeminiRecordSplitter::new();
            let mut got = Vec::new();
            s.feed(&body[..cut], &mut |r| got.push(r)).unwrap();
            s.feed(&body[cut..], &mut |r| got.push(r)).unwrap();
            assert_eq!(
                got,
                vec![
                    GeminiRecord::Data("{\"a\":1}".into()),
                    GeminiRecord::Other,
                    GeminiRecord::Other,
                    GeminiRecord::Data("{\"b\":2}".into())
                ]
            );
            assert!(s.finish().is_none());
        }
    }
}
