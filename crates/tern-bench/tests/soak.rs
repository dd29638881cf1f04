//! A short soak (a few seconds, 20 agents): no prompt lost, no answer lost, every ending as
//! the served reply calls for, and every fault kind injected at least once, so that the soak
//! script cannot silently stop injecting.

use std::time::Duration;

use tern_bench::soak::{run, Kind, SoakParams};

#[test]
fn short_soak_injects_every_fault_and_loses_nothing() {
    let p = SoakParams {
        agents: 20,
        duration: Duration::from_secs(12),
        seed: 7,
        abort_share: 0.2,
        max_pause: Duration::from_millis(100),
        report_every: 0,
        threads: 2,
        ..SoakParams::default()
    };
    let r = run(&p).expect("soak runs");
    eprintln!("{}", r.summary());
    assert!(r.started > 100, "{} prompts", r.started);
    assert_eq!(r.lost, 0, "prompts lost: {:?}", r.problems);
    assert_eq!(r.lost_answers, 0, "answers lost: {:?}", r.problems);
    assert_eq!(r.mismatched, 0, "endings: {:?}", r.problems);
    assert_eq!(r.recoveries.0, r.recoveries.1, "{:?}", r.problems);
    assert_eq!(r.tool_checks.0, r.tool_checks.1, "{:?}", r.problems);
    assert!(r.completed > 0 && r.aborted > 0 && r.failed_total() > 0);
    for k in Kind::ALL {
        assert!(r.injected(k) > 0, "{} never injected", k.name());
    }
}
