//! Formats: pi-schema's `formats` (adapted from TypeBox 1.3.27, MIT).

use std::sync::OnceLock;

use regex::Regex;

use crate::schema::ecma_regex::{js_regex_ignore_case, translate_regex, TrErr};
use crate::schema::formats::date_time::{is_date, is_date_time, is_idn_email, is_time};
use crate::schema::formats::hostname::{is_hostname, is_idn_hostname};
use crate::schema::formats::url::{is_iri, is_iri_reference, url_can_parse};

pub(crate) mod date_time;
pub(crate) mod hostname;
pub(crate) mod url;

/// Whether `s` has the named format; None for a format pi-schema does not check.
pub(crate) fn check_format(name: &str, s: &str) -> Option<bool> {
    Some(match name {
        "date" => is_date(s),
        "date-time" => is_date_time(s),
        "time" => is_time(s),
        "duration" => format_match(&DURATION, RE_DURATION, false, s),
        "email" => format_match(&EMAIL, RE_EMAIL, true, s),
        "idn-email" => is_idn_email(s),
        "hostname" => is_hostname(s),
        "idn-hostname" => is_idn_hostname(s),
        "ipv4" => format_match(&IPV4, RE_IPV4, false, s),
        "ipv6" => format_match(&IPV6, RE_IPV6, true, s),
        "uri" => format_match(&URI, &RE_URI.replace("{ipv6}", URI_IPV6), true, s),
        "uri-reference" => format_match(
            &URI_REFERENCE,
            &RE_URI_REFERENCE.replace("{ipv6}", URI_IPV6),
            true,
            s,
        ),
        "uri-template" => format_match(&URI_TEMPLATE, RE_URI_TEMPLATE, true, s),
        "iri" => is_iri(s),
        "iri-reference" => is_iri_reference(s),
        "url" => url_can_parse(s, false),
        "uuid" => format_match(&UUID, RE_UUID, true, s),
        "json-pointer" => format_match(&JSON_POINTER, RE_JSON_POINTER, false, s),
        "json-pointer-uri-fragment" => format_match(
            &JSON_POINTER_URI_FRAGMENT,
            RE_JSON_POINTER_URI_FRAGMENT,
            true,
            s,
        ),
        "relative-json-pointer" => {
            format_match(&RELATIVE_JSON_POINTER, RE_RELATIVE_JSON_POINTER, false, s)
        }
        "regex" => is_regex(s),
        _ => return None,
    })
}

pub(crate) type LazyRegex = OnceLock<Option<Regex>>;

/// A format's regex, translated from its ECMAScript source once (`ci`: the `i` flag).
pub(crate) fn format_regex(
    cell: &'static LazyRegex,
    src: &str,
    ci: bool,
) -> Option<&'static Regex> {
    cell.get_or_init(|| {
        if ci {
            return js_regex_ignore_case(src);
        }
        Regex::new(&translate_regex(src, false, false).ok()?).ok()
    })
    .as_ref()
}

pub(crate) fn format_match(cell: &'static LazyRegex, src: &str, ci: bool, s: &str) -> bool {
    // The sources are constants known to translate; a failure would only skip the format.
    format_regex(cell, src, ci).is_none_or(|re| re.is_match(s))
}

/// A regex of our own (Rust syntax), compiled once.
pub(crate) fn own_regex(cell: &'static LazyRegex, src: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(src).ok()).as_ref()
}

pub(crate) static DURATION: LazyRegex = OnceLock::new();
pub(crate) static EMAIL: LazyRegex = OnceLock::new();
pub(crate) static IPV4: LazyRegex = OnceLock::new();
pub(crate) static IPV6: LazyRegex = OnceLock::new();
pub(crate) static URI: LazyRegex = OnceLock::new();
pub(crate) static URI_REFERENCE: LazyRegex = OnceLock::new();
pub(crate) static URI_TEMPLATE: LazyRegex = OnceLock::new();
pub(crate) static UUID: LazyRegex = OnceLock::new();
pub(crate) static JSON_POINTER: LazyRegex = OnceLock::new();
pub(crate) static JSON_POINTER_URI_FRAGMENT: LazyRegex = OnceLock::new();
pub(crate) static RELATIVE_JSON_POINTER: LazyRegex = OnceLock::new();
pub(crate) static TIME: LazyRegex = OnceLock::new();
pub(crate) static IDN_EMAIL: LazyRegex = OnceLock::new();

pub(crate) const RE_DURATION: &str = r"^P((\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?|T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|\d+W)$";
pub(crate) const RE_EMAIL: &str = r##"^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[^"\\]|\\[\x20-\x7e])*")@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[(?:IPv6:[a-f0-9:]+|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})\])$"##;
pub(crate) const RE_IPV4: &str =
    r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$";
pub(crate) const RE_IPV6: &str = r"^(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:)?[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)$";
pub(crate) const RE_UUID: &str = r"^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$";
pub(crate) const RE_JSON_POINTER: &str = r"^(?:\/(?:[^~/]|~0|~1)*)*$";
pub(crate) const RE_JSON_POINTER_URI_FRAGMENT: &str =
    r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$";
pub(crate) const RE_RELATIVE_JSON_POINTER: &str =
    r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$";
pub(crate) const RE_URI_TEMPLATE: &str = r#"^(?:(?:[^\x00-\x20"<>%\\^`{|}\x7f]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9]\d{0,3}|\*)?)*\})*$"#;
pub(crate) const RE_TIME: &str =
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?$";

/// The IPv6 address alternatives of the URI grammar (RFC 3986's IP-literal without brackets).
pub(crate) const URI_IPV6: &str = r"(?:(?:[\da-f]{1,4}:){6}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|::(?:[\da-f]{1,4}:){5}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:[\da-f]{1,4})?::(?:[\da-f]{1,4}:){4}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,1}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){3}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,2}[\da-f]{1,4})?::(?:[\da-f]{1,4}:){2}(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,3}[\da-f]{1,4})?::[\da-f]{1,4}:(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,4}[\da-f]{1,4})?::(?:[\da-f]{1,4}:[\da-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))|(?:(?:[\da-f]{1,4}:){0,5}[\da-f]{1,4})?::[\da-f]{1,4}|(?:(?:[\da-f]{1,4}:){0,6}[\da-f]{1,4})?::)";

/// The `uri` regex; `{ipv6}` stands for [`URI_IPV6`].
pub(crate) const RE_URI: &str = r"^[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$";
/// The `uri-reference` regex; `{ipv6}` stands for [`URI_IPV6`].
pub(crate) const RE_URI_REFERENCE: &str = r"^(?:[a-z][a-z0-9+\-.]*:(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:\/\/(?:(?:[-a-z0-9._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:{ipv6}|v[0-9a-f]+\.[-a-z0-9._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)|(?:[-a-z0-9._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[-a-z0-9._~!$&'()*+,;=@]|%[0-9a-f]{2})+(?:\/(?:[-a-z0-9._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?)(?:\?(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[-a-z0-9._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$";

/// `regex`: whether `new RegExp(value, "u")` accepts it.
pub(crate) fn is_regex(value: &str) -> bool {
    match translate_regex(value, true, true) {
        Ok(t) => Regex::new(&t).is_ok(),
        Err(TrErr::Unsupported) => true,
        Err(TrErr::Syntax(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A format whose regex failed to translate would accept everything: every one compiles.
    #[test]
    fn every_format_regex_compiles() {
        let uri = RE_URI.replace("{ipv6}", URI_IPV6);
        let uri_reference = RE_URI_REFERENCE.replace("{ipv6}", URI_IPV6);
        let formats: [(&'static LazyRegex, &str, bool); 11] = [
            (&DURATION, RE_DURATION, false),
            (&EMAIL, RE_EMAIL, true),
            (&IPV4, RE_IPV4, false),
            (&IPV6, RE_IPV6, true),
            (&URI, &uri, true),
            (&URI_REFERENCE, &uri_reference, true),
            (&URI_TEMPLATE, RE_URI_TEMPLATE, true),
            (&UUID, RE_UUID, true),
            (&JSON_POINTER, RE_JSON_POINTER, false),
            (
                &JSON_POINTER_URI_FRAGMENT,
                RE_JSON_POINTER_URI_FRAGMENT,
                true,
            ),
            (&RELATIVE_JSON_POINTER, RE_RELATIVE_JSON_POINTER, false),
        ];
        for (cell, src, ci) in formats {
            assert!(format_regex(cell, src, ci).is_some(), "{src}");
        }
        assert!(own_regex(&TIME, RE_TIME).is_some());
        // The `i` flag as pi-schema's formats apply it (verdicts of the reference): ASCII
        // letters of either case, and no Kelvin sign for a `k`.
        let verdicts = [
            ("uuid", "zzz", false),
            ("uuid", "0A1B2C3D-0000-4000-8000-00000000000F", true),
            ("ipv6", "FE80::1", true),
            ("email", "Ann@[IPV6:FE80::1]", true),
            ("uri", "HTTP://Example.COM/%7E", true),
            ("uri", "1http://x", false),
            ("uri", "\u{212A}ttp://x", false),
            ("email", "\u{212A}@x.io", false),
        ];
        for (format, value, expected) in verdicts {
            assert_eq!(
                check_format(format, value),
                Some(expected),
                "{format} {value}"
            );
        }
    }
}
