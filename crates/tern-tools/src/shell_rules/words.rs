//! The value of one shell word after quote removal, when it is known before the shell runs.

use tree_sitter::Node;

/// A word as the shell would pass it to a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text after quote removal (for a dynamic word: the source text).
    pub text: String,
    /// The value is only known at run time: an expansion, a substitution, a glob or a brace
    /// expansion (which can turn one word into several), so it cannot name a program.
    pub dynamic: bool,
}

impl Word {
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            dynamic: false,
        }
    }
}

/// Evaluates a word node of tree-sitter-bash.
pub(crate) fn word(node: Node<'_>, src: &[u8]) -> Word {
    let raw = node.utf8_text(src).unwrap_or_default();
    let dynamic = |text: &str| Word {
        text: text.to_string(),
        dynamic: true,
    };
    match node.kind() {
        "word" | "number" => unquoted(raw),
        "raw_string" => Word::literal(strip(raw, "'", "'")),
        "ansi_c_string" => Word::literal(ansi_c(strip(raw, "$'", "'"))),
        "string" | "translated_string" => {
            let mut cursor = node.walk();
            let plain = node
                .named_children(&mut cursor)
                .all(|c| c.kind() == "string_content");
            if plain {
                let body = if node.kind() == "string" {
                    strip(raw, "\"", "\"")
                } else {
                    strip(raw, "$\"", "\"")
                };
                Word::literal(double_quoted(body))
            } else {
                dynamic(raw)
            }
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let mut out = Word::literal(String::new());
            for part in node.named_children(&mut cursor) {
                let w = word(part, src);
                out.text.push_str(&w.text);
                out.dynamic |= w.dynamic;
            }
            if out.dynamic {
                out.text = raw.to_string();
            }
            out
        }
        _ => dynamic(raw),
    }
}

fn strip<'a>(raw: &'a str, open: &str, close: &str) -> &'a str {
    let inner = raw.strip_prefix(open).unwrap_or(raw);
    inner.strip_suffix(close).unwrap_or(inner)
}

/// An unquoted word: backslashes escape the next character; unescaped glob or brace
/// characters make the value depend on the file system or expand to several words.
fn unquoted(raw: &str) -> Word {
    let mut text = String::with_capacity(raw.len());
    let mut dynamic = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => text.push(next),
            },
            '*' | '?' | '[' | '{' | '$' | '`' => {
                dynamic = true;
                text.push(c);
            }
            _ => text.push(c),
        }
    }
    if dynamic {
        text = raw.to_string();
    }
    Word { text, dynamic }
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and a newline.
fn double_quoted(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the escapes of `$'...'` as bash does (`\x72m` is `rm`).
fn ansi_c(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let (radix, max) = match e {
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            '0'..='7' => (8, 2),
            'c' => {
                if let Some(ctl) = chars.next() {
                    out.push(char::from((ctl as u32 & 0x1f) as u8));
                }
                continue;
            }
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        let mut value = if radix == 8 {
            e.to_digit(8).unwrap_or(0)
        } else {
            0
        };
        let mut digits = 0;
        while digits < max {
            match chars.peek().and_then(|d| d.to_digit(radix)) {
                Some(d) => {
                    value = value.wrapping_mul(radix).wrapping_add(d);
                    chars.next();
                    digits += 1;
                }
                None => break,
            }
        }
        if radix == 16 && digits == 0 {
            out.push('\\');
            out.push(e);
            continue;
        }
        out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(ansi_c(r"\x72m"), "rm");
        assert_eq!(ansi_c(r"\162\155"), "rm");
        assert_eq!(ansi_c(r"\u0072m"), "rm");
        assert_eq!(ansi_c(r"a\tb\\"), "a\tb\\");
    }

    #[test]
    fn unquoted_backslashes_and_globs() {
        assert_eq!(unquoted(r"\rm"), Word::literal("rm"));
        assert!(unquoted("/bin/r?").dynamic);
        assert!(unquoted("{rm,-rf}").dynamic);
    }
}
