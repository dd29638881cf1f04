//! Which tools are declared: pi's `--tools` (an allowlist of names and `*` patterns, or only
//! `+name`/`-name` edits of the default selection), `--exclude-tools`, `--no-tools`,
//! `--no-builtin-tools`, and the config's `tools` (pi's `defaultTools`).
//!
//! ```text
//! default            read, bash, edit, write   (pi's; the config's `tools` replaces or edits it)
//! --tools read,ls    read, ls                  (MCP tools kept: no entry starts with mcp__)
//! --tools +ls,-bash  read, edit, write, ls
//! --tools 'read,mcp__github__*'                read and the github server's tools only
//! --exclude-tools 'mcp__*,bash'                applied last, MCP tools included
//! --no-tools         nothing (a --tools list then names all there is)
//! --no-builtin-tools no built-in tool; MCP tools kept
//! ```

use crate::usage_error::UsageError;

/// Every built-in tool name, in pi's order.
pub const TOOL_NAMES: [&str; 7] = ["read", "write", "edit", "bash", "ls", "grep", "find"];
/// pi's default tools.
pub const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];
/// The built-in tools that change files or run commands.
pub const MUTATING_TOOLS: [&str; 3] = ["write", "edit", "bash"];

/// What `--no-tools` and `--no-builtin-tools` turn off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoTools {
    /// Neither flag.
    #[default]
    Keep,
    /// `--no-builtin-tools`: the built-in tools; MCP tools stay.
    Builtin,
    /// `--no-tools`: every tool, MCP tools included.
    All,
}

/// The tool flags as given.
#[derive(Clone, Debug, Default)]
pub struct ToolFlags<'a> {
    /// `--tools` (or the tools a recovered or replayed session declared).
    pub tools: Option<&'a str>,
    /// The config's `tools`: the default selection, or edits of pi's.
    pub defaults: Option<&'a str>,
    /// `--exclude-tools`.
    pub exclude: Option<&'a str>,
    /// `--no-tools` / `--no-builtin-tools`.
    pub no_tools: NoTools,
}

/// The resolved selection: the built-in tools, in pi's order, and which other (MCP) tools
/// are declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSelection {
    /// Built-in tool names, in [`TOOL_NAMES`] order.
    pub builtins: Vec<&'static str>,
    /// Which MCP tools are declared.
    mcp: McpFilter,
    /// `--exclude-tools` entries, applied to every tool last.
    exclude: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum McpFilter {
    /// Every MCP tool.
    All,
    /// None.
    None,
    /// Those an allowlist entry names or matches.
    Matching(Vec<String>),
}

/// Whether `name` is one of `entries` or matches one of their `*` patterns (pi's tool name
/// matcher: `*` is any run of characters, the rest is literal).
pub fn matches_any(entries: &[String], name: &str) -> bool {
    entries.iter().any(|e| glob_match(e, name))
}

fn glob_match(pattern: &str, name: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(mut tail) = name.strip_prefix(head) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('*').collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return tail.ends_with(part);
        }
        match tail.find(part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn entries(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn is_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// pi's check of a tool list: names and `+`/`-` edits do not mix, and edits take exact names.
fn list_error(flag: &str, list: &[String]) -> Result<(), UsageError> {
    let modifiers = list.iter().filter(|e| is_modifier(e)).count();
    if modifiers == 0 {
        return Ok(());
    }
    if modifiers < list.len() {
        return Err(UsageError(format!(
            "{flag}: tool names cannot be mixed with +name or -name entries"
        )));
    }
    if let Some(p) = list.iter().find(|e| e.contains('*')) {
        return Err(UsageError(format!(
            "{flag}: +name and -name entries take exact tool names, not patterns: {p}"
        )));
    }
    Ok(())
}

/// A built-in name, or a usage error that lists them (tern refuses a typo rather than
/// silently declaring fewer tools).
fn builtin(flag: &str, name: &str) -> Result<&'static str, UsageError> {
    TOOL_NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .ok_or_else(|| {
            UsageError(format!(
                "{flag}: unknown tool {name}; choose from {} (or `all`, `none`; MCP tools are mcp__SERVER__TOOL)",
                TOOL_NAMES.join(", ")
            ))
        })
}

/// `base` with pi's `+name`/`-name` edits applied in order.
fn apply_modifiers(
    flag: &str,
    base: &[&'static str],
    list: &[String],
) -> Result<Vec<&'static str>, UsageError> {
    let mut tools = base.to_vec();
    for e in list {
        let name = builtin(flag, &e[1..])?;
        let at = tools.iter().position(|t| *t == name);
        match (e.starts_with('+'), at) {
            (true, None) => tools.push(name),
            (false, Some(i)) => {
                tools.remove(i);
            }
            _ => {}
        }
    }
    Ok(tools)
}

/// The built-ins an allowlist names or matches; an entry that is neither a built-in, a pattern
/// matching one, nor an MCP name (`mcp__...`) is a usage error.
fn allowlisted(flag: &str, list: &[String]) -> Result<Vec<&'static str>, UsageError> {
    let mut tools = Vec::new();
    for e in list {
        if e == "all" {
            tools.extend(TOOL_NAMES);
        } else if e == "none" || e.starts_with("mcp__") {
            continue;
        } else if e.contains('*') {
            let hit: Vec<&str> = TOOL_NAMES
                .iter()
                .copied()
                .filter(|n| glob_match(e, n))
                .collect();
            if hit.is_empty() {
                return Err(UsageError(format!(
                    "{flag}: pattern {e} matches no tool; built-in tools are {}",
                    TOOL_NAMES.join(", ")
                )));
            }
            tools.extend(hit);
        } else {
            tools.push(builtin(flag, e)?);
        }
    }
    Ok(tools)
}

impl ToolSelection {
    /// Resolves the flags as pi does: the default selection (the config's `tools`, else
    /// [`DEFAULT_TOOLS`]), `--tools` replacing or editing it, then `--exclude-tools`.
    pub fn resolve(flags: &ToolFlags<'_>) -> Result<ToolSelection, UsageError> {
        let defaults = match flags.defaults.map(entries) {
            Some(list) => {
                list_error("the config's tools", &list)?;
                if list.iter().all(|e| is_modifier(e)) && !list.is_empty() {
                    apply_modifiers("the config's tools", &DEFAULT_TOOLS, &list)?
                } else {
                    allowlisted("the config's tools", &list)?
                }
            }
            None => DEFAULT_TOOLS.to_vec(),
        };
        let defaults = if flags.no_tools == NoTools::Keep {
            defaults
        } else {
            Vec::new()
        };
        let (builtins, mcp) = match flags.tools.map(entries) {
            Some(list) if !list.is_empty() && list.iter().all(|e| is_modifier(e)) => {
                list_error("--tools", &list)?;
                let tools = apply_modifiers("--tools", &defaults, &list)?;
                let mcp = if flags.no_tools == NoTools::All {
                    McpFilter::None
                } else {
                    McpFilter::All
                };
                (tools, mcp)
            }
            Some(list) => {
                list_error("--tools", &list)?;
                let tools = allowlisted("--tools", &list)?;
                let mcp_entries: Vec<String> = list
                    .iter()
                    .filter(|e| e.starts_with("mcp__"))
                    .cloned()
                    .collect();
                // pi keeps MCP tools unless an entry starts with mcp__; with --no-tools the
                // list is all there is.
                let mcp = if !mcp_entries.is_empty() {
                    McpFilter::Matching(mcp_entries)
                } else if flags.no_tools == NoTools::All {
                    McpFilter::None
                } else {
                    McpFilter::All
                };
                (tools, mcp)
            }
            None => {
                let mcp = if flags.no_tools == NoTools::All {
                    McpFilter::None
                } else {
                    McpFilter::All
                };
                (defaults, mcp)
            }
        };
        let exclude = flags.exclude.map(entries).unwrap_or_default();
        let builtins = TOOL_NAMES
            .iter()
            .copied()
            .filter(|n| builtins.contains(n) && !matches_any(&exclude, n))
            .collect();
        Ok(ToolSelection {
            builtins,
            mcp,
            exclude,
        })
    }

    /// Whether the MCP tool `name` is declared.
    pub fn declares_mcp(&self, name: &str) -> bool {
        let selected = match &self.mcp {
            McpFilter::All => true,
            McpFilter::None => false,
            McpFilter::Matching(list) => matches_any(list, name),
        };
        selected && !matches_any(&self.exclude, name)
    }

    /// The selected built-ins that change files or run commands.
    pub fn mutating(&self) -> Vec<&'static str> {
        self.builtins
            .iter()
            .copied()
            .filter(|t| MUTATING_TOOLS.contains(t))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(tools: Option<&str>, exclude: Option<&str>, no: NoTools) -> ToolSelection {
        ToolSelection::resolve(&ToolFlags {
            tools,
            defaults: None,
            exclude,
            no_tools: no,
        })
        .expect("valid")
    }

    fn pick(tools: Option<&str>, exclude: Option<&str>, no: NoTools) -> Vec<&'static str> {
        select(tools, exclude, no).builtins
    }

    #[test]
    fn defaults_and_edits_follow_pi() {
        assert_eq!(
            pick(None, None, NoTools::Keep),
            ["read", "write", "edit", "bash"]
        );
        assert_eq!(
            pick(Some("+ls,-bash"), None, NoTools::Keep),
            ["read", "write", "edit", "ls"]
        );
        assert_eq!(pick(Some("read,ls"), None, NoTools::Keep), ["read", "ls"]);
        assert_eq!(pick(Some("+grep"), None, NoTools::All), ["grep"]);
        assert_eq!(pick(None, None, NoTools::Builtin), Vec::<&str>::new());
        assert_eq!(
            pick(Some("all"), Some("b*,w*"), NoTools::Keep),
            ["read", "edit", "ls", "grep", "find"]
        );
        assert_eq!(pick(Some("*"), None, NoTools::Keep), TOOL_NAMES.to_vec());
    }

    #[test]
    fn bad_lists_are_usage_errors_in_pi_words() {
        let err = |tools: &str| {
            ToolSelection::resolve(&ToolFlags {
                tools: Some(tools),
                ..Default::default()
            })
            .expect_err("invalid")
            .0
        };
        assert_eq!(
            err("read,+ls"),
            "--tools: tool names cannot be mixed with +name or -name entries"
        );
        assert_eq!(
            err("+l*"),
            "--tools: +name and -name entries take exact tool names, not patterns: +l*"
        );
        assert!(err("raed").starts_with("--tools: unknown tool raed;"));
        assert!(err("x*").contains("matches no tool"));
    }

    #[test]
    fn mcp_tools_are_kept_unless_an_entry_names_them() {
        let sel = select;
        assert!(sel(Some("read"), None, NoTools::Keep).declares_mcp("mcp__a__x"));
        let only_a = sel(Some("read,mcp__a__*"), None, NoTools::Keep);
        assert!(only_a.declares_mcp("mcp__a__x") && !only_a.declares_mcp("mcp__b__x"));
        assert!(!sel(None, Some("mcp__*"), NoTools::Keep).declares_mcp("mcp__a__x"));
        assert!(!sel(None, None, NoTools::All).declares_mcp("mcp__a__x"));
        assert!(sel(None, None, NoTools::Builtin).declares_mcp("mcp__a__x"));
    }

    #[test]
    fn the_config_list_is_the_default_selection() {
        let s = ToolSelection::resolve(&ToolFlags {
            tools: Some("+grep"),
            defaults: Some("read,ls"),
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(s.builtins, ["read", "ls", "grep"]);
        assert_eq!(s.mutating(), Vec::<&str>::new());
    }
}
