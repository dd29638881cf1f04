//! A folder is swapped for a symlink to an outside folder in a tight loop while reads, writes
//! and edits run on paths through it: none of them may touch the outside folder.
//!
//! `TERN_RACE_COUNT` sets the number of calls per tool (default 1000, 3,000 calls in all);
//! `scripts/race-test.sh COUNT` runs a longer round.
//!
//! The same round runs twice: with `openat2` (Linux 5.6+), and with the portable path that
//! older kernels and other systems take (one `openat` per component), forced by a seccomp
//! filter that makes `openat2` fail with `ENOSYS` in a child test process.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::{run, text, Sandbox};
use serde_json::json;
use tern_tools::{edit_tool, read_tool, write_tool};

/// The outside folder's files and what they hold; they must stay exactly so.
const SENTINELS: [(&str, &str); 2] = [("f.txt", "OUTSIDE\n"), ("e.txt", "a\n")];

fn sentinel_state(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Swaps `a` and `b` (a folder and a symlink) atomically until `stop`.
fn swapper(work: PathBuf, stop: Arc<AtomicBool>, swaps: Arc<AtomicUsize>) {
    let dir = rustix::fs::CWD;
    let a = work.join("d");
    let b = work.join("d.alt");
    while !stop.load(Ordering::Relaxed) {
        if rustix::fs::renameat_with(dir, &a, dir, &b, rustix::fs::RenameFlags::EXCHANGE).is_ok() {
            swaps.fetch_add(1, Ordering::Relaxed);
        }
        std::thread::yield_now();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_for_a_symlink_never_leads_outside() {
    race_round().await;
}

/// Set in the child process that runs the round without `openat2`.
const NO_OPENAT2: &str = "TERN_RACE_NO_OPENAT2";

/// Makes `openat2` fail with `ENOSYS` in every thread of this process.
fn refuse_openat2() {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    let arch: TargetArch = std::env::consts::ARCH.try_into().expect("a seccomp arch");
    let filter = SeccompFilter::new(
        [(libc::SYS_openat2, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .expect("filter");
    let program: BpfProgram = filter.try_into().expect("bpf");
    seccompiler::apply_filter_all_threads(&program).expect("seccomp");
    let probe = rustix::fs::openat2(
        rustix::fs::CWD,
        ".",
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::BENEATH,
    );
    assert_eq!(
        probe.err(),
        Some(rustix::io::Errno::NOSYS),
        "openat2 still works"
    );
}

#[test]
fn the_portable_path_holds_too() {
    if std::env::var_os(NO_OPENAT2).is_some() {
        refuse_openat2();
        let rt = common::runtime();
        rt.block_on(race_round());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "the_portable_path_holds_too", "--nocapture"])
        .env(NO_OPENAT2, "1")
        .output()
        .expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Swaps below which a round is no race.
const MIN_SWAPS: usize = 100;

/// Whether a tool loop goes on after `i` calls: `count` calls at least, and more while the
/// swapper has swapped too little for a race (a loaded machine can starve its thread), up to
/// 50 times `count`.
fn more(i: usize, count: usize, swaps: &AtomicUsize) -> bool {
    i < count || (swaps.load(Ordering::Relaxed) <= MIN_SWAPS && i < count * 50)
}

async fn race_round() {
    let count: usize = std::env::var("TERN_RACE_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1000);
    let sb = Sandbox::new();
    let outside = sb.outside().join("sentinel");
    std::fs::create_dir(&outside).unwrap();
    for (name, content) in SENTINELS {
        std::fs::write(outside.join(name), content).unwrap();
    }
    let before = sentinel_state(&outside);
    sb.write("d/f.txt", "inside\n");
    sb.write("d/e.txt", "a\n");
    std::os::unix::fs::symlink(&outside, sb.work().join("d.alt")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let handle = {
        let (work, stop, swaps) = (sb.work().to_path_buf(), stop.clone(), swaps.clone());
        std::thread::spawn(move || swapper(work, stop, swaps))
    };

    let config = sb.config.clone();
    let reads = tokio::spawn({
        let tool = read_tool(&config);
        let swaps = swaps.clone();
        async move {
            let mut leaked = 0;
            for _ in (0..).take_while(|&i| more(i, count, &swaps)) {
                if let Ok(r) = run(&tool, json!({"path": "d/f.txt"})).await {
                    leaked += usize::from(text(&r).contains("OUTSIDE"));
                }
            }
            leaked
        }
    });
    let writes = tokio::spawn({
        let tool = write_tool(&config);
        let swaps = swaps.clone();
        async move {
            for i in (0..).take_while(|&i| more(i, count, &swaps)) {
                let _ = run(
                    &tool,
                    json!({"path": format!("d/w-{i}.txt"), "content": "w\n"}),
                )
                .await;
            }
        }
    });
    let edits = tokio::spawn({
        let tool = edit_tool(&config);
        let swaps = swaps.clone();
        async move {
            for i in (0..).take_while(|&i| more(i, count, &swaps)) {
                let (old, new) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
                let _ = run(
                    &tool,
                    json!({"path": "d/e.txt", "edits": [{"oldText": old, "newText": new}]}),
                )
                .await;
            }
        }
    });
    let leaked = reads.await.unwrap();
    writes.await.unwrap();
    edits.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();

    assert!(
        swaps.load(Ordering::Relaxed) > MIN_SWAPS,
        "the swapper barely ran"
    );
    assert_eq!(leaked, 0, "reads returned outside content");
    assert_eq!(
        sentinel_state(&outside),
        before,
        "files outside were created or changed"
    );
}
