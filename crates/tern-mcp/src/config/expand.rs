//! `${VAR}` and `$VAR` in `env` and `headers` values, as pi resolves them: `$$` is a `$`,
//! an unset or empty variable is an error naming it.

/// Expands the variables of `value` with `lookup`; the error lists the unset names.
///
/// ```
/// use tern_mcp::config::expand_vars;
/// let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
/// assert_eq!(expand_vars("Bearer ${TOKEN}", env).unwrap(), "Bearer s3cret");
/// assert_eq!(expand_vars("$$5 and $TOKEN", env).unwrap(), "$5 and s3cret");
/// assert_eq!(expand_vars("${MISSING}-$ALSO", env).unwrap_err(), ["MISSING", "ALSO"]);
/// ```
pub fn expand_vars(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, Vec<String>> {
    let mut out = String::with_capacity(value.len());
    let mut missing = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix(['$', '!']) {
            out.push_str(&after[..1]);
            rest = escaped;
            continue;
        }
        let (name, consumed) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) if is_name(&braced[..end]) => (&braced[..end], end + 2),
                // `${not a name}` stays as written; an unclosed `${` is a literal `$`.
                Some(end) => {
                    out.push_str(&rest[at..at + end + 3]);
                    rest = &after[end + 2..];
                    continue;
                }
                None => ("", 0),
            },
            None => {
                let len = name_prefix_len(after);
                (&after[..len], len)
            }
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => missing.push(name.to_string()),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(missing)
    }
}

fn name_prefix_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if !ok {
            break;
        }
        len = i + c.len_utf8();
    }
    len
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && name_prefix_len(s) == s.len()
}
