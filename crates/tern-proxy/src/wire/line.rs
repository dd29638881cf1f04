//! One line of a response body, read the way the reference reads it: only lines starting
//! with `data: ` count, their payload is trimmed and an empty payload is skipped.
//!
//! ```
//! use tern_proxy::wire::{parse_line, Line, ProxyEvent};
//! assert_eq!(parse_line(r#"data: {"type":"start"}"#), Line::Event(ProxyEvent::Start));
//! assert_eq!(parse_line(": keep-alive"), Line::Skip);
//! assert_eq!(parse_line(r#"data: {"type":"ping"}"#), Line::Skip);
//! assert!(matches!(parse_line("data: {"), Line::Invalid(_)));
//! ```

use serde_json::Value;

use super::event::{ProxyEvent, KINDS};

/// What a body line holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// Nothing to act on: not a `data: ` line, an empty payload, or an event of a type the
    /// protocol does not know (the reference warns about those and goes on).
    Skip,
    /// An event.
    Event(ProxyEvent),
    /// A payload that cannot be read; the reference ends the response with an error then.
    Invalid(String),
}

/// Reads one line (without its `\n`).
pub fn parse_line(line: &str) -> Line {
    let Some(data) = line.strip_prefix("data: ") else {
        return Line::Skip;
    };
    let data = data.trim_matches(is_js_whitespace);
    if data.is_empty() {
        return Line::Skip;
    }
    match serde_json::from_str::<ProxyEvent>(data) {
        Ok(event) => Line::Event(event),
        Err(typed) => classify(data, typed),
    }
}

/// Why a payload is not an event: broken JSON, a malformed known event, or something the
/// reference passes over.
fn classify(data: &str, typed: serde_json::Error) -> Line {
    let value = match serde_json::from_str::<Value>(data) {
        Ok(v) => v,
        Err(e) => return Line::Invalid(format!("Invalid JSON in a proxy event line: {e}")),
    };
    match &value {
        // The reference reads `.type` of the parsed value, which throws only for null.
        Value::Null => Line::Invalid("Cannot read properties of null (reading 'type')".into()),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some(kind) if KINDS.contains(&kind) => {
                Line::Invalid(format!("Malformed {kind} proxy event: {typed}"))
            }
            _ => Line::Skip,
        },
        _ => Line::Skip,
    }
}

/// JavaScript's `String.prototype.trim` set: Unicode spaces, line terminators and the BOM
/// (Rust's `char::is_whitespace` differs by U+0085 and U+FEFF).
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_data_lines_with_a_space_count() {
        assert_eq!(parse_line(r#"data:{"type":"start"}"#), Line::Skip);
        assert_eq!(parse_line("data: "), Line::Skip);
        assert_eq!(parse_line("data:    \r"), Line::Skip);
        assert_eq!(parse_line("event: x"), Line::Skip);
        assert_eq!(
            parse_line("data:  {\"type\":\"start\"} \r"),
            Line::Event(ProxyEvent::Start)
        );
    }

    #[test]
    fn payloads_the_reference_passes_over_are_skipped() {
        for skipped in [
            "5",
            "\"text\"",
            "[]",
            "{}",
            r#"{"type":"ping"}"#,
            r#"{"type":3}"#,
        ] {
            assert_eq!(
                parse_line(&format!("data: {skipped}")),
                Line::Skip,
                "{skipped}"
            );
        }
    }

    #[test]
    fn unreadable_payloads_are_errors() {
        let Line::Invalid(null) = parse_line("data: null") else {
            panic!("null is an error");
        };
        assert_eq!(null, "Cannot read properties of null (reading 'type')");
        let Line::Invalid(bad) = parse_line(r#"data: {"type":"text_delta","contentIndex":0}"#)
        else {
            panic!("a text_delta without delta is an error");
        };
        assert!(
            bad.starts_with("Malformed text_delta proxy event: missing field `delta`"),
            "{bad}"
        );
        assert!(matches!(parse_line("data: {\"type\""), Line::Invalid(_)));
    }

    #[test]
    fn trimming_follows_javascript() {
        assert_eq!(
            parse_line("data: \u{feff}\u{3000}{\"type\":\"start\"}"),
            Line::Event(ProxyEvent::Start)
        );
        // U+0085 is not JavaScript whitespace, so it stays and the JSON is invalid.
        assert!(matches!(
            parse_line("data: {\"type\":\"start\"}\u{85}"),
            Line::Invalid(_)
        ));
    }
}
