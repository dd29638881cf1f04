//! The files a compacted conversation read and modified (pi's cumulative file tracking),
//! carried from one compaction's `details` to the next.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use tern_ai::Message;

/// Paths passed to the `read`, `write` and `edit` tools.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOps {
    read: BTreeSet<String>,
    written: BTreeSet<String>,
    edited: BTreeSet<String>,
}

impl FileOps {
    /// Adds the lists of a previous compaction's `details` (its modified files as edited).
    pub fn add_previous(&mut self, details: &Value) {
        let list = |k: &str| -> Vec<String> {
            details[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        self.read.extend(list("readFiles"));
        self.edited.extend(list("modifiedFiles"));
    }

    /// Adds the tool calls of an assistant message, or the nested calls a tool result
    /// records.
    pub fn add_message(&mut self, message: &Message) {
        match message {
            Message::Assistant(a) => {
                for call in a.tool_calls() {
                    self.add(&call.name, &call.arguments);
                }
            }
            Message::ToolResult(_) => {
                let v = serde_json::to_value(message).unwrap_or(Value::Null);
                for call in v["nestedCalls"]["calls"].as_array().into_iter().flatten() {
                    if let Some(name) = call["name"].as_str() {
                        self.add(name, &call["arguments"]);
                    }
                }
            }
            _ => {}
        }
    }

    fn add(&mut self, tool: &str, args: &Value) {
        let Some(path) = args["path"].as_str().filter(|p| !p.is_empty()) else {
            return;
        };
        let set = match tool {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// Files only read, and files modified, each sorted (pi's `computeFileLists`).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        let read = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        (read, modified.into_iter().cloned().collect())
    }

    /// The `details` pi writes: `{readFiles, modifiedFiles}`.
    pub fn details(&self) -> Value {
        let (read, modified) = self.lists();
        json!({"readFiles": read, "modifiedFiles": modified})
    }

    /// The tags pi appends to a summary (`<read-files>`, `<modified-files>`), or "".
    pub fn tags(&self) -> String {
        let (read, modified) = self.lists();
        let mut sections = Vec::new();
        if !read.is_empty() {
            sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
        }
        if !modified.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                modified.join("\n")
            ));
        }
        if sections.is_empty() {
            return String::new();
        }
        format!("\n\n{}", sections.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_files_leave_the_read_list() {
        let mut f = FileOps::default();
        f.add("read", &json!({"path": "b.rs"}));
        f.add("read", &json!({"path": "a.rs"}));
        f.add("edit", &json!({"path": "b.rs"}));
        f.add("bash", &json!({"path": "c.rs"}));
        assert_eq!(
            f.tags(),
            "\n\n<read-files>\na.rs\n</read-files>\n\n<modified-files>\nb.rs\n</modified-files>"
        );
    }
}
