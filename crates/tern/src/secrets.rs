//! The keys tern knows (`--api-key`, the config's `api_key`, the provider key variables of
//! the environment), and their redaction from every text tern writes: stderr, stdout (event
//! lines, RPC output, answers), session files and error messages.
//!
//! The set is filled once at start-up ([`init`]) and read through [`redact`] wherever text
//! leaves the process, so no writer can forget a key it was not handed.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

/// What a key is replaced with.
pub const MASK: &str = "[redacted]";

/// Keys shorter than this are not redacted: replacing a two-letter "key" would mangle text
/// and protect nothing.
const MIN_SECRET_LEN: usize = 6;

static SECRETS: OnceLock<Arc<[String]>> = OnceLock::new();

/// Records the known keys: `explicit` ones (flag, config) and the provider key variables set
/// in the environment. Later calls keep the first set.
pub fn init(explicit: &[Option<&str>]) -> Arc<[String]> {
    let mut keys: Vec<String> = explicit.iter().flatten().map(|k| k.to_string()).collect();
    for var in tern_tools::sandbox::env::PROVIDER_KEYS {
        if let Ok(v) = std::env::var(var) {
            keys.push(v);
        }
    }
    keys.retain(|k| k.trim().len() >= MIN_SECRET_LEN);
    // Longest first, so a key that contains another is replaced whole.
    keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
    keys.dedup();
    SECRETS.get_or_init(|| keys.into()).clone()
}

/// `text` with every known key replaced by [`MASK`].
///
/// ```ignore
/// secrets::init(&[Some("sk-live-123456")]);
/// assert_eq!(secrets::redact("key sk-live-123456 refused"), "key [redacted] refused");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_with(SECRETS.get().map(|s| &s[..]).unwrap_or(&[]), text)
}

/// `text` with each of `keys` replaced by [`MASK`].
pub fn redact_with<'a>(keys: &[String], text: &'a str) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for k in keys {
        if out.contains(k.as_str()) {
            out = Cow::Owned(out.replace(k.as_str(), MASK));
        }
    }
    out
}

/// Prints a line on stderr, keys redacted.
macro_rules! eprintln_redacted {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::secrets::redact(&format!($($arg)*)))
    };
}
pub(crate) use eprintln_redacted;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_longest_first() {
        let keys = vec!["sk-abcdef-long".to_string(), "sk-abcdef".to_string()];
        assert_eq!(
            redact_with(&keys, "a sk-abcdef-long b sk-abcdef c"),
            "a [redacted] b [redacted] c"
        );
        assert!(matches!(redact_with(&keys, "clean"), Cow::Borrowed(_)));
    }
}
