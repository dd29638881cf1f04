//! An assistant's text as Markdown (CommonMark with tables, strikethrough and task lists),
//! made safe for the page: raw HTML in the text shows as text, and a link goes only to
//! `http`, `https`, `mailto` or an anchor (anything else, `javascript:` included, goes
//! nowhere). Images load only from `data:` URLs, which the page's policy already enforces.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

/// Whether a link target is one the page may point at.
fn safe_link(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:", "#"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// Appends `text` rendered from Markdown.
pub fn push_markdown(out: &mut String, text: &str) {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) if !safe_link(&dest_url) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        other => other,
    });
    html::push_html(out, events);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> String {
        let mut out = String::new();
        push_markdown(&mut out, text);
        out
    }

    #[test]
    fn markdown_renders_and_markup_stays_text() {
        assert_eq!(
            md("**bold** and `code`"),
            "<p><strong>bold</strong> and <code>code</code></p>\n"
        );
        assert!(md("- a\n- b").contains("<ul>\n<li>a</li>\n<li>b</li>\n</ul>"));
        assert!(md("```rust\nfn x() {}\n```")
            .contains("<pre><code class=\"language-rust\">fn x() {}\n</code></pre>"));
        assert!(md("| a | b |\n|---|---|\n| 1 | 2 |").contains("<table>"));
        let raw = md("<script>alert(1)</script>\n\nand <img src=x onerror=alert(1)>");
        assert!(!raw.contains("<script") && !raw.contains("<img"), "{raw}");
        assert!(raw.contains("&lt;script&gt;"), "{raw}");
        assert!(md("[x](javascript:alert(1))").contains("<a href=\"#\">x</a>"));
        assert!(md("[x](https://example.com)").contains("<a href=\"https://example.com\">x</a>"));
    }
}
