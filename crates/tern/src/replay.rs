//! `--replay FILE`: re-runs each recorded run of a session offline with
//! [`tern_durable::replay()`], against its recorded model outputs and tool results, on the agent
//! this tern builds (the session's system prompt, the tools it declared or `--tools`, the
//! permission rules given now, each run's recorded limits unless a flag replaces one). The
//! recorded permission answers reply to the questions the policy asks now. Nothing is sent
//! and no tool runs.
//!
//! A flag, not a subcommand: the prompt is free positional words, so a `replay` subcommand
//! would take over every prompt that starts with the word "replay".

use std::path::{Path, PathBuf};

use tern_durable::journal::session_file::read_step_records;
use tern_durable::{Record, ReplayReport, Step};
use tern_session::LoadedSession;

use crate::durable::system_prefix_len;
use crate::exit;
use crate::runtime::Runtime;
use crate::secrets::eprintln_redacted;
use crate::usage_error::UsageError;

/// A session to replay: its transcript and its step records.
pub struct Replayed {
    path: PathBuf,
    loaded: LoadedSession,
    records: Vec<Record>,
}

impl Replayed {
    /// The tools the session's system messages declared, as a `--tools` value (`None` when
    /// the file has no system message, e.g. a run killed before its first entry).
    pub fn tool_spec(&self) -> Option<String> {
        declared_tools(&self.loaded.messages)
    }

    /// Whether its runs recorded permission answers (then the replay's policy asks, and
    /// the recorded answers reply).
    pub fn asked(&self) -> bool {
        self.records
            .iter()
            .any(|r| matches!(r.step, Step::DecisionIntent { .. }))
    }

    /// The model the session last named (a replay never reaches it).
    pub fn model(&self) -> tern_ai::Model {
        let (provider, id) = self
            .loaded
            .model
            .clone()
            .unwrap_or_else(|| ("local".to_string(), "local".to_string()));
        crate::models_file::get_model(&provider, &id)
            .unwrap_or_else(|| crate::model_choice::on_the_fly_model(&id, &provider, "offline"))
    }

    /// Where each run starts among the records, and how long its starting transcript was.
    fn runs(&self) -> Vec<(usize, usize, String)> {
        self.records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match &r.step {
                Step::RunStarted {
                    transcript_length,
                    run_id,
                    ..
                } => Some((i, *transcript_length, run_id.clone())),
                _ => None,
            })
            .collect()
    }
}

/// The tools a transcript's system messages declare, as a `--tools` value: what a replay or
/// a recovery of its runs needs (`None` when it has no system message yet, e.g. a run killed
/// before its first entry).
pub fn declared_tools(messages: &[tern_ai::Message]) -> Option<String> {
    if system_prefix_len(messages) == 0 {
        return None;
    }
    let names: Vec<String> = tern_ai::transcript::get_current_tools(messages)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    Some(if names.is_empty() {
        "none".to_string()
    } else {
        names.join(",")
    })
}

/// Reads the session file and its journal.
pub fn load(path: &Path) -> Result<Replayed, UsageError> {
    let loaded = tern_session::load(path)?;
    for w in &loaded.warnings {
        eprintln_redacted!("tern: warning: {w}");
    }
    let records = read_step_records(path)
        .map_err(|e| UsageError(format!("--replay {}: {e}", path.display())))?;
    let r = Replayed {
        path: path.to_path_buf(),
        loaded,
        records,
    };
    if r.runs().is_empty() {
        return Err(UsageError(format!(
            "--replay {}: the session holds no recorded runs (tern records them in every \
             session it writes; a pi session or an older tern's has none)",
            path.display()
        )));
    }
    Ok(r)
}

/// Replays every recorded run that ended, in order (an interrupted one is skipped with a
/// note); prints `identical` or the first divergence, and returns the exit code (0
/// identical, 1 diverged, 2 a journal that cannot be replayed or nothing to replay).
pub async fn run(rt: &Runtime, r: Replayed) -> i32 {
    let n = system_prefix_len(&r.loaded.messages);
    let prefix = if n > 0 {
        r.loaded.messages[..n].to_vec()
    } else {
        rt.agent
            .with_messages(|m| m[..system_prefix_len(m)].to_vec())
    };
    let body = &r.loaded.messages[n..];
    let runs = r.runs();
    let total = runs.len();
    let mut replayed = 0;
    for (k, (at, length, id)) in runs.iter().enumerate() {
        let end = runs.get(k + 1).map_or(r.records.len(), |next| next.0);
        let records = r.records[*at..end].to_vec();
        if !records
            .iter()
            .any(|rec| matches!(rec.step, Step::RunFinished { .. }))
        {
            // Its recording stops where it was cut: a replay would only report the cut.
            eprintln_redacted!(
                "tern: run {} of {total} ({id}) was interrupted before it ended and is not \
                 replayed; `tern --session {} --recover` finishes it",
                k + 1,
                r.path.display()
            );
            continue;
        }
        replayed += 1;
        let mut start = prefix.clone();
        start.extend_from_slice(&body[..(*length).min(body.len())]);
        let report = tern_durable::replay(records, body, |run, _offline| {
            // The run's recorded limits; a limit given now replaces its recorded value.
            let (budgets, notes) = crate::limits::overridden(&run.budget(), &rt.limits.flags);
            for n in notes {
                eprintln_redacted!("tern: note: run {} of {total}: {n}", k + 1);
            }
            rt.current.set(Some(run.clone().with_budgets(budgets)));
            rt.agent.clear_all_queues();
            rt.agent.set_messages(start);
            rt.agent.clone()
        })
        .await;
        rt.agent.wait_for_idle().await;
        rt.current.set(None);
        match report {
            Ok(ReplayReport::Identical) => {}
            Ok(ReplayReport::Diverged(d)) => {
                println!("run {} of {total} ({id}) diverged: {d}", k + 1);
                return exit::ERROR;
            }
            Err(e) => {
                eprintln_redacted!(
                    "tern: --replay {}: run {} of {total} ({id}): {e}",
                    r.path.display(),
                    k + 1
                );
                return exit::USAGE;
            }
        }
    }
    if replayed == 0 {
        eprintln_redacted!(
            "tern: --replay {}: no run of the session ended, so none was replayed",
            r.path.display()
        );
        return exit::USAGE;
    }
    let runs = if replayed == 1 { "run" } else { "runs" };
    println!("identical ({replayed} recorded {runs} replayed)");
    exit::OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tern_ai::Message;

    fn system(tools: &[&str]) -> Message {
        let decls: Vec<_> = tools
            .iter()
            .map(|n| json!({"name": n, "description": "d", "parameters": {"type": "object"}}))
            .collect();
        serde_json::from_value(
            json!({"role": "system", "content": "s", "toolsAdded": decls, "timestamp": 0}),
        )
        .expect("a system message")
    }

    #[test]
    fn the_declared_tools_are_the_transcripts() {
        let ms = vec![system(&["read", "bash"]), Message::user_text("hi")];
        assert_eq!(declared_tools(&ms).as_deref(), Some("read,bash"));
        assert_eq!(declared_tools(&[system(&[])]).as_deref(), Some("none"));
        assert_eq!(declared_tools(&[Message::user_text("hi")]), None);
    }
}
