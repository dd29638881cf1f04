//! An MCP `CallToolResult` as tern content blocks, as pi maps it: text and images pass
//! through, embedded text and image resources are unwrapped, audio, resource links and
//! binary resources become short placeholders, and a result with no blocks but
//! `structuredContent` shows its JSON. `structuredContent` itself is kept on the result.

use serde_json::{json, Value};
use tern_agent::ToolResult;
use tern_ai::ContentBlock;

/// The tool result for an MCP `CallToolResult` given as JSON.
///
/// ```
/// use serde_json::json;
/// let result = tern_mcp::content::tool_result(&json!({
///     "content": [{"type": "text", "text": "hi"}, {"type": "audio", "data": "", "mimeType": "audio/wav"}],
///     "structuredContent": {"n": 1},
///     "isError": false,
/// }));
/// let texts: Vec<_> = result.content().iter().filter_map(|b| b.as_text()).collect();
/// assert_eq!(texts, ["hi", "[audio audio/wav omitted]"]);
/// assert_eq!(result.structured_content.as_deref(), Some(&json!({"n": 1})));
/// assert_eq!(result.is_error, None);
/// ```
pub fn tool_result(result: &Value) -> ToolResult {
    let mut content: Vec<ContentBlock> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    if content.is_empty() {
        if let Some(s) = &structured {
            content.push(ContentBlock::text(
                serde_json::to_string_pretty(s).unwrap_or_default(),
            ));
        }
    }
    ToolResult {
        content: Some(content),
        structured_content: structured.map(Box::new),
        is_error: (result.get("isError") == Some(&Value::Bool(true))).then_some(true),
        ..Default::default()
    }
}

fn block(b: &Value) -> ContentBlock {
    let field = |name: &str| b.get(name).and_then(Value::as_str).unwrap_or_default();
    match field("type") {
        "text" => ContentBlock::text(field("text")),
        "image" => image(field("data"), field("mimeType")),
        "audio" => ContentBlock::text(format!("[audio {} omitted]", field("mimeType"))),
        "resource_link" => ContentBlock::text(format!("{}: {}", field("name"), field("uri"))),
        "resource" => {
            let resource = b.get("resource").cloned().unwrap_or(Value::Null);
            let r = |name: &str| resource.get(name).and_then(Value::as_str);
            if let Some(text) = r("text") {
                return ContentBlock::text(text);
            }
            match r("mimeType") {
                Some(mime) if mime.starts_with("image/") => {
                    image(r("blob").unwrap_or_default(), mime)
                }
                mime => ContentBlock::text(format!(
                    "[binary resource {} ({}) omitted]",
                    r("uri").unwrap_or_default(),
                    mime.unwrap_or("unknown type")
                )),
            }
        }
        other => ContentBlock::text(format!("[unsupported MCP content {other}]")),
    }
}

fn image(data: &str, mime_type: &str) -> ContentBlock {
    serde_json::from_value(json!({"type": "image", "data": data, "mimeType": mime_type}))
        .unwrap_or_else(|_| ContentBlock::text(format!("[image {mime_type} omitted]")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_images_and_structured_only_results() {
        let r = tool_result(&json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "a://t", "text": "inline"}},
            {"type": "resource", "resource": {"uri": "a://i", "mimeType": "image/gif", "blob": "R0lG"}},
            {"type": "resource", "resource": {"uri": "a://b", "blob": "AA"}},
            {"type": "resource_link", "uri": "a://l", "name": "doc"},
            {"type": "weird"},
        ], "isError": true}));
        let json = serde_json::to_value(r.content()).unwrap();
        assert_eq!(
            json,
            json!([
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "inline"},
                {"type": "image", "data": "R0lG", "mimeType": "image/gif"},
                {"type": "text", "text": "[binary resource a://b (unknown type) omitted]"},
                {"type": "text", "text": "doc: a://l"},
                {"type": "text", "text": "[unsupported MCP content weird]"},
            ])
        );
        assert_eq!(r.is_error, Some(true));

        let s = tool_result(&json!({"content": [], "structuredContent": {"t": 20}}));
        assert_eq!(s.content()[0].as_text(), Some("{\n  \"t\": 20\n}"));
        assert_eq!(s.structured_content.as_deref(), Some(&json!({"t": 20})));
    }
}
