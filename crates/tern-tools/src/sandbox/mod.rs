//! The confinement of `bash` commands: what they may read and write, whether they reach the
//! network, which environment variables they see, and how their processes end.
//!
//! Three [`SandboxMode`]s, as in codex:
//!
//! | mode | reads | writes | network |
//! | --- | --- | --- | --- |
//! | `read-only` | everywhere but [`SandboxPolicy::deny_read`] | nowhere (but `/dev/null` and ttys) | only with [`SandboxPolicy::network`] |
//! | `workspace-write` (default) | the same | the working directory and the temp dirs | only with [`SandboxPolicy::network`] |
//! | `full-access` | everywhere | everywhere | yes |
//!
//! On Linux the file rules are Landlock rules and the network rule is a seccomp filter that
//! refuses `socket(2)` for IPv4, IPv6 and packet sockets (so UDP and raw sockets too, which
//! Landlock's TCP rules do not cover) and io_uring (which could open sockets past the filter).
//! Both are built before `fork` and applied in the child with raw system calls only.
//! A kernel without Landlock is reported by [`support`]; the confined modes then refuse to
//! run a command (choose `full-access` to run it unconfined). Elsewhere than Linux only
//! `full-access` runs.
//!
//! Landlock can only allow, so the deny-read list is carved out: the tree is granted
//! folder by folder along the path to each denied folder, leaving it out. The folders on
//! that path (`/`, `/home`, the home folder) can then be entered but not listed.

pub mod env;
#[cfg(target_os = "linux")]
mod landlock;
pub(crate) mod reaper;
#[cfg(target_os = "linux")]
mod seccomp;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub(crate) use reaper::spawn_guarded;

/// How far a `bash` command reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// Reads allowed (less the deny-read list), writes nowhere.
    ReadOnly,
    /// Reads allowed (less the deny-read list), writes in the working directory and the temp
    /// dirs. The default: what a careful user expects of a coding agent.
    #[default]
    WorkspaceWrite,
    /// No confinement.
    FullAccess,
}

impl SandboxMode {
    /// The mode's name as the CLI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    /// ```
    /// use tern_tools::sandbox::SandboxMode;
    /// assert_eq!("read-only".parse(), Ok(SandboxMode::ReadOnly));
    /// assert!("none".parse::<SandboxMode>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "full-access" => Ok(SandboxMode::FullAccess),
            other => Err(format!(
                "unknown sandbox mode {other:?}: use read-only, workspace-write or full-access"
            )),
        }
    }
}

/// The sandbox `bash` runs in (a field of [`ToolConfig`](crate::ToolConfig)).
///
/// ```
/// use tern_tools::sandbox::{SandboxMode, SandboxPolicy};
/// let p = SandboxPolicy::default();
/// assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
/// assert!(!p.network);
/// ```
#[derive(Clone, Debug)]
pub struct SandboxPolicy {
    /// What the command may touch.
    pub mode: SandboxMode,
    /// Lets a confined command open network sockets.
    pub network: bool,
    /// Paths no confined command may read (nor write), even in `read-only`. Default:
    /// [`default_deny_read`] of `$HOME`.
    pub deny_read: Vec<PathBuf>,
    /// Further folders `workspace-write` may write (beside the working directory and the
    /// temp dirs).
    pub writable: Vec<PathBuf>,
    /// Whether `workspace-write` may write the temp dirs (`$TMPDIR`, `/tmp`, `/var/tmp`,
    /// `/dev/shm`). Default true.
    pub write_temp: bool,
    /// Secret-looking environment variables passed to the command all the same (exact names).
    pub pass_env: Vec<String>,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        SandboxPolicy {
            mode: SandboxMode::default(),
            network: false,
            deny_read: home.as_deref().map(default_deny_read).unwrap_or_default(),
            writable: Vec::new(),
            write_temp: true,
            pass_env: Vec::new(),
        }
    }
}

impl SandboxPolicy {
    /// The default policy with `mode`.
    pub fn new(mode: SandboxMode) -> Self {
        SandboxPolicy {
            mode,
            ..Default::default()
        }
    }
}

/// Where a home folder keeps credentials: `.ssh`, `.aws`, `.gnupg`, `.config/tern`,
/// `.netrc`, `.docker`, `.kube`, `.azure`, `.config/gcloud`, `.git-credentials`,
/// `.password-store`, `.pi` (pi's own keys).
pub fn default_deny_read(home: &Path) -> Vec<PathBuf> {
    [
        ".ssh",
        ".aws",
        ".gnupg",
        ".config/tern",
        ".netrc",
        ".docker",
        ".kube",
        ".azure",
        ".config/gcloud",
        ".git-credentials",
        ".password-store",
        ".pi",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect()
}

/// What this system can confine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// The kernel's Landlock ABI version (`None`: no Landlock, or not Linux).
    pub landlock_abi: Option<u32>,
}

impl Support {
    /// Whether `read-only` and `workspace-write` can run here.
    pub fn confines(&self) -> bool {
        self.landlock_abi.is_some()
    }
}

/// What this system can confine, for a start-up report.
///
/// ```
/// let s = tern_tools::sandbox::support();
/// if !s.confines() {
///     eprintln!("bash cannot be sandboxed here: only --sandbox full-access runs");
/// }
/// ```
pub fn support() -> Support {
    #[cfg(target_os = "linux")]
    {
        Support {
            landlock_abi: landlock::abi_version(),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Support { landlock_abi: None }
    }
}

/// Why a command could not be confined as asked.
#[derive(Debug)]
pub enum SandboxError {
    /// The system cannot confine in this mode.
    Unsupported {
        /// The mode asked for.
        mode: SandboxMode,
        /// What is missing.
        missing: &'static str,
    },
    /// The kernel refused the Landlock ruleset.
    Landlock(String),
    /// The seccomp filter could not be built.
    Seccomp(String),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::Unsupported { mode, missing } => write!(
                f,
                "bash is sandboxed ({mode}) but {missing}, so the command was not run. Run tern with --sandbox full-access to run commands unconfined."
            ),
            SandboxError::Landlock(e) => write!(
                f,
                "could not build the Landlock sandbox for bash: {e}. Run tern with --sandbox full-access to run commands unconfined."
            ),
            SandboxError::Seccomp(e) => write!(
                f,
                "could not build the seccomp network filter for bash: {e}. Allow the network (--network) or run with --sandbox full-access."
            ),
        }
    }
}

impl std::error::Error for SandboxError {}

/// A confinement built in the parent, applied in the child between `fork` and `exec`.
#[derive(Default)]
pub(crate) struct Confinement {
    #[cfg(target_os = "linux")]
    landlock: Option<std::os::fd::OwnedFd>,
    #[cfg(target_os = "linux")]
    seccomp: Option<Vec<seccompiler::sock_filter>>,
}

impl Confinement {
    /// Builds the rules for `policy` in `cwd` (before `fork`: this allocates and opens files).
    pub(crate) fn build(policy: &SandboxPolicy, cwd: &Path) -> Result<Self, SandboxError> {
        if policy.mode == SandboxMode::FullAccess {
            return Ok(Confinement::default());
        }
        #[cfg(target_os = "linux")]
        {
            let Some(abi) = landlock::abi_version() else {
                return Err(SandboxError::Unsupported {
                    mode: policy.mode,
                    missing: "this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= boot list)",
                });
            };
            let landlock = landlock::ruleset(policy, cwd, abi)?;
            let seccomp = if policy.network {
                None
            } else {
                Some(seccomp::no_network()?)
            };
            Ok(Confinement {
                landlock: Some(landlock),
                seccomp,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = cwd;
            Err(SandboxError::Unsupported {
                mode: policy.mode,
                missing: "only Linux can confine commands",
            })
        }
    }

    /// Applies the confinement to the calling process. Runs between `fork` and `exec`, so it
    /// makes raw system calls only (async-signal-safe, no allocation).
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if self.landlock.is_none() && self.seccomp.is_none() {
                return Ok(());
            }
            // SAFETY: prctl with integer arguments only.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = &self.landlock {
                landlock::restrict_self(fd)?;
            }
            if let Some(filter) = &self.seccomp {
                seccomp::install(filter)?;
            }
        }
        Ok(())
    }
}
