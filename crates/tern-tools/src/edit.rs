//! `edit`: exact-text replacements in one file, with a unified diff.

use std::borrow::Cow;
use std::io::{Read, Write};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tern_agent::{AgentTool, ToolExecutionMode, ToolResult};

use tokio_util::sync::CancellationToken;

use crate::cancel::{blocking_to_completion, ABORTED};
use crate::config::{config_tool, ToolConfig};
use crate::confine::{enforce_path_rules, resolve_path, ResolvedPath};
use crate::fs::{fstat, replace_file, Expect, Identity, OpenError, ReplaceError};
use crate::truncate::format_size;

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
    config_tool(
        config,
        "edit",
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
        |config, args: EditArgs, call| {
            async move {
                let resolved = resolve_path(&config, &args.path)?;
                enforce_path_rules(&config, "edit", &resolved)?;
                // Reading may be abandoned on abort; the replace, once started, completes.
                let token = call.signal.clone();
                let out = blocking_to_completion(&call.signal, move || {
                    edit_file(&config, &resolved, &args.edits, &token)
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
    config: &ToolConfig,
    resolved: &ResolvedPath,
    edits: &[Replacement],
    token: &CancellationToken,
) -> Result<ToolResult, String> {
    let display = resolved.display.as_str();
    if edits.is_empty() {
        return Err(
            "Edit tool input is invalid. edits must contain at least one replacement.".to_string(),
        );
    }
    let root = resolved.open_root()?;
    let (file, id) = root.open_regular(&resolved.relative).map_err(|e| match e {
        OpenError::NotFound => format!("Could not edit file: {display}. File not found."),
        OpenError::Io(e) => format!("Could not edit file: {display}. {e}."),
        other => other.describe(display),
    })?;
    let bytes = read_capped(file, id, config.max_edit_bytes, display, token)?;
    let raw = String::from_utf8(bytes).map_err(|_| {
        format!("Could not edit file: {display}. It is not valid UTF-8 text (binary?).")
    })?;
    let (bom, body) = match raw.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", raw.as_str()),
    };
    // A file whose every line ends in CRLF is matched as LF and written back as CRLF.
    let crlf = body.contains("\r\n") && body.matches('\n').count() == body.matches("\r\n").count();
    let base: Cow<'_, str> = if crlf {
        Cow::Owned(body.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(body)
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

    // The diff's line index lives only as long as this block.
    let (patch, first_changed_line) = {
        let diff = similar::TextDiff::from_lines(base.as_ref(), new.as_str());
        let patch = diff
            .unified_diff()
            .context_radius(4)
            .header(display, display)
            .to_string();
        let first = diff
            .ops()
            .iter()
            .find(|op| !matches!(op, similar::DiffOp::Equal { .. }))
            .map(|op| op.new_range().start + 1);
        (patch, first)
    };
    drop(base);
    // Streamed out (BOM, then the text with CRLF restored), never assembled in memory.
    replace_file(
        &root,
        &resolved.relative,
        false,
        Expect::Content(id, raw.as_bytes()),
        |out| {
            let mut out = std::io::BufWriter::new(out);
            out.write_all(bom.as_bytes())?;
            if crlf {
                let mut lines = new.split('\n');
                if let Some(first) = lines.next() {
                    out.write_all(first.as_bytes())?;
                }
                for line in lines {
                    out.write_all(b"\r\n")?;
                    out.write_all(line.as_bytes())?;
                }
            } else {
                out.write_all(new.as_bytes())?;
            }
            out.flush()
        },
    )
    .map_err(|e| match e {
        ReplaceError::Io(e) => format!("Could not write {display}: {e}"),
        other => other.describe("edit", display),
    })?;

    Ok(
        ToolResult::text(format!("Successfully replaced {n} block(s) in {display}."))
            .with_details(json!({ "diff": patch, "firstChangedLine": first_changed_line })),
    )
}

/// Reads the whole file, refusing one over `cap` bytes (before reading it) and stopping on
/// abort; a file that grows or changes while it is read is a conflict.
fn read_capped(
    mut file: std::fs::File,
    id: Identity,
    cap: u64,
    display: &str,
    token: &CancellationToken,
) -> Result<Vec<u8>, String> {
    let too_large = |size: u64| {
        format!(
            "Could not edit file: {display}. It is {}, over the {} limit for edit (ToolConfig::max_edit_bytes). Use bash (sed, a script) for files this large, or write the whole file.",
            format_size(size as usize),
            format_size(cap as usize)
        )
    };
    if id.size() > cap {
        return Err(too_large(id.size()));
    }
    let mut bytes = Vec::with_capacity(id.size() as usize);
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        if token.is_cancelled() {
            return Err(ABORTED.to_string());
        }
        let n = file
            .read(&mut chunk)
            .map_err(|e| format!("Could not edit file: {display}. {e}."))?;
        if n == 0 {
            break;
        }
        if bytes.len() as u64 + n as u64 > cap {
            return Err(too_large(bytes.len() as u64 + n as u64));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    let after = fstat(&file).map_err(|e| format!("Could not edit file: {display}. {e}."))?;
    if !after.same_data(&id) || bytes.len() as u64 != id.size() {
        return Err(ReplaceError::Conflict.describe("edit", display));
    }
    Ok(bytes)
}
