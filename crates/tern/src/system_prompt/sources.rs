//! Where the custom prompt and the appended texts come from, as pi's resource loader finds
//! them: `--system-prompt` (text, or the contents of an existing file), else the config's
//! `system_prompt`, else `SYSTEM.md` of the project's `.tern/` or of tern's config folder;
//! `--append-system-prompt` (repeatable, text or file), else `APPEND_SYSTEM.md` found the
//! same way.

use std::path::{Path, PathBuf};

use super::context_files::read_text;
use crate::usage_error::UsageError;

/// The project's folder of tern files (pi's `.pi`).
pub const PROJECT_DIR: &str = ".tern";

/// A flag's value as pi reads it: the contents of the file it names when one exists, else
/// the text itself. An existing file that cannot be read is a usage error (pi warns and
/// uses the path as text; sending a path as the prompt helps nobody).
pub fn text_or_file(flag: &str, value: &str, cwd: &Path) -> Result<String, UsageError> {
    let path = cwd.join(value);
    if value.is_empty() || !path.is_file() {
        return Ok(value.to_string());
    }
    read_text(&path).map_err(|e| UsageError(format!("{flag}: cannot read {}: {e}", path.display())))
}

/// The first of `name` in the project's `.tern/`, then in `globals`.
fn discover(name: &str, cwd: &Path, globals: &[PathBuf]) -> Option<PathBuf> {
    std::iter::once(cwd.join(PROJECT_DIR))
        .chain(globals.iter().cloned())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn read_found(path: &Path) -> Result<String, UsageError> {
    read_text(path).map_err(|e| {
        UsageError(format!(
            "cannot read {}: {e} (fix or remove the file)",
            path.display()
        ))
    })
}

/// The custom prompt, if any.
pub fn custom_prompt(
    flag: Option<&str>,
    config: Option<&str>,
    cwd: &Path,
    globals: &[PathBuf],
) -> Result<Option<String>, UsageError> {
    if let Some(v) = flag {
        return text_or_file("--system-prompt", v, cwd).map(Some);
    }
    if let Some(v) = config {
        return text_or_file("the config's system_prompt", v, cwd).map(Some);
    }
    discover("SYSTEM.md", cwd, globals)
        .map(|p| read_found(&p))
        .transpose()
}

/// The appended texts.
pub fn appended(
    flags: &[String],
    cwd: &Path,
    globals: &[PathBuf],
) -> Result<Vec<String>, UsageError> {
    if !flags.is_empty() {
        return flags
            .iter()
            .map(|v| text_or_file("--append-system-prompt", v, cwd))
            .collect();
    }
    Ok(discover("APPEND_SYSTEM.md", cwd, globals)
        .map(|p| read_found(&p))
        .transpose()?
        .into_iter()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_names_a_file_or_is_the_text_and_the_project_file_wins_over_the_global() {
        let dir = tempfile::tempdir().expect("dir");
        let global = dir.path().join("g");
        std::fs::create_dir_all(dir.path().join(PROJECT_DIR)).expect("mkdir");
        std::fs::create_dir_all(&global).expect("mkdir");
        std::fs::write(dir.path().join("p.md"), "from file").expect("write");
        let cwd = dir.path();
        let got = custom_prompt(Some("p.md"), None, cwd, &[]).expect("ok");
        assert_eq!(got.as_deref(), Some("from file"));
        let got = custom_prompt(Some("plain words"), None, cwd, &[]).expect("ok");
        assert_eq!(got.as_deref(), Some("plain words"));
        assert_eq!(
            custom_prompt(None, None, cwd, std::slice::from_ref(&global)).expect("ok"),
            None
        );
        std::fs::write(global.join("SYSTEM.md"), "global").expect("write");
        let got = custom_prompt(None, None, cwd, std::slice::from_ref(&global)).expect("ok");
        assert_eq!(got.as_deref(), Some("global"));
        std::fs::write(cwd.join(PROJECT_DIR).join("SYSTEM.md"), "project").expect("write");
        let got = custom_prompt(None, None, cwd, std::slice::from_ref(&global)).expect("ok");
        assert_eq!(got.as_deref(), Some("project"));
        std::fs::write(global.join("APPEND_SYSTEM.md"), "more").expect("write");
        assert_eq!(
            appended(&[], cwd, std::slice::from_ref(&global)).expect("ok"),
            ["more"]
        );
        let flags = ["a".to_string(), "p.md".to_string()];
        assert_eq!(
            appended(&flags, cwd, &[global]).expect("ok"),
            ["a", "from file"]
        );
    }
}
