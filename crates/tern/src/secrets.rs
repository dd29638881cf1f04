//! The keys tern knows (`--api-key`, the config's `api_key`, the provider key variables of
//! the environment), and their redaction from every text tern writes: stderr, stdout (event
//! lines, RPC output, answers), session files and error messages.
//!
//! The set is filled once at start-up ([`init`]) and read through [`redact`] wherever text
//! leaves the process, so no writer can forget a key it was not handed.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

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
    let keys = tern_session::redact::ordered(keys);
    SECRETS.get_or_init(|| keys.into()).clone()
}

/// `text` with every known key replaced by `[redacted]` ([`tern_session::redact`]).
///
/// ```ignore
/// secrets::init(&[Some("sk-live-123456")]);
/// assert_eq!(secrets::redact("key sk-live-123456 refused"), "key [redacted] refused");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    tern_session::redact::redact(SECRETS.get().map(|s| &s[..]).unwrap_or(&[]), text)
}

/// Prints a line on stderr, keys redacted.
macro_rules! eprintln_redacted {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::secrets::redact(&format!($($arg)*)))
    };
}
pub(crate) use eprintln_redacted;
