//! ECMAScript regular expressions translated to the `regex` crate's syntax.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

#[derive(Debug, PartialEq)]
pub(crate) enum TrErr {
    /// Valid ECMAScript the `regex` crate cannot express (lookaround, backreferences, ...).
    Unsupported,
    /// A syntax error, with V8's reason.
    Syntax(&'static str),
}

/// ECMAScript `\s`: white space and line terminators.
pub(crate) const JS_SPACE_CLASS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// A compiled pattern: Ok(None) when the `regex` crate cannot express it, Err(the reference's
/// compile error) when ECMAScript rejects it with and without the `u` flag.
pub(crate) type SharedRegex = Result<Option<Regex>, String>;

/// A pattern's regex, shared across calls as the reference shares its RegExps.
pub(crate) fn shared_regex(p: &str) -> SharedRegex {
    static CACHE: OnceLock<Mutex<HashMap<String, SharedRegex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock() {
        if let Some(hit) = map.get(p) {
            return hit.clone();
        }
    }
    let compiled = compile_js_regex(p);
    if let Ok(mut map) = cache.lock() {
        // Bounded: tool schemas repeat a few patterns; an unusual flood just starts over.
        if map.len() >= 512 {
            map.clear();
        }
        map.insert(p.to_string(), compiled.clone());
    }
    compiled
}

/// The reference's `new RegExp(p, "u")`, retried without `u` (Annex B syntax) when that throws.
pub(crate) fn compile_js_regex(p: &str) -> SharedRegex {
    let unicode = translate_regex(p, true, true).is_ok();
    if !unicode {
        if let Err(TrErr::Syntax(reason)) = translate_regex(p, false, true) {
            return Err(format!("Invalid regular expression: /{p}/: {reason}"));
        }
    }
    Ok(translate_regex(p, unicode, false)
        .ok()
        .and_then(|t| Regex::new(&t).ok()))
}

/// The reference's `new RegExp(src, "i")` (no `u` flag) for a pattern whose letters are ASCII,
/// as pi's own patterns are (the formats' and the context-overflow messages'): None if it does
/// not translate. Without `u`, ECMAScript never folds a non-ASCII character to an ASCII one,
/// so such a pattern matches the ASCII letters of either case and nothing more (no Kelvin sign
/// for `k`, as Unicode case folding would allow), which needs no case-folding tables.
pub(crate) fn js_regex_ignore_case(src: &str) -> Option<Regex> {
    translate(src, false, false, true)
        .ok()
        .and_then(|t| Regex::new(&t).ok())
}

/// What the last piece of a pattern was, for the quantifier rules.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Last {
    /// Nothing to repeat: the start, or right after `(` or `|`.
    Nothing,
    Atom,
    /// An astral character: without `u` a quantifier would repeat its low surrogate only.
    Astral,
    /// `^`, `$`, `\b`, `\B`.
    Assertion,
    Lookahead,
    Lookbehind,
    Quantifier,
    LazyQuantifier,
}

/// Capturing groups and whether any is named, scanned ahead as V8 does for backreferences.
pub(crate) fn scan_groups(cs: &[char]) -> (usize, bool) {
    let (mut count, mut named) = (0, false);
    let mut i = 0;
    let mut in_class = false;
    while i < cs.len() {
        match cs[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => {
                if cs.get(i + 1) != Some(&'?') {
                    count += 1;
                } else if cs.get(i + 2) == Some(&'<') && !matches!(cs.get(i + 3), Some('=' | '!')) {
                    count += 1;
                    named = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (count, named)
}

/// Whether `name` is a capture group name (an identifier).
/// The capture group name that starts at `start` and runs to the next `>`, and that `>`'s
/// offset from `start`.
fn group_name(cs: &[char], start: usize) -> Result<(String, usize), TrErr> {
    let invalid = TrErr::Syntax("Invalid capture group name");
    let Some(close) = cs
        .get(start..)
        .and_then(|rest| rest.iter().position(|c| *c == '>'))
    else {
        return Err(invalid);
    };
    let name: String = cs[start..start + close].iter().collect();
    if !is_group_name(&name) {
        return Err(invalid);
    }
    Ok((name, close))
}

pub(crate) fn is_group_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '$' || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '$' | '_' | '\u{200c}' | '\u{200d}'))
}

/// Translates ECMAScript regex syntax to the `regex` crate's. `unicode`: parse as the `u` flag
/// does (else Annex B). `check_only`: the result only tells validity, so what the crate cannot
/// express becomes a placeholder instead of failing as unsupported.
pub(crate) fn translate_regex(src: &str, unicode: bool, check_only: bool) -> Result<String, TrErr> {
    translate(src, unicode, check_only, false)
}

/// [`translate_regex`], with the `i` flag for ASCII letters when `ignore_case` (see
/// [`js_regex_ignore_case`]): a cased non-ASCII character is then [`TrErr::Unsupported`].
fn translate(
    src: &str,
    unicode: bool,
    check_only: bool,
    ignore_case: bool,
) -> Result<String, TrErr> {
    let cs: Vec<char> = src.chars().collect();
    let (total_captures, has_named) = scan_groups(&cs);
    let mut out = String::with_capacity(src.len() + 16);
    // Open groups (with what they leave for a quantifier), names, backreferences to check.
    let mut groups: Vec<Last> = Vec::new();
    let mut captures = 0usize;
    let mut names: Vec<String> = Vec::new();
    let mut number_refs: Vec<usize> = Vec::new();
    let mut name_refs: Vec<String> = Vec::new();
    let mut last = Last::Nothing;
    // What cannot be expressed: an error unless only checking.
    let unsupported = |out: &mut String| -> Result<(), TrErr> {
        if check_only {
            out.push_str("(?:)");
            Ok(())
        } else {
            Err(TrErr::Unsupported)
        }
    };
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\\' => {
                let Some(&e) = cs.get(i + 1) else {
                    return Err(TrErr::Syntax("\\ at end of pattern"));
                };
                match e {
                    'b' => {
                        out.push_str(r"(?-u:\b)");
                        last = Last::Assertion;
                        i += 2;
                    }
                    'B' => {
                        unsupported(&mut out)?;
                        last = Last::Assertion;
                        i += 2;
                    }
                    '1'..='9' => {
                        let mut j = i + 1;
                        let mut n = 0usize;
                        while let Some(v) = cs.get(j).and_then(|c| c.to_digit(10)) {
                            n = n.saturating_mul(10).saturating_add(v as usize);
                            j += 1;
                        }
                        if unicode || n <= total_captures {
                            number_refs.push(n);
                            unsupported(&mut out)?;
                            i = j;
                        } else {
                            // Without `u`, a number above the group count is an octal escape.
                            let (next, value) = legacy_octal(&cs, i + 1);
                            let start = out.len();
                            push_code_point(&mut out, value);
                            if ignore_case {
                                fold_atom(&mut out, start, value)?;
                            }
                            i = next;
                        }
                        last = Last::Atom;
                    }
                    'k' if unicode || has_named => {
                        if cs.get(i + 2) != Some(&'<') {
                            return Err(TrErr::Syntax("Invalid named reference"));
                        }
                        let (name, close) = group_name(&cs, i + 3)?;
                        name_refs.push(name);
                        unsupported(&mut out)?;
                        last = Last::Atom;
                        i += close + 4;
                    }
                    _ => {
                        let start = out.len();
                        let (next, value) = translate_escape(&cs, i, &mut out, unicode, false)?;
                        if ignore_case {
                            if let Some(v) = value {
                                fold_atom(&mut out, start, v)?;
                            }
                        }
                        last = if value.is_some_and(|v| v > 0xFFFF) {
                            Last::Astral
                        } else {
                            Last::Atom
                        };
                        i = next;
                    }
                }
                continue;
            }
            '[' => {
                i = translate_class(&cs, i, &mut out, unicode, ignore_case)?;
                last = Last::Atom;
                continue;
            }
            // `.` matches anything but line terminators.
            '.' => {
                out.push_str(r"[^\n\r\x{2028}\x{2029}]");
                last = Last::Atom;
            }
            '(' => {
                last = Last::Nothing;
                if cs.get(i + 1) != Some(&'?') {
                    captures += 1;
                    groups.push(Last::Atom);
                    out.push('(');
                    i += 1;
                    continue;
                }
                match (cs.get(i + 2), cs.get(i + 3)) {
                    (Some(':'), _) => {
                        out.push_str("(?:");
                        groups.push(Last::Atom);
                        i += 3;
                    }
                    (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                        let behind = cs.get(i + 2) == Some(&'<');
                        if !check_only {
                            return Err(TrErr::Unsupported);
                        }
                        out.push_str("(?:");
                        groups.push(if behind {
                            Last::Lookbehind
                        } else {
                            Last::Lookahead
                        });
                        i += if behind { 4 } else { 3 };
                    }
                    (Some('<'), _) => {
                        let (name, close) = group_name(&cs, i + 3)?;
                        if names.contains(&name) {
                            return Err(TrErr::Syntax("Duplicate capture group name"));
                        }
                        if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                            out.push_str("(?<");
                            out.push_str(&name);
                            out.push('>');
                        } else if check_only {
                            out.push('(');
                        } else {
                            // The crate takes only ASCII names.
                            return Err(TrErr::Unsupported);
                        }
                        names.push(name);
                        captures += 1;
                        groups.push(Last::Atom);
                        i += close + 4;
                    }
                    _ => return Err(TrErr::Syntax("Invalid group")),
                }
                continue;
            }
            ')' => {
                let Some(kind) = groups.pop() else {
                    return Err(TrErr::Syntax("Unmatched ')'"));
                };
                out.push(')');
                last = kind;
            }
            '|' => {
                out.push('|');
                last = Last::Nothing;
            }
            '^' | '$' => {
                out.push(c);
                last = Last::Assertion;
            }
            '*' | '+' | '?' => {
                last = quantify(last, c == '?', unicode, check_only)?;
                out.push(c);
            }
            '{' => match quantifier_end(&cs, i) {
                Some((end, min, max)) => {
                    last = quantify(last, false, unicode, check_only)?;
                    if max.is_some_and(|max| max < min) {
                        return Err(TrErr::Syntax("numbers out of order in {} quantifier"));
                    }
                    out.extend(&cs[i..=end]);
                    i = end + 1;
                    continue;
                }
                None if unicode => return Err(TrErr::Syntax("Lone quantifier brackets")),
                None => {
                    out.push_str(r"\{");
                    last = Last::Atom;
                }
            },
            '}' | ']' => {
                if unicode {
                    return Err(TrErr::Syntax("Lone quantifier brackets"));
                }
                out.push('\\');
                out.push(c);
                last = Last::Atom;
            }
            _ => {
                let start = out.len();
                push_literal(&mut out, c);
                if ignore_case {
                    fold_atom(&mut out, start, c as u32)?;
                }
                last = if (c as u32) > 0xFFFF {
                    Last::Astral
                } else {
                    Last::Atom
                };
            }
        }
        i += 1;
    }
    if !groups.is_empty() {
        return Err(TrErr::Syntax("Unterminated group"));
    }
    if number_refs.iter().any(|n| *n > captures) && unicode {
        return Err(TrErr::Syntax("Invalid escape"));
    }
    if name_refs.iter().any(|n| !names.contains(n)) {
        return Err(TrErr::Syntax("Invalid named capture referenced"));
    }
    Ok(out)
}

/// The state after a quantifier: only an atom repeats, once (`?` may follow for laziness);
/// without `u` a lookahead repeats too.
pub(crate) fn quantify(
    last: Last,
    question: bool,
    unicode: bool,
    check_only: bool,
) -> Result<Last, TrErr> {
    match last {
        Last::Quantifier if question => Ok(Last::LazyQuantifier),
        Last::Atom => Ok(Last::Quantifier),
        Last::Astral if unicode || check_only => Ok(Last::Quantifier),
        // Without `u` the quantifier repeats the low surrogate alone: not expressible here.
        Last::Astral => Err(TrErr::Unsupported),
        // Annex B lets a lookahead repeat (only checked: lookarounds are placeholders then).
        Last::Lookahead if !unicode => Ok(Last::Quantifier),
        Last::Lookahead | Last::Lookbehind => Err(TrErr::Syntax("Invalid quantifier")),
        _ => Err(TrErr::Syntax("Nothing to repeat")),
    }
}

/// Annex B's legacy octal escape at `cs[i]` (a digit): the index after it and its value.
pub(crate) fn legacy_octal(cs: &[char], i: usize) -> (usize, u32) {
    let digit = |k: usize| cs.get(k).and_then(|c| c.to_digit(8));
    let Some(first) = digit(i) else {
        // `\8` and `\9` are the digits themselves.
        return (i + 1, cs.get(i).map_or(0, |c| *c as u32));
    };
    match (digit(i + 1), digit(i + 2)) {
        (Some(b), Some(c)) if first <= 3 => (i + 3, first * 64 + b * 8 + c),
        (Some(b), _) => (i + 2, first * 8 + b),
        _ => (i + 1, first),
    }
}

pub(crate) fn push_code_point(out: &mut String, v: u32) {
    out.push_str(&format!(r"\x{{{v:X}}}"));
}

/// The `}` closing a quantifier `{n}`, `{n,}` or `{n,m}` at `i`, with its bounds.
pub(crate) fn quantifier_end(cs: &[char], i: usize) -> Option<(usize, u128, Option<u128>)> {
    let number = |j: &mut usize| -> Option<u128> {
        let start = *j;
        let mut n: u128 = 0;
        while let Some(d) = cs.get(*j).and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(u128::from(d));
            *j += 1;
        }
        (*j > start).then_some(n)
    };
    let mut j = i + 1;
    let min = number(&mut j)?;
    let mut max = Some(min);
    if cs.get(j) == Some(&',') {
        j += 1;
        max = number(&mut j);
    }
    (cs.get(j) == Some(&'}')).then_some((j, min, max))
}

pub(crate) fn push_literal(out: &mut String, c: char) {
    if r"\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// One escape at `cs[i]` (a backslash, not a backreference): the next index and, for a single
/// character, its code point (which may bound a class range).
pub(crate) fn translate_escape(
    cs: &[char],
    i: usize,
    out: &mut String,
    unicode: bool,
    in_class: bool,
) -> Result<(usize, Option<u32>), TrErr> {
    let Some(&e) = cs.get(i + 1) else {
        return Err(TrErr::Syntax("\\ at end of pattern"));
    };
    let mut next = i + 2;
    // An identity escape: the character itself, which the `u` flag allows only for syntax characters.
    let identity = |out: &mut String, c: char| -> Result<Option<u32>, TrErr> {
        if unicode && !(r"^$\.*+?()[]{}|/".contains(c) || (in_class && c == '-')) {
            return Err(TrErr::Syntax("Invalid escape"));
        }
        push_literal(out, c);
        Ok(Some(c as u32))
    };
    let class = |out: &mut String, inside: &str, negated: bool| {
        match (in_class, negated) {
            (true, false) => out.push_str(inside),
            (_, true) => {
                out.push_str("[^");
                out.push_str(inside);
                out.push(']');
            }
            (false, false) => {
                out.push('[');
                out.push_str(inside);
                out.push(']');
            }
        }
        Ok(None)
    };
    let value = match e {
        'd' => class(out, "0-9", false),
        'D' => class(out, "0-9", true),
        'w' => class(out, "0-9A-Za-z_", false),
        'W' => class(out, "0-9A-Za-z_", true),
        's' => class(out, JS_SPACE_CLASS, false),
        'S' => class(out, JS_SPACE_CLASS, true),
        'b' => {
            out.push_str(r"\x08");
            Ok(Some(8))
        }
        'n' | 'r' | 't' | 'f' | 'v' => {
            out.push('\\');
            out.push(e);
            Ok(Some(match e {
                'n' => 10,
                'r' => 13,
                't' => 9,
                'f' => 12,
                _ => 11,
            }))
        }
        '0' if !cs.get(i + 2).is_some_and(char::is_ascii_digit) => {
            out.push_str(r"\x00");
            Ok(Some(0))
        }
        '0'..='9' if unicode => Err(TrErr::Syntax("Invalid class escape")),
        '0'..='9' => {
            let (n, v) = legacy_octal(cs, i + 1);
            next = n;
            push_code_point(out, v);
            Ok(Some(v))
        }
        'c' => match cs.get(i + 2) {
            Some(l)
                if l.is_ascii_alphabetic()
                    || (!unicode && in_class && (l.is_ascii_digit() || *l == '_')) =>
            {
                let v = (*l as u32) % 32;
                push_code_point(out, v);
                next = i + 3;
                Ok(Some(v))
            }
            _ if unicode => Err(TrErr::Syntax("Invalid unicode escape")),
            _ => {
                // Without `u`, a lone `\c` is a backslash and a `c`.
                out.push_str(r"\\");
                next = i + 1;
                Ok(Some('\\' as u32))
            }
        },
        'x' => match hex_value(cs, i + 2, 2) {
            Some(v) => {
                push_code_point(out, v);
                next = i + 4;
                Ok(Some(v))
            }
            None => identity(out, 'x'),
        },
        'u' => {
            if unicode && cs.get(i + 2) == Some(&'{') {
                let mut j = i + 3;
                let mut v: u32 = 0;
                while let Some(d) = cs.get(j).and_then(|c| c.to_digit(16)) {
                    v = v.saturating_mul(16).saturating_add(d);
                    j += 1;
                }
                if j == i + 3 || cs.get(j) != Some(&'}') || v > 0x10FFFF {
                    return Err(TrErr::Syntax("Invalid Unicode escape"));
                }
                next = j + 1;
                unicode_escape(out, v)
            } else if let Some(v) = hex_value(cs, i + 2, 4) {
                next = i + 6;
                let mut cp = v;
                if (0xD800..=0xDBFF).contains(&v)
                    && cs.get(i + 6) == Some(&'\\')
                    && cs.get(i + 7) == Some(&'u')
                {
                    if let Some(low) =
                        hex_value(cs, i + 8, 4).filter(|l| (0xDC00..=0xDFFF).contains(l))
                    {
                        cp = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
                        next = i + 12;
                    }
                }
                unicode_escape(out, cp)
            } else if unicode {
                Err(TrErr::Syntax("Invalid Unicode escape"))
            } else {
                identity(out, 'u')
            }
        }
        'p' | 'P' if unicode => {
            let close = if cs.get(i + 2) == Some(&'{') {
                cs[i + 3..].iter().position(|c| *c == '}')
            } else {
                None
            };
            match close {
                Some(close) if close > 0 => {
                    out.push('\\');
                    out.push(e);
                    out.extend(&cs[i + 2..i + 4 + close]);
                    next = i + 4 + close;
                    Ok(None)
                }
                _ => Err(TrErr::Syntax("Invalid property name")),
            }
        }
        'B' | 'k' if unicode => Err(TrErr::Syntax("Invalid escape")),
        '-' if in_class => {
            out.push_str(r"\-");
            Ok(Some('-' as u32))
        }
        c => identity(out, c),
    }?;
    Ok((next, value))
}

/// A code point from a `\u` escape: a lone surrogate matches nothing in a Rust string.
pub(crate) fn unicode_escape(out: &mut String, cp: u32) -> Result<Option<u32>, TrErr> {
    if (0xD800..=0xDFFF).contains(&cp) {
        return Err(TrErr::Unsupported);
    }
    push_code_point(out, cp);
    Ok(Some(cp))
}

pub(crate) fn hex_value(cs: &[char], start: usize, len: usize) -> Option<u32> {
    let mut v = 0;
    for k in 0..len {
        v = v * 16 + cs.get(start + k)?.to_digit(16)?;
    }
    Some(v)
}

/// A character class at `cs[i]` (`[`): the index after its `]`.
pub(crate) fn translate_class(
    cs: &[char],
    i: usize,
    out: &mut String,
    unicode: bool,
    ignore_case: bool,
) -> Result<usize, TrErr> {
    let mut j = i + 1;
    let negated = cs.get(j) == Some(&'^');
    if negated {
        j += 1;
    }
    if cs.get(j) == Some(&']') {
        // `[]` matches nothing, `[^]` anything.
        out.push_str(if negated {
            r"[\x{0}-\x{10FFFF}]"
        } else {
            r"[^\x{0}-\x{10FFFF}]"
        });
        return Ok(j + 1);
    }
    let mut body = String::new();
    // The last item's code point while it may start a range, and a range's start after its `-`.
    let mut previous: Option<u32> = None;
    let mut range_start: Option<u32> = None;
    // A class escape (`\d`, ...) that a `-` follows, or that follows a `-`: a range needs characters.
    let mut after_class_escape = false;
    // Every character and range the class names, for the `i` flag: folded before any `^`
    // negates them, so `[^a-z]` leaves out `A`-`Z` too, as ECMAScript does.
    let mut members: Vec<(u32, u32)> = Vec::new();
    loop {
        let Some(&c) = cs.get(j) else {
            return Err(TrErr::Syntax("Unterminated character class"));
        };
        if c == ']' {
            break;
        }
        let value = if c == '\\' {
            let (n, value) = translate_escape(cs, j, &mut body, unicode, true)?;
            j = n;
            value
        } else if c == '-'
            && cs.get(j + 1).is_some_and(|n| *n != ']')
            && (previous.is_some() || after_class_escape)
            && range_start.is_none()
        {
            if after_class_escape && unicode {
                return Err(TrErr::Syntax("Invalid character class"));
            }
            match previous {
                Some(p) => {
                    body.push('-');
                    range_start = Some(p);
                }
                // Without `u`, a `-` next to a class escape is itself.
                None => body.push_str(r"\-"),
            }
            previous = None;
            after_class_escape = false;
            j += 1;
            continue;
        } else {
            if matches!(c, '-' | '[' | '&' | '~' | '^') {
                body.push('\\');
                body.push(c);
            } else {
                push_literal(&mut body, c);
            }
            j += 1;
            Some(c as u32)
        };
        match (range_start.take(), value) {
            (Some(start), Some(end)) => {
                if start > end {
                    return Err(TrErr::Syntax("Range out of order in character class"));
                }
                if ignore_case {
                    members.push((start, end));
                }
                previous = None;
                after_class_escape = false;
            }
            (Some(_), None) => {
                if unicode {
                    return Err(TrErr::Syntax("Invalid character class"));
                }
                // Not expressible without the `u` flag's range rules: the class keeps its members.
                return Err(TrErr::Unsupported);
            }
            (None, v) => {
                if ignore_case {
                    members.extend(v.map(|v| (v, v)));
                }
                previous = v;
                after_class_escape = v.is_none();
            }
        }
    }
    // Empty unless `ignore_case`.
    for (start, end) in members {
        for (from, to) in ascii_case_partners(start, end)? {
            push_code_point(&mut body, from);
            body.push('-');
            push_code_point(&mut body, to);
        }
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(&body);
    out.push(']');
    Ok(j + 1)
}

/// The atom just written at `out[start..]` (the character `v`) under the `i` flag: an ASCII
/// letter becomes a class of both cases; a cased non-ASCII character is not supported.
fn fold_atom(out: &mut String, start: usize, v: u32) -> Result<(), TrErr> {
    let Some(c) = char::from_u32(v) else {
        return Ok(());
    };
    if c.is_ascii_alphabetic() {
        out.truncate(start);
        out.push('[');
        out.push(c.to_ascii_lowercase());
        out.push(c.to_ascii_uppercase());
        out.push(']');
        Ok(())
    } else if has_case(c) {
        Err(TrErr::Unsupported)
    } else {
        Ok(())
    }
}

/// The other-case ranges of the ASCII letters in `start..=end`, under the `i` flag; a range
/// beyond ASCII is not supported unless it is one uncased character.
fn ascii_case_partners(start: u32, end: u32) -> Result<Vec<(u32, u32)>, TrErr> {
    if end >= 0x80 {
        return match char::from_u32(start) {
            Some(c) if start == end && !has_case(c) => Ok(Vec::new()),
            _ => Err(TrErr::Unsupported),
        };
    }
    // ASCII's two cases are 0x20 apart.
    let mut partners = Vec::new();
    let (lo, hi) = (start.max(u32::from(b'a')), end.min(u32::from(b'z')));
    if lo <= hi {
        partners.push((lo - 0x20, hi - 0x20));
    }
    let (lo, hi) = (start.max(u32::from(b'A')), end.min(u32::from(b'Z')));
    if lo <= hi {
        partners.push((lo + 0x20, hi + 0x20));
    }
    Ok(partners)
}

/// Whether `c` has another case (a lower-, upper- or titlecase mapping of its own).
fn has_case(c: char) -> bool {
    !c.to_lowercase().eq([c]) || !c.to_uppercase().eq([c])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_case_matches_as_ecmascript() {
        // (pattern, input, `new RegExp(pattern, "i").test(input)` in Node).
        let cases = [
            ("[^a-z]", "A", false),
            ("[^a-z]", "a", false),
            ("[^a-z]", "1", true),
            ("^k$", "\u{212A}", false),
            ("^k$", "K", true),
            ("^s$", "\u{17F}", false),
            ("^S$", "s", true),
            ("^[a-f]+$", "DeAd", true),
            ("^[0-9a-f]{2}$", "9G", false),
            (r"^\w+$", "caf\u{e9}", false),
            (r"^\w+$", "CAFE_1", true),
            (r"^\d$", "\u{663}", false),
            ("a.b", "A\u{2028}B", false),
            ("a.b", "a\rb", false),
            ("a.b", "AxB", true),
            (r"^[\x41-\x43]$", "b", true),
            (r"^\x41$", "a", true),
            (r"^\101$", "a", true),
            (r#"^[^\x00-\x20"<>%\\^`{|}\x7f]+$"#, "Abc\u{e9}", true),
            (r"^[\W]$", "a", false),
            (r"^[\W]$", "-", true),
            (r"^[^\d]$", "X", true),
        ];
        for (pattern, input, expected) in cases {
            let re = js_regex_ignore_case(pattern).unwrap_or_else(|| panic!("{pattern}"));
            assert_eq!(re.is_match(input), expected, "/{pattern}/i on {input:?}");
        }
    }

    #[test]
    fn ignore_case_declines_cased_non_ascii() {
        // ECMAScript folds these; without Unicode case tables they are not expressed.
        assert!(js_regex_ignore_case("caf\u{e9}").is_none());
        assert!(js_regex_ignore_case(r"\u00e9").is_none());
        assert!(js_regex_ignore_case("[a-\u{e9}]").is_none());
        // An uncased one stays.
        assert!(js_regex_ignore_case("a\u{2028}?b").is_some());
    }
}
