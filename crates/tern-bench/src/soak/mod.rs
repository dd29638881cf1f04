//! The soak test: many agents in one process for minutes, against a local OpenAI Chat
//! Completions server (real HTTP, real SSE) that answers every request with a random reply
//! from a seeded generator: text, a tool call (`read`, `edit`, `bash`, `ls` on files in the
//! agent's own folder), or a fault. Stream faults: a reset mid-stream, a stall before and
//! after the head (past the idle timeout), `429` with `Retry-After` and `5xx` (both retried),
//! an HTML page with status 200, invalid UTF-8 (garbage only, and inside a valid stream), a
//! large error body. Tool faults: `read` of a FIFO, `edit` of a file over the edit cap, `bash`
//! leaving a background process, `bash` timing out. Some prompts are aborted after a random
//! delay.
//!
//! Every prompt must end (`prompt()` returns) within [`SoakParams::deadline`]; one that does
//! not is *lost*. The server notes what it last served for each prompt, so the ending is
//! checked against it: an answer served must be the answer received (else the answer is
//! *lost* too), a fault must end the prompt with the error that fault calls for, and a
//! failure must not break the agent (its next prompt is a plain one that must complete).
//! RSS is sampled each second.

use std::fmt::Write as _;
use std::hash::Hash;
use std::time::Duration;

use crate::util::mib;
use tern_testkit::SplitMix64;

/// What the server answered a request with, or what the client did to a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The final answer, streamed in a few deltas.
    Text,
    /// A `read` of a small text file.
    ToolRead,
    /// An `edit` of a small text file (one replacement that applies).
    ToolEdit,
    /// A `bash` command that prints and exits.
    ToolBash,
    /// An `ls` of the agent's folder.
    ToolLs,
    /// Head and part of the stream, then a TCP reset.
    Reset,
    /// The request is read, no head comes (the idle timeout must fire).
    StallHead,
    /// Head and part of the stream, then silence (the idle timeout must fire).
    StallBody,
    /// `429` with `Retry-After: 1`; the retry is answered.
    RateLimited,
    /// `500`/`502`/`503`; the retry is answered.
    ServerError,
    /// Status 200 with an HTML page.
    Html200,
    /// Status 200, an event stream of invalid UTF-8 only.
    Utf8Garbage,
    /// A valid stream with invalid UTF-8 in a comment line (decoded lossily: the answer).
    Utf8InStream,
    /// `400` with a 256 KiB body (the error message must be capped at 64 KiB).
    HugeErrorBody,
    /// A `read` of a FIFO (must be refused, not block).
    ToolFifo,
    /// An `edit` of a file over the edit cap (must be refused).
    ToolEditCap,
    /// A `bash` command that leaves a background process behind.
    ToolBashBackground,
    /// A `bash` command that runs past its timeout.
    ToolBashTimeout,
    /// The client aborts the prompt after a random delay.
    Abort,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 19] = [
        Kind::Text,
        Kind::ToolRead,
        Kind::ToolEdit,
        Kind::ToolBash,
        Kind::ToolLs,
        Kind::Reset,
        Kind::StallHead,
        Kind::StallBody,
        Kind::RateLimited,
        Kind::ServerError,
        Kind::Html200,
        Kind::Utf8Garbage,
        Kind::Utf8InStream,
        Kind::HugeErrorBody,
        Kind::ToolFifo,
        Kind::ToolEditCap,
        Kind::ToolBashBackground,
        Kind::ToolBashTimeout,
        Kind::Abort,
    ];

    /// The faults (every kind but the plain replies).
    pub fn is_fault(self) -> bool {
        !matches!(
            self,
            Kind::Text | Kind::ToolRead | Kind::ToolEdit | Kind::ToolBash | Kind::ToolLs
        )
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::ToolRead => "read",
            Kind::ToolEdit => "edit",
            Kind::ToolBash => "bash",
            Kind::ToolLs => "ls",
            Kind::Reset => "reset",
            Kind::StallHead => "stall_head",
            Kind::StallBody => "stall_body",
            Kind::RateLimited => "429",
            Kind::ServerError => "5xx",
            Kind::Html200 => "html200",
            Kind::Utf8Garbage => "utf8_garbage",
            Kind::Utf8InStream => "utf8_in_stream",
            Kind::HugeErrorBody => "huge_error_body",
            Kind::ToolFifo => "read_fifo",
            Kind::ToolEditCap => "edit_over_cap",
            Kind::ToolBashBackground => "bash_background",
            Kind::ToolBashTimeout => "bash_timeout",
            Kind::Abort => "abort",
        }
    }

    fn index(self) -> usize {
        Kind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }

    /// The kind of a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Whether the server's reply of this kind ends the prompt with an error.
    fn fails_prompt(self) -> bool {
        matches!(
            self,
            Kind::Reset
                | Kind::StallHead
                | Kind::StallBody
                | Kind::Html200
                | Kind::Utf8Garbage
                | Kind::HugeErrorBody
        )
    }

    fn tool_call(self) -> bool {
        matches!(
            self,
            Kind::ToolRead
                | Kind::ToolEdit
                | Kind::ToolBash
                | Kind::ToolLs
                | Kind::ToolFifo
                | Kind::ToolEditCap
                | Kind::ToolBashBackground
                | Kind::ToolBashTimeout
        )
    }
}

/// Relative weights of the server's replies (per request).
const MIX: [(Kind, u64); 18] = [
    (Kind::Text, 30),
    (Kind::ToolRead, 6),
    (Kind::ToolEdit, 6),
    (Kind::ToolBash, 4),
    (Kind::ToolLs, 5),
    (Kind::Reset, 4),
    (Kind::StallHead, 2),
    (Kind::StallBody, 2),
    (Kind::RateLimited, 3),
    (Kind::ServerError, 4),
    (Kind::Html200, 3),
    (Kind::Utf8Garbage, 3),
    (Kind::Utf8InStream, 3),
    (Kind::HugeErrorBody, 3),
    (Kind::ToolFifo, 3),
    (Kind::ToolEditCap, 3),
    (Kind::ToolBashBackground, 2),
    (Kind::ToolBashTimeout, 2),
];

/// The soak's settings.
#[derive(Debug, Clone)]
pub struct SoakParams {
    /// Agents running at once.
    pub agents: usize,
    /// How long agents start prompts.
    pub duration: Duration,
    /// Seed of the server's and the agents' generators.
    pub seed: u64,
    /// A prompt not ended after this long is lost.
    pub deadline: Duration,
    /// The providers' idle timeout.
    pub idle_timeout: Duration,
    /// Share of prompts aborted after a random delay.
    pub abort_share: f64,
    /// Longest pause of an agent between two prompts (uniform from 0): the agents' think
    /// time, which sets the load (1,000 agents with 40 s: about 50 prompts a second).
    pub max_pause: Duration,
    /// Print the RSS series and progress to stderr every this many seconds (0: never).
    pub report_every: u64,
    /// Worker threads of the runtime (0: one per core).
    pub threads: usize,
    /// Print every failed prompt's error to stderr.
    pub verbose: bool,
    /// Replies the server never serves (to tell which one a figure depends on).
    pub skip: Vec<Kind>,
}

impl Default for SoakParams {
    fn default() -> Self {
        SoakParams {
            agents: 1000,
            duration: Duration::from_secs(600),
            seed: 1,
            deadline: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(2),
            abort_share: 0.1,
            max_pause: Duration::from_secs(40),
            report_every: 10,
            threads: 0,
            verbose: false,
            skip: Vec::new(),
        }
    }
}

/// What the soak counted.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Agents.
    pub agents: usize,
    /// Seconds of load.
    pub seconds: u64,
    /// Prompts started.
    pub started: u64,
    /// Prompts that completed with the right answer.
    pub completed: u64,
    /// Prompts that ended with an error, by cause.
    pub failed: Vec<(String, u64)>,
    /// Prompts aborted (the abort came before the end).
    pub aborted: u64,
    /// Prompts that did not end within the deadline.
    pub lost: u64,
    /// Answers served but not received (a failure, a wrong text, or another ending).
    pub lost_answers: u64,
    /// Endings that did not match what the server served (the wrong error, say).
    pub mismatched: u64,
    /// Replies the idle timeout cut while the server was still writing them, or during a
    /// prompt in which the runtime stalled (the process too busy to write or read within the
    /// timeout): failures, not losses.
    pub cut_by_idle: u64,
    /// The longest a 100 ms sleep of the runtime woke up late, in ms.
    pub max_lag_ms: u64,
    /// How often it woke up a second or more late.
    pub stalls: u64,
    /// The first few hangs, then the first few other problems, described.
    pub problems: Vec<String>,
    /// Plain prompts run right after a failure or an abort, and how many of them completed.
    pub recoveries: (u64, u64),
    /// Requests the server received.
    pub requests: u64,
    /// How often each kind was served (for `abort`: aborts sent before the prompt ended).
    pub injected: Vec<(Kind, u64)>,
    /// Tool results checked against their fault, and how many were as expected.
    pub tool_checks: (u64, u64),
    /// RSS each second, in bytes (index 0 = after 1 s).
    pub rss: Vec<u64>,
    /// Bytes malloc'd and in use (glibc `mallinfo2`) at `base_second`, 0 off glibc: what
    /// the program holds, against what the allocator keeps from the busiest moment.
    pub heap_base: u64,
    /// The same at the end of the load.
    pub heap_end: u64,
    /// RSS after the first minute (or the first sample past a sixth of the run when shorter).
    pub rss_base: u64,
    /// Second of `rss_base`.
    pub base_second: usize,
    /// Largest RSS after `base_second`.
    pub rss_max_after_base: u64,
    /// RSS at the end of the load.
    pub rss_end: u64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
}

impl SoakReport {
    /// `(end − base) / base`.
    pub fn growth(&self) -> f64 {
        if self.rss_base == 0 {
            return 0.0;
        }
        (self.rss_end as f64 - self.rss_base as f64) / self.rss_base as f64
    }

    /// Pass: nothing lost (no hang, no answer lost), no ending against what was served, and
    /// RSS growth after the first minute at most 10 %.
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.lost_answers == 0
            && self.mismatched == 0
            && self.recoveries.0 == self.recoveries.1
            && self.tool_checks.0 == self.tool_checks.1
            && self.growth() <= 0.10
    }

    /// How often `kind` was injected.
    pub fn injected(&self, kind: Kind) -> u64 {
        self.injected
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    }

    /// Prompts that failed, all causes.
    pub fn failed_total(&self) -> u64 {
        self.failed.iter().map(|(_, n)| n).sum()
    }

    /// The multi-line summary, ending with the one-line verdict.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let mb = |b: u64| mib(b);
        let _ = writeln!(
            s,
            "prompts: {} started, {} completed, {} failed, {} aborted, {} lost; {} requests",
            self.started,
            self.completed,
            self.failed_total(),
            self.aborted,
            self.lost,
            self.requests
        );
        let causes: Vec<String> = self
            .failed
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        let _ = writeln!(s, "failed by cause: {}", causes.join(", "));
        let inj: Vec<String> = self
            .injected
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        let _ = writeln!(s, "served/injected: {}", inj.join(", "));
        let _ = writeln!(
            s,
            "checks: {} lost answers, {} mismatched endings, {} replies cut by the idle timeout, recoveries {}/{}, tool results {}/{} as expected",
            self.lost_answers,
            self.mismatched,
            self.cut_by_idle,
            self.recoveries.1,
            self.recoveries.0,
            self.tool_checks.1,
            self.tool_checks.0
        );
        let _ = writeln!(
            s,
            "runtime: a 100 ms sleep woke up at most {} ms late; {} times 1 s or more",
            self.max_lag_ms, self.stalls
        );
        for p in &self.problems {
            let _ = writeln!(s, "  problem: {p}");
        }
        let series: Vec<String> = self
            .rss
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % 10 == 0)
            .map(|(_, b)| format!("{:.0}", mb(*b)))
            .collect();
        let _ = writeln!(s, "RSS MiB every 10 s: {}", series.join(" "));
        let _ = writeln!(
            s,
            "RSS at {} s {:.1} MiB, max after {:.1} MiB, end {:.1} MiB; growth {:+.1} %",
            self.base_second,
            mb(self.rss_base),
            mb(self.rss_max_after_base),
            mb(self.rss_end),
            self.growth() * 100.0
        );
        let _ = writeln!(
            s,
            "heap in use at {} s {:.1} MiB, end {:.1} MiB",
            self.base_second,
            mb(self.heap_base),
            mb(self.heap_end)
        );
        let _ = write!(
            s,
            "soak: {} agents, {} s, {} prompts ({} completed, {} failed, {} aborted), {} lost, {} lost answers, RSS {} s {:.0} MB → end {:.0} MB ({:+.1} %): {}",
            self.agents,
            self.seconds,
            self.started,
            self.completed,
            self.failed_total(),
            self.aborted,
            self.lost,
            self.lost_answers,
            self.base_second,
            self.rss_base as f64 / 1e6,
            self.rss_end as f64 / 1e6,
            self.growth() * 100.0,
            if self.passed() { "PASS" } else { "FAIL" }
        );
        s
    }
}

mod agents;
mod server;

pub use agents::run;
pub use server::{answer_for, SoakServer};
