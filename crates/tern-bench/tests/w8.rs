//! W8 at tiny sizes: the steps it reports are the records in the journal, its overhead and
//! fsync fields are there, and the strace log parser counts between its markers. No timing
//! assertions.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tern_bench::w8::*;
use tern_bench::workloads::rt;
use tern_durable::{Durability, Journal, SessionFileJournal, SqliteJournal};

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_journaled_loop_appends_four_records_per_turn_on_both_journals() {
    let d = dir("w8-records");
    std::fs::create_dir_all(&d).unwrap();
    rt(0).block_on(async {
        for t in [1, 2, 5] {
            let path = d.join(format!("s{t}.jsonl"));
            let j = Arc::new(SessionFileJournal::create(&path, &d, Durability::Buffered));
            journaled_prompt(j.clone(), t).await.unwrap();
            assert_eq!(j.records().unwrap().len(), loop_steps(t));
            assert_eq!(loop_steps(t), 4 * t);

            let db =
                SqliteJournal::open(&d.join(format!("s{t}.db")), Durability::Buffered).unwrap();
            let s = Arc::new(db.session("a"));
            journaled_prompt(s.clone(), t).await.unwrap();
            assert_eq!(s.records().unwrap().len(), 4 * t);
        }
        let db = SqliteJournal::open(&d.join("many.db"), Durability::Fsync).unwrap();
        let (_, steps) = many_agents(&db, 4, 3, "x").await.unwrap();
        assert_eq!(steps, 4 * loop_steps(3));
        assert_eq!(db.sessions().unwrap().len(), 4);
    });
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn w8_reports_steps_overheads_and_the_many_agent_ratio() {
    let d = dir("w8-run");
    let v = w8(&W8Params {
        turns: 4,
        fsync_turns: 2,
        warmup: 0,
        reps: 2,
        fsync_reps: 1,
        agents: 3,
        agent_turns: 2,
        agent_reps: 1,
        dir: d.clone(),
        count_fsyncs: false,
        only: String::new(),
    })
    .unwrap();
    assert_eq!(v["workload"], "W8");
    assert_eq!(v["impl"], "tern");
    assert!(v["dir_fs"].is_string());
    for c in Config::ALL {
        let n = c.name();
        let t = v[format!("{n}_turns")].as_u64().unwrap() as usize;
        assert_eq!(t, if n.ends_with("fsync") { 2 } else { 4 }, "{n}");
        assert_eq!(v[format!("{n}_steps_per_prompt")], loop_steps(t), "{n}");
        assert_eq!(v[format!("{n}_steps_per_turn")], 4.0, "{n}");
        for k in [
            "us_per_turn",
            "plain_us_per_turn",
            "overhead_us_per_turn",
            "overhead_us_per_step",
            "overhead_us_per_step_best",
            "overhead_cpu_us_per_step",
            "steps_per_s",
        ] {
            assert!(v[format!("{n}_{k}")].is_f64(), "{n}_{k}: {v}");
        }
        // overhead per step = overhead per turn × turns / steps
        let per_turn = v[format!("{n}_overhead_us_per_turn")].as_f64().unwrap();
        let per_step = v[format!("{n}_overhead_us_per_step")].as_f64().unwrap();
        assert!((per_turn * t as f64 / loop_steps(t) as f64 - per_step).abs() < 1e-9);
        assert!(v[format!("{n}_fsyncs_per_step")].is_null(), "not counted");
    }
    assert_eq!(v["many_steps_per_round"], 3 * loop_steps(2));
    assert!(v["many_steps_per_s"].as_f64().unwrap() > 0.0);
    let ratio = v["many_vs_one_steps_per_s"].as_f64().unwrap();
    let want =
        v["many_steps_per_s"].as_f64().unwrap() / v["sqlite_fsync_steps_per_s"].as_f64().unwrap();
    assert!((ratio - want).abs() < 1e-9 * want);
    // The journal files are removed afterwards.
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn fsyncs_are_counted_between_the_markers_only() {
    let log = "\
10 fdatasync(3)                      = 0
10 fsync(-1)                         = -1 EBADF (Bad file descriptor)
10 fdatasync(3)                      = 0
11 fdatasync(5 <unfinished ...>
10 fsync(4)                          = 0
11 <... fdatasync resumed>)          = 0
10 fsync(-1)                         = -1 EBADF (Bad file descriptor)
10 fdatasync(3)                      = 0
";
    assert_eq!(count_fsyncs(log), Some(3));
    assert_eq!(count_fsyncs("10 fdatasync(3) = 0\n"), None);
}

#[test]
fn the_fsync_child_counts_its_steps() {
    let d = dir("w8-child");
    let v: Value = fsync_child(&FsyncChild {
        config: Config::parse("sqlite_buffered").unwrap(),
        turns: 3,
        agents: 2,
        dir: d.clone(),
    })
    .unwrap();
    assert_eq!(v["steps"], 2 * loop_steps(3));
    let v = fsync_child(&FsyncChild {
        config: Config::parse("session_buffered").unwrap(),
        turns: 3,
        agents: 1,
        dir: d,
    })
    .unwrap();
    assert_eq!(v["steps"], loop_steps(3));
}
