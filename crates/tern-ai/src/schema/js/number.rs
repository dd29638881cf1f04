//! JS number semantics: `Number(s)`, `trim()`, and numbers as JSON.

use serde_json::Value;

use crate::schema::keywords::MAX_DEPTH;
use crate::schema::number::num_f64;

/// The nesting depth of a value, measured without recursion.
pub(crate) fn value_depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

/// Numbers as JSON would carry them out of JS: integral values up to 2^53 as integers.
pub(crate) fn normalize_numbers(v: Value, depth: usize) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => num_value(num_f64(&n)),
        Value::Array(a) if depth <= MAX_DEPTH => Value::Array(
            a.into_iter()
                .map(|x| normalize_numbers(x, depth + 1))
                .collect(),
        ),
        Value::Object(m) if depth <= MAX_DEPTH => Value::Object(
            m.into_iter()
                .map(|(k, x)| (k, normalize_numbers(x, depth + 1)))
                .collect(),
        ),
        other => other,
    }
}

/// A JS number as a JSON value: integral values up to 2^53 as integers (-0 as 0).
pub(crate) fn num_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 {
        return Value::from(x as i64);
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// JS white space and line terminators, as `trim()` and `Number()` strip them.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JS `Number(s)` for a string: decimal, `0x`/`0o`/`0b`, `Infinity`; NaN otherwise.
pub(crate) fn js_string_to_number(s: &str) -> f64 {
    let t = js_trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let bytes = t.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => Some(16),
            b'o' | b'O' => Some(8),
            b'b' | b'B' => Some(2),
            _ => None,
        };
        if let Some(radix) = radix {
            let mut x = 0.0f64;
            for c in t[2..].chars() {
                match c.to_digit(radix) {
                    Some(d) => x = x * f64::from(radix) + f64::from(d),
                    None => return f64::NAN,
                }
            }
            return x;
        }
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    if !is_decimal_literal(t) {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`
pub(crate) fn is_decimal_literal(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}
