//! Measurement helpers: medians, process RSS and CPU time, `--name value` arguments.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A count kept by one writer at a time: the subscriber of one agent, which the agent calls
/// for one event after another. It adds with a plain load and store, as the reference's
/// `events++` does, where `fetch_add` would add a locked read-modify-write to every event.
/// A count shared by concurrent writers (W4's agents on the multi-thread runtime) needs
/// `fetch_add` instead.
#[derive(Debug, Default)]
pub struct Counter(AtomicUsize);

impl Counter {
    /// Adds one and returns the count before it.
    #[inline]
    pub fn bump(&self) -> usize {
        let n = self.0.load(Ordering::Relaxed);
        self.0.store(n + 1, Ordering::Relaxed);
        n
    }

    /// The count.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the count.
    pub fn set(&self, n: usize) {
        self.0.store(n, Ordering::Relaxed)
    }
}

/// Waits for `n` tasks with one wake-up: each task holds a [`CountdownGuard`], and the last
/// one to drop (finished or panicked) wakes the waiter. A join of `n` task handles instead
/// wakes the waiting thread once per finished task.
#[derive(Debug)]
pub struct Countdown {
    left: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Countdown {
    /// A countdown from `n`.
    pub fn new(n: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Countdown {
            left: AtomicUsize::new(n),
            done: tokio::sync::Notify::new(),
        })
    }

    /// A guard that counts one down when dropped.
    pub fn guard(self: &std::sync::Arc<Self>) -> CountdownGuard {
        CountdownGuard(self.clone())
    }

    /// Returns once every guard of the `n` has been dropped.
    pub async fn wait(&self) {
        // `notify_one` keeps its permit when nobody waits yet, so the last drop is not
        // missed between this load and the await.
        if self.left.load(Ordering::Acquire) > 0 {
            self.done.notified().await;
        }
    }
}

/// One task's share of a [`Countdown`].
#[derive(Debug)]
pub struct CountdownGuard(std::sync::Arc<Countdown>);

impl Drop for CountdownGuard {
    fn drop(&mut self) {
        if self.0.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_one();
        }
    }
}

/// The median of `xs` (mean of the two middle values for an even count); `NaN` when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The smallest of `xs`.
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The largest of `xs`.
pub fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Resident set size of this process now, in bytes (`/proc/self/statm`).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page
}

fn rusage() -> libc::rusage {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    }
}

/// Peak resident set size of the process so far (`getrusage` maxrss), in bytes.
pub fn max_rss_bytes() -> u64 {
    rusage().ru_maxrss as u64 * 1024
}

/// CPU time (user + system, all threads) the process has used so far, in milliseconds.
pub fn cpu_ms() -> f64 {
    let r = rusage();
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// Gives freed heap pages back to the kernel (`malloc_trim(0)`): the nearest thing to the
/// reference's forced GC before an RSS reading.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Bytes of malloc'd memory in use (glibc `mallinfo2().uordblks`, chunk headers included):
/// the nearest thing to the reference's "heap used". `None` off glibc.
pub fn heap_in_use_bytes() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 has no preconditions.
        let m = unsafe { libc::mallinfo2() };
        Some((m.uordblks + m.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Bytes to MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// Rounds to `digits` decimals (for the `*_all` lists).
pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// `--name value` arguments, with `BENCH_NAME=value` from the environment as fallback (as the
/// reference scripts read them).
#[derive(Debug, Default, Clone)]
pub struct Args {
    map: HashMap<String, String>,
}

impl Args {
    /// Parses `--name value` pairs; a `--flag` without a value is `"1"`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Self {
        let mut map = HashMap::new();
        let mut it = args.into_iter().peekable();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                let value = match it.peek() {
                    Some(v) if !v.starts_with("--") => it.next().unwrap_or_default(),
                    _ => "1".to_string(),
                };
                map.insert(name.to_string(), value);
            }
        }
        Args { map }
    }

    /// The string value of `--name` or `BENCH_NAME`.
    pub fn str(&self, name: &str) -> Option<String> {
        self.map
            .get(name)
            .cloned()
            .or_else(|| std::env::var(format!("BENCH_{}", name.to_uppercase())).ok())
    }

    /// Refuses what a binary would otherwise run with its defaults: a flag not in `known`,
    /// and a count (any known flag not in `text`) that is not a non-negative integer
    /// ([`int`](Self::int) falls back to its default on one).
    ///
    /// ```
    /// let a = tern_bench::util::Args::parse(["--reps".into(), "ten".into()]);
    /// assert!(a.check(&["reps"], &[]).unwrap_err().contains("--reps"));
    /// assert!(a.check(&["reps"], &["reps"]).is_ok());
    /// ```
    pub fn check(&self, known: &[&str], text: &[&str]) -> Result<(), String> {
        let unknown = self.unknown(known);
        if !unknown.is_empty() {
            return Err(format!(
                "unknown flag(s) {} (this run reads: --{})",
                unknown.join(" "),
                known.join(" --")
            ));
        }
        for name in known.iter().filter(|n| !text.contains(n)) {
            if let Some(v) = self.map.get(*name) {
                if v.parse::<usize>().is_err() {
                    return Err(format!("--{name} {v:?}: expected a non-negative integer"));
                }
            }
        }
        Ok(())
    }

    /// The flags given that are not in `known`, for a binary that refuses what it does not
    /// read (a misspelt flag would otherwise run with the default).
    ///
    /// ```
    /// let a = tern_bench::util::Args::parse(["--agents".into(), "5".into(), "--agnets".into()]);
    /// assert_eq!(a.unknown(&["agents"]), vec!["--agnets".to_string()]);
    /// ```
    pub fn unknown(&self, known: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = self
            .map
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .map(|k| format!("--{k}"))
            .collect();
        out.sort();
        out
    }

    /// The integer value of `--name` or `BENCH_NAME`, else `default`.
    pub fn int(&self, name: &str, default: usize) -> usize {
        self.str(name)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn countdown_waits_for_every_guard_even_a_panicked_tasks() {
        let countdown = Countdown::new(3);
        let finished = std::sync::Arc::new(AtomicUsize::new(0));
        for i in 0..3 {
            let (done, finished) = (countdown.guard(), finished.clone());
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20 * i)).await;
                if i == 1 {
                    panic!("a task that fails still counts down");
                }
                finished.fetch_add(1, Ordering::SeqCst);
                drop(done);
            });
        }
        tokio::time::timeout(std::time::Duration::from_secs(10), countdown.wait())
            .await
            .expect("the countdown reaches zero");
        assert_eq!(finished.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn countdown_of_zero_or_of_guards_dropped_before_the_wait_returns_at_once() {
        Countdown::new(0).wait().await;
        let countdown = Countdown::new(2);
        drop((countdown.guard(), countdown.guard()));
        tokio::time::timeout(std::time::Duration::from_secs(10), countdown.wait())
            .await
            .expect("no wake-up is lost");
    }
}
