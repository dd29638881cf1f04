//! Built-in tools for tern agents, as in pi's CLI: `read`, `write`, `edit`, `bash`, `ls`,
//! `grep` and `find`, with path confinement to a working directory and a permission policy.
//!
//! Argument names, descriptions and output conventions follow pi's tools (`path`, `offset`,
//! `limit`, `content`, `edits[].oldText/newText`, `command`, `timeout`, `pattern`, `glob`, ...),
//! and so do the truncation notices that tell the model how to read on.
//!
//! ```
//! use tern_tools::{builtin_tools, ToolConfig};
//!
//! let tools = builtin_tools(&ToolConfig::new("/tmp"));
//! let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
//! assert_eq!(names, ["read", "write", "edit", "bash", "ls", "grep", "find"]);
//! ```
//!
//! Every path argument is resolved against [`ToolConfig::cwd`]; a path that reaches outside
//! it (through `..`, an absolute path or a symlink) fails the call with an error the model
//! sees, unless [`ToolConfig::allow_outside`] is set or it lies under one of
//! [`ToolConfig::allowed_roots`]. The check and the use are one: files are opened beneath a
//! handle of their root with symlinks refused on the way ([`fs`]), so a folder swapped for a
//! symlink after the check cannot lead outside. `bash` commands run in a [`sandbox`]
//! (Landlock and seccomp on Linux: `workspace-write` by default, no network, no secrets in
//! the environment, every process ended with the call or with tern), and a [`Policy`]'s
//! command rules judge what a command line runs ([`shell_rules`]), not its text.

#![warn(missing_docs)]

// The bash guard (a child subreaper), the sandbox and `/proc` walks are Linux's; the file
// layer has a portable path already. Say so at build time rather than with obscure errors.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "tern-tools runs on Linux only for now: its bash guard needs PR_SET_CHILD_SUBREAPER and \
     its sandbox Landlock and seccomp (see the README's sandbox table)"
);

pub mod bash;
pub mod cancel;
pub mod config;
pub mod confine;
mod dir_tool;
pub mod edit;
pub mod find;
pub mod fs;
pub mod grep;
pub mod ls;
pub mod policy;
pub mod read;
pub mod sandbox;
pub mod shell_rules;
pub mod truncate;
mod walk;
pub mod write;

pub use bash::bash_tool;
pub use config::ToolConfig;
pub use edit::edit_tool;
pub use find::find_tool;
pub use grep::grep_tool;
pub use ls::ls_tool;
pub use policy::{Action, Decision, PermissionGate, Policy, Rule};
pub use read::read_tool;
pub use write::write_tool;

use tern_agent::AgentTool;

/// All seven built-in tools, in pi's order: read, write, edit, bash, ls, grep, find.
///
/// `read`, `ls`, `grep` and `find` run in parallel with other calls; `write`, `edit` and
/// `bash` make their batch sequential.
pub fn builtin_tools(config: &ToolConfig) -> Vec<AgentTool> {
    vec![
        read_tool(config),
        write_tool(config),
        edit_tool(config),
        bash_tool(config),
        ls_tool(config),
        grep_tool(config),
        find_tool(config),
    ]
}

/// The read-only tools: read, grep, find, ls (pi's `readOnlyTools`).
pub fn read_only_tools(config: &ToolConfig) -> Vec<AgentTool> {
    vec![
        read_tool(config),
        grep_tool(config),
        find_tool(config),
        ls_tool(config),
    ]
}
