//! Handle-relative file access: every open goes through a directory handle of a root (the
//! working directory or an allowed outside root) and cannot leave it.
//!
//! A path is first resolved and checked ([`crate::confine::resolve_path`]): the result has no
//! symlinks and no `..` left. It is then opened beneath the root's handle with symlinks
//! refused on the way (Linux: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS`; elsewhere, or on kernels without `openat2`: one `openat` per
//! component with `O_NOFOLLOW`). So what is opened is exactly what was checked: a folder
//! swapped for a symlink after the check makes the open fail instead of leading outside.

mod names;
mod replace;

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

pub use names::{decode_path_arg, display_name, display_path};
pub use replace::{replace_file, Expect, ReplaceError};

/// What the kernel says a file is, without following a final symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (only seen when it appeared after the check: resolved paths have none).
    Symlink,
    /// A FIFO, socket or device: never opened for reading or writing by the tools.
    Special(&'static str),
}

impl Kind {
    fn of(mode: u32) -> Kind {
        match FileType::from_raw_mode(mode as _) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Special("a FIFO (named pipe)"),
            FileType::Socket => Kind::Special("a socket"),
            FileType::CharacterDevice => Kind::Special("a character device"),
            FileType::BlockDevice => Kind::Special("a block device"),
            FileType::Unknown => Kind::Special("not a regular file"),
        }
    }
}

/// The identity and state of a file: it changed when any of these differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    kind: Kind,
    mode: u32,
}

impl Identity {
    // `Stat`'s field widths differ between architectures, hence the casts.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> Identity {
        Identity {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
            kind: Kind::of(st.st_mode as u32),
            mode: st.st_mode as u32,
        }
    }

    /// The file's kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The same file with the same data (inode, size, mtime): unlike `==`, ignores the
    /// ctime an unlink or a rename changes.
    pub fn same_data(&self, other: &Identity) -> bool {
        (self.dev, self.ino, self.size, self.mtime)
            == (other.dev, other.ino, other.size, other.mtime)
    }

    /// Permission bits (`0o7777`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }
}

/// A root directory held open: every access of a call goes beneath this handle.
#[derive(Debug)]
pub struct Root {
    dir: OwnedFd,
    path: PathBuf,
}

impl Root {
    /// Opens the (resolved) root directory `path`.
    pub fn open(path: &Path) -> io::Result<Root> {
        let dir = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The root's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `rel` (plain components only) beneath the root with `flags`, refusing symlinks.
    pub fn open_at(&self, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        open_beneath(self.dir.as_fd(), rel, flags, Mode::empty())
    }

    /// Opens the directory `rel` beneath the root.
    pub fn open_dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.open_at(rel, OFlags::RDONLY | OFlags::DIRECTORY)
    }

    /// The identity of `rel` without following a final symlink (`None`: it does not exist).
    pub fn stat(&self, rel: &Path) -> io::Result<Option<Identity>> {
        let (parent, name) = match split_last(rel) {
            Some((parent, name)) => (self.open_dir(parent)?, name),
            None => {
                return rustix::fs::fstat(&self.dir)
                    .map(|s| Some(Identity::of(&s)))
                    .map_err(Into::into)
            }
        };
        match rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Identity::of(&st))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the regular file `rel` for reading: refused, before any blocking read, when it
    /// is a FIFO, socket or device (opened non-blocking, checked with `fstat`).
    pub fn open_regular(&self, rel: &Path) -> Result<(File, Identity), OpenError> {
        let fd = self
            .open_at(rel, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)
            .map_err(OpenError::from_io)?;
        let id = fstat(&fd).map_err(OpenError::Io)?;
        match id.kind {
            Kind::File => {}
            Kind::Dir => return Err(OpenError::IsDirectory),
            Kind::Symlink => return Err(OpenError::Changed),
            Kind::Special(what) => return Err(OpenError::NotRegular(what)),
        }
        // Regular files ignore O_NONBLOCK, but clear it so the handle behaves as usual.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty()).map_err(|e| OpenError::Io(e.into()))?;
        Ok((File::from(fd), id))
    }

    /// Opens the directory `rel` for listing (refusing anything else).
    pub fn open_listing(&self, rel: &Path) -> Result<OwnedFd, OpenError> {
        let fd = self
            .open_at(rel, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)
            .map_err(OpenError::from_io)?;
        match fstat(&fd).map_err(OpenError::Io)?.kind {
            Kind::Dir => Ok(fd),
            Kind::File | Kind::Special(_) => Err(OpenError::NotDirectory),
            Kind::Symlink => Err(OpenError::Changed),
        }
    }
}

/// The identity of an open file.
pub fn fstat(fd: impl AsFd) -> io::Result<Identity> {
    Ok(Identity::of(&rustix::fs::fstat(fd)?))
}

/// Why a file could not be opened beneath its root.
#[derive(Debug)]
pub enum OpenError {
    /// Nothing at that path.
    NotFound,
    /// Access refused by the file's permissions.
    PermissionDenied,
    /// A directory where a file was meant.
    IsDirectory,
    /// Something other than a directory where one was meant.
    NotDirectory,
    /// A FIFO, socket or device (what it is).
    NotRegular(&'static str),
    /// The path changed between the check and the open (a component became a symlink).
    Changed,
    /// Any other failure.
    Io(io::Error),
}

impl OpenError {
    /// Classifies an `io::Error` from an open beneath a root.
    pub fn from_io(e: io::Error) -> OpenError {
        match e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) {
            // A symlink met under NO_SYMLINKS / O_NOFOLLOW, or an escape under BENEATH.
            Some(rustix::io::Errno::LOOP) | Some(rustix::io::Errno::XDEV) => OpenError::Changed,
            Some(rustix::io::Errno::NOTDIR) => OpenError::NotDirectory,
            Some(rustix::io::Errno::ISDIR) => OpenError::IsDirectory,
            _ => match e.kind() {
                io::ErrorKind::NotFound => OpenError::NotFound,
                io::ErrorKind::PermissionDenied => OpenError::PermissionDenied,
                _ => OpenError::Io(e),
            },
        }
    }

    /// The text the model sees; `display` is the path as it wrote it.
    pub fn describe(&self, display: &str) -> String {
        match self {
            OpenError::NotFound => format!("File not found: {display}"),
            OpenError::PermissionDenied => format!("Permission denied: {display}"),
            OpenError::IsDirectory => {
                format!("{display} is a directory, not a file. Use ls to list it.")
            }
            OpenError::NotDirectory => format!("Not a directory: {display}"),
            OpenError::NotRegular(what) => format!(
                "Cannot open {display}: it is {what}, not a regular file. Only regular files can be read or changed with this tool."
            ),
            OpenError::Changed => format!(
                "Cannot open {display}: the path changed while it was being opened (a folder on the way was replaced by a symbolic link). Nothing was accessed; try again."
            ),
            OpenError::Io(e) => format!("Cannot read {display}: {e}"),
        }
    }
}

/// `rel` as plain components: resolved paths relative to their root never hold `..`, `.`
/// or a root, and anything else is refused rather than interpreted.
fn plain_components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a plain relative path: {}", rel.display()),
            )),
        })
        .collect()
}

/// The parent and last component of `rel` (`None` for the root itself).
pub(crate) fn split_last(rel: &Path) -> Option<(&Path, &OsStr)> {
    let name = rel.file_name()?;
    Some((rel.parent().unwrap_or(Path::new("")), name))
}

/// Opens `rel` beneath `dir`, refusing symlinks anywhere on the way.
fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    plain_components(rel)?;
    let flags = flags | OFlags::CLOEXEC;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let resolve = rustix::fs::ResolveFlags::BENEATH
                | rustix::fs::ResolveFlags::NO_SYMLINKS
                | rustix::fs::ResolveFlags::NO_MAGICLINKS;
            let target: &Path = if rel.as_os_str().is_empty() {
                Path::new(".")
            } else {
                rel
            };
            match rustix::fs::openat2(dir, target, flags, mode, resolve) {
                // Kernels before 5.6 lack openat2, and some seccomp filters refuse it (ENOSYS
                // or EPERM): fall back for good; the fallback is as strict.
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed)
                }
                other => return other.map_err(Into::into),
            }
        }
    }
    open_by_components(dir, rel, flags, mode)
}

/// The portable form: one `openat` per component, each with `O_NOFOLLOW`.
fn open_by_components(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let parts = plain_components(rel)?;
    let Some((last, parents)) = parts.split_last() else {
        return Ok(rustix::fs::openat(dir, ".", flags, mode)?);
    };
    let mut current: Option<OwnedFd> = None;
    for part in parents {
        let base = current.as_ref().map_or(dir, |fd| fd.as_fd());
        let next = rustix::fs::openat(
            base,
            *part,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        current = Some(next);
    }
    let base = current.as_ref().map_or(dir, |fd| fd.as_fd());
    Ok(rustix::fs::openat(
        base,
        *last,
        flags | OFlags::NOFOLLOW,
        mode,
    )?)
}

/// Opens the directory `rel` beneath `root`, creating missing folders one at a time (each
/// with `mkdirat` in the handle of its parent, never following a symlink).
pub fn create_dirs(root: &Root, rel: &Path) -> io::Result<OwnedFd> {
    let parts = plain_components(rel)?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current = rustix::fs::openat(&root.dir, ".", dir_flags, Mode::empty())?;
    for part in parts {
        let next = match rustix::fs::openat(&current, part, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&current, part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&current, part, dir_flags, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
        current = next;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portable_walk_refuses_symlinks_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::fs::write(tmp.path().join("real/f"), "x").unwrap();
        std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
        let root = Root::open(tmp.path()).unwrap();
        let ok = open_by_components(
            root.dir.as_fd(),
            Path::new("real/f"),
            OFlags::RDONLY,
            Mode::empty(),
        );
        assert!(ok.is_ok());
        for path in ["link/f", "link"] {
            let e = open_by_components(
                root.dir.as_fd(),
                Path::new(path),
                OFlags::RDONLY,
                Mode::empty(),
            )
            .unwrap_err();
            assert!(
                matches!(
                    OpenError::from_io(e),
                    OpenError::Changed | OpenError::NotDirectory
                ),
                "{path}"
            );
        }
        assert!(open_by_components(
            root.dir.as_fd(),
            Path::new("../x"),
            OFlags::RDONLY,
            Mode::empty()
        )
        .is_err());
        assert!(root.open_at(Path::new("link/f"), OFlags::RDONLY).is_err());
        assert!(root
            .open_at(Path::new(""), OFlags::RDONLY | OFlags::DIRECTORY)
            .is_ok());
    }
}
