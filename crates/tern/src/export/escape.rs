//! HTML escaping of text and attribute values.

use std::fmt::Write;

/// `text` with `& < > " '` escaped, safe in element content and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Appends `text` escaped.
pub fn push(out: &mut String, text: &str) {
    let _ = write!(out, "{}", escape(text));
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            super::escape(r#"<script>alert("x&y")</script>'"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;&#39;"
        );
    }
}
