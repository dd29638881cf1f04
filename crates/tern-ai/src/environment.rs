//! The one clock and the one id source of a run: everything that stamps a time or makes an
//! id (session headers and entries, entry and session ids, durable run ids, the durable
//! layer's own messages) asks an [`Environment`], so a test or a replay can fix both and get
//! byte-identical output.
//!
//! [`Environment::system`] is the default: the system clock ([`SystemClock`]) and a fast id
//! source ([`FastIds`]) seeded once per process from the OS's randomness. Ids are unique
//! within a process and unpredictable across processes, but they are not security tokens.
//!
//! ```
//! use std::sync::Arc;
//! use tern_ai::environment::{Environment, FixedClock, SequentialIds};
//!
//! let env = Environment::new(Arc::new(FixedClock(1_733_234_400_000)), Arc::new(SequentialIds::new(7)));
//! assert_eq!(env.now_ms(), 1_733_234_400_000);
//! let (a, b) = (env.next_id(), env.next_id());
//! assert_ne!(a, b);
//! // The same seed gives the same ids.
//! let again = Environment::new(Arc::new(FixedClock(0)), Arc::new(SequentialIds::new(7)));
//! assert_eq!((again.next_id(), again.next_id()), (a, b));
//! ```

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Where the time comes from.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch (the reference's `Date.now()`).
    fn now_ms(&self) -> u64;
}

/// Where generated ids come from: 64 bits at a time, each call a new value.
pub trait IdSource: Send + Sync {
    /// The next id's bits (never the same twice from one source, short of 2⁶⁴ calls).
    fn next_u64(&self) -> u64;
}

/// The system's wall clock ([`crate::clock::now_ms`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }
}

/// A clock that always says the same time (tests, replays).
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

/// A counter mixed by SplitMix64's finalizer, a bijection on `u64`: distinct counts give
/// distinct ids, and neighbouring counts give unrelated-looking bits.
fn mix(counter: u64) -> u64 {
    let mut z = counter;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Ids from a seeded counter: `mix(seed + n·γ)` for the n-th id, with γ odd, so a source
/// never repeats an id within 2⁶⁴ calls. An atomic add and a few multiplications per id,
/// instead of a `getrandom` system call.
#[derive(Debug)]
pub struct FastIds {
    next: AtomicU64,
}

/// SplitMix64's increment (odd: every counter value is visited once).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl FastIds {
    /// A source seeded from the OS's randomness (once: the seed of std's `RandomState`).
    pub fn from_os() -> Self {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Self::seeded(seed)
    }

    /// A source seeded with `seed`: the same seed gives the same ids.
    pub fn seeded(seed: u64) -> Self {
        FastIds {
            next: AtomicU64::new(seed),
        }
    }
}

impl IdSource for FastIds {
    fn next_u64(&self) -> u64 {
        mix(self.next.fetch_add(GAMMA, Ordering::Relaxed))
    }
}

/// A deterministic id source for tests and replays: [`FastIds::seeded`] under a name that
/// says what it is for.
#[derive(Debug)]
pub struct SequentialIds(FastIds);

impl SequentialIds {
    /// Ids that are the same on every run with the same `seed`.
    pub fn new(seed: u64) -> Self {
        SequentialIds(FastIds::seeded(seed))
    }
}

impl IdSource for SequentialIds {
    fn next_u64(&self) -> u64 {
        self.0.next_u64()
    }
}

/// A clock and an id source; cheap to clone (two `Arc`s).
#[derive(Clone)]
pub struct Environment {
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment").finish_non_exhaustive()
    }
}

impl Default for Environment {
    fn default() -> Self {
        Environment::system()
    }
}

impl Environment {
    /// `clock` and `ids`.
    pub fn new(clock: Arc<dyn Clock>, ids: Arc<dyn IdSource>) -> Self {
        Environment { clock, ids }
    }

    /// The system clock and the process's one [`FastIds`] (seeded at first use).
    pub fn system() -> Self {
        static IDS: OnceLock<Arc<FastIds>> = OnceLock::new();
        let ids = IDS.get_or_init(|| Arc::new(FastIds::from_os())).clone();
        Environment {
            clock: Arc::new(SystemClock),
            ids,
        }
    }

    /// A fixed clock at `now_ms` and [`SequentialIds`] from `seed`: the same output on every
    /// run.
    ///
    /// ```
    /// let a = tern_ai::environment::Environment::fixed(5, 1);
    /// let b = tern_ai::environment::Environment::fixed(5, 1);
    /// assert_eq!((a.now_ms(), a.next_id()), (b.now_ms(), b.next_id()));
    /// ```
    pub fn fixed(now_ms: u64, seed: u64) -> Self {
        Environment::new(
            Arc::new(FixedClock(now_ms)),
            Arc::new(SequentialIds::new(seed)),
        )
    }

    /// The time now, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// A new id's 64 bits.
    pub fn next_id(&self) -> u64 {
        self.ids.next_u64()
    }

    /// 128 new bits shaped as a version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`), the
    /// form pi's session ids have.
    ///
    /// ```
    /// let id = tern_ai::environment::Environment::fixed(0, 3).uuid();
    /// assert_eq!((id.len(), &id[14..15], &id[8..9]), (36, "4", "-"));
    /// ```
    pub fn uuid(&self) -> String {
        let (hi, lo) = (self.next_id(), self.next_id());
        let hi = (hi & !0xf000) | 0x4000; // version 4
        let lo = (lo & !(0xc << 60)) | (0x8 << 60); // RFC 4122 variant
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xffff,
            hi & 0xffff,
            lo >> 48,
            lo & 0xffff_ffff_ffff
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_ids_do_not_repeat_and_differ_between_seeds() {
        let ids = FastIds::seeded(0);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            assert!(seen.insert(ids.next_u64()));
        }
        assert_ne!(FastIds::seeded(1).next_u64(), FastIds::seeded(2).next_u64());
        assert_ne!(FastIds::from_os().next_u64(), FastIds::from_os().next_u64());
    }

    #[test]
    fn a_uuid_has_the_v4_shape() {
        let env = Environment::fixed(0, 9);
        for _ in 0..100 {
            let id = env.uuid();
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(parts[2].starts_with('4'), "{id}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
        }
    }
}
