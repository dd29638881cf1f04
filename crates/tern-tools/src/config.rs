//! [`ToolConfig`]: the settings every built-in tool shares.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use tern_agent::{AgentTool, ToolCallInput, ToolOutput};

use crate::policy::Policy;
use crate::sandbox::SandboxPolicy;

use crate::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// Settings shared by the built-in tools.
///
/// ```
/// use std::time::Duration;
/// use tern_tools::ToolConfig;
///
/// let config = ToolConfig::new("/tmp/project")
///     .with_bash_timeout(Some(Duration::from_secs(60)))
///     .with_max_output_bytes(16 * 1024);
/// assert!(!config.allow_outside);
/// assert_eq!(config.max_output_lines, 2000);
/// ```
#[derive(Clone, Debug)]
pub struct ToolConfig {
    /// The working directory: relative paths resolve against it, `bash` runs in it, and (unless
    /// `allow_outside`) no path tool may reach outside it.
    pub cwd: PathBuf,
    /// Lets path arguments reach outside `cwd` (`..`, absolute paths, symlinks that point out).
    pub allow_outside: bool,
    /// Timeout of a `bash` call when the model gives none (`None`: no timeout, as in pi).
    pub bash_timeout: Option<Duration>,
    /// The shell `bash` runs commands with (`SHELL -c COMMAND`).
    pub shell: PathBuf,
    /// Byte cap of text a tool returns (read, bash, grep, find, ls). Default 50 KiB.
    pub max_output_bytes: usize,
    /// Line cap of text `read` and `bash` return. Default 2000.
    pub max_output_lines: usize,
    /// Largest image `read` attaches. Default 5 MiB.
    pub max_image_bytes: u64,
    /// The sandbox of `bash` commands. Default: `workspace-write`, no network, secrets
    /// dropped from the environment.
    pub sandbox: SandboxPolicy,
    /// Folders outside `cwd` the path tools may use even when `allow_outside` is off; a path
    /// beneath one is opened through that folder's handle and cannot leave it.
    pub allowed_roots: Vec<PathBuf>,
    /// Path rules the file tools apply to resolved paths themselves: a call on a denied path
    /// fails, and `ls`/`grep`/`find` skip denied entries and subtrees.
    pub path_policy: Option<Arc<Policy>>,
    /// Largest file `edit` loads (it holds the file in memory). Default 64 MiB.
    pub max_edit_bytes: u64,
}

impl ToolConfig {
    /// Defaults for `cwd`: confined, no bash timeout, 50 KiB / 2000 lines of output.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolConfig {
            cwd: cwd.into(),
            allow_outside: false,
            bash_timeout: None,
            shell: default_shell(),
            max_output_bytes: DEFAULT_MAX_BYTES,
            max_output_lines: DEFAULT_MAX_LINES,
            max_image_bytes: 5 * 1024 * 1024,
            sandbox: SandboxPolicy::default(),
            allowed_roots: Vec::new(),
            path_policy: None,
            max_edit_bytes: DEFAULT_MAX_EDIT_BYTES,
        }
    }

    /// Sets `allow_outside`.
    pub fn with_allow_outside(mut self, allow: bool) -> Self {
        self.allow_outside = allow;
        self
    }

    /// Adds a folder outside `cwd` the path tools may use ([`ToolConfig::allowed_roots`]).
    pub fn with_allowed_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.allowed_roots.push(root.into());
        self
    }

    /// Sets the path rules the file tools apply themselves ([`ToolConfig::path_policy`]).
    pub fn with_path_policy(mut self, policy: Policy) -> Self {
        self.path_policy = Some(Arc::new(policy));
        self
    }

    /// Sets the largest file `edit` accepts.
    pub fn with_max_edit_bytes(mut self, bytes: u64) -> Self {
        self.max_edit_bytes = bytes;
        self
    }

    /// Sets the default `bash` timeout.
    pub fn with_bash_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.bash_timeout = timeout;
        self
    }

    /// Sets the output byte cap.
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes.max(1);
        self
    }

    /// Sets the output line cap.
    pub fn with_max_output_lines(mut self, lines: usize) -> Self {
        self.max_output_lines = lines.max(1);
        self
    }

    /// Sets the sandbox of `bash` commands.
    pub fn with_sandbox(mut self, sandbox: SandboxPolicy) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Sets the shell.
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }
}

/// Default of [`ToolConfig::max_edit_bytes`]: 64 MiB.
pub const DEFAULT_MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

fn default_shell() -> PathBuf {
    for candidate in ["/bin/bash", "/usr/bin/bash"] {
        if Path::new(candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    PathBuf::from("sh")
}

/// A typed tool `name` whose calls all share one copy of `config`: each call gets a handle to
/// it with its arguments and input.
/// pi's declarations of its built-in tools (`tests/pi/schemas.mjs` prints them from
/// pi-coding-agent; `tests/pi_schemas.rs` checks this copy against it).
const PI_SCHEMAS: &str = include_str!("pi_schemas.json");

/// `tool` declared as pi declares its tool of the same name: pi's parameters schema (the
/// model sees the same tool; the typed arguments still deserialize from what validates) and
/// its constrained sampling (`read`, `write`, `edit` and `bash` prefer strict sampling).
fn as_pi_declares(tool: AgentTool) -> AgentTool {
    // Parsed once: a service builds the tools for every agent it starts.
    static ALL: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let all = ALL.get_or_init(|| serde_json::from_str(PI_SCHEMAS).unwrap_or_default());
    let Some(pi) = all.get(tool.name()) else {
        return tool;
    };
    let tool = tool.with_parameters(pi["parameters"].clone());
    match &pi["constrainedSampling"] {
        serde_json::Value::Null => tool,
        config => tool.with_constrained_sampling(config.clone()),
    }
}

pub(crate) fn config_tool<A, F, Fut>(
    config: &ToolConfig,
    name: &str,
    description: &str,
    execute: F,
) -> AgentTool
where
    A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    F: Fn(Arc<ToolConfig>, A, ToolCallInput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    let config = Arc::new(config.clone());
    as_pi_declares(AgentTool::typed(name, description, move |args: A, call| {
        execute(config.clone(), args, call)
    }))
}
