//! The type names a schema's `type` keyword may hold.

use serde_json::Value;

use super::number::is_integer;

/// A `type` name pi-schema knows: the seven JSON types and three JS ones without JSON values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Number,
    Integer,
    Boolean,
    Null,
    Array,
    Object,
    /// JS `Uint8Array`: no JSON value has it.
    Bytes,
    /// JS `bigint`: no JSON value has it.
    BigInt,
    /// JS `undefined`: no JSON value has it.
    Undefined,
}

impl Kind {
    /// The kind a `type` name stands for; None for a name pi-schema does not know.
    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "string" => Kind::String,
            "number" => Kind::Number,
            "integer" => Kind::Integer,
            "boolean" => Kind::Boolean,
            "null" => Kind::Null,
            "array" => Kind::Array,
            "object" => Kind::Object,
            "bytes" => Kind::Bytes,
            "bigint" => Kind::BigInt,
            "undefined" => Kind::Undefined,
            _ => return None,
        })
    }

    /// The most specific kind of a JSON value (an integral number is an `integer`).
    pub(crate) fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Boolean,
            Value::Number(_) if is_integer(v) => Kind::Integer,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    /// The name as messages show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Integer => "integer",
            Kind::Boolean => "boolean",
            Kind::Null => "null",
            Kind::Array => "array",
            Kind::Object => "object",
            Kind::Bytes => "bytes",
            Kind::BigInt => "bigint",
            Kind::Undefined => "undefined",
        }
    }

    /// Whether `v` is of this kind.
    pub(crate) fn matches(self, v: &Value) -> bool {
        match self {
            Kind::String => v.is_string(),
            Kind::Number => v.is_number(),
            Kind::Integer => is_integer(v),
            Kind::Boolean => v.is_boolean(),
            Kind::Null => v.is_null(),
            Kind::Array => v.is_array(),
            Kind::Object => v.is_object(),
            Kind::Bytes | Kind::BigInt | Kind::Undefined => false,
        }
    }

    /// Whether `v` has the type `name` (a name pi-schema does not know matches nothing).
    pub(crate) fn name_matches(name: &str, v: &Value) -> bool {
        Kind::parse(name).is_some_and(|k| k.matches(v))
    }

    /// Whether `v` satisfies a `type` keyword: one name or a list of names.
    pub(crate) fn keyword_matches(t: &Value, v: &Value) -> bool {
        match t {
            Value::String(t) => Kind::name_matches(t, v),
            Value::Array(list) => list
                .iter()
                .any(|t| t.as_str().is_some_and(|t| Kind::name_matches(t, v))),
            _ => false,
        }
    }
}
