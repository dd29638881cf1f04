//! The single-value conversion rules (TypeBox's `Value.Convert`, Ajv's `coerceTypes`).

use serde_json::Value;

use crate::schema::js::number::{js_string_to_number, js_trim, num_value};
use crate::schema::js::string::js_number_string;
use crate::schema::js::value::strict_eq;
use crate::schema::kind::Kind;
use crate::schema::number::num_f64;

// --- conversions (TypeBox's Value.Convert rules) ---------------------------------------------

/// `Some(new)` when `new` differs from `old` (JS `!==` on primitives).
pub(crate) fn changed(new: Value, old: &Value) -> Option<Value> {
    (!strict_eq(&new, old)).then_some(new)
}

/// A `const`/`enum` literal taken from a value of another type that converts to exactly it.
pub(crate) fn convert_literal(literal: &Value, value: &Value) -> Option<Value> {
    if strict_eq(literal, value) {
        return None;
    }
    let result = match literal {
        Value::String(_) => try_string(value),
        Value::Number(_) => try_number(value).map(num_value),
        Value::Bool(_) => try_boolean(value).map(Value::Bool),
        _ => None,
    }?;
    strict_eq(&result, literal).then(|| literal.clone())
}

pub(crate) fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(js_number_string(num_f64(n)))),
        Value::Null => Some(Value::String("null".to_string())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

pub(crate) const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

pub(crate) fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => Some(num_f64(n)),
        Value::Null => Some(0.0),
        Value::String(s) => {
            let x = js_string_to_number(s);
            if x.is_finite() {
                return Some(x);
            }
            match s.to_lowercase().as_str() {
                "false" => return Some(0.0),
                "true" => return Some(1.0),
                _ => {}
            }
            // TypeBox's BigInt form: `12n` (the other integer forms already parsed above).
            let digits = s.strip_suffix('n')?;
            let unsigned = digits.strip_prefix('-').unwrap_or(digits);
            let canonical = unsigned == "0"
                || (!unsigned.is_empty()
                    && !unsigned.starts_with('0')
                    && unsigned.bytes().all(|c| c.is_ascii_digit()));
            if !canonical || unsigned.len() > 16 {
                return None;
            }
            let x: f64 = digits.parse::<i64>().ok()? as f64;
            (x.abs() <= MAX_SAFE).then_some(x)
        }
        _ => None,
    }
}

pub(crate) fn try_boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => {
            let x = num_f64(n);
            if x == 0.0 {
                Some(false)
            } else if x == 1.0 {
                Some(true)
            } else {
                None
            }
        }
        Value::Null => Some(false),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(false)
            } else if lower == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

pub(crate) fn try_null(v: &Value) -> Option<()> {
    let ok = match v {
        Value::Bool(b) => !*b,
        Value::Number(n) => num_f64(n) == 0.0,
        Value::Null => true,
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    };
    ok.then_some(())
}

// --- primitive coercion by type (Ajv's coerceTypes) ------------------------------------------

/// Ajv's coercion of a primitive `v` to type `k`; None when that type takes no such value.
pub(crate) fn coerce_primitive(v: &Value, k: Kind) -> Option<Value> {
    match k {
        Kind::Number | Kind::Integer => match v {
            Value::Null => Some(Value::from(0)),
            Value::String(s) if !js_trim(s).is_empty() => {
                let x = js_string_to_number(s);
                let accepted = if k == Kind::Number {
                    x.is_finite()
                } else {
                    x.is_finite() && x.fract() == 0.0
                };
                accepted.then(|| num_value(x))
            }
            Value::Bool(b) => Some(Value::from(u8::from(*b))),
            _ => None,
        },
        Kind::Boolean => match v {
            Value::Null => Some(Value::Bool(false)),
            Value::String(s) if s == "true" => Some(Value::Bool(true)),
            Value::String(s) if s == "false" => Some(Value::Bool(false)),
            Value::Number(n) if num_f64(n) == 1.0 => Some(Value::Bool(true)),
            Value::Number(n) if num_f64(n) == 0.0 => Some(Value::Bool(false)),
            _ => None,
        },
        Kind::String => match v {
            Value::Null => Some(Value::String(String::new())),
            Value::Number(n) => Some(Value::String(js_number_string(num_f64(n)))),
            Value::Bool(b) => Some(Value::String(b.to_string())),
            _ => None,
        },
        Kind::Null => match v {
            Value::String(s) if s.is_empty() => Some(Value::Null),
            Value::Number(n) if num_f64(n) == 0.0 => Some(Value::Null),
            Value::Bool(false) => Some(Value::Null),
            _ => None,
        },
        _ => None,
    }
}
