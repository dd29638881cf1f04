//! One `mcpServers` entry checked field by field, with pi's messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::expand::expand_vars;
use super::{ServerConfig, Transport, DEFAULT_TIMEOUT};

/// The entry `raw` of server `name` from the file `path`, or why it is invalid.
pub(super) fn server_config(name: &str, raw: &Value, path: &Path) -> Result<ServerConfig, String> {
    if !is_server_name(name) {
        return Err(format!(
            "invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"
        ));
    }
    let Some(entry) = raw.as_object() else {
        return Err(format!("server \"{name}\" must be an object"));
    };
    let in_server = |e: String| format!("server \"{name}\": {e}");
    let (enabled, description, timeout) = base_fields(entry).map_err(in_server)?;
    let kind = entry.get("type").and_then(Value::as_str);
    if kind == Some("sse") {
        return Err(in_server(
            "legacy SSE transport is not supported; use the streamable HTTP URL".into(),
        ));
    }
    let url = entry.get("url").and_then(Value::as_str);
    let command = entry.get("command").and_then(Value::as_str);
    let transport = match (url, command, kind) {
        (Some(url), _, None | Some("http" | "streamable-http")) => {
            http_fields(name, entry, url).map_err(in_server)?
        }
        (_, Some(command), None | Some("stdio")) => {
            stdio_fields(name, entry, command, path).map_err(in_server)?
        }
        _ => {
            return Err(format!(
                "server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
            ))
        }
    };
    Ok(ServerConfig {
        transport,
        enabled,
        description,
        timeout,
        source: path.to_path_buf(),
    })
}

/// Letters, digits, `_` and `-`: what tool names are built from.
pub(super) fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn base_fields(entry: &Map<String, Value>) -> Result<(bool, Option<String>, Duration), String> {
    let enabled = match entry.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("enabled must be a boolean".into()),
    };
    let description = match entry.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("description must be a string".into()),
    };
    let timeout = match entry.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64().filter(|s| *s > 0.0 && s.is_finite()) {
            Some(secs) => Duration::from_secs_f64(secs),
            None => return Err("timeout must be a positive number of seconds".into()),
        },
    };
    Ok((enabled, description, timeout))
}

fn http_fields(name: &str, entry: &Map<String, Value>, url: &str) -> Result<Transport, String> {
    let scheme_ok = url
        .split_once("://")
        .is_some_and(|(scheme, rest)| matches!(scheme, "http" | "https") && !rest.is_empty());
    if !scheme_ok {
        return Err("url must be an http or https URL".into());
    }
    let headers = string_map(entry.get("headers"))
        .ok_or_else(|| "headers must map names to strings".to_string())?;
    let headers = resolve_values(headers, &format!("MCP server \"{name}\" header"))?;
    Ok(Transport::Http {
        url: url.to_string(),
        headers,
    })
}

fn stdio_fields(
    name: &str,
    entry: &Map<String, Value>,
    command: &str,
    path: &Path,
) -> Result<Transport, String> {
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(expand_home))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| "args must be an array of strings".to_string())?,
        Some(_) => return Err("args must be an array of strings".into()),
    };
    let env =
        string_map(entry.get("env")).ok_or_else(|| "env must map names to strings".to_string())?;
    let env = resolve_values(env, &format!("MCP server \"{name}\" env"))?;
    let cwd = match entry.get("cwd") {
        None => None,
        Some(Value::String(dir)) => {
            // Relative to the file's folder's parent project, as pi resolves against the
            // session folder: the folder holding `.tern/` (or the file's own folder).
            let dir = PathBuf::from(expand_home(dir));
            Some(if dir.is_absolute() {
                dir
            } else {
                base_dir(path).join(dir)
            })
        }
        Some(_) => return Err("cwd must be a string".into()),
    };
    Ok(Transport::Stdio {
        command: expand_home(command),
        args,
        env,
        cwd,
    })
}

/// `None` when the value is present but not an object of strings.
fn string_map(value: Option<&Value>) -> Option<BTreeMap<String, String>> {
    match value {
        None => Some(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect(),
        Some(_) => None,
    }
}

fn resolve_values(
    map: BTreeMap<String, String>,
    what: &str,
) -> Result<BTreeMap<String, String>, String> {
    map.into_iter()
        .map(|(key, value)| {
            let resolved = expand_vars(&value, |n| std::env::var(n).ok()).map_err(|missing| {
                let (noun, names) = match missing.as_slice() {
                    [one] => ("variable", one.clone()),
                    many => ("variables", many.join(", ")),
                };
                format!(
                    "Failed to resolve {what} \"{key}\" from environment {noun}: {names} (set it, or change the entry)"
                )
            })?;
            Ok((key, resolved))
        })
        .collect()
}

/// A leading `~/` names the home folder.
fn expand_home(s: &str) -> String {
    match (s.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).to_string_lossy().into_owned(),
        _ => s.to_string(),
    }
}

/// The folder relative `cwd` values resolve against: the project folder for
/// `<project>/.tern/mcp.json`, else the file's folder.
fn base_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    match dir.file_name().and_then(|n| n.to_str()) {
        Some(".tern") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}
