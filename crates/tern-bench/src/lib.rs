//! # tern-bench
//!
//! The performance workloads W1–W7 (`/work/shared/bench/WORKLOADS.md`) run on tern, doing the
//! same work as the Node reference scripts: the same messages, the same events in the same
//! order, the same tool calls and the same bytes on the wire. Each workload function returns
//! the JSON line the matching Node script prints (same field names), after checking the
//! workload's event and transcript arithmetic.
//!
//! - [`fixtures`]: the agent, model, tools and the scripted stream functions (§0), and W7
//!   (the `tern-bench-fixtures` package, re-exported).
//! - [`workloads`]: W1–W6 (W7 is the `tern-w7` binary of [`fixtures`], timed from outside); W1 lives in
//!   [`w1`] and is re-exported there.
//! - [`w8`]: W8, W1's loop as a durable run on each journal (tern only: no Node counterpart).
//! - [`probe`]: micro-measurements of the suspected hot spots (`tern-bench probe`).
//! - [`soak`]: the soak test (`tern-soak`): many agents against a faulty local server.
//! - [`util`]: medians, RSS, CPU time and argument parsing.

#![warn(missing_docs)]

pub use tern_bench_fixtures as fixtures;
pub mod probe;
pub mod soak;
pub mod util;
pub mod w1;
pub mod w8;
pub mod workloads;
