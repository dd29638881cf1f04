//! `edit`: exact-text replacements in one file, with a unified diff.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult};

use crate::cancel::blocking_to_completion;
use crate::config::ToolConfig;
use crate::confine::resolve_path;
use crate::write::write_atomic;

/// One replacement.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.
    pub old_text: String,
    /// Replacement text for this targeted edit.
    pub new_text: String,
}

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// Path to the file to edit (relative or absolute)
    pub path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.
    pub edits: Vec<Replacement>,
}

/// The `edit` tool (sequential).
///
/// Besides `{path, edits: [{oldText, newText}]}` it accepts what models often send instead,
/// as pi does: a top-level `oldText`/`newText` pair, one edit object in place of the array,
/// or the array as a JSON string.
///
/// ```
/// let tool = tern_tools::edit_tool(&tern_tools::ToolConfig::new("."));
/// let legacy = serde_json::json!({"path": "a.txt", "oldText": "x", "newText": "y"});
/// let prepared = tool.prepare_arguments(&legacy).unwrap();
/// assert_eq!(prepared["edits"][0]["oldText"], "x");
/// ```
pub fn edit_tool(config: &ToolConfig) -> AgentTool {
    let config = Arc::new(config.clone());
    AgentTool::typed(
        "edit",
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
        move |args: EditArgs, call| {
            let config = config.clone();
            async move {
                let resolved = resolve_path(&config, &args.path)?;
                let out = blocking_to_completion(&call.signal, move || {
                    edit_file(&resolved.real, &resolved.display, &args.edits)
                })
                .await?;
                Ok(out)
            }
        },
    )
    .with_execution_mode(ToolExecutionMode::Sequential)
    .with_prepare_arguments(prepare_edit_arguments)
}

fn is_single_edit(v: &Value) -> bool {
    v.get("oldText").is_some_and(Value::is_string) && v.get("newText").is_some_and(Value::is_string)
}

fn prepare_edit_arguments(args: &Value) -> Option<Value> {
    let mut obj = args.as_object()?.clone();
    let mut changed = false;
    match obj.get("edits") {
        Some(Value::String(s)) => {
            if let Ok(parsed) = serde_json::from_str::<Value>(s) {
                if parsed.is_array() {
                    obj.insert("edits".into(), parsed);
                    changed = true;
                } else if is_single_edit(&parsed) {
                    obj.insert("edits".into(), Value::Array(vec![parsed]));
                    changed = true;
                }
            }
        }
        Some(single) if is_single_edit(single) => {
            let single = single.clone();
            obj.insert("edits".into(), Value::Array(vec![single]));
            changed = true;
        }
        _ => {}
    }
    if is_single_edit(&Value::Object(obj.clone())) {
        let old = obj.shift_remove("oldText").unwrap_or_default();
        let new = obj.shift_remove("newText").unwrap_or_default();
        let mut edits = match obj.shift_remove("edits") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        edits.push(json!({ "oldText": old, "newText": new }));
        obj.insert("edits".into(), Value::Array(edits));
        changed = true;
    }
    changed.then_some(Value::Object(obj))
}

fn edit_file(
    path: &std::path::Path,
    display: &str,
    edits: &[Replacement],
) -> Result<ToolResult, String> {
    if edits.is_empty() {
        return Err(
            "Edit tool input is invalid. edits must contain at least one replacement.".to_string(),
        );
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("Could not edit file: {display}. File not found."),
        _ => format!("Could not edit file: {display}. {e}."),
    })?;
    let raw = String::from_utf8(bytes).map_err(|_| {
        format!("Could not edit file: {display}. It is not valid UTF-8 text (binary?).")
    })?;
    let (bom, body) = match raw.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", raw.as_str()),
    };
    // A file whose every line ends in CRLF is matched as LF and written back as CRLF.
    let crlf = body.contains("\r\n") && body.matches('\n').count() == body.matches("\r\n").count();
    let base = if crlf {
        body.replace("\r\n", "\n")
    } else {
        body.to_string()
    };
    let normalize = |s: &str| {
        if crlf {
            s.replace("\r\n", "\n")
        } else {
            s.to_string()
        }
    };

    let n = edits.len();
    let mut matches: Vec<(usize, usize, usize, String)> = Vec::new(); // (index, start, len, new)
    for (i, edit) in edits.iter().enumerate() {
        let old = normalize(&edit.old_text);
        if old.is_empty() {
            return Err(if n == 1 {
                format!("oldText must not be empty in {display}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {display}.")
            });
        }
        let count = base.matches(old.as_str()).count();
        if count == 0 {
            return Err(if n == 1 {
                format!("Could not find the exact text in {display}. The old text must match exactly including all whitespace and newlines.")
            } else {
                format!("Could not find edits[{i}] in {display}. The oldText must match exactly including all whitespace and newlines.")
            });
        }
        if count > 1 {
            return Err(if n == 1 {
                format!("Found {count} occurrences of the text in {display}. The text must be unique. Please provide more context to make it unique.")
            } else {
                format!("Found {count} occurrences of edits[{i}] in {display}. Each oldText must be unique. Please provide more context to make it unique.")
            });
        }
        let start = base.find(old.as_str()).unwrap_or(0);
        matches.push((i, start, old.len(), normalize(&edit.new_text)));
    }
    matches.sort_by_key(|m| m.1);
    for pair in matches.windows(2) {
        if pair[0].1 + pair[0].2 > pair[1].1 {
            return Err(format!(
                "edits[{}] and edits[{}] overlap in {display}. Merge them into one edit or target disjoint regions.",
                pair[0].0, pair[1].0
            ));
        }
    }
    let mut new = String::with_capacity(base.len());
    let mut pos = 0usize;
    for (_, start, len, text) in &matches {
        new.push_str(&base[pos..*start]);
        new.push_str(text);
        pos = start + len;
    }
    new.push_str(&base[pos..]);
    if new == base {
        return Err(if n == 1 {
            format!("No changes made to {display}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.")
        } else {
            format!("No changes made to {display}. The replacements produced identical content.")
        });
    }

    let diff = similar::TextDiff::from_lines(base.as_str(), new.as_str());
    let patch = diff
        .unified_diff()
        .context_radius(4)
        .header(display, display)
        .to_string();
    let first_changed_line = diff
        .ops()
        .iter()
        .find(|op| !matches!(op, similar::DiffOp::Equal { .. }))
        .map(|op| op.new_range().start + 1);

    let out = if crlf { new.replace('\n', "\r\n") } else { new };
    let mut data = String::with_capacity(bom.len() + out.len());
    data.push_str(bom);
    data.push_str(&out);
    write_atomic(path, data.as_bytes()).map_err(|e| format!("Could not write {display}: {e}"))?;

    Ok(
        ToolResult::text(format!("Successfully replaced {n} block(s) in {display}."))
            .with_details(json!({ "diff": patch, "firstChangedLine": first_changed_line })),
    )
}
