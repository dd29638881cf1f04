//! Number keywords: JSON types of numbers, bounds and `multipleOf`.

use serde_json::Value;

use crate::schema::explain::{verr, VErr};
use crate::schema::js::string::js_number_string;
use crate::schema::keywords::num_kw;
use crate::schema::JsonMap;

/// A number keyword: its name, the comparison shown in its message, and the test.
type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

pub(crate) fn num_f64(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

pub(crate) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64() || n.is_u64() || num_f64(n).fract() == 0.0,
        _ => false,
    }
}

pub(crate) fn number_ok(o: &JsonMap, x: f64) -> bool {
    num_kw(o, "minimum").is_none_or(|m| x >= m)
        && num_kw(o, "maximum").is_none_or(|m| x <= m)
        && num_kw(o, "exclusiveMinimum").is_none_or(|m| x > m)
        && num_kw(o, "exclusiveMaximum").is_none_or(|m| x < m)
        && num_kw(o, "multipleOf").is_none_or(|d| is_multiple(x, d))
}

pub(crate) fn walk_number(o: &JsonMap, x: f64, path: &str, out: &mut Vec<VErr>) {
    let checks: [Bound; 4] = [
        ("minimum", ">=", |x, m| x >= m),
        ("maximum", "<=", |x, m| x <= m),
        ("exclusiveMinimum", ">", |x, m| x > m),
        ("exclusiveMaximum", "<", |x, m| x < m),
    ];
    for (k, op, pass) in checks {
        if let Some(m) = num_kw(o, k) {
            if !pass(x, m) {
                out.push(verr(
                    path,
                    &format!("expected {op} {}", js_number_string(m)),
                ));
            }
        }
    }
    if let Some(d) = num_kw(o, "multipleOf") {
        if !is_multiple(x, d) {
            out.push(verr(
                path,
                &format!("expected a multiple of {}", js_number_string(d)),
            ));
        }
    }
}

/// Whether `v` is a multiple of `d`, exactly for decimals (0.0075 / 0.0001 is not 75 in floats).
pub(crate) fn is_multiple(v: f64, d: f64) -> bool {
    let q = v / d;
    if q.is_finite() && q.fract() == 0.0 {
        return true;
    }
    if !q.is_finite() {
        return v % d == 0.0;
    }
    let (Some((vc, ve)), Some((dc, de))) = (decimal(v), decimal(d)) else {
        return false;
    };
    if dc == 0 {
        return false;
    }
    if ve >= de {
        // (vc * 10^k) mod dc, without overflow: dc < 10^21, so r * 10 fits in u128.
        let mut r = vc % dc;
        for _ in 0..(ve - de) {
            r = (r * 10) % dc;
        }
        r == 0
    } else {
        if vc == 0 {
            return true;
        }
        let mut m = dc;
        for _ in 0..(de - ve) {
            match m.checked_mul(10) {
                Some(n) => m = n,
                None => return false,
            }
        }
        vc % m == 0
    }
}

/// `|x|` as decimal digits and an exponent, from its shortest JS text.
pub(crate) fn decimal(x: f64) -> Option<(u128, i64)> {
    let text = js_number_string(x.abs());
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().ok()?),
        None => (text.as_str(), 0),
    };
    let fraction = mantissa.find('.').map_or(0, |p| mantissa.len() - p - 1) as i64;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    Some((digits.parse::<u128>().ok()?, exponent - fraction))
}
