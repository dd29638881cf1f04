//! JSON for streamed tool-call arguments: a tolerant incremental parser for the partial
//! arguments shown while a call streams, and the one strict parse (with the reference's repair
//! pass) of the finished text.
//!
//! ```
//! use tern_ai::json_parse::{parse_tool_call_arguments, ToolCallArgumentsStream};
//! let mut args = ToolCallArgumentsStream::new();
//! args.append(r#"{"path":"no"#);
//! assert_eq!(args.partial()["path"], "no");
//! args.append(r#"tes"}"#);
//! let (value, error) = args.finish();
//! assert_eq!(value["path"], "notes");
//! assert!(error.is_none());
//! assert!(parse_tool_call_arguments("[1]").1.is_some());
//! ```

use serde_json::{Map, Value};

// Copy credit per append and per appended character (see `StreamingJsonParser::snapshot`).
const CREDIT_PER_APPEND: usize = 256;
const CREDIT_PER_CHARACTER: usize = 8;
// An unterminated number longer than this is not shown until it ends.
const MAX_PENDING_SCALAR_LENGTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
enum Slot {
    Root,
    Element(usize),
    Member(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Key,
    Colon,
    Value,
    Comma,
}

#[derive(Debug)]
enum Container {
    Object(Map<String, Value>),
    Array(Vec<Value>),
}

impl Container {
    fn is_array(&self) -> bool {
        matches!(self, Container::Array(_))
    }
    fn to_value(&self) -> Value {
        match self {
            Container::Object(m) => Value::Object(m.clone()),
            Container::Array(a) => Value::Array(a.clone()),
        }
    }
    fn into_value(self) -> Value {
        match self {
            Container::Object(m) => Value::Object(m),
            Container::Array(a) => Value::Array(a),
        }
    }
}

#[derive(Debug)]
struct Frame {
    container: Container,
    slot: Option<Slot>,
    size: usize,
    key: Option<String>,
    phase: Phase,
}

#[derive(Debug)]
struct OpenString {
    is_key: bool,
    slot: Option<Slot>,
    text: String,
    escape: String,
    high_surrogate: Option<u16>,
}

/// Incremental, tolerant JSON parser: each piece of text is read once, and
/// [`snapshot`](Self::snapshot) gives the value of the text so far. Incomplete text shows as
/// the reference's `StreamingJsonParser` shows it: unterminated strings show their characters
/// (an unfinished escape is held back), members without a started value are omitted, literal
/// and number prefixes show once they are valid. Malformed text is read leniently; the parser
/// never fails.
#[derive(Debug, Default)]
pub struct StreamingJsonParser {
    root: Option<Value>,
    done: bool,
    stack: Vec<Frame>,
    string: Option<OpenString>,
    scalar: String,
    scalar_slot: Option<Slot>,
    path_cost: usize,
    credit: usize,
    dirty: bool,
    snapshot: Option<Value>,
}

fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | '\r' | ',' | ':' | '{' | '}' | '[' | ']' | '"'
    )
}

// Whether `s` matches -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? ; returns the length of the
// mantissa part when `allow_bare_exponent` and the text ends with `e`, `e+` or `e-`.
fn number_shape(s: &str) -> Option<(bool, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && b[i] == b'-' {
        i += 1;
    }
    if i >= b.len() {
        return None;
    }
    if b[i] == b'0' {
        i += 1;
    } else if b[i].is_ascii_digit() {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    } else {
        return None;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return None;
        }
    }
    let mantissa = i;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return if i == b.len() {
                Some((false, mantissa))
            } else {
                None
            };
        }
    }
    if i == b.len() {
        Some((true, mantissa))
    } else {
        None
    }
}

fn number_value(s: &str) -> Option<Value> {
    if !s.contains(['.', 'e', 'E']) {
        if let Ok(i) = s.parse::<i64>() {
            return Some(Value::from(i));
        }
    }
    let f: f64 = s.parse().ok()?;
    serde_json::Number::from_f64(f).map(Value::Number)
}

fn literal(token: &str) -> Option<Value> {
    match token {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        _ => None,
    }
}

fn scalar_value(token: &str) -> Option<Value> {
    if let Some(v) = literal(token) {
        return Some(v);
    }
    match number_shape(token) {
        Some((true, _)) => number_value(token),
        _ => None,
    }
}

fn pending_scalar_value(token: &str) -> Option<Value> {
    for (lit, v) in [
        ("true", Value::Bool(true)),
        ("false", Value::Bool(false)),
        ("null", Value::Null),
    ] {
        if lit.starts_with(token) {
            return Some(v);
        }
    }
    match number_shape(token) {
        Some((true, _)) => number_value(token),
        Some((false, m)) => number_value(&token[..m]),
        None => None,
    }
}

fn set_slot(container: &mut Value, slot: &Slot, value: Value) {
    match (container, slot) {
        (Value::Array(a), Slot::Element(i)) => {
            if *i < a.len() {
                a[*i] = value;
            } else {
                a.push(value);
            }
        }
        (Value::Object(m), Slot::Member(k)) => {
            m.insert(k.clone(), value);
        }
        _ => {}
    }
}

impl StreamingJsonParser {
    /// A parser before any text.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the next piece of text. Linear in its length.
    pub fn append(&mut self, text: &str) {
        self.credit = self
            .credit
            .saturating_add(CREDIT_PER_APPEND + CREDIT_PER_CHARACTER * text.chars().count());
        let mut rest = text;
        while !rest.is_empty() && !self.done {
            if self.string.is_some() {
                rest = self.read_string(rest);
            } else if !self.scalar.is_empty() {
                rest = self.read_scalar(rest);
            } else {
                let mut it = rest.chars();
                let c = it.next().unwrap_or(' ');
                rest = it.as_str();
                self.structural(c);
            }
        }
    }

    /// The value of the text read so far (`None` before a value starts). Returns the previous
    /// snapshot while nothing changed, or while a fresh copy of the open containers is not yet
    /// paid for by the text read since (so a huge open container shows a lagging preview and
    /// total work stays linear, as in the reference).
    pub fn snapshot(&mut self) -> Option<Value> {
        if !self.dirty {
            return self.snapshot.clone();
        }
        let pending = self.pending_value();
        let cost = self.path_cost + usize::from(pending.is_some());
        if cost > self.credit {
            return self.snapshot.clone();
        }
        self.credit -= cost;
        self.dirty = false;
        self.snapshot = self.copy_open_path(pending);
        self.snapshot.clone()
    }

    fn read_string<'a>(&mut self, text: &'a str) -> &'a str {
        let Some(mut open) = self.string.take() else {
            return text;
        };
        let mut iter = text.char_indices();
        let mut run_start = 0usize;
        while let Some((i, c)) = iter.next() {
            if !open.escape.is_empty() {
                if continue_escape(&mut open, c) {
                    run_start = i + c.len_utf8();
                    continue;
                }
                run_start = i;
            }
            if c == '"' {
                open.text.push_str(&text[run_start..i]);
                self.end_string(open);
                return &text[i + 1..];
            }
            if c == '\\' {
                open.text.push_str(&text[run_start..i]);
                open.escape.push('\\');
                run_start = i + 1;
            }
            let _ = &mut iter;
        }
        if text.len() > run_start {
            open.text.push_str(&text[run_start..]);
        }
        if open.slot.is_some() && !open.is_key {
            self.dirty = true;
        }
        self.string = Some(open);
        ""
    }

    fn read_scalar<'a>(&mut self, text: &'a str) -> &'a str {
        let end = text.find(is_delimiter).unwrap_or(text.len());
        if end > 0 {
            self.scalar.push_str(&text[..end]);
            if self.scalar_slot.is_some() {
                self.dirty = true;
            }
        }
        if end < text.len() {
            self.end_scalar();
        }
        &text[end..]
    }

    fn structural(&mut self, c: char) {
        match c {
            ' ' | '\t' | '\n' | '\r' => {}
            '"' => self.start_string(),
            '{' => self.open_container(Container::Object(Map::new())),
            '[' => self.open_container(Container::Array(Vec::new())),
            '}' | ']' => self.close_container(),
            ':' => {
                if let Some(f) = self.stack.last_mut() {
                    if !f.container.is_array() && f.phase == Phase::Colon {
                        f.phase = Phase::Value;
                    }
                }
            }
            ',' => {
                if let Some(f) = self.stack.last_mut() {
                    f.phase = if f.container.is_array() {
                        Phase::Value
                    } else {
                        Phase::Key
                    };
                }
            }
            other => {
                self.scalar.clear();
                self.scalar.push(other);
                self.scalar_slot = self.value_slot();
                if self.scalar_slot.is_some() {
                    self.dirty = true;
                }
            }
        }
    }

    fn value_slot(&self) -> Option<Slot> {
        let Some(frame) = self.stack.last() else {
            return self.root.is_none().then_some(Slot::Root);
        };
        match &frame.container {
            Container::Array(a) => Some(Slot::Element(a.len())),
            Container::Object(_) => {
                if matches!(frame.phase, Phase::Value | Phase::Colon) {
                    frame.key.clone().map(Slot::Member)
                } else {
                    None
                }
            }
        }
    }

    fn start_string(&mut self) {
        if let Some(f) = self.stack.last() {
            if !f.container.is_array() && matches!(f.phase, Phase::Key | Phase::Comma) {
                self.string = Some(OpenString {
                    is_key: true,
                    slot: None,
                    text: String::new(),
                    escape: String::new(),
                    high_surrogate: None,
                });
                return;
            }
        }
        let slot = self.value_slot();
        if let Some(s) = &slot {
            self.place(s.clone(), Value::String(String::new()));
        }
        self.string = Some(OpenString {
            is_key: false,
            slot,
            text: String::new(),
            escape: String::new(),
            high_surrogate: None,
        });
    }

    fn end_string(&mut self, mut open: OpenString) {
        if let Some(h) = open.high_surrogate.take() {
            let _ = h;
            open.text.push('\u{FFFD}');
        }
        if open.is_key {
            if let Some(f) = self.stack.last_mut() {
                f.key = Some(open.text);
                f.phase = Phase::Colon;
            }
            return;
        }
        if let Some(slot) = open.slot {
            self.place(slot, Value::String(open.text));
        }
        self.value_ended();
    }

    fn end_scalar(&mut self) {
        let token = std::mem::take(&mut self.scalar);
        let slot = self.scalar_slot.take();
        if let (Some(v), Some(s)) = (scalar_value(&token), slot) {
            self.place(s, v);
        }
        self.value_ended();
    }

    fn pending_value(&self) -> Option<(Slot, Value)> {
        if let Some(open) = &self.string {
            if open.is_key {
                return None;
            }
            return open
                .slot
                .clone()
                .map(|s| (s, Value::String(open.text.clone())));
        }
        let slot = self.scalar_slot.clone()?;
        if self.scalar.is_empty() || self.scalar.len() > MAX_PENDING_SCALAR_LENGTH {
            return None;
        }
        pending_scalar_value(&self.scalar).map(|v| (slot, v))
    }

    fn open_container(&mut self, container: Container) {
        let slot = self.value_slot();
        let placeholder = match &container {
            Container::Object(_) => Value::Object(Map::new()),
            Container::Array(_) => Value::Array(Vec::new()),
        };
        if let Some(s) = &slot {
            self.place(s.clone(), placeholder);
        }
        let phase = if container.is_array() {
            Phase::Value
        } else {
            Phase::Key
        };
        self.stack.push(Frame {
            container,
            slot,
            size: 0,
            key: None,
            phase,
        });
        self.path_cost += 1;
        self.dirty = true;
    }

    fn close_container(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        self.path_cost = self.path_cost.saturating_sub(frame.size + 1);
        self.dirty = true;
        if let Some(slot) = frame.slot {
            let v = frame.container.into_value();
            self.place_quiet(slot, v);
        }
        self.value_ended();
    }

    fn value_ended(&mut self) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    self.done = true;
                }
            }
            Some(f) => f.phase = Phase::Comma,
        }
    }

    // Sets the value at `slot` in the innermost open container (or the root), counting new
    // members for the copy cost.
    fn place(&mut self, slot: Slot, value: Value) {
        self.dirty = true;
        match slot {
            Slot::Root => self.root = Some(value),
            Slot::Element(i) => {
                if let Some(f) = self.stack.last_mut() {
                    if let Container::Array(a) = &mut f.container {
                        if i >= a.len() {
                            a.push(value);
                            f.size += 1;
                            self.path_cost += 1;
                        } else {
                            a[i] = value;
                        }
                    }
                }
            }
            Slot::Member(k) => {
                if let Some(f) = self.stack.last_mut() {
                    if let Container::Object(m) = &mut f.container {
                        if m.insert(k, value).is_none() {
                            f.size += 1;
                            self.path_cost += 1;
                        }
                    }
                }
            }
        }
    }

    // Puts a closed container back where its placeholder is (already counted).
    fn place_quiet(&mut self, slot: Slot, value: Value) {
        match slot {
            Slot::Root => self.root = Some(value),
            Slot::Element(i) => {
                if let Some(Frame {
                    container: Container::Array(a),
                    ..
                }) = self.stack.last_mut()
                {
                    if i < a.len() {
                        a[i] = value;
                    } else {
                        a.push(value);
                    }
                }
            }
            Slot::Member(k) => {
                if let Some(Frame {
                    container: Container::Object(m),
                    ..
                }) = self.stack.last_mut()
                {
                    m.insert(k, value);
                }
            }
        }
    }

    fn copy_open_path(&self, pending: Option<(Slot, Value)>) -> Option<Value> {
        if self.stack.is_empty() {
            return match pending {
                Some((Slot::Root, v)) => Some(v),
                _ => self.root.clone(),
            };
        }
        let mut child: Option<Value> = None;
        let mut child_slot: Option<Slot> = None;
        let mut pending = pending;
        for depth in (0..self.stack.len()).rev() {
            let frame = &self.stack[depth];
            let mut copy = frame.container.to_value();
            if depth == self.stack.len() - 1 {
                if let Some((s, v)) = pending.take() {
                    set_slot(&mut copy, &s, v);
                }
            }
            if let (Some(c), Some(s)) = (child.take(), child_slot.as_ref()) {
                set_slot(&mut copy, s, c);
            }
            child = Some(copy);
            child_slot = frame.slot.clone();
        }
        if child_slot == Some(Slot::Root) {
            child
        } else {
            self.root.clone()
        }
    }
}

fn simple_escape(c: char) -> Option<char> {
    Some(match c {
        '"' => '"',
        '\\' => '\\',
        '/' => '/',
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        _ => return None,
    })
}

fn push_code_unit(open: &mut OpenString, unit: u16) {
    if (0xD800..0xDC00).contains(&unit) {
        if open.high_surrogate.replace(unit).is_some() {
            open.text.push('\u{FFFD}');
        }
        return;
    }
    if (0xDC00..0xE000).contains(&unit) {
        if let Some(h) = open.high_surrogate.take() {
            let cp = 0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
            open.text.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
        } else {
            open.text.push('\u{FFFD}');
        }
        return;
    }
    if open.high_surrogate.take().is_some() {
        open.text.push('\u{FFFD}');
    }
    open.text
        .push(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}'));
}

// Continues an escape with `c`; false when `c` is not part of it and must be read normally.
fn continue_escape(open: &mut OpenString, c: char) -> bool {
    if open.escape == "\\" {
        if let Some(d) = simple_escape(c) {
            open.escape.clear();
            open.text.push(d);
            return true;
        }
        if c == 'u' {
            open.escape.push('u');
            return true;
        }
        open.escape.clear();
        open.text.push('\\');
        return false;
    }
    if c.is_ascii_hexdigit() {
        open.escape.push(c);
        if open.escape.len() < 6 {
            return true;
        }
        let unit = u16::from_str_radix(&open.escape[2..], 16).unwrap_or(0xFFFD);
        open.escape.clear();
        push_code_unit(open, unit);
        return true;
    }
    let lit = std::mem::take(&mut open.escape);
    open.text.push_str(&lit);
    false
}

/// The arguments of one streaming tool call: the raw text (for the one full parse at the end)
/// and a [`StreamingJsonParser`] for the partial arguments in between.
#[derive(Debug, Default)]
pub struct ToolCallArgumentsStream {
    text: String,
    parser: StreamingJsonParser,
    arguments: Value,
}

impl ToolCallArgumentsStream {
    /// An empty argument stream.
    pub fn new() -> Self {
        ToolCallArgumentsStream {
            text: String::new(),
            parser: StreamingJsonParser::new(),
            arguments: Value::Object(Map::new()),
        }
    }

    /// The raw text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends a piece of argument text and returns the partial arguments (an object; any
    /// other partial value shows as `{}`).
    pub fn append(&mut self, delta: &str) -> &Value {
        self.text.push_str(delta);
        self.parser.append(delta);
        self.refresh();
        &self.arguments
    }

    /// The current partial arguments.
    pub fn partial(&self) -> &Value {
        &self.arguments
    }

    /// Takes the provider's complete text: when it continues what was received, returns the
    /// missing piece (`Some(delta)`), otherwise starts over with `text` and returns `None`.
    pub fn replace(&mut self, text: &str) -> Option<String> {
        if let Some(rest) = text.strip_prefix(self.text.as_str()) {
            let rest = rest.to_string();
            if !rest.is_empty() {
                self.append(&rest);
            }
            return Some(rest);
        }
        self.text.clear();
        self.parser = StreamingJsonParser::new();
        self.append(text);
        None
    }

    /// The final arguments: one strict parse of the whole text (see
    /// [`parse_tool_call_arguments`]).
    pub fn finish(&self) -> (Value, Option<String>) {
        parse_tool_call_arguments(&self.text)
    }

    fn refresh(&mut self) {
        let snap = self.parser.snapshot();
        self.arguments = match snap {
            Some(Value::Object(m)) => Value::Object(m),
            _ => Value::Object(Map::new()),
        };
    }
}

fn escape_control(c: char, out: &mut String) {
    match c {
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => out.push_str(&format!("\\u{:04x}", c as u32)),
    }
}

/// The reference's `repairJson`: inside strings, raw control characters are escaped and a
/// backslash that starts an invalid escape is doubled.
pub fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 8);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            if c == '"' {
                in_string = true;
            }
            i += 1;
            continue;
        }
        if c == '"' {
            out.push(c);
            in_string = false;
            i += 1;
            continue;
        }
        if c == '\\' {
            let Some(&next) = chars.get(i + 1) else {
                out.push_str("\\\\");
                i += 1;
                continue;
            };
            if next == 'u' {
                let digits: String = chars.iter().skip(i + 2).take(4).collect();
                if digits.len() == 4 && digits.chars().all(|d| d.is_ascii_hexdigit()) {
                    out.push_str("\\u");
                    out.push_str(&digits);
                    i += 6;
                    continue;
                }
            }
            if matches!(next, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') {
                out.push('\\');
                out.push(next);
                i += 2;
                continue;
            }
            out.push_str("\\\\");
            i += 1;
            continue;
        }
        if (c as u32) < 0x20 {
            escape_control(c, &mut out);
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// `JSON.parse` with the reference's repair fallback (`parseJsonWithRepair`).
pub fn parse_json_with_repair(json: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(json) {
        Ok(v) => Ok(v),
        Err(e) => {
            let repaired = repair_json(json);
            if repaired != json {
                serde_json::from_str(&repaired)
            } else {
                Err(e)
            }
        }
    }
}

/// Parses the finished arguments text of a tool call: blank text is `{}`; otherwise a strict
/// parse with one repair pass. A failure or a non-object gives `{}` and the error text
/// `"<message>\n\nReceived arguments:\n<text>"`.
pub fn parse_tool_call_arguments(json: &str) -> (Value, Option<String>) {
    if json.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    let message = match parse_json_with_repair(json) {
        Ok(Value::Object(m)) => return (Value::Object(m), None),
        Ok(_) => "Tool arguments must be a JSON object".to_string(),
        Err(e) => e.to_string(),
    };
    (
        Value::Object(Map::new()),
        Some(format!("{message}\n\nReceived arguments:\n{json}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(pieces: &[&str]) -> Vec<Value> {
        let mut s = ToolCallArgumentsStream::new();
        pieces.iter().map(|p| s.append(p).clone()).collect()
    }

    #[test]
    fn partial_rules() {
        let snaps = feed(&[
            "{",
            "\"p",
            "ath\":\"",
            "a\\",
            "\"b",
            "\",\"n\":t",
            "r",
            "ue,\"x\":-1",
        ]);
        assert_eq!(snaps[0], json!({}));
        assert_eq!(snaps[1], json!({}));
        assert_eq!(snaps[2], json!({"path": ""}));
        assert_eq!(snaps[3], json!({"path": "a"}));
        assert_eq!(snaps[4], json!({"path": "a\"b"}));
        assert_eq!(snaps[5], json!({"path": "a\"b", "n": true}));
        assert_eq!(snaps[7], json!({"path": "a\"b", "n": true, "x": -1}));
    }

    #[test]
    fn nested_and_arrays() {
        let snaps = feed(&["{\"o\":{\"t\":[\"a\",", "\"b", "\"],\"r\":1.", "5}}"]);
        assert_eq!(snaps[0], json!({"o": {"t": ["a"]}}));
        assert_eq!(snaps[1], json!({"o": {"t": ["a", "b"]}}));
        assert_eq!(snaps[2], json!({"o": {"t": ["a", "b"]}}));
        assert_eq!(snaps[3], json!({"o": {"t": ["a", "b"], "r": 1.5}}));
    }

    #[test]
    fn unicode_escape_across_pieces() {
        let snaps = feed(&["{\"a\":\"\\u00", "e9\\ud83d", "\\ude00\"}"]);
        assert_eq!(snaps[0], json!({"a": ""}));
        assert_eq!(snaps[2], json!({"a": "é😀"}));
    }

    #[test]
    fn strict_parse_and_repair() {
        assert_eq!(parse_tool_call_arguments("  ").0, json!({}));
        let (v, e) = parse_tool_call_arguments("{\"a\":\"x\ty\\d\"}");
        assert!(e.is_none());
        assert_eq!(v, json!({"a": "x\ty\\d"}));
        let (v, e) = parse_tool_call_arguments("{\"a\":");
        assert_eq!(v, json!({}));
        assert!(e.unwrap().ends_with("\n\nReceived arguments:\n{\"a\":"));
    }
}
