//! How tern talks to its caller: one module per mode (`--mode` and the terminal decide).
//!
//! - [`print`](mod@print): print mode (the final answer) and JSON mode (event lines); also the demo's
//!   streamed output.
//! - [`rpc`]: JSONL commands on stdin, responses and events on stdout.
//! - [`interactive`]: the terminal UI.

pub mod interactive;
pub mod print;
pub mod rpc;
