//! Token counts and cost of a response, and the number format the reference writes.

use serde::{Deserialize, Serialize, Serializer};

/// Token counts and cost of one response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from cache.
    #[serde(default)]
    pub input: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to cache.
    #[serde(default)]
    pub cache_write: u64,
    /// Part of `cache_write` written with 1-hour retention (Anthropic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Reasoning tokens, a subset of `output`, when the provider reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// The provider's total.
    #[serde(default)]
    pub total_tokens: u64,
    /// Cost in dollars.
    #[serde(default)]
    pub cost: Cost,
}

impl Usage {
    /// `input + output + cache_read + cache_write`, the total the reference computes when a
    /// provider reports none. The counts come from the wire, so the sum saturates instead of
    /// overflowing.
    ///
    /// ```
    /// let usage = tern_ai::Usage { input: 3, output: 4, cache_read: u64::MAX, ..Default::default() };
    /// assert_eq!(usage.token_sum(), u64::MAX);
    /// ```
    pub fn token_sum(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

/// The [`Usage`] of an assistant message as the message stores it: nothing when every count
/// and cost is zero (a scripted, aborted or failed response), else one box.
///
/// It reads as a `Usage` (it derefs to one; an empty one reads as zeros) and changes as one
/// (the first change allocates), and builds from one with `.into()`.
///
/// ```
/// use tern_ai::message::UsageBox;
/// use tern_ai::Usage;
/// let mut u = UsageBox::from(Usage::default());
/// assert!(u.is_zero());
/// u.input = 3; // stored from here on
/// assert_eq!(u.input, 3);
/// assert_eq!(u, Usage { input: 3, ..Usage::default() });
/// ```
#[derive(Clone, Default)]
pub struct UsageBox(Option<Box<Usage>>);

/// The usage an empty [`UsageBox`] reads as.
static ZERO: Usage = Usage {
    input: 0,
    output: 0,
    cache_read: 0,
    cache_write: 0,
    cache_write_1h: None,
    reasoning: None,
    total_tokens: 0,
    cost: Cost {
        input: 0.0,
        output: 0.0,
        cache_read: 0.0,
        cache_write: 0.0,
        total: 0.0,
        total_from_provider: None,
    },
};

impl UsageBox {
    /// Whether nothing is stored (the usage reads as all zero).
    pub fn is_zero(&self) -> bool {
        self.0.is_none()
    }

    /// The usage itself.
    pub fn into_usage(self) -> Usage {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

impl From<Usage> for UsageBox {
    fn from(usage: Usage) -> Self {
        UsageBox((usage != ZERO).then(|| Box::new(usage)))
    }
}

impl From<&Usage> for UsageBox {
    fn from(usage: &Usage) -> Self {
        UsageBox((*usage != ZERO).then(|| Box::new(usage.clone())))
    }
}

impl From<UsageBox> for Usage {
    fn from(usage: UsageBox) -> Self {
        usage.into_usage()
    }
}

impl std::ops::Deref for UsageBox {
    type Target = Usage;
    fn deref(&self) -> &Usage {
        self.0.as_deref().unwrap_or(&ZERO)
    }
}

impl std::ops::DerefMut for UsageBox {
    fn deref_mut(&mut self) -> &mut Usage {
        self.0.get_or_insert_with(Default::default)
    }
}

impl PartialEq for UsageBox {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Usage> for UsageBox {
    fn eq(&self, other: &Usage) -> bool {
        **self == *other
    }
}

impl std::fmt::Debug for UsageBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for UsageBox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Usage::serialize(&**self, s)
    }
}

impl<'de> Deserialize<'de> for UsageBox {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Usage::deserialize(d).map(UsageBox::from)
    }
}

/// Cost of one response in dollars. Written as JavaScript writes numbers: a whole amount
/// without a fraction (`0`, not `0.0`).
///
/// ```
/// let cost = tern_ai::Cost { output: 0.5, total: 2.0, ..Default::default() };
/// assert_eq!(
///     serde_json::to_string(&cost).unwrap(),
///     r#"{"input":0,"output":0.5,"cacheRead":0,"cacheWrite":0,"total":2}"#
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Catalog-derived input cost.
    #[serde(default, serialize_with = "js_number")]
    pub input: f64,
    /// Catalog-derived output cost.
    #[serde(default, serialize_with = "js_number")]
    pub output: f64,
    /// Catalog-derived cache-read cost.
    #[serde(default, serialize_with = "js_number")]
    pub cache_read: f64,
    /// Catalog-derived cache-write cost.
    #[serde(default, serialize_with = "js_number")]
    pub cache_write: f64,
    /// Billed total when the provider reports it, else the catalog estimate.
    #[serde(default, serialize_with = "js_number")]
    pub total: f64,
    /// True when `total` is the provider's billed cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
}

/// Writes a number as `JSON.stringify` does: a whole number below 2^53 as an integer
/// (`-0` as `0`), anything else as a float (NaN and infinities as `null`, like JavaScript).
pub fn js_number<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    // 2^53: beyond it a float is not an exact integer in JavaScript either.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if v.fract() == 0.0 && v.abs() < EXACT {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(v: f64) -> String {
        let mut out = Vec::new();
        js_number(&v, &mut serde_json::Serializer::new(&mut out)).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        // Expected texts are what `JSON.stringify` prints for the same numbers.
        assert_eq!(js(0.0), "0");
        assert_eq!(js(-0.0), "0");
        assert_eq!(js(3.0), "3");
        assert_eq!(js(-12.0), "-12");
        assert_eq!(js(0.0012), "0.0012");
        assert_eq!(js(0.501), "0.501");
        assert_eq!(js(f64::NAN), "null");
        assert_eq!(js(f64::INFINITY), "null");
    }

    #[test]
    fn a_zero_usage_is_not_stored_and_reads_as_zeros() {
        let zero = UsageBox::from(Usage::default());
        assert!(zero.is_zero());
        assert_eq!(
            serde_json::to_string(&zero).unwrap(),
            serde_json::to_string(&Usage::default()).unwrap()
        );
        let mut u: UsageBox = serde_json::from_str(r#"{"output":2}"#).unwrap();
        assert!(!u.is_zero());
        assert_eq!(u.output, 2);
        u.cost.total = 0.5;
        assert_eq!(u.clone().into_usage().cost.total, 0.5);
        assert_ne!(u, zero);
    }
}
