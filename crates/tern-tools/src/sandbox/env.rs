//! The environment a sandboxed command sees: tern's own, less the variables that hold secrets.

use std::ffi::{OsStr, OsString};

/// The provider key variables tern reads (each is also caught by [`is_secret`]'s patterns;
/// listed so a reader sees them named).
pub const PROVIDER_KEYS: &[&str] = &[
    "AI_GATEWAY_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_OAUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "CEREBRAS_API_KEY",
    "DEEPSEEK_API_KEY",
    "FIREWORKS_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MINIMAX_API_KEY",
    "MISTRAL_API_KEY",
    "MOONSHOT_API_KEY",
    "NVIDIA_API_KEY",
    "OPENAI_API_KEY",
    "OPENCODE_API_KEY",
    "OPENROUTER_API_KEY",
    "TOGETHER_API_KEY",
    "XAI_API_KEY",
    "ZAI_API_KEY",
];

/// Parts of a variable name (any case) that mark it as a secret.
const SECRET_MARKS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether a variable probably holds a secret: a provider key, a name containing KEY,
/// SECRET, TOKEN, PASSWORD, PASSWD or CREDENTIAL in any case, or `SSH_AUTH_SOCK` (the
/// socket that signs with the user's SSH keys).
///
/// ```
/// use tern_tools::sandbox::env::is_secret;
/// assert!(is_secret("OPENAI_API_KEY") && is_secret("github_token") && is_secret("DbPassword"));
/// assert!(!is_secret("PATH") && !is_secret("HOME"));
/// ```
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    PROVIDER_KEYS.contains(&upper.as_str())
        || upper == "SSH_AUTH_SOCK"
        || SECRET_MARKS.iter().any(|m| upper.contains(m))
}

/// `vars` without the secrets, except those named in `pass` (exact names).
///
/// ```
/// use std::ffi::OsString;
/// use tern_tools::sandbox::env::filtered;
/// let vars = [("PATH", "/bin"), ("OPENAI_API_KEY", "sk"), ("NPM_TOKEN", "t")]
///     .map(|(k, v)| (OsString::from(k), OsString::from(v)));
/// let kept: Vec<_> = filtered(vars, &["NPM_TOKEN".into()]).into_iter().map(|(k, _)| k).collect();
/// assert_eq!(kept, ["PATH", "NPM_TOKEN"]);
/// ```
pub fn filtered(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| keep(name, pass))
        .collect()
}

fn keep(name: &OsStr, pass: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        // A name that is not UTF-8 cannot be judged: drop it.
        return false;
    };
    pass.iter().any(|p| p == name) || !is_secret(name)
}
