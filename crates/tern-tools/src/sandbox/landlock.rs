//! The Landlock ruleset of a confined command: reads everywhere but the deny-read list,
//! writes in the writable roots only, and (ABI 6+) no signal to a process outside the
//! sandbox — so a command cannot kill its guard (which would let its children escape the
//! reaper) or tern itself — and, without the network, no abstract UNIX socket outside it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use super::{SandboxError, SandboxMode, SandboxPolicy};

/// Devices every shell needs to write (`2>/dev/null`, a tty).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The kernel's Landlock ABI version, or `None` when it has no Landlock.
pub(super) fn abi_version() -> Option<u32> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns
    // a number; it reads no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    u32::try_from(v).ok().filter(|&v| v > 0)
}

fn abi(version: u32) -> ABI {
    match version {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    }
}

/// Builds the ruleset and returns its file descriptor, to restrict the child with.
pub(super) fn ruleset(
    policy: &SandboxPolicy,
    cwd: &Path,
    version: u32,
) -> Result<OwnedFd, SandboxError> {
    let abi = abi(version);
    let err = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let deny: Vec<PathBuf> = policy
        .deny_read
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(err)?;
    if version >= 6 {
        ruleset = ruleset.scope(Scope::Signal).map_err(err)?;
        if !policy.network {
            ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(err)?;
        }
    }
    let mut created = ruleset.create().map_err(err)?;
    let mut grant = |path: &Path, access| -> Result<(), SandboxError> {
        let Ok(fd) = PathFd::new(path) else {
            // A path that vanished or cannot be opened grants nothing.
            return Ok(());
        };
        let access = if path.is_dir() {
            access
        } else {
            access
                & (AccessFs::Execute
                    | AccessFs::WriteFile
                    | AccessFs::ReadFile
                    | AccessFs::Truncate
                    | AccessFs::IoctlDev)
        };
        created
            .as_mut()
            .add_rule(PathBeneath::new(fd, access))
            .map_err(err)?;
        Ok(())
    };
    for p in carve(Path::new("/"), &deny) {
        grant(&p, read)?;
    }
    for d in DEVICES {
        grant(Path::new(d), read | AccessFs::WriteFile)?;
    }
    if policy.mode == SandboxMode::WorkspaceWrite {
        let mut roots = vec![cwd.to_path_buf()];
        if policy.write_temp {
            roots.push(std::env::temp_dir());
            roots.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
        }
        roots.extend(policy.writable.iter().cloned());
        for root in roots {
            let root = std::fs::canonicalize(&root).unwrap_or(root);
            for p in carve(&root, &deny) {
                grant(&p, all)?;
            }
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Landlock("the kernel gave no ruleset".into()))
}

/// The paths that together cover `root` less every path of `deny`: `root` itself when no
/// denied path lies inside it, else its entries, carved in turn.
fn carve(root: &Path, deny: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    carve_into(root, deny, 0, &mut out);
    out
}

fn carve_into(root: &Path, deny: &[PathBuf], depth: usize, out: &mut Vec<PathBuf>) {
    if deny.iter().any(|d| root.starts_with(d)) {
        return;
    }
    if !deny.iter().any(|d| d.starts_with(root)) {
        out.push(root.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if depth > 32 {
        return;
    }
    for entry in entries.flatten() {
        let path = entry.path();
        let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        if is_link {
            // A link is granted as its target: never one that leads into or above a denied path.
            match std::fs::canonicalize(&path) {
                Ok(target)
                    if !deny
                        .iter()
                        .any(|d| target.starts_with(d) || d.starts_with(&target)) =>
                {
                    out.push(path)
                }
                _ => {}
            }
            continue;
        }
        carve_into(&path, deny, depth + 1, out);
    }
}

/// Restricts the calling thread with the ruleset `fd` (async-signal-safe: one system call).
pub(super) fn restrict_self(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: landlock_restrict_self(fd, 0) takes an integer fd and flags; it reads no memory.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carving_leaves_out_the_denied_path_and_keeps_its_siblings() {
        let dir = tempfile::tempdir().unwrap();
        for p in ["home/.ssh", "home/project", "other"] {
            std::fs::create_dir_all(dir.path().join(p)).unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join("home/.ssh"), dir.path().join("home/link"))
            .unwrap();
        let deny = [dir.path().join("home/.ssh")];
        let mut got = carve(dir.path(), &deny);
        got.sort();
        assert_eq!(
            got,
            [dir.path().join("home/project"), dir.path().join("other")]
        );
    }
}
