//! Atomic replace of a file within its folder's handle, with conflict detection.
//!
//! The new content goes to a temporary file created (`O_EXCL`, `O_NOFOLLOW`) in the target's
//! folder handle, then `renameat` puts it in place within that same handle. Right before the
//! rename the target is checked against what the caller saw (inode, size, times, and for
//! `edit` the bytes), and right after, the replaced version is checked once more, so a
//! concurrent change is reported instead of lost without a word.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::{create_dirs, fstat, split_last, Identity, Kind, Root};

/// What the caller saw of the target before it computed the new content.
#[derive(Clone, Copy, Debug)]
pub enum Expect<'a> {
    /// `write`: the target's state when the call started (`None`: it did not exist).
    State(Option<Identity>),
    /// `edit`: the file as read, identity and bytes.
    Content(Identity, &'a [u8]),
}

/// Why a replace did not happen (or, for [`ReplaceError::LostConcurrent`], happened while
/// another writer changed the replaced version).
#[derive(Debug)]
pub enum ReplaceError {
    /// The target is a directory.
    IsDirectory,
    /// The target is a FIFO, socket or device (what it is).
    NotRegular(&'static str),
    /// A folder on the way or the target became a symlink after the check.
    Changed,
    /// The file changed since it was read: nothing was written.
    Conflict,
    /// The new content is in place, but another writer changed the replaced version during
    /// the rename; that change is not in the new file.
    LostConcurrent,
    /// Any other failure (nothing was replaced).
    Io(io::Error),
}

impl From<io::Error> for ReplaceError {
    fn from(e: io::Error) -> Self {
        match super::OpenError::from_io(e) {
            super::OpenError::Changed => ReplaceError::Changed,
            super::OpenError::IsDirectory => ReplaceError::IsDirectory,
            super::OpenError::NotRegular(what) => ReplaceError::NotRegular(what),
            super::OpenError::Io(e) => ReplaceError::Io(e),
            other => ReplaceError::Io(io::Error::other(other.describe("the path"))),
        }
    }
}

impl From<rustix::io::Errno> for ReplaceError {
    fn from(e: rustix::io::Errno) -> Self {
        io::Error::from(e).into()
    }
}

impl ReplaceError {
    /// The text the model sees; `verb` is what the tool did ("write", "edit").
    pub fn describe(&self, verb: &str, display: &str) -> String {
        match self {
            ReplaceError::IsDirectory => format!("Could not {verb} {display}: it is a directory"),
            ReplaceError::NotRegular(what) => format!(
                "Could not {verb} {display}: it is {what}, not a regular file. Only regular files can be written."
            ),
            ReplaceError::Changed => format!(
                "Could not {verb} {display}: the path changed during the call (a folder on the way or the file was replaced by a symbolic link). Nothing was written; try again."
            ),
            ReplaceError::Conflict => format!(
                "Could not {verb} {display}: the file was changed by someone else since it was read. Nothing was written; read it again and redo the change."
            ),
            ReplaceError::LostConcurrent => format!(
                "The {verb} of {display} was saved, but another program changed the file at the same moment and that change is not in the saved file. Read the file again and redo that change if it matters."
            ),
            ReplaceError::Io(e) => format!("Could not {verb} {display}: {e}"),
        }
    }
}

/// Replaces `rel` beneath `root` with what `fill` writes, if the target still is what
/// `expect` says. Creates missing parent folders when `create_parents`. Keeps an existing
/// file's permission bits.
pub fn replace_file(
    root: &Root,
    rel: &Path,
    create_parents: bool,
    expect: Expect<'_>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ReplaceError> {
    let (parent_rel, name) = split_last(rel).ok_or(ReplaceError::IsDirectory)?;
    let parent = if create_parents {
        create_dirs(root, parent_rel)?
    } else {
        root.open_dir(parent_rel)?
    };
    let before = stat_name(&parent, name)?;
    check_expected(before, expect)?;

    let (tmp_name, tmp) = create_temp(&parent)?;
    let written = (|| -> Result<Option<OwnedFd>, ReplaceError> {
        let mut file = File::from(tmp);
        fill(&mut file)?;
        if let Some(id) = before {
            rustix::fs::fchmod(&file, Mode::from_raw_mode(id.permissions() as _))?;
        }
        file.sync_all()?;
        // Last look before the rename: the target must still be what the caller saw.
        let old = match before {
            Some(_) => Some(open_old(&parent, name)?),
            None => None,
        };
        let now = match &old {
            Some(fd) => Some(fstat(fd)?),
            None => stat_name(&parent, name)?,
        };
        if now != before {
            return Err(ReplaceError::Conflict);
        }
        if let (Expect::Content(_, bytes), Some(fd)) = (expect, &old) {
            if !same_content(fd, bytes)? {
                return Err(ReplaceError::Conflict);
            }
        }
        rustix::fs::renameat(&parent, tmp_name.as_str(), &parent, name)?;
        Ok(old)
    })();
    let old = match written {
        Ok(old) => old,
        Err(e) => {
            let _ = rustix::fs::unlinkat(&parent, tmp_name.as_str(), AtFlags::empty());
            return Err(e);
        }
    };
    // A write that reached the old version between the last look and the rename is in the
    // replaced file only: say so.
    if let (Some(fd), Some(before)) = (old, before) {
        if !fstat(&fd)?.same_data(&before) {
            return Err(ReplaceError::LostConcurrent);
        }
    }
    Ok(())
}

fn check_expected(before: Option<Identity>, expect: Expect<'_>) -> Result<(), ReplaceError> {
    if let Some(id) = before {
        match id.kind() {
            Kind::File => {}
            Kind::Dir => return Err(ReplaceError::IsDirectory),
            Kind::Symlink => return Err(ReplaceError::Changed),
            Kind::Special(what) => return Err(ReplaceError::NotRegular(what)),
        }
    }
    let expected = match expect {
        Expect::State(state) => state,
        Expect::Content(id, _) => Some(id),
    };
    if before != expected {
        return Err(ReplaceError::Conflict);
    }
    Ok(())
}

fn stat_name(parent: &OwnedFd, name: &OsStr) -> io::Result<Option<Identity>> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(Identity::of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn open_old(parent: &OwnedFd, name: &OsStr) -> Result<OwnedFd, ReplaceError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        // Gone since the first look: that is a change too.
        Err(rustix::io::Errno::NOENT) => Err(ReplaceError::Conflict),
        Err(e) => Err(e.into()),
    }
}

/// Compares the open file's bytes with `expected`, a chunk at a time (no second copy).
fn same_content(fd: &OwnedFd, expected: &[u8]) -> io::Result<bool> {
    let mut file = File::from(fd.try_clone()?);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = 0usize;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(pos == expected.len());
        }
        if expected.len() < pos + n || expected[pos..pos + n] != buf[..n] {
            return Ok(false);
        }
        pos += n;
    }
}

fn create_temp(parent: &OwnedFd) -> io::Result<(String, OwnedFd)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".tern-write-{}-{n}-{nanos:x}", std::process::id());
        match rustix::fs::openat(parent, name.as_str(), flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((name, fd)),
            Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.map_or_else(|| io::Error::other("no temporary name"), Into::into))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Root) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), "one\n").unwrap();
        let root = Root::open(tmp.path()).unwrap();
        (tmp, root)
    }

    /// Replaces `f` with `mine\n`, expecting it as `expect` says.
    fn replace_f(root: &Root, expect: Expect<'_>) -> Result<(), ReplaceError> {
        replace_file(root, Path::new("f"), false, expect, |w| {
            w.write_all(b"mine\n")
        })
    }

    /// The text of `name` in `dir`.
    fn content(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(name)).unwrap()
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_changed_since_it_was_seen_is_not_replaced() {
        let (tmp, root) = setup();
        let seen = root.stat(Path::new("f")).unwrap();
        std::fs::write(tmp.path().join("f"), "one\ntwo, from someone else\n").unwrap();
        let e = replace_f(&root, Expect::State(seen)).unwrap_err();
        assert!(matches!(e, ReplaceError::Conflict), "{e:?}");
        assert_eq!(content(tmp.path(), "f"), "one\ntwo, from someone else\n");
        assert_eq!(leftovers(tmp.path()), ["f"]);
    }

    #[test]
    fn same_size_and_time_but_other_bytes_is_a_conflict_for_edit() {
        let (tmp, root) = setup();
        let id = root.stat(Path::new("f")).unwrap().unwrap();
        // What edit read differs from what is on disk, though inode/size/times agree.
        let e = replace_f(&root, Expect::Content(id, b"0ne\n")).unwrap_err();
        assert!(matches!(e, ReplaceError::Conflict), "{e:?}");
        assert_eq!(content(tmp.path(), "f"), "one\n");
        replace_f(&root, Expect::Content(id, b"one\n")).unwrap();
        assert_eq!(content(tmp.path(), "f"), "mine\n");
        assert_eq!(leftovers(tmp.path()), ["f"]);
    }

    #[test]
    fn a_file_that_appeared_meanwhile_is_a_conflict_for_write() {
        let (tmp, root) = setup();
        let e = replace_file(&root, Path::new("new"), false, Expect::State(None), |w| {
            std::fs::write(tmp.path().join("new"), "theirs").unwrap();
            w.write_all(b"mine")
        })
        .unwrap_err();
        assert!(matches!(e, ReplaceError::Conflict), "{e:?}");
        assert_eq!(content(tmp.path(), "new"), "theirs");
        assert_eq!(leftovers(tmp.path()), ["f", "new"]);
    }
}
