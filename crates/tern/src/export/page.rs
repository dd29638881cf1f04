//! The page: a header with the session's facts, the system prompt folded, the session tree
//! (every branch), then each entry of the active branch, an assistant's text as Markdown.
//! Text goes through [`escape`] (Markdown through [`markdown`](super::markdown), which keeps
//! raw markup as text), so markup in a message shows as text.

use serde_json::Value;

use std::collections::HashSet;

use super::escape::{escape, push};
use super::markdown::push_markdown;
use super::tree::render_tree;
use crate::session_entries::branch;

const STYLE: &str = include_str!("style.css");

/// The page of a session's entries (its header first, as in the file).
///
/// Scripts are refused twice: the page holds none of its own, and its content security
/// policy forbids them, so even markup that escaped escaping could not run.
pub fn render(entries: &[Value], system_prompt: Option<&str>) -> String {
    let header = entries.iter().find(|e| e["type"] == "session");
    let body: Vec<Value> = entries
        .iter()
        .filter(|e| e["type"] != "session")
        .cloned()
        .collect();
    let leaf = body.iter().rev().find_map(|e| e["id"].as_str());
    let shown = branch(&body, leaf);
    let id = header.and_then(|h| h["id"].as_str()).unwrap_or("session");
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>tern session ");
    push(&mut out, id);
    out.push_str("</title>\n<style>\n");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n");
    render_header(&mut out, header, &shown);
    if let Some(p) = system_prompt.filter(|p| !p.is_empty()) {
        out.push_str("<details id=\"system-prompt\"><summary>System prompt</summary><pre>");
        push(&mut out, p);
        out.push_str("</pre></details>\n");
    }
    let active: HashSet<String> = shown
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_string))
        .collect();
    if body.iter().any(|e| e["type"] == "message") {
        render_tree(&mut out, &body, &active, &|o, m| render_message(o, m, None));
    }
    out.push_str("<main id=\"messages\">\n");
    for e in &shown {
        render_entry(&mut out, e);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn render_header(out: &mut String, header: Option<&Value>, shown: &[Value]) {
    let field = |k: &str| header.and_then(|h| h[k].as_str()).unwrap_or_default();
    let messages = shown.iter().filter(|e| e["type"] == "message").count();
    out.push_str("<header id=\"session-header\">\n<h1>Session</h1>\n<dl>\n");
    for (name, value) in [
        ("Id", field("id").to_string()),
        ("Started", field("timestamp").to_string()),
        ("Directory", field("cwd").to_string()),
        ("Messages", messages.to_string()),
    ] {
        out.push_str("<dt>");
        out.push_str(name);
        out.push_str("</dt><dd>");
        push(out, &value);
        out.push_str("</dd>\n");
    }
    out.push_str("</dl>\n</header>\n");
}

fn render_entry(out: &mut String, e: &Value) {
    match e["type"].as_str() {
        Some("message") => render_message(out, &e["message"], e["id"].as_str()),
        Some("model_change") => {
            out.push_str("<div class=\"note model-change\">Model: ");
            push(out, e["provider"].as_str().unwrap_or_default());
            out.push('/');
            push(out, e["modelId"].as_str().unwrap_or_default());
            out.push_str("</div>\n");
        }
        Some("thinking_level_change") => {
            out.push_str("<div class=\"note thinking-change\">Thinking: ");
            push(out, e["thinkingLevel"].as_str().unwrap_or_default());
            out.push_str("</div>\n");
        }
        Some("compaction") => {
            out.push_str("<details class=\"note compaction\"><summary>Compacted history</summary><div class=\"text\">");
            push(out, e["summary"].as_str().unwrap_or_default());
            out.push_str("</div></details>\n");
        }
        // Labels, names, durable records: bookkeeping, not conversation.
        _ => {}
    }
}

fn open(out: &mut String, class: &str, label: &str, id: Option<&str>) {
    out.push_str("<section class=\"message ");
    out.push_str(class);
    if let Some(id) = id {
        // The tree's links point here.
        out.push_str("\" id=\"entry-");
        push(out, id);
    }
    out.push_str("\"><div class=\"role\">");
    push(out, label);
    out.push_str("</div>\n");
}

fn render_message(out: &mut String, m: &Value, id: Option<&str>) {
    match m["role"].as_str().unwrap_or_default() {
        "user" => {
            open(out, "user", "User", id);
            render_content(out, &m["content"], false);
        }
        "assistant" => {
            open(out, "assistant", "Assistant", id);
            render_content(out, &m["content"], true);
            if let Some(err) = m["errorMessage"].as_str() {
                out.push_str("<div class=\"error\">");
                push(out, err);
                out.push_str("</div>\n");
            }
            let model = m["model"].as_str().unwrap_or_default();
            if !model.is_empty() {
                out.push_str("<div class=\"meta\">");
                push(out, model);
                out.push_str("</div>\n");
            }
        }
        "toolResult" => {
            let failed = m["isError"].as_bool() == Some(true);
            let class = if failed {
                "tool-result error"
            } else {
                "tool-result"
            };
            let name = m["toolName"].as_str().unwrap_or("tool");
            open(out, class, &format!("Result: {name}"), id);
            out.push_str("<div class=\"tool-output\" data-tool-call-id=\"");
            push(out, m["toolCallId"].as_str().unwrap_or_default());
            out.push_str("\">");
            render_content(out, &m["content"], false);
            out.push_str("</div>\n");
        }
        "bashExecution" => {
            open(out, "bash", "Shell", id);
            out.push_str("<pre class=\"command\">$ ");
            push(out, m["command"].as_str().unwrap_or_default());
            out.push_str("</pre><pre class=\"output\">");
            push(out, m["output"].as_str().unwrap_or_default());
            out.push_str("</pre>\n");
            if let Some(code) = m["exitCode"].as_i64().filter(|c| *c != 0) {
                out.push_str(&format!("<div class=\"meta\">exit code {code}</div>\n"));
            }
        }
        "system" => {
            // pi's sectioned prompt (or a patch of it), the text then the sections.
            let mut parts: Vec<&str> = m["content"].as_str().into_iter().collect();
            if let Some(sections) = m["sections"].as_object() {
                parts.extend(sections.values().filter_map(Value::as_str));
            }
            parts.retain(|p| !p.is_empty());
            open(out, "system", "System", id);
            if !parts.is_empty() {
                out.push_str("<details class=\"system-text\"><summary>Prompt</summary><pre>");
                push(out, &parts.join("\n\n"));
                out.push_str("</pre></details>\n");
            }
            let names: Vec<&str> = m["toolsAdded"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str())
                .collect();
            if !names.is_empty() {
                out.push_str("<div class=\"meta\">Tools: ");
                push(out, &names.join(", "));
                out.push_str("</div>\n");
            }
        }
        other => {
            open(out, "custom", other, id);
            render_content(out, &m["content"], false);
        }
    }
    out.push_str("</section>\n");
}

/// A message's content: a string, or blocks (text, as Markdown when `markdown`; thinking
/// folded, tool calls, images).
fn render_content(out: &mut String, content: &Value, markdown: bool) {
    let blocks = match content {
        Value::String(s) => {
            text_block(out, s, markdown);
            return;
        }
        Value::Array(b) => b,
        _ => return,
    };
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => text_block(out, b["text"].as_str().unwrap_or_default(), markdown),
            Some("thinking") => {
                out.push_str(
                    "<details class=\"thinking\"><summary>Thinking</summary><div class=\"text\">",
                );
                push(out, b["thinking"].as_str().unwrap_or_default());
                out.push_str("</div></details>\n");
            }
            Some("toolCall") => {
                out.push_str("<div class=\"tool-call\" data-tool-call-id=\"");
                push(out, b["id"].as_str().unwrap_or_default());
                out.push_str("\"><div class=\"tool-name\">");
                push(out, b["name"].as_str().unwrap_or_default());
                out.push_str("</div><pre class=\"tool-args\">");
                let args = serde_json::to_string_pretty(&b["arguments"]).unwrap_or_default();
                push(out, &args);
                out.push_str("</pre></div>\n");
            }
            Some("image") => {
                let mime = b["mimeType"].as_str().unwrap_or_default();
                let data = b["data"].as_str().unwrap_or_default();
                // Only an image type and base64 characters reach the data URL.
                let base64 = data
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
                if mime.starts_with("image/") && base64 {
                    out.push_str("<img class=\"image\" alt=\"image\" src=\"data:");
                    out.push_str(&escape(mime));
                    out.push_str(";base64,");
                    out.push_str(data);
                    out.push_str("\">\n");
                }
            }
            _ => {}
        }
    }
}

fn text_block(out: &mut String, text: &str, markdown: bool) {
    if text.is_empty() {
        return;
    }
    if markdown {
        out.push_str("<div class=\"text markdown\">");
        push_markdown(out, text);
    } else {
        out.push_str("<div class=\"text\">");
        push(out, text);
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_show_and_markup_is_text() {
        let entries = vec![
            json!({"type": "session", "id": "s1", "cwd": "/p", "timestamp": "t"}),
            json!({"type": "message", "id": "a", "parentId": null, "message": {"role": "user", "content": "hi <b>"}}),
            json!({"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}]}}),
            json!({"type": "message", "id": "c", "parentId": "b", "message": {"role": "toolResult",
                "toolCallId": "c1", "toolName": "read", "isError": false,
                "content": [{"type": "text", "text": "<script>alert(1)</script>"}]}}),
        ];
        let page = render(&entries, Some("be brief"));
        assert!(page.contains("<div class=\"text\">hi &lt;b&gt;</div>"));
        assert!(page.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
        assert!(page.contains("<div class=\"tool-name\">read</div>"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn a_sectioned_system_message_shows_its_prompt_and_tools() {
        let entries = vec![
            json!({"type": "session", "id": "s1", "cwd": "/p", "timestamp": "t"}),
            json!({"type": "message", "id": "s", "parentId": null, "message": {"role": "system", "content": "",
                "sections": {"preamble": "Be good.", "cwd": "<cwd>\n/p\n</cwd>"},
                "toolsAdded": [{"name": "read", "description": "r", "parameters": {}}]}}),
        ];
        let page = render(&entries, None);
        assert!(
            page.contains("<pre>Be good.\n\n&lt;cwd&gt;\n/p\n&lt;/cwd&gt;</pre>"),
            "{page}"
        );
        assert!(
            page.contains("<div class=\"meta\">Tools: read</div>"),
            "{page}"
        );
    }
}
