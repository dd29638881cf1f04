//! The fields of a Chat Completions chunk the stream mapper reads, read straight from the
//! event text into borrowing typed fields, or looked up in a parsed `Value` for chunks the
//! typed read refuses.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess};
use serde_json::Value;

use crate::providers::typed_json::{self, first_of, optional, str_field, Any, Fields};

/// The fields of a chunk that the stream mapper reads; strings borrow from the event data.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Chunk<'a> {
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) model: Option<Cow<'a, str>>,
    // The rarely present `Value`s are boxed to keep the per-chunk struct small.
    pub(crate) usage: Option<Box<Value>>,
    /// The first of `choices`.
    pub(crate) choice: Option<Choice<'a>>,
    /// A non-null `error` was seen (typed read only: such a chunk takes the `Value` path).
    pub(crate) error: bool,
}

/// The first of `choices`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Choice<'a> {
    pub(crate) usage: Option<Box<Value>>,
    pub(crate) finish_reason: Option<Cow<'a, str>>,
    pub(crate) delta: Option<Delta<'a>>,
}

/// A choice's `delta`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Delta<'a> {
    pub(crate) content: Option<Cow<'a, str>>,
    pub(crate) reasoning_content: Option<Cow<'a, str>>,
    pub(crate) reasoning: Option<Cow<'a, str>>,
    pub(crate) reasoning_text: Option<Cow<'a, str>>,
    pub(crate) reasoning_details: Option<Box<Value>>,
    pub(crate) tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

/// One entry of `tool_calls`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ToolCallDelta<'a> {
    pub(crate) id: Option<Cow<'a, str>>,
    pub(crate) index: Option<i64>,
    pub(crate) function: Option<FunctionDelta<'a>>,
    /// A freeform tool call's `custom` part.
    pub(crate) custom: Option<CustomDelta<'a>>,
}

/// A tool call's `function`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FunctionDelta<'a> {
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) arguments: Option<Cow<'a, str>>,
}

/// A freeform tool call's `custom` part.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct CustomDelta<'a> {
    pub(crate) name: Option<Cow<'a, str>>,
    pub(crate) input: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for ToolCallDelta<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        typed_json::object(d)
    }
}

/// `impl Fields for $ty`: each `"key" => read` arm reads that key's value with `map`
/// (the struct is `this`); other keys are left unread.
macro_rules! fields {
    ($ty:ident, |$this:ident, $map:ident| { $($key:literal => $read:expr,)* }) => {
        impl<'de> Fields<'de> for $ty<'de> {
            fn field<A: MapAccess<'de>>(&mut self, key: &str, $map: &mut A) -> Result<bool, A::Error> {
                let $this = self;
                match key {
                    $($key => $read,)*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

fields!(Chunk, |this, map| {
    "id" => this.id = str_field(map)?,
    "model" => this.model = str_field(map)?,
    "usage" => this.usage = map.next_value()?,
    "choices" => map.next_value_seed(first_of(&mut this.choice))?,
    "error" => this.error = map.next_value::<Option<Any>>()?.is_some(),
});

fields!(Choice, |this, map| {
    "usage" => this.usage = map.next_value()?,
    "finish_reason" => this.finish_reason = str_field(map)?,
    "delta" => map.next_value_seed(optional(&mut this.delta))?,
});

fields!(Delta, |this, map| {
    "content" => this.content = str_field(map)?,
    "reasoning_content" => this.reasoning_content = str_field(map)?,
    "reasoning" => this.reasoning = str_field(map)?,
    "reasoning_text" => this.reasoning_text = str_field(map)?,
    "reasoning_details" => this.reasoning_details = map.next_value()?,
    "tool_calls" => this.tool_calls = map.next_value()?,
});

fields!(ToolCallDelta, |this, map| {
    "id" => this.id = str_field(map)?,
    "index" => this.index = map.next_value()?,
    "function" => map.next_value_seed(optional(&mut this.function))?,
    "custom" => map.next_value_seed(optional(&mut this.custom))?,
});

fields!(CustomDelta, |this, map| {
    "name" => this.name = str_field(map)?,
    "input" => this.input = str_field(map)?,
});

fields!(FunctionDelta, |this, map| {
    "name" => this.name = str_field(map)?,
    "arguments" => this.arguments = str_field(map)?,
});

impl<'a> Chunk<'a> {
    /// The typed read of an event's data; `None` when it refuses the text (a field of
    /// another type, a non-object, bad JSON) or the chunk carries an `error`.
    /// (The usual chunks are read by `chunk_scan` first, with the same result whenever both
    /// read a text; this read takes what it declines.)
    pub(crate) fn typed_read(data: &'a str) -> Option<Self> {
        let mut chunk = Chunk::default();
        (typed_json::from_str(data, &mut chunk).is_ok() && !chunk.error).then_some(chunk)
    }

    /// The same fields as the typed read, looked up in a parsed chunk of any shape the way
    /// the provider always read them (a field of another type counts as absent).
    pub(crate) fn from_value(v: &'a Value) -> Self {
        let s = |v: &'a Value, k: &str| v.get(k).and_then(Value::as_str).map(Cow::Borrowed);
        let boxed = |v: &Value, k: &str| v.get(k).cloned().map(Box::new);
        let array = |v: &'a Value, k: &str| v.get(k).and_then(Value::as_array);
        let call = |c: &'a Value| ToolCallDelta {
            id: s(c, "id"),
            index: c.get("index").and_then(Value::as_i64),
            function: c
                .get("function")
                .filter(|f| !f.is_null())
                .map(|f| FunctionDelta {
                    name: s(f, "name"),
                    arguments: s(f, "arguments"),
                }),
            custom: c
                .get("custom")
                .filter(|f| !f.is_null())
                .map(|f| CustomDelta {
                    name: s(f, "name"),
                    input: s(f, "input"),
                }),
        };
        let delta = |d: &'a Value| Delta {
            content: s(d, "content"),
            reasoning_content: s(d, "reasoning_content"),
            reasoning: s(d, "reasoning"),
            reasoning_text: s(d, "reasoning_text"),
            reasoning_details: boxed(d, "reasoning_details"),
            tool_calls: array(d, "tool_calls").map(|calls| calls.iter().map(call).collect()),
        };
        let choice = |c: &'a Value| Choice {
            usage: boxed(c, "usage"),
            finish_reason: s(c, "finish_reason"),
            delta: c.get("delta").filter(|d| d.is_object()).map(delta),
        };
        Chunk {
            id: s(v, "id"),
            model: s(v, "model"),
            usage: boxed(v, "usage"),
            choice: array(v, "choices").and_then(|a| a.first()).map(choice),
            error: false,
        }
    }
}
