//! Buffered appends: a per-process append-only log in front of the database.
//!
//! A SQLite commit costs tens of microseconds even without fsync: it writes whole pages to the
//! WAL. With [`Durability::Buffered`](super::Durability::Buffered) an append is instead one
//! `write` to this process's side log, `<db>.tern-logs/<pid>-<time>-<n>.log`, which the kernel
//! keeps when the process is killed; a background thread folds the log into the database in
//! large transactions, a few milliseconds behind.
//!
//! - **Nothing lost.** The log is locked (`flock`) for as long as its journal lives. Opening
//!   the database, and reading any session, first folds the logs nobody holds: those of killed
//!   processes. So a reader in this process sees every append, and a recovery after a kill
//!   sees every record the killed process appended.
//! - **Nothing twice.** Each fold writes how far it read the log (`tern_side_logs`) in the
//!   same transaction as the records, so a fold cut off anywhere resumes where it committed.
//! - **A torn tail is dropped.** A record is one line; a dead process's last line without its
//!   newline was never acknowledged.
//! - **Other live processes** see this process's records once folded (milliseconds later).
//!
//! A line is the session id as a JSON string, a tab, and the record's JSON: neither can hold
//! a raw tab or newline, so the line splits without a parser.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rusqlite::{params, Connection, OptionalExtension};
use rustix::fs::FlockOperation;
use serde::Serialize;

/// How long the folder waits after the first unfolded append, to fold a batch at once.
const FOLD_EVERY: Duration = Duration::from_millis(2);
/// A log this large, once folded, is replaced by a fresh one (and deleted).
const ROTATE_AT: u64 = 64 << 20;
/// How long the folder rests after a failed fold before it tries again.
const RETRY_AFTER: Duration = Duration::from_millis(100);

/// The folder of side logs of the database at `db`.
pub(super) fn dir_of(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".tern-logs");
    db.with_file_name(name)
}

/// What appends touch: the open log and how far it is written.
struct Appender {
    file: File,
    /// Bytes written to `file`; every byte before it belongs to a whole line.
    end: u64,
    /// A write failed and could not be undone: the log's tail is unknown, appends stop.
    broken: Option<String>,
    /// The folder waits for `end` to move.
    folder_waiting: bool,
    stopping: bool,
}

/// What folds touch: the database connection and how far the log is folded.
struct Folder {
    conn: Connection,
    /// A second handle on the open log, for reading it back.
    file: File,
    name: String,
    folded: u64,
}

/// This process's side log of one database.
pub(super) struct SideLog {
    dir: PathBuf,
    appender: Mutex<Appender>,
    wake: Condvar,
    folder: Mutex<Folder>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// `Folder::folded`, readable without the folder's lock.
    folded: AtomicU64,
}

static LOGS_OPENED: AtomicUsize = AtomicUsize::new(0);

/// Creates a log file in `dir`, locked, under its final name (made under a temporary name
/// and renamed once locked, so no scan ever finds it unlocked).
fn create_log(dir: &Path) -> std::io::Result<(File, String)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = LOGS_OPENED.fetch_add(1, Ordering::Relaxed);
    let name = format!("{}-{nanos}-{n}.log", std::process::id());
    let temporary = dir.join(format!(".{name}.tmp"));
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .open(&temporary)?;
    rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive)?;
    std::fs::rename(&temporary, dir.join(&name))?;
    Ok((file, name))
}

impl SideLog {
    /// Opens a fresh log for this process beside the database and starts its folder thread.
    pub(super) fn open(db: &Path, conn: Connection) -> Result<Arc<SideLog>, String> {
        let dir = dir_of(db);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let (file, name) = create_log(&dir)
            .map_err(|e| format!("cannot create a log in {}: {e}", dir.display()))?;
        let reader = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {name}: {e}"))?;
        let log = Arc::new(SideLog {
            dir,
            appender: Mutex::new(Appender {
                file,
                end: 0,
                broken: None,
                folder_waiting: false,
                stopping: false,
            }),
            wake: Condvar::new(),
            folder: Mutex::new(Folder {
                conn,
                file: reader,
                name,
                folded: 0,
            }),
            thread: Mutex::new(None),
            folded: AtomicU64::new(0),
        });
        let worker = log.clone();
        let thread = std::thread::Builder::new()
            .name("tern-sqlite-fold".into())
            .spawn(move || worker.run())
            .map_err(|e| format!("cannot start the fold thread: {e}"))?;
        *log.thread.lock() = Some(thread);
        Ok(log)
    }

    /// Appends one record of `session`: one `write`, durable against a killed process when
    /// it returns.
    pub(super) fn append(&self, session: &str, record: &impl Serialize) -> Result<(), String> {
        let mut line = Vec::with_capacity(256);
        serde_json::to_writer(&mut line, session)
            .and_then(|()| {
                line.push(b'\t');
                serde_json::to_writer(&mut line, record)
            })
            .map_err(|e| format!("record does not serialize: {e}"))?;
        line.push(b'\n');
        let mut a = self.appender.lock();
        if let Some(reason) = &a.broken {
            return Err(reason.clone());
        }
        if let Err(e) = a.file.write_all(&line) {
            // Cut a partial line off, so the next append does not extend it.
            let end = a.end;
            if let Err(undo) = a.file.set_len(end) {
                a.broken = Some(format!(
                    "the side log's tail is unknown after a failed write ({e}, then {undo}); \
                     reopen the journal"
                ));
            }
            return Err(format!("cannot write the side log: {e}"));
        }
        a.end += line.len() as u64;
        if a.folder_waiting {
            a.folder_waiting = false;
            self.wake.notify_one();
        }
        Ok(())
    }

    /// The folder thread: waits for appends, then folds what has come after a short pause.
    fn run(&self) {
        loop {
            {
                let mut a = self.appender.lock();
                loop {
                    if a.stopping {
                        return;
                    }
                    if a.end > self.folded() {
                        break;
                    }
                    a.folder_waiting = true;
                    self.wake.wait(&mut a);
                }
            }
            std::thread::sleep(FOLD_EVERY);
            if self.fold().is_err() {
                std::thread::sleep(RETRY_AFTER);
            }
        }
    }

    fn folded(&self) -> u64 {
        self.folded.load(Ordering::Acquire)
    }

    /// Folds everything appended so far into the database; on success every append that
    /// returned before this call is in the database.
    pub(super) fn fold(&self) -> Result<(), String> {
        let mut f = self.folder.lock();
        let end = self.appender.lock().end;
        if end > f.folded {
            let from = f.folded;
            let result = read_range(&f.file, from, end).and_then(|bytes| {
                let (rows, used) = parse(&bytes)?;
                let to = from + used as u64;
                let Folder { conn, name, .. } = &mut *f;
                insert(conn, &rows, name, to).map_err(|e| e.to_string())?;
                Ok(to)
            });
            let to = result?;
            f.folded = to;
            self.folded.store(to, Ordering::Release);
        }
        self.rotate(&mut f);
        Ok(())
    }

    /// Replaces a large, fully folded log by a fresh one. Best effort: on failure the old
    /// log simply goes on growing.
    fn rotate(&self, f: &mut Folder) {
        let mut a = self.appender.lock();
        if a.end < ROTATE_AT || a.end != f.folded {
            return;
        }
        let Ok((file, name)) = create_log(&self.dir) else {
            return;
        };
        let Ok(reader) = file.try_clone() else {
            let _ = std::fs::remove_file(self.dir.join(&name));
            return;
        };
        let old = std::mem::replace(&mut f.name, name);
        a.file = file;
        a.end = 0;
        f.file = reader;
        f.folded = 0;
        self.folded.store(0, Ordering::Release);
        drop(a);
        // Fully folded: the file and its row can go (a crash between leaves a stale row).
        if std::fs::remove_file(self.dir.join(&old)).is_ok() {
            let _ = f
                .conn
                .execute("DELETE FROM tern_side_logs WHERE name = ?1", [&old]);
        }
    }

    /// Stops the folder, folds the rest and deletes the log; a log that cannot be folded now
    /// stays, and the next open of the database folds it.
    pub(super) fn close(&self) {
        self.appender.lock().stopping = true;
        self.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
        if self.fold().is_ok() {
            let f = self.folder.lock();
            if std::fs::remove_file(self.dir.join(&f.name)).is_ok() {
                let _ = f
                    .conn
                    .execute("DELETE FROM tern_side_logs WHERE name = ?1", [&f.name]);
            }
        }
    }
}

fn read_range(file: &File, from: u64, to: u64) -> Result<Vec<u8>, String> {
    let len = usize::try_from(to - from).map_err(|e| e.to_string())?;
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, from)
        .map_err(|e| format!("cannot read the side log back: {e}"))?;
    Ok(bytes)
}

/// One folded line: the session id and the record's JSON text.
type Row<'a> = (String, &'a str);

/// The whole lines of `bytes`, and how many bytes they take; a last line without its newline
/// is left out.
fn parse(bytes: &[u8]) -> Result<(Vec<Row<'_>>, usize), String> {
    let used = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&bytes[..used])
        .map_err(|e| format!("a side log line is not UTF-8: {e}"))?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("side log line {} is damaged: {why}", n + 1);
        let (session, record) = line.split_once('\t').ok_or_else(|| bad("no tab"))?;
        let session: String =
            serde_json::from_str(session).map_err(|e| bad(&format!("session id: {e}")))?;
        rows.push((session, record));
    }
    Ok((rows, used))
}

/// Inserts `rows` and records that `log` is folded up to `folded`, in one transaction.
fn insert(c: &mut Connection, rows: &[Row<'_>], log: &str, folded: u64) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    {
        let mut q =
            tx.prepare_cached("INSERT INTO tern_steps (session, record) VALUES (?1, ?2)")?;
        for (session, record) in rows {
            q.execute(params![session, record])?;
        }
    }
    tx.execute(
        "INSERT INTO tern_side_logs (name, folded) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET folded = excluded.folded",
        params![log, folded as i64],
    )?;
    tx.commit()
}

/// Folds the logs in the side-log folder of `db` that no live journal holds (their
/// processes died), then deletes them. Live logs, this process's included, are locked and
/// so skipped.
pub(super) fn fold_orphans(db: &Path, c: &mut Connection) -> Result<(), String> {
    let dir = dir_of(db);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') && name.ends_with(".tmp") {
            // A log that died before it was named holds nothing.
            if let Some(file) = unheld(&path)? {
                let _ = std::fs::remove_file(&path);
                drop(file);
            }
            continue;
        }
        if !name.ends_with(".log") {
            continue;
        }
        let Some(file) = unheld(&path)? else {
            continue;
        };
        let folded: u64 = c
            .query_row(
                "SELECT folded FROM tern_side_logs WHERE name = ?1",
                [&name],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(|e| e.to_string())?
            .map_or(0, |v| u64::try_from(v).unwrap_or(0));
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        if len > folded {
            let bytes = read_range(&file, folded, len)?;
            let (rows, used) = parse(&bytes).map_err(|e| {
                format!(
                    "{}: {e}; its records were not read: move the file aside to go on without them",
                    path.display()
                )
            })?;
            insert(c, &rows, &name, folded + used as u64).map_err(|e| e.to_string())?;
        }
        if std::fs::remove_file(&path).is_ok() {
            let _ = c.execute("DELETE FROM tern_side_logs WHERE name = ?1", [&name]);
        }
        drop(file);
    }
    Ok(())
}

/// The file at `path`, locked by us, if no one else holds it and it is still at `path`.
fn unheld(path: &Path) -> Result<Option<File>, String> {
    let file = match File::open(path) {
        Ok(f) => f,
        // Folded and deleted by someone else meanwhile.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
    };
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        Err(e) => return Err(format!("cannot lock {}: {e}", path.display())),
    }
    // Another folder may have deleted it (and a new log taken the name) between our open
    // and our lock.
    let same = match (std::fs::metadata(path), file.metadata()) {
        (Ok(at_path), Ok(ours)) => at_path.ino() == ours.ino() && at_path.dev() == ours.dev(),
        _ => false,
    };
    Ok(same.then_some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &Path) -> (PathBuf, Connection) {
        let db = dir.join("runs.db");
        let c = super::super::connect(&db, crate::Durability::Buffered).expect("connect");
        (db, c)
    }

    fn rows(c: &Connection) -> Vec<(String, String)> {
        let mut q = c
            .prepare("SELECT session, record FROM tern_steps ORDER BY seq")
            .expect("prepare");
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    /// A log left by a dead process: written by hand in the format `append` writes.
    fn dead_log(db: &Path, name: &str, text: &str) -> PathBuf {
        let dir = dir_of(db);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn a_dead_log_is_folded_once_and_its_torn_tail_dropped() {
        let tmp = tempfile::tempdir().expect("dir");
        let (db, mut c) = database(tmp.path());
        let log = dead_log(
            &db,
            "1-1-0.log",
            "\"a\"\t{\"n\":1}\n\"b\\tc\"\t{\"n\":2}\n\"a\"\t{\"n\":",
        );
        fold_orphans(&db, &mut c).expect("folds");
        assert_eq!(
            rows(&c),
            [
                ("a".to_string(), "{\"n\":1}".to_string()),
                ("b\tc".to_string(), "{\"n\":2}".to_string())
            ]
        );
        assert!(!log.exists(), "a folded log is deleted");
        fold_orphans(&db, &mut c).expect("folds again");
        assert_eq!(rows(&c).len(), 2, "nothing folded twice");
    }

    #[test]
    fn a_fold_cut_off_before_the_delete_resumes_where_it_committed() {
        let tmp = tempfile::tempdir().expect("dir");
        let (db, mut c) = database(tmp.path());
        let first = "\"s\"\t{\"n\":1}\n";
        // A fold committed the first line, then its process died before deleting the log,
        // which had grown by a line meanwhile.
        insert(
            &mut c,
            &[("s".into(), "{\"n\":1}")],
            "2-2-0.log",
            first.len() as u64,
        )
        .expect("insert");
        dead_log(&db, "2-2-0.log", &format!("{first}\"s\"\t{{\"n\":2}}\n"));
        fold_orphans(&db, &mut c).expect("folds");
        let records: Vec<String> = rows(&c).into_iter().map(|(_, r)| r).collect();
        assert_eq!(records, ["{\"n\":1}", "{\"n\":2}"]);
    }

    #[test]
    fn a_live_log_is_not_folded_by_another_journal() {
        let tmp = tempfile::tempdir().expect("dir");
        let (db, c) = database(tmp.path());
        let log = SideLog::open(&db, c).expect("open");
        log.append("s", &serde_json::json!({"n": 1}))
            .expect("append");
        let (_, mut other) = database(tmp.path());
        fold_orphans(&db, &mut other).expect("folds");
        let held = std::fs::read_dir(dir_of(&db)).expect("dir").count();
        assert_eq!(held, 1, "the live log stays");
        log.fold().expect("fold");
        assert_eq!(rows(&other), [("s".to_string(), "{\"n\":1}".to_string())]);
        log.close();
        assert_eq!(std::fs::read_dir(dir_of(&db)).expect("dir").count(), 0);
        assert_eq!(rows(&other).len(), 1, "closing folds nothing twice");
    }

    #[test]
    fn a_damaged_line_in_a_dead_log_is_an_error_not_a_skip() {
        let tmp = tempfile::tempdir().expect("dir");
        let (db, mut c) = database(tmp.path());
        let log = dead_log(&db, "3-3-0.log", "\"s\"\t{}\nno tab here\n\"s\"\t{}\n");
        let err = fold_orphans(&db, &mut c).expect_err("refused");
        assert!(err.contains("line 2"), "{err}");
        assert!(log.exists(), "the log is kept for inspection");
        assert!(rows(&c).is_empty());
    }

    #[test]
    fn a_log_that_died_before_its_rename_is_removed() {
        let tmp = tempfile::tempdir().expect("dir");
        let (db, mut c) = database(tmp.path());
        let tmp_log = dead_log(&db, ".4-4-0.log.tmp", "");
        fold_orphans(&db, &mut c).expect("folds");
        assert!(!tmp_log.exists());
    }
}
