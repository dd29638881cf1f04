//! Tool names as models see them: `mcp__<server>__<tool>`, as pi and codex build them.

use sha2::{Digest, Sha256};

/// Providers accept at most 64 characters of `[A-Za-z0-9_-]` in a tool name.
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// `mcp__<server>__<tool>` with every character but `[A-Za-z0-9_]` replaced by `_`; a name
/// over 64 characters, or one `is_taken` reports as used by another tool, is cut and gets an
/// 8-digit hash of server and tool, so two tools never share a name.
///
/// ```
/// use tern_mcp::naming::mcp_tool_name;
/// assert_eq!(mcp_tool_name("every-thing", "get-sum", |_| false), "mcp__every_thing__get_sum");
/// let long = mcp_tool_name("s", &"x".repeat(80), |_| false);
/// assert_eq!(long.len(), 64);
/// let taken = mcp_tool_name("s", "a-b", |n| n == "mcp__s__a_b");
/// assert!(taken.starts_with("mcp__s__a_b_") && taken.len() == "mcp__s__a_b_".len() + 8);
/// ```
pub fn mcp_tool_name(server: &str, tool: &str, is_taken: impl Fn(&str) -> bool) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() <= MAX_TOOL_NAME_LENGTH && !is_taken(&name) {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // The name is ASCII, so any byte index is a character boundary.
    let keep = (MAX_TOOL_NAME_LENGTH - hash.len() - 1).min(name.len());
    format!("{}_{hash}", &name[..keep])
}

/// The prefix of a server's tool names: `mcp__<server>` with `-` as `_`.
///
/// ```
/// assert_eq!(tern_mcp::naming::mcp_namespace("dev-radius"), "mcp__dev_radius");
/// ```
pub fn mcp_namespace(server: &str) -> String {
    format!("mcp__{}", server.replace('-', "_"))
}
