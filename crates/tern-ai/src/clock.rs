//! The one place tern reads time, so tests and replays can reason about it.
//!
//! Code that must be deterministic (a workflow engine replaying a run) installs its own time
//! for the duration of a call with [`with_time_ms`]: [`now_ms`] and [`Stopwatch`] then read
//! that time instead of the system's. Code that stamps journals and session files asks an
//! [`Environment`](crate::environment::Environment), whose default clock is this one.
//!
//! ```
//! use tern_ai::clock::{now_ms, with_time_ms, Stopwatch};
//! let (now, watch) = with_time_ms(1_000, || (now_ms(), Stopwatch::start()));
//! assert_eq!(now, 1_000);
//! assert_eq!(with_time_ms(1_250, || watch.elapsed_ms()), 250);
//! assert!(now_ms() > 1_000, "outside the scope, the system clock");
//! ```

use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

thread_local! {
    // Set only inside `with_time_ms`; a thread-local because a workflow executor polls one
    // run at a time on one thread, and no lock may sit on the path of every timestamp.
    static SCOPED_MS: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Milliseconds since the Unix epoch (the reference's `Date.now()`), or the time installed by
/// [`with_time_ms`] on this thread.
pub fn now_ms() -> u64 {
    SCOPED_MS.with(Cell::get).unwrap_or_else(system_ms)
}

fn system_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Runs `f` with the clock of this thread reading `time_ms` (restored afterwards, also when
/// `f` panics).
pub fn with_time_ms<R>(time_ms: u64, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED_MS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SCOPED_MS.with(|c| c.replace(Some(time_ms))));
    f()
}

/// Measures how long something took, on the system's monotonic clock or, when started inside
/// [`with_time_ms`], on the installed time.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(Start);

#[derive(Clone, Copy, Debug)]
enum Start {
    System(Instant),
    Scoped(u64),
}

impl Stopwatch {
    /// Starts measuring now.
    pub fn start() -> Self {
        match SCOPED_MS.with(Cell::get) {
            Some(ms) => Stopwatch(Start::Scoped(ms)),
            None => Stopwatch(Start::System(Instant::now())),
        }
    }

    /// Whole milliseconds since [`Stopwatch::start`] (rounded).
    pub fn elapsed_ms(&self) -> u64 {
        match self.0 {
            Start::System(at) => (at.elapsed().as_secs_f64() * 1000.0).round() as u64,
            Start::Scoped(at) => now_ms().saturating_sub(at),
        }
    }
}
