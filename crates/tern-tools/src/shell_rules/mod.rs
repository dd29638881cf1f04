//! Command rules judged on what a shell command runs, not on its text.
//!
//! [`analyze`] parses a command line with tree-sitter-bash and lists every simple command it
//! would run: in pipelines and lists, subshells, functions, `$(…)` and backticks, process
//! substitutions, here-documents fed to a shell, the string of `sh -c` / `bash -c` / `eval` /
//! `su -c` / `watch`, and the program a wrapper runs (`env`, `command`, `exec`, `nice`,
//! `nohup`, `sudo`, `timeout`, `xargs`, `find -exec`, ...). Each program is named by its base
//! name after quote removal, so `/bin/rm`, `\rm`, `'rm'`, `"r"m` and `$'\x72m'` are all `rm`.
//!
//! A command whose program is only known at run time (`$X`, `$(echo rm)`, `r*`, `{rm,-rf}`) or
//! that runs commands from its input (`… | sh`) is [`Invocation::Unjudged`]: a policy asks or
//! refuses it, it never allows it on a pattern.
//!
//! ```
//! use tern_tools::shell_rules::{analyze, Invocation};
//!
//! let units = analyze("true; sudo /bin/rm -rf / | tee log");
//! let forms: Vec<&[String]> = units.iter().filter_map(|u| match u {
//!     Invocation::Judged { forms } => Some(forms.as_slice()),
//!     Invocation::Unjudged { .. } => None,
//! }).collect();
//! assert_eq!(forms[1], ["sudo /bin/rm -rf /", "rm -rf /"]);
//! assert!(matches!(&analyze("$(echo rm) x")[..], [Invocation::Unjudged { .. }, ..]));
//! ```

mod words;
mod wrappers;

use tree_sitter::{Node, Parser};

use words::{word, Word};
use wrappers::{unwrap, Wrapped};

/// How deep `sh -c 'sh -c …'`, `eval` and wrappers may nest before a command is unjudged.
const MAX_DEPTH: usize = 16;

/// One simple command a shell command line would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// The program is known. `forms[0]` is the command as written (its program by base name,
    /// words after quote removal, joined by one space); each later form is what a wrapper
    /// in front runs (`sudo env rm x` gives `sudo env rm x`, `env rm x`, `rm x`).
    Judged {
        /// The command's forms, outermost first.
        forms: Vec<String>,
    },
    /// What runs cannot be known before the shell runs it.
    Unjudged {
        /// The source text of the command.
        text: String,
        /// Why, in words for a person.
        why: &'static str,
    },
}

/// Lists what `command` would run. An empty command (or only comments) gives no invocation.
pub fn analyze(command: &str) -> Vec<Invocation> {
    let mut out = Vec::new();
    analyze_into(command, 0, &mut out);
    out
}

fn analyze_into(command: &str, depth: usize, out: &mut Vec<Invocation>) {
    if depth > MAX_DEPTH {
        out.push(unjudged(command, "it nests shells too deeply to follow"));
        return;
    }
    let mut parser = Parser::new();
    let tree = match parser.set_language(&tree_sitter_bash::LANGUAGE.into()) {
        Ok(()) => parser.parse(command, None),
        Err(_) => None,
    };
    let Some(tree) = tree else {
        out.push(unjudged(command, "the shell parser failed"));
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.push(unjudged(command, "it does not parse as a shell command"));
    }
    walk(root, command.as_bytes(), depth, out);
}

fn unjudged(text: &str, why: &'static str) -> Invocation {
    Invocation::Unjudged {
        text: text.trim().to_string(),
        why,
    }
}

/// Visits every node: commands anywhere (also inside substitutions and here-documents,
/// whose `$(…)` the outer shell runs). Iterative: a command line of 100k parentheses must not
/// overflow the stack.
fn walk(root: Node<'_>, src: &[u8], depth: usize, out: &mut Vec<Invocation>) {
    let mut cursor = root.walk();
    // The ancestors of the cursor's node (`Node::parent` costs a descent from the root).
    let mut ancestors: Vec<Node<'_>> = Vec::new();
    loop {
        let node = cursor.node();
        if node.kind() == "command" {
            command(node, ancestors.last().copied(), src, depth, out);
        }
        if cursor.goto_first_child() {
            ancestors.push(node);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            ancestors.pop();
        }
    }
}

fn command(
    node: Node<'_>,
    parent: Option<Node<'_>>,
    src: &[u8],
    depth: usize,
    out: &mut Vec<Invocation>,
) {
    let text = node.utf8_text(src).unwrap_or_default();
    let mut words: Vec<Word> = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            match cursor.field_name() {
                Some("name") => {
                    let inner = child.named_child(0).unwrap_or(child);
                    words.push(word(inner, src));
                }
                Some("argument") => words.push(word(child, src)),
                _ => {}
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    if words.is_empty() {
        // Only assignments (`X=1`): nothing runs but their substitutions, walked already.
        return;
    }
    let input = stdin_script(node, parent, src);
    resolve(&words, text, &input, depth, out);
}

/// The script a here-document or here-string hands to the command, when it is literal.
fn stdin_script(
    command: Node<'_>,
    parent: Option<Node<'_>>,
    src: &[u8],
) -> Option<Result<String, ()>> {
    // Redirections sit in the command (`sh <<< …`) or around it (`bash <<EOF`).
    let parent = parent.filter(|p| p.kind() == "redirected_statement");
    let mut redirects = Vec::new();
    for holder in std::iter::once(command).chain(parent) {
        let mut cursor = holder.walk();
        redirects.extend(holder.children(&mut cursor));
    }
    for r in redirects {
        match r.kind() {
            "heredoc_redirect" => {
                let mut c = r.walk();
                let body = r
                    .named_children(&mut c)
                    .find(|n| n.kind() == "heredoc_body");
                return Some(match body {
                    Some(b) => b.utf8_text(src).map(str::to_string).map_err(|_| ()),
                    None => Ok(String::new()),
                });
            }
            "herestring_redirect" => {
                let mut c = r.walk();
                let w = r.named_children(&mut c).last().map(|n| word(n, src));
                return Some(match w {
                    Some(w) if !w.dynamic => Ok(w.text),
                    _ => Err(()),
                });
            }
            "file_redirect" => {
                let t = r.utf8_text(src).unwrap_or_default().trim_start();
                if t.starts_with('<') || t.starts_with("0<") {
                    return Some(Err(()));
                }
            }
            _ => {}
        }
    }
    None
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish",
];

/// Judges a command given as words: unwraps wrappers and shells, pushing what runs.
fn resolve(
    words: &[Word],
    text: &str,
    input: &Option<Result<String, ()>>,
    depth: usize,
    out: &mut Vec<Invocation>,
) {
    let mut forms = Vec::new();
    let mut rest = words;
    let mut level = depth;
    while let Some(first) = rest.first() {
        if first.dynamic {
            out.push(unjudged(text, "its program name is only known at run time"));
            return;
        }
        let program = base_name(&first.text);
        let plain: Vec<String> = rest.iter().map(|w| w.text.clone()).collect();
        let mut form = program.to_string();
        for w in &plain[1..] {
            form.push(' ');
            form.push_str(w);
        }
        forms.push(form);
        level += 1;
        if level > MAX_DEPTH {
            out.push(unjudged(text, "it nests wrappers too deeply to follow"));
            return;
        }
        if SHELLS.contains(&program) {
            match shell_script(rest, input) {
                ShellInput::Script(script) => analyze_into(&script, level, out),
                ShellInput::Unknown => {
                    out.push(unjudged(text, "the shell runs commands tern cannot see"));
                    return;
                }
                ShellInput::File => {}
            }
            break;
        }
        match program {
            "eval" => {
                if rest[1..].iter().any(|w| w.dynamic) {
                    out.push(unjudged(text, "eval runs a string only known at run time"));
                    return;
                }
                analyze_into(&plain[1..].join(" "), level, out);
                break;
            }
            "alias" => {
                // With `shopt -s expand_aliases` an alias runs its value.
                for w in &rest[1..] {
                    if let Some((_, value)) = w.text.split_once('=') {
                        if w.dynamic {
                            out.push(unjudged(
                                text,
                                "an alias with a value only known at run time",
                            ));
                            return;
                        }
                        analyze_into(value, level, out);
                    }
                }
                break;
            }
            "source" | "." if rest[1..].iter().any(|w| w.dynamic) => {
                out.push(unjudged(text, "it runs a script only known at run time"));
                return;
            }
            "find" => {
                find_exec(rest, text, level, out);
                break;
            }
            _ => {}
        }
        if !wrappers::is_wrapper(program) {
            break;
        }
        let dynamic_args = rest[1..].iter().any(|w| w.dynamic);
        match unwrap(program, &plain) {
            Wrapped::Command(start) => rest = &rest[start..],
            Wrapped::Script(_) if dynamic_args => {
                out.push(unjudged(text, "it runs a string only known at run time"));
                return;
            }
            Wrapped::Script(script) => {
                analyze_into(&script, level, out);
                break;
            }
            Wrapped::Nothing => break,
        }
    }
    if !forms.is_empty() {
        out.push(Invocation::Judged { forms });
    }
}

enum ShellInput {
    Script(String),
    File,
    Unknown,
}

/// What a shell invoked as `words` runs: `-c STRING`, a script file, or its input.
fn shell_script(words: &[Word], input: &Option<Result<String, ()>>) -> ShellInput {
    let mut wants_string = false;
    for w in &words[1..] {
        let t = w.text.as_str();
        if wants_string || !t.starts_with(['-', '+']) || t == "-" || t == "--" {
            if t == "--" && !wants_string {
                continue;
            }
            if w.dynamic {
                return ShellInput::Unknown;
            }
            if wants_string {
                return ShellInput::Script(w.text.clone());
            }
            if t == "-" || t == "-s" {
                break;
            }
            return ShellInput::File;
        }
        if t.starts_with("--") {
            continue;
        }
        // Short options may be bundled: -ec, -lc, -xc.
        if t[1..].contains('c') {
            wants_string = true;
        } else if t[1..].contains('s') {
            break;
        }
    }
    if wants_string {
        return ShellInput::Unknown;
    }
    match input {
        Some(Ok(script)) => ShellInput::Script(script.clone()),
        _ => ShellInput::Unknown,
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`) runs CMD.
fn find_exec(words: &[Word], text: &str, depth: usize, out: &mut Vec<Invocation>) {
    let mut i = 1;
    while i < words.len() {
        if matches!(
            words[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) && !words[i].dynamic
        {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            if start < end {
                resolve(&words[start..end], text, &None, depth, out);
            }
            i = end;
        }
        i += 1;
    }
}

/// `/usr/bin/rm` and `./rm` name the program `rm`.
fn base_name(program: &str) -> &str {
    let trimmed = program.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}
