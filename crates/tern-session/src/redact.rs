//! Redaction of known keys from text: the one place that decides how a key is found and
//! what replaces it, for the session writer and for every other text a host writes.
//!
//! ```
//! use tern_session::redact::redact;
//! let keys = ["sk-live-123456".to_string()];
//! assert_eq!(redact(&keys, "key sk-live-123456 refused"), "key [redacted] refused");
//! ```

use std::borrow::Cow;

/// What a key is replaced with.
pub const MASK: &str = "[redacted]";

/// `text` with each of `keys` replaced by [`MASK`], as written and as JSON spells it inside a
/// string (a key with a quote or a backslash in a serialized line). Pass the keys longest
/// first, so a key that contains another is replaced whole; text without a key is returned
/// borrowed.
pub fn redact<'a>(keys: &[String], text: &'a str) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for key in keys.iter().filter(|k| !k.is_empty()) {
        if out.contains(key.as_str()) {
            out = Cow::Owned(out.replace(key.as_str(), MASK));
        }
        let spelled = serde_json::to_string(key).unwrap_or_default();
        let spelled = spelled.trim_matches('"');
        if spelled != key && !spelled.is_empty() && out.contains(spelled) {
            out = Cow::Owned(out.replace(spelled, MASK));
        }
    }
    out
}

/// `keys` ordered for [`redact`]: longest first, duplicates and empty ones gone.
pub fn ordered(mut keys: Vec<String>) -> Vec<String> {
    keys.retain(|k| !k.is_empty());
    keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_longest_first_and_as_json_spells_them() {
        let keys = ordered(vec![
            "sk-abcdef".into(),
            "sk-abcdef-long".into(),
            "k\"q".into(),
        ]);
        assert_eq!(
            redact(&keys, "a sk-abcdef-long b sk-abcdef c"),
            "a [redacted] b [redacted] c"
        );
        assert_eq!(redact(&keys, r#"{"t":"k\"q"}"#), r#"{"t":"[redacted]"}"#);
        assert!(matches!(redact(&keys, "clean"), Cow::Borrowed(_)));
    }
}
