//! URIs for `$id`/`$ref` resolution and the URL-based formats.

pub(crate) fn document_of(uri: &str) -> &str {
    match uri.find('#') {
        Some(i) => &uri[..i],
        None => uri,
    }
}

/// `new URL(r, base).href`, falling back as the reference does when that throws.
pub(crate) fn resolve_uri(r: &str, base: &str) -> String {
    match url_join(base, r) {
        Some(u) => u,
        None if r.starts_with('#') => format!("{}{r}", document_of(base)),
        None => r.to_string(),
    }
}

pub(crate) fn split_scheme(s: &str) -> Option<(&str, &str)> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    Some((scheme, &s[colon + 1..]))
}

pub(crate) fn is_special_scheme(s: &str) -> bool {
    matches!(s, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

/// A URI split into authority, path, query and fragment (each without its delimiter).
pub(crate) struct UriParts<'a> {
    pub(crate) authority: Option<&'a str>,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
}

pub(crate) fn split_uri(rest: &str) -> UriParts<'_> {
    let (rest, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (rest, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        return UriParts {
            authority: Some(&after[..end]),
            path: &after[end..],
            query,
            fragment,
        };
    }
    UriParts {
        authority: None,
        path: rest,
        query,
        fragment,
    }
}

pub(crate) fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > usize::from(absolute) {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if absolute && !joined.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

pub(crate) fn build_uri(scheme: &str, parts: &UriParts<'_>, path: &str) -> String {
    let special = is_special_scheme(scheme);
    let mut out = format!("{scheme}:");
    if let Some(a) = parts.authority {
        out.push_str("//");
        out.push_str(&if special {
            a.to_ascii_lowercase()
        } else {
            a.to_string()
        });
    }
    if special && path.is_empty() && parts.authority.is_some() {
        out.push('/');
    }
    out.push_str(path);
    if let Some(q) = parts.query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = parts.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// RFC 3986 reference resolution with the WHATWG normalizations that matter for schema URIs.
pub(crate) fn url_join(base: &str, r: &str) -> Option<String> {
    if let Some((scheme, rest)) = split_scheme(r) {
        let scheme = scheme.to_ascii_lowercase();
        let parts = split_uri(rest);
        let path = if parts.authority.is_some() || parts.path.starts_with('/') {
            remove_dot_segments(parts.path)
        } else {
            parts.path.to_string()
        };
        return Some(build_uri(&scheme, &parts, &path));
    }
    let (scheme, brest) = split_scheme(base)?;
    let scheme = scheme.to_ascii_lowercase();
    let b = split_uri(brest);
    if b.authority.is_none() && !b.path.starts_with('/') {
        // A base that cannot be a base takes only fragments.
        if let Some(f) = r.strip_prefix('#') {
            let parts = UriParts {
                authority: None,
                path: b.path,
                query: b.query,
                fragment: Some(f),
            };
            return Some(build_uri(&scheme, &parts, b.path));
        }
        return None;
    }
    let rp = split_uri(r);
    let (authority, path, query) = if rp.authority.is_some() {
        (rp.authority, remove_dot_segments(rp.path), rp.query)
    } else if rp.path.is_empty() {
        (b.authority, b.path.to_string(), rp.query.or(b.query))
    } else if rp.path.starts_with('/') {
        (b.authority, remove_dot_segments(rp.path), rp.query)
    } else {
        let merged = if b.authority.is_some() && b.path.is_empty() {
            format!("/{}", rp.path)
        } else {
            match b.path.rfind('/') {
                Some(i) => format!("{}{}", &b.path[..=i], rp.path),
                None => rp.path.to_string(),
            }
        };
        (b.authority, remove_dot_segments(&merged), rp.query)
    };
    let parts = UriParts {
        authority,
        path: &path,
        query,
        fragment: rp.fragment,
    };
    Some(build_uri(&scheme, &parts, &path))
}

/// `decodeURIComponent`: None on a malformed escape or invalid UTF-8.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
