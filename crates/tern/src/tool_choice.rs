//! The built-in tools the selection names, the permission policy over them and the bash
//! sandbox (which tools are selected: `tool_selection.rs`).

use std::path::{Path, PathBuf};

use tern_agent::AgentTool;
use tern_tools::policy::{Action, Policy, Rule};
use tern_tools::sandbox::{SandboxMode, SandboxPolicy};
use tern_tools::ToolConfig;

use crate::cli::Args;
use crate::config::Config;
use crate::secrets::eprintln_redacted;
use crate::tool_selection::ToolSelection;
use crate::usage_error::UsageError;

/// The bash sandbox from `--sandbox`, `--network`, `--pass-env` and their config keys (a flag
/// wins; `--pass-env` names add to the config's).
pub fn sandbox_policy(args: &Args, config: &Config) -> Result<SandboxPolicy, UsageError> {
    let mode = match args.sandbox.as_deref().or(config.sandbox.as_deref()) {
        Some(m) => m
            .parse::<SandboxMode>()
            .map_err(|e| UsageError(format!("--sandbox: {e}")))?,
        None => SandboxMode::default(),
    };
    let mut policy = SandboxPolicy::new(mode);
    policy.network = args.network || config.network.unwrap_or(false);
    policy.pass_env = config.pass_env.clone();
    policy.pass_env.extend(args.pass_env.iter().cloned());
    Ok(policy)
}

/// The folders of `--add-dir` and the config's `add_dirs`, resolved against `cwd` (they
/// must exist and be folders: a typo must not silently widen nothing, or something else).
pub fn added_dirs(args: &Args, config: &Config, cwd: &Path) -> Result<Vec<PathBuf>, UsageError> {
    config
        .add_dirs
        .iter()
        .chain(&args.add_dir)
        .map(|d| {
            let full = cwd.join(d);
            match std::fs::canonicalize(&full) {
                Ok(p) if p.is_dir() => Ok(p),
                Ok(p) => Err(UsageError(format!(
                    "--add-dir {}: {} is not a folder",
                    d.display(),
                    p.display()
                ))),
                Err(e) => Err(UsageError(format!(
                    "--add-dir {}: cannot open {}: {e}",
                    d.display(),
                    full.display()
                ))),
            }
        })
        .collect()
}

/// Says on stderr, at start-up, when bash cannot be confined here: without Landlock,
/// `read-only` and `workspace-write` refuse every command.
pub fn note_sandbox_support(policy: &SandboxPolicy, tools: &[AgentTool]) {
    let has_bash = tools.iter().any(|t| t.name() == "bash");
    if has_bash
        && policy.mode != SandboxMode::FullAccess
        && !tern_tools::sandbox::support().confines()
    {
        eprintln_redacted!(
            "tern: note: this kernel has no Landlock, so bash cannot be sandboxed ({}): every \
             bash command will be refused; pass --sandbox full-access to run commands unconfined",
            policy.mode
        );
    }
}

/// Builds the selected built-in tools, in pi's order.
pub fn select_tools(selection: &ToolSelection, config: &ToolConfig) -> Vec<AgentTool> {
    selection
        .builtins
        .iter()
        .map(|name| match *name {
            "read" => tern_tools::read_tool(config),
            "write" => tern_tools::write_tool(config),
            "edit" => tern_tools::edit_tool(config),
            "bash" => tern_tools::bash_tool(config),
            "ls" => tern_tools::ls_tool(config),
            "grep" => tern_tools::grep_tool(config),
            _ => tern_tools::find_tool(config),
        })
        .collect()
}

/// Says once on stderr which selected tools change files or run commands without asking:
/// in print and JSON modes nobody can be asked, so with no `--allow` rule they just run.
/// A tool a bare `--deny TOOL` refuses is not named.
pub fn note_unasked_mutations(selection: &ToolSelection, allow: &[String], deny: &[String]) {
    if !allow.is_empty() {
        return;
    }
    let running: Vec<&str> = selection
        .mutating()
        .into_iter()
        .filter(|t| !deny.iter().any(|d| d == t))
        .collect();
    if running.is_empty() {
        return;
    }
    eprintln_redacted!(
        "tern: note: {} enabled and run without asking (nobody can be asked here); \
         --tools read,grep,find,ls keeps the run read-only, --deny TOOL[:GLOB] refuses calls",
        match running.as_slice() {
            [one] => format!("{one} is"),
            [init @ .., last] => format!("{} and {last} are", init.join(", ")),
            [] => String::new(),
        }
    );
}

/// Parses `TOOL` or `TOOL:GLOB` into a rule.
pub fn parse_rule(spec: &str, action: Action) -> Result<Rule, UsageError> {
    let (tool, glob) = match spec.split_once(':') {
        Some((t, g)) => (t, Some(g)),
        None => (spec, None),
    };
    let rule = Rule::new(tool, action);
    match glob {
        Some(g) => rule
            .matching_glob(g)
            .map_err(|e| UsageError(format!("bad pattern in rule {spec}: {e}"))),
        None => Ok(rule),
    }
}

/// The permission policy: `--deny` rules, then `--allow` rules, then (when someone can be
/// asked) an ask rule for the tools that change things, else allow. MCP tools are asked
/// about too: what a server's tool does is the server's to say, and its hints are not proof.
pub fn build_policy(
    allow: &[String],
    deny: &[String],
    ask_for_mutations: bool,
    cwd: &Path,
) -> Result<Policy, UsageError> {
    let mut policy = Policy::new(Action::Allow).with_cwd(cwd);
    for d in deny {
        policy = policy.rule(parse_rule(d, Action::Deny)?);
    }
    for a in allow {
        policy = policy.rule(parse_rule(a, Action::Allow)?);
    }
    if ask_for_mutations {
        for t in ["write", "edit", "bash", "mcp__*"] {
            policy = policy.rule(Rule::ask(t));
        }
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tern_tools::policy::Decision;

    #[test]
    fn the_interactive_policy_asks_before_mcp_tools_unless_allowed() {
        let cwd = Path::new("/p");
        let asks = build_policy(&[], &[], true, cwd).expect("policy");
        assert!(matches!(
            asks.check("mcp__github__merge", &json!({})),
            Decision::Ask(_)
        ));
        assert_eq!(asks.check("read", &json!({"path": "a"})), Decision::Allow);
        let allowed = build_policy(&["mcp__github__*".into()], &[], true, cwd).expect("policy");
        assert_eq!(
            allowed.check("mcp__github__merge", &json!({})),
            Decision::Allow
        );
        assert!(matches!(
            allowed.check("mcp__files__write", &json!({})),
            Decision::Ask(_)
        ));
        let nobody = build_policy(&[], &["mcp__*".into()], false, cwd).expect("policy");
        assert!(matches!(
            nobody.check("mcp__files__read", &json!({})),
            Decision::Deny(_)
        ));
    }
}
