//! The system prompt, built as pi builds it (`core/system-prompt.js`): named sections in
//! order, each but the preamble framed as `<name>…</name>`, joined by a blank line.
//!
//! | section | holds |
//! |---|---|
//! | preamble | who the model is, or the custom prompt (`--system-prompt`, `SYSTEM.md`) |
//! | `tools` | one line per declared built-in tool (its snippet); default prompt only |
//! | `rules` | the declared tools' guidelines and the general rules; default prompt only |
//! | `addendum` | `--append-system-prompt` texts or `APPEND_SYSTEM.md` |
//! | `project_context` | the `AGENTS.md` / `CLAUDE.md` files ([`context_files`]) |
//! | `skills` | the skills the model may load ([`skills`]), when `read` or `bash` can read them |
//! | `cwd` | the working directory |
//!
//! pi also has a `docs` section pointing at its own documentation; tern has no installed
//! docs to point at, so it has none. pi's bash guideline about `PI_*` variables is left out
//! too: tern's bash sets no such variables.

pub mod context_files;
pub mod record;
pub mod skills;
pub mod sources;
pub mod worktree;

use std::path::Path;

use tern_agent::AgentTool;

pub use context_files::ContextFile;

use crate::cli::Args;
use crate::config::Config;
use crate::usage_error::UsageError;

/// A prompt's sections in order: name, then framed text.
pub type Sections = Vec<(&'static str, String)>;

/// The system prompt's sections of a run (and the skills it lists) from its flags, the config and the files around `cwd`, for the
/// declared `tools`. With `discover` off (the demo, in its fresh folder) no global file and no
/// context file is read.
pub fn for_run(
    args: &Args,
    config: &Config,
    cwd: &Path,
    tools: &[AgentTool],
    discover: bool,
) -> Result<(Sections, Vec<skills::Skill>), UsageError> {
    let globals = if discover {
        context_files::global_dirs()
    } else {
        Vec::new()
    };
    let parts = PromptParts {
        custom: sources::custom_prompt(
            args.system_prompt.as_deref(),
            config.system_prompt.as_deref(),
            cwd,
            &globals,
        )?,
        append: sources::appended(&args.append_system_prompt, cwd, &globals)?,
        tools: tools.iter().map(|t| t.name().to_string()).collect(),
        context_files: if discover && !args.no_context_files {
            context_files::discover(cwd, &globals)
        } else {
            Vec::new()
        },
        skills: skills::discover(cwd, &globals, &args.skill, discover && !args.no_skills),
    };
    Ok((sections(&parts, cwd), parts.skills))
}

/// What the prompt is built from.
#[derive(Clone, Debug, Default)]
pub struct PromptParts {
    /// The custom prompt replacing the default preamble, tools and rules.
    pub custom: Option<String>,
    /// Texts appended (the `addendum` section), joined by a blank line.
    pub append: Vec<String>,
    /// The declared tools, in declaration order.
    pub tools: Vec<String>,
    /// The context files, outermost first.
    pub context_files: Vec<ContextFile>,
    /// The skills.
    pub skills: Vec<skills::Skill>,
}

/// pi's one-line description of a built-in tool (tools without one are not listed).
fn snippet(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "read" => "Read file contents",
        "bash" => "Execute bash commands (ls, grep, find, etc.)",
        "edit" => "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
        "write" => "Create or overwrite files",
        "grep" => "Search file contents for patterns (respects .gitignore)",
        "find" => "Find files by glob pattern (respects .gitignore)",
        "ls" => "List directory contents",
        _ => return None,
    })
}

/// pi's guidelines of a built-in tool.
fn guidelines(tool: &str) -> &'static [&'static str] {
    match tool {
        "read" => &["Use read to examine files instead of cat or sed."],
        "edit" => &[
            "Use edit for targeted changes. Batch changes to one file in a single call.",
            "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        _ => &[],
    }
}

/// The `rules` section: pi's, deduplicated, in order.
fn rules(tools: &[String]) -> String {
    let has = |t: &str| tools.iter().any(|x| x == t);
    let mut rules: Vec<&str> = Vec::new();
    let mut add = |r: &'static str| {
        if !rules.contains(&r) {
            rules.push(r);
        }
    };
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        add("Use bash for file operations like ls, rg, find");
    }
    for t in tools {
        for g in guidelines(t) {
            add(g);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    rules
        .iter()
        .map(|r| format!("- {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The sections, in pi's order, each framed but the preamble.
pub fn sections(parts: &PromptParts, cwd: &Path) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    match &parts.custom {
        Some(custom) => out.push(("preamble", custom.clone())),
        None => {
            out.push((
                "preamble",
                "You are a coding assistant running inside tern, a coding agent harness. Help \
                 users inspect files, run commands, and modify code."
                    .into(),
            ));
            let listed: Vec<String> = parts
                .tools
                .iter()
                .filter_map(|t| snippet(t).map(|s| format!("- {t}: {s}")))
                .collect();
            let listed = if listed.is_empty() {
                "(none)".to_string()
            } else {
                listed.join("\n")
            };
            out.push((
                "tools",
                format!("{listed}\n\nAdditional tools may be available."),
            ));
            out.push(("rules", rules(&parts.tools)));
        }
    }
    let append = parts.append.join("\n\n");
    if !append.is_empty() {
        out.push(("addendum", append));
    }
    if !parts.context_files.is_empty() {
        out.push((
            "project_context",
            context_files::render(&parts.context_files),
        ));
    }
    // pi's reader of skill files: read, else bash; with neither, no skills are listed.
    let reader = ["read", "bash"]
        .into_iter()
        .find(|r| parts.tools.iter().any(|t| t == r));
    if let Some(text) = reader.and_then(|r| skills::render(&parts.skills, r)) {
        out.push(("skills", text));
    }
    out.push(("cwd", cwd.to_string_lossy().replace('\\', "/")));
    out.into_iter()
        .map(|(name, text)| {
            if name == "preamble" {
                (name, text)
            } else {
                (name, format!("<{name}>\n{text}\n</{name}>"))
            }
        })
        .collect()
}

/// The prompt text the model gets: the sections joined by a blank line (pi's
/// `getSystemMessageText`, empty parts left out).
pub fn text(sections: &[(&'static str, String)]) -> String {
    sections
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prompt_has_pi_sections_for_the_declared_tools() {
        let parts = PromptParts {
            tools: vec!["read".into(), "bash".into()],
            ..Default::default()
        };
        let text = text(&sections(&parts, Path::new("/p")));
        assert!(text.starts_with("You are a coding assistant running inside tern"));
        assert!(text.contains(
            "<tools>\n- read: Read file contents\n- bash: Execute bash commands (ls, grep, find, etc.)\n\nAdditional tools may be available.\n</tools>"
        ));
        assert!(text.contains(
            "<rules>\n- Use bash for file operations like ls, rg, find\n- Use read to examine files instead of cat or sed.\n- Be concise in your responses\n- Show file paths clearly when working with files\n</rules>"
        ));
        assert!(text.ends_with("<cwd>\n/p\n</cwd>"));
        assert!(!text.contains("edit"));
    }

    #[test]
    fn a_custom_prompt_keeps_the_addendum_context_and_cwd() {
        let parts = PromptParts {
            custom: Some("Be terse.".into()),
            append: vec!["One.".into(), "Two.".into()],
            tools: vec!["read".into()],
            context_files: vec![ContextFile {
                path: "/p/AGENTS.md".into(),
                content: "Use tabs.".into(),
            }],
            skills: Vec::new(),
        };
        assert_eq!(
            text(&sections(&parts, Path::new("/p"))),
            "Be terse.\n\n<addendum>\nOne.\n\nTwo.\n</addendum>\n\n<project_context>\n\
             Project-specific instructions and guidelines:\n\n<project_instructions \
             path=\"/p/AGENTS.md\">\nUse tabs.\n</project_instructions>\n</project_context>\
             \n\n<cwd>\n/p\n</cwd>"
        );
    }

    #[test]
    fn no_tools_is_said() {
        let text = text(&sections(&PromptParts::default(), Path::new("/p")));
        assert!(text.contains("<tools>\n(none)\n\nAdditional tools may be available.\n</tools>"));
    }
}
