//! Prompt templates (pi's `core/prompt-templates.js`) and `/skill:name` commands: Markdown files whose name is a `/`
//! command; `/review concurrency` becomes the file's body with its arguments substituted
//! (`$1`, `$@`, `$ARGUMENTS`, `${1:-default}`, `${@:-default}`, `${@:N}`, `${@:N:L}`).
//!
//! Locations: `prompts/` in tern's config folder, pi's `~/.pi/agent/prompts` when present,
//! the project's `.tern/prompts` (their direct `.md` children), then each
//! `--prompt-template PATH` (a file or a folder).

use std::path::{Path, PathBuf};

use crate::secrets::eprintln_redacted;
use crate::system_prompt::context_files::read_text;
use crate::system_prompt::skills::Skill;

/// A loaded template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The command name: the file name without `.md`.
    pub name: String,
    /// The body, after any frontmatter.
    pub content: String,
}

/// The body of a Markdown file as pi's `parseFrontmatter` gives it: after a `---`
/// frontmatter block, trimmed; without one, the whole text (line ends made `\n`).
fn body(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    if !text.starts_with("---") {
        return text;
    }
    match text[3..].find("\n---") {
        Some(end) => text[3 + end + 4..].trim().to_string(),
        None => text,
    }
}

fn load_file(path: &Path, out: &mut Vec<PromptTemplate>) {
    let Some(name) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".md"))
    else {
        return;
    };
    match read_text(path) {
        Ok(text) => out.push(PromptTemplate {
            name: name.to_string(),
            content: body(&text),
        }),
        Err(e) => eprintln_redacted!("tern: warning: prompt template {}: {e}", path.display()),
    }
}

fn load_dir(dir: &Path, out: &mut Vec<PromptTemplate>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    for f in files {
        load_file(&f, out);
    }
}

/// The templates of a run: the default locations unless `defaults` is off
/// (`--no-prompt-templates`), then `extra` (relative to `cwd`). The first of a name is the
/// one `/name` runs.
pub fn discover(
    cwd: &Path,
    globals: &[PathBuf],
    extra: &[PathBuf],
    defaults: bool,
) -> Vec<PromptTemplate> {
    let mut out = Vec::new();
    if defaults {
        for g in globals {
            load_dir(&g.join("prompts"), &mut out);
        }
        load_dir(
            &cwd.join(crate::system_prompt::sources::PROJECT_DIR)
                .join("prompts"),
            &mut out,
        );
    }
    for p in extra {
        let path = cwd.join(p);
        if path.is_dir() {
            load_dir(&path, &mut out);
        } else if path.is_file() {
            load_file(&path, &mut out);
        }
    }
    out
}

/// pi's shell-like argument split: quotes open only at the start of an argument, `\"` inside
/// `"…"` is a quote, an unclosed quote is text.
pub fn parse_args(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let (mut args, mut current, mut has_token) = (Vec::new(), String::new(), false);
    let (mut quote, mut quote_start) = (None::<char>, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if c.is_whitespace() {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if quote.is_some() && i == chars.len() - 1 {
            // Unclosed: the quote is text, and what follows it is read again.
            quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

fn digits(s: &str) -> usize {
    s.chars().take_while(char::is_ascii_digit).count()
}

/// pi's substitution of the placeholders in `content` (values are not substituted again).
pub fn substitute(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let nth = |n: usize| n.checked_sub(1).and_then(|i| args.get(i)).cloned();
    let mut out = String::new();
    let mut rest = content;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        // ${N:-default}, ${@:-default}, ${ARGUMENTS:-default}, ${@:N}, ${@:N:L}
        if let Some(inner) = tail.strip_prefix('{') {
            if let Some(close) = inner.find('}') {
                let expr = &inner[..close];
                let default = expr.split_once(":-").and_then(|(target, default)| {
                    let value = match target {
                        "@" | "ARGUMENTS" => Some(all.clone()),
                        t if !t.is_empty() && digits(t) == t.len() => {
                            Some(t.parse().ok().and_then(nth).unwrap_or_default())
                        }
                        _ => None,
                    }?;
                    Some(if value.is_empty() {
                        default.to_string()
                    } else {
                        value
                    })
                });
                let slice = expr.strip_prefix("@:").and_then(|s| {
                    let (start, len) = match s.split_once(':') {
                        Some((a, b)) => (a, Some(b)),
                        None => (s, None),
                    };
                    let ok = |x: &str| !x.is_empty() && digits(x) == x.len();
                    if !ok(start) || len.is_some_and(|l| !ok(l)) {
                        return None;
                    }
                    let start = start
                        .parse::<usize>()
                        .ok()?
                        .saturating_sub(1)
                        .min(args.len());
                    let end = match len {
                        Some(l) => start
                            .saturating_add(l.parse::<usize>().ok()?)
                            .min(args.len()),
                        None => args.len(),
                    };
                    Some(args[start..end].join(" "))
                });
                if let Some(v) = default.or(slice) {
                    out.push_str(&v);
                    rest = &inner[close + 1..];
                    continue;
                }
            }
        }
        if let Some(after) = tail.strip_prefix("ARGUMENTS") {
            out.push_str(&all);
            rest = after;
        } else if let Some(after) = tail.strip_prefix('@') {
            out.push_str(&all);
            rest = after;
        } else if digits(tail) > 0 {
            let n = digits(tail);
            out.push_str(&tail[..n].parse().ok().and_then(nth).unwrap_or_default());
            rest = &tail[n..];
        } else {
            out.push('$');
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// `/skill:name [args]` as pi expands it: the skill's body (after its frontmatter) in a
/// `<skill>` block, then the arguments; an unknown or unreadable skill stays as typed.
fn expand_skill(text: &str, skills: &[Skill]) -> Option<String> {
    let rest = text.strip_prefix("/skill:")?;
    let (name, args) = match rest.split_once(' ') {
        Some((n, a)) => (n, a.trim()),
        None => (rest, ""),
    };
    let skill = skills.iter().find(|s| s.name == name)?;
    let content = match read_text(&skill.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln_redacted!("tern: warning: skill {}: {e}", skill.file.display());
            return None;
        }
    };
    let dir = skill.file.parent().unwrap_or(Path::new(""));
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file.display(),
        dir.display(),
        body(&content).trim()
    );
    Some(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}

/// `text` expanded as pi expands a prompt: `/skill:name [args]`, then a template's
/// `/name [args]`; anything else as it is.
pub fn expand(text: &str, templates: &[PromptTemplate], skills: &[Skill]) -> String {
    let expanded = expand_skill(text, skills);
    let text = expanded.as_deref().unwrap_or(text);
    let Some(command) = text.strip_prefix('/') else {
        return text.to_string();
    };
    let (name, args) = match command.find(char::is_whitespace) {
        Some(at) => (&command[..at], command[at..].trim_start()),
        None => (command, ""),
    };
    match templates
        .iter()
        .find(|t| !name.is_empty() && t.name == name)
    {
        Some(t) => substitute(&t.content, &parse_args(args)),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_split_as_pis() {
        assert_eq!(
            parse_args(r#"a "b c" doesn't"#),
            args(&["a", "b c", "doesn't"])
        );
        assert_eq!(
            parse_args(r#""the \"fast\" path""#),
            args(&[r#"the "fast" path"#])
        );
        assert_eq!(parse_args(r#"x "open"#), args(&["x", "\"open"]));
        assert_eq!(parse_args(r#""" y"#), args(&["", "y"]));
    }

    #[test]
    fn placeholders_are_substituted_as_pis() {
        let a = args(&["one", "two", "three"]);
        assert_eq!(substitute("$1/$2/$4.", &a), "one/two/.");
        assert_eq!(
            substitute("$@ | $ARGUMENTS", &a),
            "one two three | one two three"
        );
        assert_eq!(substitute("${2:-x} ${5:-none}", &a), "two none");
        assert_eq!(
            substitute("${@:2} | ${@:1:2} | ${@:0:1}", &a),
            "two three | one two | one"
        );
        assert_eq!(substitute("${@:-all} $5 costs $", &[]), "all  costs $");
        assert_eq!(substitute("${x} $$1", &a), "${x} $one");
    }

    #[test]
    fn a_template_command_expands_and_anything_else_stays() {
        let t = vec![PromptTemplate {
            name: "review".into(),
            content: "Review it. Focus on ${1:-correctness}.".into(),
        }];
        assert_eq!(
            expand("/review", &t, &[]),
            "Review it. Focus on correctness."
        );
        assert_eq!(
            expand("/review \"API shape\"", &t, &[]),
            "Review it. Focus on API shape."
        );
        assert_eq!(expand("/other x", &t, &[]), "/other x");
        assert_eq!(expand("review", &t, &[]), "review");
        assert_eq!(body("---\ndescription: d\n---\nText\n"), "Text");
        assert_eq!(body("Plain\r\n"), "Plain\n");
    }
}
