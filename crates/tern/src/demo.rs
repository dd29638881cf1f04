//! `tern --demo`: the first seed lesson with tern's scripted model, offline.
//!
//! The fixture `sample.ts` ships inside the binary and is written to a temp folder; the
//! agent gets the real `read` tool confined to that folder. The scripted model asks to read
//! the file, then explains what `first([])` returns. Everything else (the loop, the tool
//! call, events, the session file) is the real thing.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{Model, StreamFn};

use crate::terminal_text::Style;

/// The lesson's fixture.
pub const SAMPLE_TS: &str = include_str!("../fixtures/sample.ts");

/// The demo's prompt.
pub const PROMPT: &str = "Read sample.ts and explain what first([]) returns and why.";

/// The scripted answer.
pub const EXPLANATION: &str = "`first` returns `items[0]`. An empty array has no element 0, so \
indexing it gives `undefined`: `first([])` returns `undefined`, which the signature admits \
with its `T | undefined` return type. The file's first call, `first([1, 2, 3])`, prints 1; \
the second prints `undefined`.";

/// Says on stderr what the demo is, and its prompt.
pub fn announce() {
    eprintln!(
        "{}",
        Style::Yellow.paint_stderr(
            "[demo] tern's built-in scripted model: no network, no API key. The answers are \
             scripted; the agent loop and the read tool are real."
        )
    );
    eprintln!("{} {PROMPT}", Style::Yellow.paint_stderr("[demo] prompt:"));
}

/// Says on stderr what happened (the folder the agent read, the session file if one was
/// written) and what to do next.
pub fn farewell(dir: &Path, session_file: Option<String>) {
    let saved = session_file
        .map(|f| format!("; the run was saved to {f}"))
        .unwrap_or_default();
    eprintln!(
        "{} the agent read {}/sample.ts with the real read tool{saved}. Next: set a provider \
         key (e.g. ANTHROPIC_API_KEY) or --base-url, and run `tern \"your question\"`.",
        Style::Yellow.paint_stderr("[demo]"),
        dir.display()
    );
}

/// A temp folder holding `sample.ts` (removed when dropped).
pub fn materialize() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("tern-demo-").tempdir()?;
    std::fs::write(dir.path().join("sample.ts"), SAMPLE_TS)?;
    Ok(dir)
}

/// The demo's model entry: labelled as scripted.
pub fn model() -> Model {
    Model::new("scripted-demo", "scripted", "tern-demo", "")
}

/// The scripted model: a tool call to `read`, then the explanation, streamed.
pub fn stream_fn() -> Arc<dyn StreamFn> {
    Arc::new(
        FauxModel::new(vec![
            FauxResponse::tool_call("call_1", "read", json!({"path": "sample.ts"}))
                .with_text_first("I'll read the file first.")
                .with_thinking("The user asks about sample.ts; read it before answering."),
            FauxResponse::text(EXPLANATION),
        ])
        .streaming(6, Duration::from_millis(12)),
    )
}
