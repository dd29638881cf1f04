//! JS value semantics: equality, uniqueness, property order.

use std::collections::HashSet;

use serde_json::Value;

use crate::schema::js::string::{js_number_string, js_stringify, write_json_string};
use crate::schema::keywords::MAX_DEPTH;
use crate::schema::number::num_f64;
use crate::schema::JsonMap;

/// JS `===` for JSON values: primitives by value, objects and arrays never (distinct objects).
pub(crate) fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => num_f64(x) == num_f64(y),
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

/// JSON equality as `const`, `enum` and `uniqueItems` compare (key order does not matter).
pub(crate) fn deep_equal(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q, depth + 1))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| deep_equal(p, q, depth + 1)))
        }
        _ => strict_eq(a, b),
    }
}

/// Whether all items differ, by a canonical text per item (linear instead of pairwise).
pub(crate) fn unique(items: &[Value]) -> bool {
    let mut seen = HashSet::with_capacity(items.len());
    items.iter().all(|x| {
        let mut key = String::new();
        canonical(x, &mut key, 0);
        seen.insert(key)
    })
}

pub(crate) fn canonical(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out, depth + 1);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                write_json_string(out, k);
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out, depth + 1);
                }
                out.push(',');
            }
            out.push('}');
        }
        Value::Number(n) => out.push_str(&js_number_string(num_f64(n))),
        other => out.push_str(&js_stringify(other, false)),
    }
}

/// A canonical array index key (`"0"`..`"4294967294"`): JS orders those keys first, ascending.
pub(crate) fn array_index(k: &str) -> Option<u32> {
    if k.is_empty()
        || k.len() > 10
        || (k.len() > 1 && k.starts_with('0'))
        || !k.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let n: u64 = k.parse().ok()?;
    u32::try_from(n).ok().filter(|n| *n != u32::MAX)
}

/// Object entries in JS property order: array-index keys ascending, then insertion order.
pub(crate) fn js_entries(m: &JsonMap) -> Vec<(&String, &Value)> {
    let mut indexed = Vec::new();
    let mut rest = Vec::with_capacity(m.len());
    for (k, v) in m {
        match array_index(k) {
            Some(i) => indexed.push((i, k, v)),
            None => rest.push((k, v)),
        }
    }
    if indexed.is_empty() {
        return rest;
    }
    indexed.sort_by_key(|e| e.0);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(rest)
        .collect()
}

pub(crate) fn js_key_list(m: &JsonMap) -> Vec<String> {
    js_entries(m).into_iter().map(|(k, _)| k.clone()).collect()
}
