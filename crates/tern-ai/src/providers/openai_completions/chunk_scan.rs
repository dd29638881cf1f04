//! A one-pass read of ordinary Chat Completions chunks, ahead of the serde typed read.
//!
//! Most of a streamed chunk is fields the mapper never reads (`object`, `created`, `index`,
//! `logprobs`, ...), and serde_json's general parser spends most of a text delta's time on
//! them. This scanner reads the common shape directly: strings without `\u` escapes,
//! integers of up to 18 digits, `true`/`false`/`null`, nesting up to [`MAX_DEPTH`], and no
//! non-null `usage` or `reasoning_details`. On anything else it answers `None` and the
//! chunk takes the typed read (and, from there, `Value`), so whenever it answers, the
//! answer is the typed read's: the same acceptance (the text is JSON that
//! `serde_json::from_str::<Value>` accepts) and the same fields, a repeated key
//! overwriting as there.

use std::borrow::Cow;

use super::chunk::{Choice, Chunk, CustomDelta, Delta, FunctionDelta, ToolCallDelta};

/// Nesting this read handles before it leaves the chunk to serde (whose limit is 128).
const MAX_DEPTH: u32 = 32;

/// The typed read's fields of `text`, or `None` when the text is not of the common shape
/// (or carries an `error`): the caller then reads it the general way.
pub(crate) fn read(text: &str) -> Option<Chunk<'_>> {
    let mut s = Scan {
        text,
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    let mut chunk = Chunk::default();
    s.ws();
    s.object(&mut chunk)?;
    s.ws();
    (s.at == s.bytes.len() && !chunk.error).then_some(chunk)
}

/// A position in the text. Every step returns `None` on what it does not handle, and the
/// whole read then gives up.
struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

/// A struct read from a JSON object by [`Scan::object`], the counterpart of
/// `typed_json::Fields`.
trait ScanFields<'a>: Default {
    /// Reads the value of `key` (known fields into the struct, others skipped).
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()>;
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// JSON whitespace, as serde_json skips it.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Enters an object or array opened by `open`.
    fn open(&mut self, open: u8) -> Option<()> {
        if self.peek()? != open || self.depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.depth += 1;
        self.ws();
        Some(())
    }

    /// After a member or element: whitespace, then `,` (`true`) or `close` (`false`).
    fn next_or_close(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let b = self.peek()?;
        self.at += 1;
        match b {
            b',' => {
                self.ws();
                Some(true)
            }
            _ if b == close => {
                self.depth -= 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// An object's members into `target`.
    fn object<T: ScanFields<'a>>(&mut self, target: &mut T) -> Option<()> {
        self.open(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            // Keys with escapes are left to serde, so the raw key is the key.
            let key = match self.string()? {
                Cow::Borrowed(k) => k,
                Cow::Owned(_) => return None,
            };
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            self.ws();
            target.field(self, key)?;
            if !self.next_or_close(b'}')? {
                return Some(());
            }
        }
    }

    /// An array, each element read by `element` (given its position).
    fn array(&mut self, mut element: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.open(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            self.depth -= 1;
            return Some(());
        }
        let mut n = 0;
        loop {
            element(self, n)?;
            n += 1;
            if !self.next_or_close(b']')? {
                return Some(());
            }
        }
    }

    /// `null` (`true`, consumed) or something else (`false`, left unread).
    fn null(&mut self) -> Option<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal(b"null")?;
        Some(true)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A string; borrowed unless it has escapes. `\u` escapes (with their surrogate rules)
    /// and control characters are left to serde.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        self.at = special_at(self.bytes, start)?;
        match *self.bytes.get(self.at)? {
            b'"' => {
                let s = self.text.get(start..self.at)?;
                self.at += 1;
                Some(Cow::Borrowed(s))
            }
            b'\\' => self.escaped(start).map(Cow::Owned),
            _ => None,
        }
    }

    /// The rest of a string that has an escape at the current position.
    fn escaped(&mut self, start: usize) -> Option<String> {
        let mut out = String::with_capacity(self.at - start + 16);
        let mut run = start;
        loop {
            self.at = special_at(self.bytes, self.at)?;
            match *self.bytes.get(self.at)? {
                b'"' => {
                    out.push_str(self.text.get(run..self.at)?);
                    self.at += 1;
                    return Some(out);
                }
                b'\\' => {
                    out.push_str(self.text.get(run..self.at)?);
                    let c = match self.bytes.get(self.at + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => return None,
                    };
                    out.push(c);
                    self.at += 2;
                    run = self.at;
                }
                _ => return None,
            }
        }
    }

    /// An integer serde_json reads as one (not `-0`, which it reads as a float, nor more
    /// than 18 digits, which may overflow into one); fractions and exponents are left to
    /// serde.
    fn integer(&mut self) -> Option<i64> {
        let negative = self.peek()? == b'-';
        if negative {
            self.at += 1;
        }
        let mut n: i64 = 0;
        let mut digits = 0;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            // A leading zero is a number of its own (`01` is not JSON).
            if digits == 1 && n == 0 {
                return None;
            }
            // Counted before the digit joins `n`: eighteen digits always fit an `i64`, a
            // nineteenth may not.
            if digits == 18 {
                return None;
            }
            n = n * 10 + i64::from(d - b'0');
            digits += 1;
            self.at += 1;
        }
        if digits == 0 || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        match (negative, n) {
            (true, 0) => None,
            (true, n) => Some(-n),
            (false, n) => Some(n),
        }
    }

    /// Any value, checked and dropped.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(&mut Skip),
            b'[' => self.array(|s, _| s.skip()),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.integer().map(drop),
            _ => None,
        }
    }

    /// A string or `null` (`str_field`).
    fn opt_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.null()? {
            true => Some(None),
            false => self.string().map(Some),
        }
    }

    /// An integer or `null` (`Option<i64>`).
    fn opt_i64(&mut self) -> Option<Option<i64>> {
        match self.null()? {
            true => Some(None),
            false => self.integer().map(Some),
        }
    }

    /// An object or `null` into `target` (`typed_json::optional`): an object replaces what
    /// was there.
    fn opt_object<T: ScanFields<'a>>(&mut self, target: &mut Option<T>) -> Option<()> {
        match self.null()? {
            true => *target = None,
            false => self.object(target.insert(T::default()))?,
        }
        Some(())
    }

    /// `null` only: the fields this read leaves to serde are taken only when absent or
    /// `null`.
    fn only_null(&mut self) -> Option<()> {
        self.null()?.then_some(())
    }
}

/// The position, from `at`, of the first `"`, `\\` or control character in `bytes`:
/// eight bytes at a time, where a string usually ends within a word or two.
pub(super) fn special_at(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // High bit set in the lowest byte of `x` that is zero (higher ones may be false hits,
    // so only the lowest is used).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(word) = bytes.get(at..at + 8) {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let hits = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes.get(at..)?;
    let p = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(at + p)
}

/// An object whose members are all skipped.
#[derive(Default)]
struct Skip;

impl<'a> ScanFields<'a> for Skip {
    fn field(&mut self, s: &mut Scan<'a>, _key: &str) -> Option<()> {
        s.skip()
    }
}

impl<'a> ScanFields<'a> for Chunk<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "id" => self.id = s.opt_str()?,
            "model" => self.model = s.opt_str()?,
            "usage" => {
                s.only_null()?;
                self.usage = None;
            }
            // `first_of`: `null` or an array whose first element is an object.
            "choices" => match s.null()? {
                true => self.choice = None,
                false => {
                    let mut first = None;
                    s.array(|s, n| match n {
                        0 => s.object(first.insert(Choice::default())),
                        _ => s.skip(),
                    })?;
                    self.choice = first;
                }
            },
            // A chunk with an error is the general read's.
            "error" => {
                s.only_null()?;
                self.error = false;
            }
            _ => s.skip()?,
        }
        Some(())
    }
}

impl<'a> ScanFields<'a> for Choice<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "usage" => {
                s.only_null()?;
                self.usage = None;
            }
            "finish_reason" => self.finish_reason = s.opt_str()?,
            "delta" => s.opt_object(&mut self.delta)?,
            _ => s.skip()?,
        }
        Some(())
    }
}

impl<'a> ScanFields<'a> for Delta<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "content" => self.content = s.opt_str()?,
            "reasoning_content" => self.reasoning_content = s.opt_str()?,
            "reasoning" => self.reasoning = s.opt_str()?,
            "reasoning_text" => self.reasoning_text = s.opt_str()?,
            "reasoning_details" => {
                s.only_null()?;
                self.reasoning_details = None;
            }
            // `Option<Vec<_>>`: `null` or an array of objects.
            "tool_calls" => match s.null()? {
                true => self.tool_calls = None,
                false => {
                    let mut calls = Vec::new();
                    s.array(|s, _| {
                        let mut call = ToolCallDelta::default();
                        s.object(&mut call)?;
                        calls.push(call);
                        Some(())
                    })?;
                    self.tool_calls = Some(calls);
                }
            },
            _ => s.skip()?,
        }
        Some(())
    }
}

impl<'a> ScanFields<'a> for ToolCallDelta<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "id" => self.id = s.opt_str()?,
            "index" => self.index = s.opt_i64()?,
            "function" => s.opt_object(&mut self.function)?,
            "custom" => s.opt_object(&mut self.custom)?,
            _ => s.skip()?,
        }
        Some(())
    }
}

impl<'a> ScanFields<'a> for FunctionDelta<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "name" => self.name = s.opt_str()?,
            "arguments" => self.arguments = s.opt_str()?,
            _ => s.skip()?,
        }
        Some(())
    }
}

impl<'a> ScanFields<'a> for CustomDelta<'a> {
    fn field(&mut self, s: &mut Scan<'a>, key: &str) -> Option<()> {
        match key {
            "name" => self.name = s.opt_str()?,
            "input" => self.input = s.opt_str()?,
            _ => s.skip()?,
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk::Chunk;
    use super::read;

    /// The scan either declines or gives exactly the typed read's fields.
    fn agrees(text: &str) -> bool {
        let typed = Chunk::typed_read(text);
        match read(text) {
            Some(scanned) => {
                assert_eq!(Some(&scanned), typed.as_ref(), "{text}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn takes_the_usual_chunks_and_leaves_the_rest_to_serde() {
        let head = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":"#;
        let taken = [
            format!(r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#),
            format!(r#"{head}[{{"index":0,"delta":{{"content":"t000042 "}},"finish_reason":null}}]}}"#),
            format!(r#"{head}[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}"#),
            r#" { "choices" : [ { "delta" : { "content" : "a\"b\\c\/d\n\t\r\b\f" } } , 1 , [ ] ] } "#.into(),
            r#"{"choices":[{"delta":{"content":"dup","content":"last"},"delta":{"reasoning":"r"}}],"choices":[]}"#.into(),
            r#"{"choices":null,"id":null,"model":"é ☃ 😀","x":[true,false,null,-5,0,{"y":{}}]}"#.into(),
            r#"{"usage":null,"error":null,"choices":[{"usage":null,"delta":null,"logprobs":null}]}"#.into(),
            r#"{"choices":[{"delta":{"reasoning_details":null,"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"n\":"}},{"index":-2,"custom":{"name":"g","input":"x"},"function":null}]}}]}"#.into(),
            r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#.into(),
            "{}".into(),
        ];
        for t in &taken {
            assert!(agrees(t), "declined {t}");
        }
        let deep = format!(r#"{{"x":{}0{}}}"#, "[".repeat(40), "]".repeat(40));
        let declined = [
            r#"{"choices":[{"delta":{"content":"\u00e9"}}]}"#,
            r#"{"con\u0074ent":1}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"n":1e400}"#,
            r#"{"n":1.5}"#,
            r#"{"n":-0}"#,
            r#"{"n":01}"#,
            r#"{"n":1234567890123456789}"#,
            r#"{"n":9999999999999999999}"#,
            r#"{"choices":[{"index":99999999999999999999999999999999,"delta":{}}]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],}"#,
            r#"{"choices":[1,]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
            r#"[{"choices":[]}]"#,
            r#"{"choices":[1]}"#,
            r#"{"choices":{}}"#,
            r#"{"choices":[{"delta":"text"}]}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{"usage":{"prompt_tokens":1}}]}"#,
            r#"{"usage":{"prompt_tokens":1}}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"{"error":false}"#,
            r#"{"choices":[{"delta":{"tool_calls":[null]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1.0}]}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_details":[]}}]}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":nul}"#,
            r#"{"a":nullx}"#,
            r#"{"a" 1}"#,
            r#"{"a":"x""#,
            "",
            &deep,
        ];
        for t in declined {
            assert!(!agrees(t), "took {t}");
        }
    }

    #[test]
    fn cut_and_altered_chunks_are_declined_or_read_alike() {
        let text = r#"{"id":"c","object":"o","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"a\nb","tool_calls":[{"index":0,"function":{"arguments":"{\"k\":1}"}}]},"finish_reason":null}],"usage":null}"#;
        let inserts = [
            "", " ", ",", "]", "}", "[", "{", "\"", ":", "\\", "0", "-", "n", "\n", "x", "é",
        ];
        for i in 0..=text.len() {
            let (a, b) = text.split_at(i);
            agrees(a);
            for ins in inserts {
                agrees(&format!("{a}{ins}{b}"));
                if let Some(rest) = b.get(1..) {
                    agrees(&format!("{a}{ins}{rest}"));
                }
            }
        }
    }
}
