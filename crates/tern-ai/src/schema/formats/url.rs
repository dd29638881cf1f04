//! `iri`, `iri-reference` and `url`: the WHATWG URL parser, approximated.

use std::sync::OnceLock;

use crate::schema::formats::hostname::puny_decode;
use crate::schema::formats::{format_match, own_regex, LazyRegex, IPV6, RE_IPV6};
use crate::schema::js::string::utf16_len;
use crate::schema::uri::{is_special_scheme, percent_decode, split_scheme};

// --- URL-based formats (the WHATWG parser's `URL.canParse`, approximated) ---------------------

pub(crate) fn is_iri(value: &str) -> bool {
    if value
        .chars()
        .any(|c| (c as u32) <= 0x20 || "<>^`{|}\\".contains(c))
        || has_bad_percent(value)
    {
        return false;
    }
    // The WHATWG parser rejects IPvFuture literals, which RFC 3987 allows: check one as [::1].
    let narrowed = if utf16_len(value) < 2048 {
        narrow_ipv_future(value)
    } else {
        value.to_string()
    };
    url_can_parse(&narrowed, false)
}

pub(crate) fn narrow_ipv_future(value: &str) -> String {
    static IPV_FUTURE: LazyRegex = OnceLock::new();
    match own_regex(&IPV_FUTURE, r"\[[vV][0-9a-fA-F]+\.[^\]]+\]") {
        Some(re) => re.replace(value, "[::1]").into_owned(),
        None => value.to_string(),
    }
}

pub(crate) fn is_iri_reference(value: &str) -> bool {
    if value
        .chars()
        .any(|c| (c as u32) <= 0x20 || c == '\u{7f}' || c == '\\')
        || has_bad_percent(value)
    {
        return false;
    }
    let malformed_scheme = split_scheme_prefix_without_colon(value);
    !malformed_scheme && url_can_parse(value, true)
}

/// `^[a-zA-Z][a-zA-Z0-9+\-.]*\/\/`: a scheme-like prefix followed by `//` without a colon.
pub(crate) fn split_scheme_prefix_without_colon(value: &str) -> bool {
    let mut chars = value.char_indices();
    if !chars.next().is_some_and(|(_, c)| c.is_ascii_alphabetic()) {
        return false;
    }
    for (i, c) in chars {
        if c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.') {
            continue;
        }
        return value[i..].starts_with("//");
    }
    false
}

/// A `%` not followed by two hex digits.
pub(crate) fn has_bad_percent(value: &str) -> bool {
    let b = value.as_bytes();
    b.iter().enumerate().any(|(i, c)| {
        *c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// Whether the WHATWG URL parser accepts `input` (`http_base`: relative to `http://example.com`).
/// An approximation: schemes, authorities, hosts and ports are checked; IDNA mapping is not.
pub(crate) fn url_can_parse(input: &str, http_base: bool) -> bool {
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    let s: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    if let Some((scheme, rest)) = split_scheme(&s) {
        let scheme = scheme.to_ascii_lowercase();
        if is_special_scheme(&scheme) {
            let slashed = rest.starts_with(['/', '\\']);
            if scheme == "file" {
                return !slashed || file_host_ok(rest);
            }
            // The base's own scheme without `//` is relative to the base.
            let mut after_scheme = rest.chars();
            let two_slashes = matches!(
                (after_scheme.next(), after_scheme.next()),
                (Some('/' | '\\'), Some('/' | '\\'))
            );
            if http_base && scheme == "http" && !two_slashes {
                return true;
            }
            let after = rest.trim_start_matches(['/', '\\']);
            let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
            return authority_ok(&after[..end], true);
        }
        if let Some(after) = rest.strip_prefix("//") {
            let end = after.find(['/', '?', '#']).unwrap_or(after.len());
            return authority_ok(&after[..end], false);
        }
        return true;
    }
    if !http_base {
        return false;
    }
    let mut chars = s.chars();
    let two_slashes = matches!(
        (chars.next(), chars.next()),
        (Some('/' | '\\'), Some('/' | '\\'))
    );
    if two_slashes {
        let after = s[2..].trim_start_matches(['/', '\\']);
        let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
        return authority_ok(&after[..end], true);
    }
    true
}

pub(crate) fn file_host_ok(rest: &str) -> bool {
    let Some(after) = rest
        .strip_prefix("//")
        .or_else(|| rest.strip_prefix("\\\\"))
    else {
        return true;
    };
    let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
    let host = &after[..end];
    host.is_empty() || host_ok(host, true)
}

pub(crate) fn authority_ok(auth: &str, special: bool) -> bool {
    let host_port = match auth.rfind('@') {
        // Credentials without a host fail ("host-missing").
        Some(i) if i + 1 == auth.len() => return false,
        Some(i) => &auth[i + 1..],
        None => auth,
    };
    let (host, port) = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(i) => (&host_port[..=i], &host_port[i + 1..]),
            None => return false,
        }
    } else {
        match host_port.find(':') {
            Some(i) => (&host_port[..i], &host_port[i..]),
            None => (host_port, ""),
        }
    };
    if !port.is_empty() {
        let Some(digits) = port.strip_prefix(':') else {
            return false;
        };
        if !digits.bytes().all(|c| c.is_ascii_digit())
            || digits
                .parse::<u64>()
                .map_or(!digits.is_empty(), |p| p > 65535)
        {
            return false;
        }
    }
    // An empty host fails before a port as it does in a special URL ("host-missing").
    if host.is_empty() && (special || !port.is_empty()) {
        return false;
    }
    host.is_empty() || host_ok(host, special)
}

pub(crate) fn host_ok(host: &str, special: bool) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .is_some_and(|ip| format_match(&IPV6, RE_IPV6, true, ip));
    }
    if !special {
        return !host.chars().any(forbidden_host_code_point);
    }
    let Some(decoded) = percent_decode(host) else {
        return false;
    };
    let domain = decoded.to_lowercase();
    if domain.is_empty() || domain.chars().any(forbidden_domain_code_point) {
        return false;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    // IDNA decodes `xn--` labels: one that decodes to nothing fails (the other checks of
    // UTS #46 need its mapping tables and are not made).
    let bad_ace = |l: &&str| {
        l.strip_prefix("xn--")
            .is_some_and(|body| puny_decode(body).is_none_or(|d| d.is_empty()))
    };
    if labels.iter().any(bad_ace) {
        return false;
    }
    let last = match labels.as_slice() {
        [.., last, ""] if labels.len() > 1 => *last,
        [.., last] => *last,
        [] => "",
    };
    let numeric = |s: &str| {
        !s.is_empty()
            && (s.bytes().all(|c| c.is_ascii_digit())
                || s.strip_prefix("0x")
                    .is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())))
    };
    if numeric(last) {
        return ipv4_host_ok(&domain);
    }
    true
}

/// A forbidden host code point (WHATWG URL): not allowed in an opaque host.
fn forbidden_host_code_point(c: char) -> bool {
    matches!(
        c,
        '\0' | '\t'
            | '\n'
            | '\r'
            | ' '
            | '#'
            | '/'
            | ':'
            | '<'
            | '>'
            | '?'
            | '@'
            | '['
            | '\\'
            | ']'
            | '^'
            | '|'
    )
}

/// A forbidden domain code point (WHATWG URL): a forbidden host code point, a C0 control,
/// `%` or DELETE.
fn forbidden_domain_code_point(c: char) -> bool {
    forbidden_host_code_point(c) || (c as u32) < 0x20 || c == '%' || c == '\u{7f}'
}

/// The WHATWG IPv4 parser: up to four parts, decimal, octal or hex, the last one widest.
pub(crate) fn ipv4_host_ok(domain: &str) -> bool {
    let mut parts: Vec<&str> = domain.split('.').collect();
    if parts.last() == Some(&"") && parts.len() > 1 {
        parts.pop();
    }
    if parts.len() > 4 {
        return false;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if p.is_empty() {
            return false;
        }
        let n = if digits.is_empty() {
            Some(0)
        } else {
            u64::from_str_radix(digits, radix).ok()
        };
        match n {
            Some(n) => numbers.push(n),
            None => return false,
        }
    }
    let Some((last, init)) = numbers.split_last() else {
        return false;
    };
    if init.iter().any(|n| *n > 255) {
        return false;
    }
    *last < 256u64.pow(5 - numbers.len() as u32)
}
