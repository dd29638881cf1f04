//! The runtime of tests that drive async code from plain `#[test]` functions.

/// A two-worker runtime: a test's server and client run side by side, as in a real process.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the test")
}
