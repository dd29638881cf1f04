//! Path resolution and confinement to the working directory.
//!
//! A path argument is joined to the working directory, then resolved the way the kernel would
//! (every symlink followed, `..` applied to the resolved parent), also for the parts that do
//! not exist yet (a file `write` is about to create). Unless the configuration allows it, the
//! resolved path must lie inside the resolved working directory.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::config::ToolConfig;
use crate::fs::{decode_path_arg, Root};
use crate::policy::{Decision, PathRules};

/// Symlinks followed in one resolution before it is called a loop (Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// A path argument resolved for use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path with every symlink resolved: what the tool operates on.
    pub real: PathBuf,
    /// The argument as the model wrote it, for messages.
    pub display: String,
    /// The root `real` lies beneath and is opened through: the working directory, an allowed
    /// root ([`ToolConfig::allowed_roots`]), or `/` with [`ToolConfig::allow_outside`].
    pub root: PathBuf,
    /// `real` relative to `root` (empty for the root itself): plain components only.
    pub relative: PathBuf,
    /// The argument ended with `/`: it names a folder.
    pub trailing_slash: bool,
}

impl ResolvedPath {
    /// Opens the root's directory handle, beneath which the path is then opened.
    pub fn open_root(&self) -> Result<Root, String> {
        Root::open(&self.root).map_err(|e| format!("Cannot open {}: {e}", self.root.display()))
    }
}

/// Resolves a path argument against `config.cwd` and enforces confinement.
///
/// Accepts what pi accepts: relative and absolute paths, `~` and `~/…` (home), and a leading
/// `@` (a mention); also the escaped form of names that are not UTF-8
/// ([`crate::fs::display_name`]). The error text is meant for the model.
///
/// The check happens here, on the resolved path; the tools then open `relative` beneath
/// `root` with symlinks refused, so what they open is what was checked.
///
/// ```
/// use tern_tools::{confine::resolve_path, ToolConfig};
/// let dir = std::env::temp_dir();
/// let config = ToolConfig::new(&dir);
/// assert!(resolve_path(&config, "notes.txt").is_ok());
/// let err = resolve_path(&config, "../outside.txt").unwrap_err();
/// assert!(err.contains("outside the working directory"));
/// ```
pub fn resolve_path(config: &ToolConfig, arg: &str) -> Result<ResolvedPath, String> {
    let display = arg.to_string();
    let cleaned = arg.strip_prefix('@').unwrap_or(arg);
    if cleaned.is_empty() {
        return Err("Path must not be empty".to_string());
    }
    let cwd_real = real_path(&config.cwd).map_err(|e| {
        format!(
            "Working directory {} cannot be resolved: {e}",
            config.cwd.display()
        )
    })?;
    let real =
        resolve_arg(&cwd_real, arg).map_err(|e| format!("Cannot resolve path {arg}: {e}"))?;
    let mut roots = vec![cwd_real.clone()];
    for extra in &config.allowed_roots {
        if let Ok(r) = real_path(extra) {
            roots.push(r);
        }
    }
    if config.allow_outside {
        roots.push(PathBuf::from("/"));
    }
    let Some(root) = roots.into_iter().find(|r| real.starts_with(r)) else {
        return Err(format!(
            "Path {arg} resolves to {}, which is outside the working directory {}. Access denied: only paths inside the working directory may be used.",
            real.display(),
            cwd_real.display()
        ));
    };
    let relative = real
        .strip_prefix(&root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok(ResolvedPath {
        real,
        display,
        root,
        relative,
        trailing_slash: cleaned.ends_with('/') || cleaned.ends_with("/."),
    })
}

/// The resolved path an argument names, for a working directory `cwd`: `@` dropped, `~`
/// expanded, an escaped non-UTF-8 name decoded, joined to `cwd`, then [`real_path`]. The
/// permission policy matches its path rules against this too, so both see the same file.
pub fn resolve_arg(cwd: &Path, arg: &str) -> io::Result<PathBuf> {
    let cleaned = arg.strip_prefix('@').unwrap_or(arg);
    let expanded = expand_home(cleaned);
    let join = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    let mut joined = join(expanded);
    if let Some(decoded) = decode_path_arg(cleaned) {
        // The literal name wins when it exists; otherwise the escaped form is meant.
        if std::fs::symlink_metadata(&joined).is_err() {
            joined = join(expand_home_path(decoded));
        }
    }
    real_path(&joined)
}

/// Applies `config.path_policy`'s path rules to the resolved path a tool is about to open:
/// a denied path fails the call with the policy's reason. (`Ask` verdicts are the
/// `before_tool_call` hook's to put; here they pass.)
pub(crate) fn enforce_path_rules(
    config: &ToolConfig,
    tool: &str,
    resolved: &ResolvedPath,
) -> Result<(), String> {
    let Some(rules) = path_rules(config, tool) else {
        return Ok(());
    };
    match rules.decide(&resolved.real) {
        Decision::Deny(reason) => Err(reason),
        _ => Ok(()),
    }
}

/// `config.path_policy`'s rules for `tool`, if any.
pub(crate) fn path_rules(config: &ToolConfig, tool: &str) -> Option<PathRules> {
    config
        .path_policy
        .as_ref()
        .map(|p| p.path_rules(tool, &config.cwd))
}

fn expand_home(path: &str) -> PathBuf {
    let home = std::env::var_os("HOME");
    match (path, home) {
        ("~", Some(home)) => PathBuf::from(home),
        (p, Some(home)) if p.starts_with("~/") => PathBuf::from(home).join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

fn expand_home_path(path: PathBuf) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path,
    }
}

/// `realpath` that also resolves paths whose tail does not exist yet.
///
/// Walks the components one at a time, following each symlink it meets (its target is spliced
/// in front of the remaining components), so `..` after a symlink goes to the symlink target's
/// parent, as the kernel does. More than 40 symlinks in one walk is a loop.
///
/// ```
/// let real = tern_tools::confine::real_path(std::path::Path::new("/")).unwrap();
/// assert_eq!(real, std::path::PathBuf::from("/"));
/// ```
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, &absolute, false);
    let mut result = PathBuf::from("/");
    let mut hops = 0usize;
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        if part == "/" {
            result = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            result.pop();
            // What follows is checked again: `missing/../link` must not skip `link`.
            missing = false;
            continue;
        }
        let candidate = result.join(&part);
        if missing {
            result = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(io::Error::other(format!(
                        "too many levels of symbolic links (a symlink loop?) at {}",
                        candidate.display()
                    )));
                }
                let target = std::fs::read_link(&candidate)?;
                push_components(&mut pending, &target, true);
            }
            Ok(_) => result = candidate,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                result = candidate;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(result)
}

/// Puts `path`'s components at the front (`front`) or back of `pending`; `/` marks a root.
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let mut parts: Vec<OsString> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => parts.push(OsString::from("/")),
            Component::CurDir => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_os_string()),
        }
    }
    if front {
        for p in parts.into_iter().rev() {
            pending.push_front(p);
        }
    } else {
        pending.extend(parts);
    }
}
