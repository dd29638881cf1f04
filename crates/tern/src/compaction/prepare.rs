//! What a compaction summarizes and what it keeps (pi's `prepareCompaction` and
//! `findCutPoint` over tern's transcript, where every message is one session entry).

use tern_ai::Message;

use super::estimate::{estimate_context_tokens, estimate_tokens};
use super::files::FileOps;

/// The compaction a transcript builds on: the summary its first message stands for.
#[derive(Clone, Debug, Default)]
pub struct Previous {
    /// The compaction entry's id (the id of the transcript's first message).
    pub id: String,
    /// Its summary.
    pub summary: String,
    /// Its `details` (files read and modified), if pi's compaction wrote them.
    pub details: Option<serde_json::Value>,
    /// How many messages after the summary were kept from before it (their usage is stale).
    pub kept: usize,
}

/// The work of one compaction.
#[derive(Clone, Debug)]
pub struct Preparation {
    /// The entry id of the first kept message.
    pub first_kept_entry_id: String,
    /// Its index in the transcript body.
    pub first_kept: usize,
    /// Messages summarized (the history before the kept ones, or before a split turn).
    pub to_summarize: Vec<Message>,
    /// The start of a turn cut in the middle, summarized on its own.
    pub turn_prefix: Vec<Message>,
    /// The estimated context size before compaction.
    pub tokens_before: u64,
    /// The summary the new one updates.
    pub previous_summary: Option<String>,
    /// Files read and modified, from the summarized messages and the previous compaction.
    pub files: FileOps,
}

/// Why nothing can be compacted: pi's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nothing {
    /// The transcript ends with a compaction.
    AlreadyCompacted,
    /// Everything fits in the kept part.
    TooSmall,
}

impl std::fmt::Display for Nothing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Nothing::AlreadyCompacted => "Already compacted",
            Nothing::TooSmall => "Nothing to compact (session too small)",
        })
    }
}

/// Where a cut may fall: never at a tool result (it stays with its call), nor a system
/// message.
fn is_cut_point(m: &Message) -> bool {
    !matches!(m, Message::ToolResult(_) | Message::System(_))
}

/// What starts a turn: the user's messages (custom ones included).
fn is_turn_start(m: &Message) -> bool {
    matches!(m, Message::User(_) | Message::Custom(_))
}

/// Plans a compaction of `body` (the transcript after its system prefix), whose messages
/// have the entry ids `ids`, keeping about `keep_recent_tokens` of the newest messages.
/// `system` is the system prefix (its last message counts when usage cannot be trusted).
pub fn prepare(
    system: &[Message],
    body: &[Message],
    ids: &[String],
    previous: Option<&Previous>,
    keep_recent_tokens: u64,
) -> Result<Preparation, Nothing> {
    let previous = previous.filter(|p| ids.first() == Some(&p.id));
    let start = usize::from(previous.is_some());
    if start == 1 && body.len() == 1 {
        return Err(Nothing::AlreadyCompacted);
    }
    let tokens_before = tokens_before(system, body, previous);
    let end = body.len();
    let cut_points: Vec<usize> = (start..end).filter(|&i| is_cut_point(&body[i])).collect();
    let Some(&first_cut) = cut_points.first() else {
        return Err(Nothing::TooSmall);
    };
    let mut cut = first_cut;
    let mut accumulated = 0u64;
    for i in (start..end).rev() {
        let tokens = estimate_tokens(&body[i]);
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            // The closest cut point at or after this message; trailing tool results over
            // the budget keep their call.
            cut = cut_points
                .iter()
                .copied()
                .find(|&c| c >= i)
                .unwrap_or(cut_points[cut_points.len() - 1]);
            break;
        }
    }
    let starts_turn = is_turn_start(&body[cut]);
    let turn_start = if starts_turn {
        None
    } else {
        (start..=cut).rev().find(|&i| is_turn_start(&body[i]))
    };
    let history_end = turn_start.unwrap_or(cut);
    let visible = |m: &&Message| !matches!(m, Message::System(_));
    let to_summarize: Vec<Message> = body[start..history_end]
        .iter()
        .filter(visible)
        .cloned()
        .collect();
    let turn_prefix: Vec<Message> = turn_start
        .map(|t| body[t..cut].iter().filter(visible).cloned().collect())
        .unwrap_or_default();
    if to_summarize.is_empty() && turn_prefix.is_empty() {
        return Err(Nothing::TooSmall);
    }
    let mut files = FileOps::default();
    if let Some(d) = previous.and_then(|p| p.details.as_ref()) {
        files.add_previous(d);
    }
    for m in to_summarize.iter().chain(&turn_prefix) {
        files.add_message(m);
    }
    let first_kept_entry_id = ids.get(cut).cloned().ok_or(Nothing::TooSmall)?;
    Ok(Preparation {
        first_kept_entry_id,
        first_kept: cut,
        to_summarize,
        turn_prefix,
        tokens_before,
        previous_summary: previous.map(|p| p.summary.clone()),
        files,
    })
}

/// pi's `estimateProjectedContextTokens`: the last usage when it was reported after the
/// last compaction, else the estimate of the system prompt and every message.
fn tokens_before(system: &[Message], body: &[Message], previous: Option<&Previous>) -> u64 {
    let fresh_from = previous.map_or(0, |p| 1 + p.kept);
    let fresh = &body[fresh_from.min(body.len())..];
    let has_usage = fresh.iter().any(|m| {
        m.as_assistant().is_some_and(|a| {
            !matches!(
                a.stop_reason,
                tern_ai::StopReason::Aborted | tern_ai::StopReason::Error
            ) && super::estimate::context_tokens(&a.usage) > 0
        })
    });
    if has_usage {
        return estimate_context_tokens(body);
    }
    system.last().map_or(0, estimate_tokens) + body.iter().map(estimate_tokens).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(v: serde_json::Value) -> Message {
        serde_json::from_value(v).expect("a message")
    }

    fn call_and_result(output: &str) -> Vec<Message> {
        let usage = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
        vec![
            msg(json!({"role": "user", "content": "read it", "timestamp": 1})),
            msg(
                json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                        "arguments": {"path": "a.rs"}}], "api": "x", "provider": "x", "model": "x",
                        "usage": usage, "stopReason": "toolUse", "timestamp": 2}),
            ),
            msg(
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                        "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 3}),
            ),
        ]
    }

    #[test]
    fn a_tool_result_over_the_budget_keeps_its_call() {
        let body = call_and_result(&"x".repeat(400));
        let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let p = prepare(&[], &body, &ids, None, 50).expect("a compaction");
        assert_eq!((p.first_kept, p.first_kept_entry_id.as_str()), (1, "b"));
        // The turn is split: its start is summarized on its own, with the file it read.
        assert!(p.to_summarize.is_empty());
        assert_eq!(p.turn_prefix.len(), 1);
        assert_eq!(p.files.lists(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn a_transcript_within_the_budget_has_nothing_to_compact() {
        let body = call_and_result("short");
        let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(
            prepare(&[], &body, &ids, None, 20_000).err(),
            Some(Nothing::TooSmall)
        );
        let previous = Previous {
            id: "s".into(),
            ..Previous::default()
        };
        let just_summary = vec![Message::user_text("summary")];
        assert_eq!(
            prepare(&[], &just_summary, &["s".into()], Some(&previous), 1).err(),
            Some(Nothing::AlreadyCompacted)
        );
    }
}
