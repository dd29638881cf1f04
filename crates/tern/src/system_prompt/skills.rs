//! Skills (pi's `core/skills.js`, the Agent Skills format): folders holding a `SKILL.md`
//! whose frontmatter has a `name` and a `description`, listed in the system prompt so the
//! model reads one when a task matches it.
//!
//! Locations, in order (the first skill of a name wins): `skills/` in tern's config folder,
//! pi's `~/.pi/agent/skills` when present, `~/.agents/skills`, the project's `.tern/skills`,
//! `.agents/skills` from the working directory up to the repository root, then each `--skill
//! PATH`. A folder with a `SKILL.md` is one skill; other folders are searched below (not
//! dot-folders, not `node_modules`); a location's own `.md` files are skills when their
//! frontmatter has a description. pi also honours `.gitignore` files inside skill folders;
//! tern does not yet.

use std::path::{Path, PathBuf};

use super::context_files::read_text;
use crate::secrets::eprintln_redacted;

/// A skill found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name (the frontmatter's, else its folder's).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The `SKILL.md` (or `.md`) file.
    pub file: PathBuf,
    /// `disable-model-invocation: true`: not listed in the prompt.
    pub hidden: bool,
}

/// The frontmatter's `key: value` lines (between the leading `---` lines), quotes removed.
fn frontmatter(text: &str) -> Option<Vec<(String, String)>> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut out = Vec::new();
    for line in lines {
        if line.trim_end() == "---" {
            return Some(out);
        }
        if let Some((k, v)) = line.split_once(':') {
            if !k.starts_with(' ') && !k.trim().is_empty() {
                let v = v.trim();
                let unquoted = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                    .unwrap_or(v);
                out.push((k.trim().to_string(), unquoted.to_string()));
            }
        }
    }
    None
}

/// pi's name rule: lowercase letters, digits and single inner hyphens, 64 at most.
fn name_problems(name: &str) -> Vec<String> {
    let mut p = Vec::new();
    if name.chars().count() > 64 {
        p.push(format!(
            "name exceeds 64 characters ({})",
            name.chars().count()
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        p.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".into(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        p.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        p.push("name must not contain consecutive hyphens".into());
    }
    p
}

/// One skill file; problems are warnings, a missing description skips it (as pi).
fn load_file(file: &Path) -> Option<Skill> {
    let declared = file.file_name().is_some_and(|n| n == "SKILL.md");
    let warn = |m: &str| eprintln_redacted!("tern: warning: skill {}: {m}", file.display());
    let text = match read_text(file) {
        Ok(t) => t,
        Err(e) => {
            warn(&e.to_string());
            return None;
        }
    };
    let Some(fields) = frontmatter(&text) else {
        if declared {
            warn("no frontmatter (a `---` block with name and description)");
        }
        return None;
    };
    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    let description = get("description").filter(|d| !d.trim().is_empty());
    let Some(description) = description else {
        if declared {
            warn("description is required");
        }
        return None;
    };
    if description.chars().count() > 1024 {
        warn(&format!(
            "description exceeds 1024 characters ({})",
            description.chars().count()
        ));
    }
    let folder = file
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = get("name").filter(|n| !n.is_empty()).unwrap_or(folder);
    for p in name_problems(&name) {
        warn(&p);
    }
    Some(Skill {
        name,
        description,
        file: file.to_path_buf(),
        hidden: get("disable-model-invocation").as_deref() == Some("true"),
    })
}

/// The skills under `dir`; `root` also takes the folder's own `.md` files.
fn load_dir(dir: &Path, root: bool, out: &mut Vec<Skill>) {
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        out.extend(load_file(&skill_md));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let name = name.unwrap_or_default();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            load_dir(&path, false, out);
        } else if root && name.ends_with(".md") {
            out.extend(load_file(&path));
        }
    }
}

/// `.agents/skills` folders from `cwd` up to the repository root (the first folder holding
/// `.git`), or up to `cwd` alone outside a repository.
fn agents_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.join(".agents").join("skills"));
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    dirs.truncate(1);
    dirs
}

/// The skills of a run: the default locations (unless `defaults` is off, `--no-skills`),
/// then `extra` (`--skill`, files or folders, relative to `cwd`). A name already taken is
/// a warning; the first skill keeps it.
pub fn discover(cwd: &Path, globals: &[PathBuf], extra: &[PathBuf], defaults: bool) -> Vec<Skill> {
    let mut found: Vec<Skill> = Vec::new();
    if defaults {
        let mut dirs: Vec<PathBuf> = globals.iter().map(|g| g.join("skills")).collect();
        dirs.extend(dirs::home_dir().map(|h| h.join(".agents").join("skills")));
        dirs.push(cwd.join(super::sources::PROJECT_DIR).join("skills"));
        dirs.extend(agents_dirs(cwd));
        for d in dirs {
            load_dir(&d, true, &mut found);
        }
    }
    for p in extra {
        let path = cwd.join(p);
        if path.is_dir() {
            load_dir(&path, true, &mut found);
        } else if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            found.extend(load_file(&path));
        } else {
            eprintln_redacted!(
                "tern: warning: --skill {}: not a folder or a markdown file",
                path.display()
            );
        }
    }
    let mut skills: Vec<Skill> = Vec::new();
    for s in found {
        let same_file =
            |x: &Skill| std::fs::canonicalize(&x.file).ok() == std::fs::canonicalize(&s.file).ok();
        if skills.iter().any(same_file) {
            continue;
        }
        if let Some(first) = skills.iter().find(|x| x.name == s.name) {
            eprintln_redacted!(
                "tern: warning: skill name \"{}\" collision: {} is used, {} is not",
                s.name,
                first.file.display(),
                s.file.display()
            );
            continue;
        }
        skills.push(s);
    }
    skills
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The `skills` section's text (pi's `formatSkillsForPrompt`, trimmed), naming the tool that
/// reads a skill's file; `None` when no skill is listed.
pub fn render(skills: &[Skill], reader: &str) -> Option<String> {
    let visible: Vec<&Skill> = skills.iter().filter(|s| !s.hidden).collect();
    if visible.is_empty() {
        return None;
    }
    let how = match reader {
        "read" => "Use the read tool to load a skill's file when the task matches its description.",
        "bash" => "Use bash to load a skill's file when the task matches its description.",
        _ => "Load a skill's file when the task matches its description.",
    };
    let mut lines = vec![
        "The following skills provide specialized instructions for specific tasks.".to_string(),
        how.to_string(),
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.".to_string(),
        String::new(),
        "<available_skills>".to_string(),
    ];
    for s in visible {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.file.to_string_lossy())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_named_and_listed_as_pi_lists_them() {
        let dir = tempfile::tempdir().expect("dir");
        let root = dir.path().join("skills");
        let pdf = root.join("group").join("pdf-tools");
        std::fs::create_dir_all(&pdf).expect("mkdir");
        std::fs::write(
            pdf.join("SKILL.md"),
            "---\nname: pdf-tools\ndescription: \"Extract <text> from PDFs.\"\n---\n# PDF\n",
        )
        .expect("write");
        std::fs::write(
            root.join("loose.md"),
            "---\ndescription: A loose skill.\n---\n",
        )
        .expect("w");
        std::fs::write(root.join("notes.md"), "# not a skill\n").expect("write");
        std::fs::create_dir_all(root.join("quiet")).expect("mkdir");
        std::fs::write(
            root.join("quiet").join("SKILL.md"),
            "---\ndescription: Only by command.\ndisable-model-invocation: true\n---\n",
        )
        .expect("write");
        let mut found = Vec::new();
        load_dir(&root, true, &mut found);
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf-tools", "skills", "quiet"]);
        let text = render(&found, "read").expect("listed");
        assert!(text.starts_with(
            "The following skills provide specialized instructions for specific tasks.\nUse the read tool"
        ));
        assert!(text.contains(&format!(
            "  <skill>\n    <name>pdf-tools</name>\n    <description>Extract &lt;text&gt; from PDFs.</description>\n    <location>{}</location>\n  </skill>",
            pdf.join("SKILL.md").display()
        )));
        assert!(!text.contains("quiet"), "hidden skills are not listed");
        assert!(render(&found[2..], "read").is_none());
    }

    #[test]
    fn names_are_checked_as_pi_checks_them() {
        assert!(name_problems("pdf-tools").is_empty());
        assert_eq!(name_problems("Bad--").len(), 3);
    }
}
