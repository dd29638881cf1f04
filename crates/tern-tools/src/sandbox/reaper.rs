//! Every process a command starts ends with the call, or with tern.
//!
//! The shell does not run as tern's child but as the child of a small guard: the process
//! tern forks, which forks the shell and never execs. The guard is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`), so every descendant that loses its parent, also one that left
//! the process group with `setsid`, becomes the guard's child. The guard watches a pipe whose
//! only write end tern holds: when tern closes it (abort, timeout, the call dropped) or dies
//! (the kernel closes it, whatever killed tern), the guard kills its children round after
//! round until none is left, then exits. The shell has `PR_SET_PDEATHSIG` = `SIGKILL` towards
//! the guard, so killing the guard kills the shell too.
//!
//! After a normal end the shell's background processes are left running, as pi leaves them,
//! until tern exits; the call lists them in `details.backgroundProcesses`.
//!
//! Everything between `fork` and `exec` (and all of the guard) makes raw system calls only:
//! the parent is multi-threaded, so nothing that allocates or locks may run there.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

use super::Confinement;

/// A guarded command: the guard process, the pipe that keeps it waiting, and where it
/// reports the shell.
pub(crate) struct Guarded {
    /// The guard (tern's child).
    pub child: tokio::process::Child,
    /// Closing this makes the guard kill every process of the command.
    life: Option<OwnedFd>,
    /// The guard writes the shell's pid, then its wait status.
    report: Option<std::fs::File>,
}

/// Guards whose command left background processes: kept open until tern exits.
static LEFT_RUNNING: Mutex<Vec<Guarded>> = Mutex::new(Vec::new());

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Spawns `command` under a guard, confined by `confinement`.
pub(crate) fn spawn_guarded(
    command: &mut tokio::process::Command,
    confinement: Confinement,
) -> std::io::Result<Guarded> {
    let (life_r, life_w) = pipe()?;
    let (report_r, report_w) = pipe()?;
    let life_fd = life_r.as_raw_fd();
    let life_w_fd = life_w.as_raw_fd();
    let report_fd = report_w.as_raw_fd();
    let report_r_fd = report_r.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (fork, prctl, setpgid, close, poll, waitpid, kill, open,
    // read, write, _exit) on memory that fork copied; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let guard = libc::getpid();
            libc::close(life_w_fd);
            libc::close(report_r_fd);
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => {
                    // The shell: its own process group, dead with the guard, then confined.
                    libc::close(life_fd);
                    libc::close(report_fd);
                    libc::setpgid(0, 0);
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                    if libc::getppid() != guard {
                        libc::_exit(137);
                    }
                    confinement.apply()
                }
                shell => guard_main(shell, life_fd, report_fd),
            }
        });
    }
    let spawned = command.spawn();
    drop(life_r);
    drop(report_w);
    let child = spawned?;
    Ok(Guarded {
        child,
        life: Some(life_w),
        report: Some(std::fs::File::from(report_r)),
    })
}

/// The guard's life: it never returns.
fn guard_main(shell: libc::pid_t, life: RawFd, report: RawFd) -> ! {
    // SAFETY: raw system calls on fds this process owns; see the module notes.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // Close everything but the two pipes: the std exec-status pipe (so spawn returns),
        // and the command's stdout/stderr (so their readers see the end).
        let (a, b) = if life < report {
            (life, report)
        } else {
            (report, life)
        };
        close_range(0, a - 1);
        close_range(a + 1, b - 1);
        close_range(b + 1, libc::c_int::MAX);
        write_all(report, &shell.to_ne_bytes());
        let mut shell_code: Option<i32> = None;
        let mut report_open = true;
        loop {
            let mut pfd = libc::pollfd {
                fd: life,
                events: libc::POLLIN,
                revents: 0,
            };
            let ready = libc::poll(&mut pfd, 1, 50);
            if ready > 0 {
                kill_children(shell);
                libc::_exit(shell_code.unwrap_or(137));
            }
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid == shell {
                    shell_code = Some(exit_code(status));
                    if report_open {
                        write_all(report, &status.to_ne_bytes());
                        libc::close(report);
                        report_open = false;
                    }
                } else if pid == -1 {
                    // No child left: the command and all it started are done.
                    if let Some(code) = shell_code {
                        libc::_exit(code);
                    }
                    break;
                } else if pid == 0 {
                    break;
                }
            }
        }
    }
}

fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// SIGKILLs the shell's group and every child of the guard, round after round (the
/// grandchildren of a killed child become the guard's children), until none is left.
///
/// # Safety
/// Raw system calls only; for the guard process.
unsafe fn kill_children(shell: libc::pid_t) {
    let me = libc::getpid();
    // "/proc/self/task/<pid>/children": the guard has one thread, whose id is its pid.
    let mut path = [0u8; 64];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut n = prefix.len() + write_decimal(&mut path[prefix.len()..], me);
    let suffix = b"/children\0";
    path[n..n + suffix.len()].copy_from_slice(suffix);
    n += suffix.len();
    let _ = n;
    for _round in 0..1000 {
        libc::kill(-shell, libc::SIGKILL);
        let mut buf = [0u8; 4096];
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            let mut len = 0usize;
            loop {
                let r = libc::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len);
                if r <= 0 {
                    break;
                }
                len += r as usize;
                if len == buf.len() {
                    break;
                }
            }
            libc::close(fd);
            let mut pid: libc::pid_t = 0;
            for &c in &buf[..len] {
                if c.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(c - b'0'));
                } else {
                    if pid > 0 {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    pid = 0;
                }
            }
        }
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
            if pid == -1 {
                return;
            }
            if pid == 0 {
                break;
            }
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 5_000_000,
        };
        libc::nanosleep(&pause, std::ptr::null_mut());
    }
}

fn write_decimal(out: &mut [u8], mut value: libc::pid_t) -> usize {
    let mut digits = [0u8; 12];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (value % 10) as u8;
        n += 1;
        value /= 10;
        if value == 0 || n == digits.len() {
            break;
        }
    }
    for i in 0..n {
        out[i] = digits[n - 1 - i];
    }
    n
}

unsafe fn close_range(first: libc::c_int, last: libc::c_int) {
    if first > last {
        return;
    }
    if libc::syscall(
        libc::SYS_close_range,
        first as libc::c_uint,
        last as libc::c_uint,
        0u32,
    ) != 0
    {
        // Old kernels: close one by one (up to a sane bound).
        let end = last.min(4096);
        let mut fd = first;
        while fd <= end {
            libc::close(fd);
            fd += 1;
        }
    }
}

unsafe fn write_all(fd: RawFd, bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        let r = libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done);
        if r <= 0 {
            return;
        }
        done += r as usize;
    }
}

impl Guarded {
    /// Reads the shell's pid (blocking: the guard writes it first thing).
    pub(crate) async fn shell_pid(&mut self) -> Option<i32> {
        let mut file = self.report.take()?;
        let (file, pid) = tokio::task::spawn_blocking(move || {
            let mut b = [0u8; 4];
            let r = file.read_exact(&mut b).ok().map(|_| i32::from_ne_bytes(b));
            (file, r)
        })
        .await
        .ok()?;
        self.report = Some(file);
        pid
    }

    /// Waits for the shell's wait status; `None` if the guard died without one.
    pub(crate) fn shell_status(
        &mut self,
    ) -> impl std::future::Future<Output = Option<i32>> + Send + 'static {
        let file = self.report.take();
        async move {
            let mut file = file?;
            tokio::task::spawn_blocking(move || {
                let mut b = [0u8; 4];
                file.read_exact(&mut b).ok().map(|_| i32::from_ne_bytes(b))
            })
            .await
            .ok()
            .flatten()
        }
    }

    /// Makes the guard kill every process of the command, and waits (briefly) for it.
    pub(crate) async fn kill_all(&mut self) {
        self.life = None;
        let wait = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait());
        if wait.await.is_err() {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// The guard's pid.
    pub(crate) fn guard_pid(&self) -> Option<i32> {
        self.child.id().and_then(|id| i32::try_from(id).ok())
    }

    /// Keeps the guard (and the background processes it watches) until tern exits.
    pub(crate) fn leave_running(self) {
        let mut left = match LEFT_RUNNING.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        left.retain_mut(|g| !matches!(g.child.try_wait(), Ok(Some(_))));
        left.push(self);
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // The pipe first: the guard then kills the command's processes and exits, and tokio
        // reaps it.
        self.life = None;
    }
}

/// Live descendants of `pid` (pid and command name), read from /proc.
pub(crate) fn descendants(pid: i32) -> Vec<(i32, String)> {
    let mut table = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Ok(p) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let comm = head
                .split_once('(')
                .map(|(_, c)| c)
                .unwrap_or("")
                .to_string();
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let (Some(state), Some(ppid)) = (fields.first(), fields.get(1)) else {
                continue;
            };
            if *state == "Z" || *state == "X" {
                continue;
            }
            if let Ok(ppid) = ppid.parse::<i32>() {
                table.push((p, ppid, comm));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (p, pp, comm) in &table {
            if *pp == parent && !out.iter().any(|(q, _)| q == p) {
                out.push((*p, comm.clone()));
                frontier.push(*p);
            }
        }
    }
    out.sort();
    out
}
