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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

thread_local! {
    // Set only inside `with_time_ms`; a thread-local because a workflow executor polls one
    // run at a time on one thread, and no lock may sit on the path of every timestamp.
    static SCOPED_MS: Cell<Option<u64>> = const { Cell::new(None) };
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a Unix time in milliseconds (JavaScript's `toISOString`).
///
/// ```
/// assert_eq!(tern_ai::clock::iso_time(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(tern_ai::clock::iso_time(1_733_234_400_123), "2024-12-03T14:00:00.123Z");
/// ```
pub fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The proleptic Gregorian date (year, month, day) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
            Start::System(at) => rounded_ms(at.elapsed()),
            Start::Scoped(at) => now_ms().saturating_sub(at),
        }
    }
}

/// Whole milliseconds of `d`, rounded half up as the reference's `Math.round` rounds a
/// duration, in integers: exact at any length, and no float conversion on the path of every
/// timed response and tool call.
fn rounded_ms(d: Duration) -> u64 {
    let ms_rounded = (u64::from(d.subsec_nanos()) + 500_000) / 1_000_000;
    d.as_secs().saturating_mul(1000).saturating_add(ms_rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_half_up_to_whole_milliseconds() {
        let ms = |secs, nanos| rounded_ms(Duration::new(secs, nanos));
        assert_eq!(ms(0, 0), 0);
        assert_eq!(ms(0, 499_999), 0);
        assert_eq!(ms(0, 500_000), 1, "Math.round(0.5) is 1");
        assert_eq!(ms(1, 1_499_999), 1_001);
        assert_eq!(ms(1, 1_500_000), 1_002);
        assert_eq!(ms(2, 999_500_000), 3_000, "the carry into the next second");
        // A float of the seconds cannot hold this half millisecond (it rounds to ...000).
        assert_eq!(ms(10_000_000_000_000, 500_000), 10_000_000_000_000_001);
        assert_eq!(ms(u64::MAX, 999_999_999), u64::MAX);
    }
}
