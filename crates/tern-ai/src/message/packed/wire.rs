//! The primitives of the packed encoding: varints, texts, floats as bits, names through the
//! transcript's table, and JSON values in a tagged binary form.
//!
//! JSON values are written as tagged binary rather than as their JSON text: reading them back
//! needs no parser, and every `serde_json::Number` keeps its kind (an unsigned, a negative or a
//! float integer) and a float its exact bits.

use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::super::{Name, ToolDeclaration};

/// Names up to this many bytes go through the transcript's name table; longer ones inline.
const MAX_TABLE_NAME_LEN: usize = 64;
/// The name table stops growing here (a transcript of invented tool names stays bounded);
/// later names are written inline.
const MAX_TABLE_NAMES: usize = 256;
/// How deep a JSON value may nest in the buffer. Values read from the wire nest at most 128
/// deep (serde_json's limit); a deeper one built in code is kept as it is instead (see
/// `Spilled` in the transcript), so decoding never recurses without bound.
pub(super) const MAX_DEPTH: usize = 256;

/// What the encoder could not write in the buffer.
#[derive(Debug)]
pub(super) struct TooDeep;

/// The transcript's tables: short names that repeat (api, provider, model, tool names, MIME
/// types) and the tool declarations of system messages, each stored once and referred to by
/// index.
#[derive(Clone, Debug, Default)]
pub(super) struct Tables {
    pub(super) names: Vec<Name>,
    // Shared declarations stay shared: a decoded system message holds the same `Arc`.
    pub(super) decls: Vec<Arc<ToolDeclaration>>,
}

impl Tables {
    pub(super) fn shrink_to_fit(&mut self) {
        self.names.shrink_to_fit();
        self.decls.shrink_to_fit();
    }

    /// The table index of `text`, added when there is room; `None`: write it inline.
    fn name_index(&mut self, text: &str, name: Option<&Name>) -> Option<usize> {
        if text.len() > MAX_TABLE_NAME_LEN {
            return None;
        }
        // A shared name is found by its buffer (names of one text share one), without
        // comparing texts.
        let found = match name {
            Some(name) => self.names.iter().position(|n| n.shares_text_with(name)),
            None => None,
        };
        if let Some(i) = found.or_else(|| self.names.iter().position(|n| n.as_str() == text)) {
            return Some(i);
        }
        if self.names.len() >= MAX_TABLE_NAMES {
            return None;
        }
        self.names
            .push(name.cloned().unwrap_or_else(|| Name::from(text)));
        Some(self.names.len() - 1)
    }

    pub(super) fn decl_index(&mut self, decl: &Arc<ToolDeclaration>) -> usize {
        if let Some(i) = self.decls.iter().position(|d| Arc::ptr_eq(d, decl)) {
            return i;
        }
        self.decls.push(decl.clone());
        self.decls.len() - 1
    }
}

/// Writes into a transcript's buffer.
pub(super) struct Writer<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) tables: &'a mut Tables,
    /// The transcript's base timestamp: timestamps are written as their difference to it.
    pub(super) base: u64,
}

impl Writer<'_> {
    pub(super) fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    pub(super) fn usize(&mut self, v: usize) {
        self.varint(v as u64);
    }

    pub(super) fn str(&mut self, s: &str) {
        self.usize(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }

    pub(super) fn f64(&mut self, v: f64) {
        self.out.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    pub(super) fn timestamp(&mut self, ts: u64) {
        // Wrapping difference, zigzagged: exact for every pair, one byte for equal ones.
        let d = ts.wrapping_sub(self.base) as i64;
        self.varint(((d << 1) ^ (d >> 63)) as u64);
    }

    /// A name: `index << 1` for a table entry, `len << 1 | 1` and the bytes inline.
    pub(super) fn name(&mut self, text: &str, shared: Option<&Name>) {
        match self.tables.name_index(text, shared) {
            Some(i) => self.usize(i << 1),
            None => {
                self.usize((text.len() << 1) | 1);
                self.out.extend_from_slice(text.as_bytes());
            }
        }
    }

    pub(super) fn value(&mut self, v: &Value, depth: usize) -> Result<(), TooDeep> {
        if depth > MAX_DEPTH {
            return Err(TooDeep);
        }
        match v {
            Value::Null => self.byte(V_NULL),
            Value::Bool(false) => self.byte(V_FALSE),
            Value::Bool(true) => self.byte(V_TRUE),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    self.byte(V_UINT);
                    self.varint(u);
                } else if let Some(i) = n.as_i64() {
                    // Negative (non-negative ones are unsigned above): stored as !i >= 0.
                    self.byte(V_NEG);
                    self.varint(!i as u64);
                } else {
                    self.byte(V_FLOAT);
                    self.f64(n.as_f64().unwrap_or_default());
                }
            }
            Value::String(s) => {
                self.byte(V_STRING);
                self.str(s);
            }
            Value::Array(items) => {
                self.byte(V_ARRAY);
                self.usize(items.len());
                for item in items {
                    self.value(item, depth + 1)?;
                }
            }
            Value::Object(m) => {
                self.byte(V_OBJECT);
                self.object_body(m, depth + 1)?;
            }
        }
        Ok(())
    }

    /// An object's entries without a tag (for fields that are always objects).
    pub(super) fn object_body(
        &mut self,
        m: &Map<String, Value>,
        depth: usize,
    ) -> Result<(), TooDeep> {
        self.usize(m.len());
        for (k, v) in m {
            self.str(k);
            self.value(v, depth)?;
        }
        Ok(())
    }
}

const V_NULL: u8 = 0;
const V_FALSE: u8 = 1;
const V_TRUE: u8 = 2;
const V_UINT: u8 = 3;
const V_NEG: u8 = 4;
const V_FLOAT: u8 = 5;
const V_STRING: u8 = 6;
const V_ARRAY: u8 = 7;
const V_OBJECT: u8 = 8;

/// Why a message could not be read back: what was expected, and where.
#[derive(Debug)]
pub(super) struct Corrupt {
    pub(super) offset: usize,
    pub(super) what: &'static str,
}

pub(super) type Read<T> = Result<T, Corrupt>;

/// Reads one message's bytes.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    pub(super) tables: &'a Tables,
    pub(super) base: u64,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8], tables: &'a Tables, base: u64) -> Self {
        Reader {
            bytes,
            pos: 0,
            tables,
            base,
        }
    }

    pub(super) fn fail<T>(&self, what: &'static str) -> Read<T> {
        Err(Corrupt {
            offset: self.pos,
            what,
        })
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(super) fn byte(&mut self) -> Read<u8> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.fail("the message ends early"),
        }
    }

    pub(super) fn varint(&mut self) -> Read<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return self.fail("a number overflows 64 bits");
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return self.fail("a number is longer than 10 bytes");
            }
        }
    }

    pub(super) fn usize(&mut self) -> Read<usize> {
        let v = self.varint()?;
        match usize::try_from(v) {
            Ok(v) => Ok(v),
            Err(_) => self.fail("a length does not fit this machine"),
        }
    }

    /// A count of items that take at least one byte each: no more than the bytes left, so a
    /// damaged count cannot reserve memory the message does not have.
    pub(super) fn count(&mut self) -> Read<usize> {
        let n = self.usize()?;
        if n > self.bytes.len() - self.pos {
            return self.fail("a count exceeds the message");
        }
        Ok(n)
    }

    fn take(&mut self, len: usize) -> Read<&'a [u8]> {
        match self
            .pos
            .checked_add(len)
            .and_then(|end| self.bytes.get(self.pos..end))
        {
            Some(s) => {
                self.pos += len;
                Ok(s)
            }
            None => self.fail("a text runs past the message"),
        }
    }

    fn text(&mut self, len: usize) -> Read<&'a str> {
        let start = self.pos;
        let raw = self.take(len)?;
        std::str::from_utf8(raw).map_err(|_| Corrupt {
            offset: start,
            what: "a text is not UTF-8",
        })
    }

    pub(super) fn str(&mut self) -> Read<&'a str> {
        let len = self.usize()?;
        self.text(len)
    }

    pub(super) fn string(&mut self) -> Read<String> {
        self.str().map(str::to_string)
    }

    pub(super) fn f64(&mut self) -> Read<f64> {
        let raw = self.take(8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(raw);
        Ok(f64::from_bits(u64::from_le_bytes(b)))
    }

    pub(super) fn timestamp(&mut self) -> Read<u64> {
        let z = self.varint()?;
        let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
        Ok(self.base.wrapping_add(d as u64))
    }

    pub(super) fn name(&mut self) -> Read<Name> {
        let v = self.usize()?;
        if v & 1 == 0 {
            match self.tables.names.get(v >> 1) {
                Some(n) => Ok(n.clone()),
                None => self.fail("a name refers past the name table"),
            }
        } else {
            self.text(v >> 1).map(Name::from)
        }
    }

    /// A name read as an owned `String` (fields typed `String` that hold names).
    pub(super) fn name_string(&mut self) -> Read<String> {
        let v = self.usize()?;
        if v & 1 == 0 {
            match self.tables.names.get(v >> 1) {
                Some(n) => Ok(n.as_str().to_string()),
                None => self.fail("a name refers past the name table"),
            }
        } else {
            self.text(v >> 1).map(str::to_string)
        }
    }

    pub(super) fn decl(&mut self) -> Read<Arc<ToolDeclaration>> {
        let i = self.usize()?;
        match self.tables.decls.get(i) {
            Some(d) => Ok(d.clone()),
            None => self.fail("a tool declaration refers past the table"),
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> Read<Value> {
        if depth > MAX_DEPTH {
            return self.fail("a JSON value nests too deep");
        }
        Ok(match self.byte()? {
            V_NULL => Value::Null,
            V_FALSE => Value::Bool(false),
            V_TRUE => Value::Bool(true),
            V_UINT => Value::Number(self.varint()?.into()),
            V_NEG => {
                let raw = self.varint()?;
                if raw > i64::MAX as u64 {
                    return self.fail("a negative number is out of range");
                }
                Value::Number((!(raw as i64)).into())
            }
            V_FLOAT => match Number::from_f64(self.f64()?) {
                Some(n) => Value::Number(n),
                None => return self.fail("a JSON number is not finite"),
            },
            V_STRING => Value::String(self.string()?),
            V_ARRAY => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            V_OBJECT => Value::Object(self.object_body(depth + 1)?),
            _ => return self.fail("unknown JSON value tag"),
        })
    }

    pub(super) fn object_body(&mut self, depth: usize) -> Read<Map<String, Value>> {
        let n = self.count()?;
        let mut m = Map::with_capacity(n);
        for _ in 0..n {
            let k = self.string()?;
            let v = self.value(depth)?;
            // A key twice would make a shorter map than was written: not this encoder's.
            if m.insert(k, v).is_some() {
                return self.fail("a JSON object repeats a key");
            }
        }
        Ok(m)
    }
}
