//! The seccomp filter that keeps a command off the network: `socket(2)` for IPv4, IPv6 and
//! packet sockets fails with `EPERM`, and so does io_uring (whose `IORING_OP_SOCKET` would
//! pass by the filter). Unix sockets stay: shells, git and compilers use them locally (the
//! Landlock ruleset keeps abstract ones inside the sandbox on ABI 6+).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// Builds the filter (in the parent: this allocates).
pub(super) fn no_network() -> Result<BpfProgram, SandboxError> {
    let err = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let mut family_rules = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6, libc::AF_PACKET] {
        let family = u64::try_from(family).unwrap_or_default();
        let cond = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family)
            .map_err(err)?;
        family_rules.push(SeccompRule::new(vec![cond]).map_err(err)?);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, family_rules);
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1)),
        arch,
    )
    .map_err(err)?;
    BpfProgram::try_from(filter).map_err(err)
}

/// Installs `filter` on the calling thread (async-signal-safe: one system call; the caller
/// has set `PR_SET_NO_NEW_PRIVS`).
pub(super) fn install(filter: &[seccompiler::sock_filter]) -> std::io::Result<()> {
    let len =
        u16::try_from(filter.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog {
        len,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points at `filter`, which outlives the call; sock_filter has the same
    // layout as libc's (both repr(C) of the kernel struct).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
