//! The permission gate as journaled steps: an answer typed by a person is a decision step
//! of the current durable run (the question before asking, the answer before it takes
//! effect), so a recovery uses the recorded answer instead of asking again, and a replay
//! reproduces it, or reports a "hook decision" divergence when the policy given now decides
//! otherwise.

use std::sync::Arc;

use serde_json::{json, Value};
use tern_durable::DurableRun;
use tern_tools::policy::{Answer, AskFn, Decision, PermissionGate, Verdict};
use tokio_util::sync::CancellationToken;

use crate::secrets::eprintln_redacted;

/// The hook name decision steps carry.
pub const HOOK: &str = "permission";

/// One tool call to decide.
pub struct Call<'a> {
    /// The model's tool-call id.
    pub id: &'a str,
    /// The tool.
    pub name: &'a str,
    /// Its validated arguments.
    pub args: &'a Value,
}

/// Decides `call` by `gate`'s policy; a question goes to `asker` as a decision step of `run`
/// (or is answered by the step it recorded). Without a run, the gate decides as it is.
pub async fn evaluate(
    gate: &PermissionGate,
    asker: Option<AskFn>,
    run: Option<DurableRun>,
    call: Call<'_>,
    signal: &CancellationToken,
) -> Verdict {
    let plain = || {
        let g = PermissionGate::new(gate.policy().clone());
        match &asker {
            Some(a) => g.with_ask(a.clone()),
            None => g,
        }
    };
    let Some(run) = run else {
        return plain().evaluate(call.name, call.args, signal).await;
    };
    let recorded = run.recorded_decision(HOOK, call.id);
    match gate.policy().check(call.name, call.args) {
        // Nobody to ask and nothing recorded: the gate refuses as it always did.
        Decision::Ask(_) if asker.is_none() && recorded.is_none() && !run.is_replay() => {
            plain().evaluate(call.name, call.args, signal).await
        }
        Decision::Ask(_) => {
            let call_id = call.id.to_string();
            let ask: AskFn = Arc::new(move |req, token| {
                let run = run.clone();
                let asker = asker.clone();
                let call_id = call_id.clone();
                Box::pin(async move {
                    let question =
                        json!({"tool": req.tool_name, "args": req.args, "prompt": req.prompt});
                    let person = async move {
                        match asker {
                            Some(a) => a(req, token).await.to_value(),
                            None => Value::Bool(false),
                        }
                    };
                    match run.decide(HOOK, &call_id, question, person).await {
                        Ok(answer) => Answer::from_value(&answer),
                        Err(e) => {
                            // An answer that is not on disk must not take effect.
                            eprintln_redacted!(
                                "tern: warning: the permission answer was not journaled ({e}); \
                                 the call is refused"
                            );
                            Answer::Deny { reason: None }
                        }
                    }
                })
            });
            PermissionGate::new(gate.policy().clone())
                .with_ask(ask)
                .evaluate(call.name, call.args, signal)
                .await
        }
        Decision::Deny(reason) => {
            run.decided_without_asking(HOOK, call.id, "denies");
            Verdict {
                block: true,
                reason: Some(reason),
            }
        }
        Decision::Allow => {
            run.decided_without_asking(HOOK, call.id, "allows");
            // A recovered run keeps the "no" a person gave, whatever the policy is now.
            match recorded.and_then(|d| Some((d.answer?, d.question))) {
                Some((answer, question)) => Verdict::answered(
                    question["prompt"].as_str().unwrap_or_default(),
                    &Answer::from_value(&answer),
                ),
                None => Verdict::allowed(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_durable::{Journal, MemoryJournal, Record, Recovery, Step};
    use tern_tools::policy::{Action, Policy, Rule};

    /// A cut-off run whose journal holds a person's `answer` to a question about `call_1`.
    async fn recovered_with(answer: impl Into<Answer>) -> DurableRun {
        let answer = answer.into().to_value();
        let journal = Arc::new(MemoryJournal::default());
        let run = DurableRun::start(journal.clone(), &[], &[])
            .await
            .expect("start");
        let question = json!({"tool": "bash", "args": {}, "prompt": "Allow bash?"});
        run.decide(HOOK, "call_1", question, async move { answer })
            .await
            .expect("journaled");
        let records: Vec<Record> = journal.records().expect("records");
        assert!(matches!(records[1].step, Step::DecisionIntent { .. }));
        match DurableRun::recover(Arc::new(MemoryJournal::new(records)), &[]).expect("recover") {
            Recovery::Interrupted { run, .. } => run,
            Recovery::NothingInterrupted => panic!("the run did not end"),
        }
    }

    fn call(id: &str) -> Call<'_> {
        static ARGS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        Call {
            id,
            name: "bash",
            args: ARGS.get_or_init(|| json!({})),
        }
    }

    fn never_asked() -> AskFn {
        Arc::new(|_req, _token| Box::pin(async { panic!("a recorded answer was asked again") }))
    }

    #[tokio::test]
    async fn a_recorded_answer_replies_and_nobody_is_asked() {
        let token = CancellationToken::new();
        let asks = PermissionGate::new(Policy::new(Action::Allow).rule(Rule::ask("bash")));
        let run = recovered_with(true).await;
        let v = evaluate(
            &asks,
            Some(never_asked()),
            Some(run),
            call("call_1"),
            &token,
        )
        .await;
        assert!(!v.block, "{v:?}");
        // Without anyone to ask (print mode), the recorded answer still replies.
        let run = recovered_with(false).await;
        let v = evaluate(&asks, None, Some(run), call("call_1"), &token).await;
        assert_eq!(
            v.reason.as_deref(),
            Some("Permission denied: the user declined the call (Allow bash?).")
        );
        // A call the run never asked about is refused as before: nobody can approve it.
        let run = recovered_with(true).await;
        let v = evaluate(&asks, None, Some(run), call("call_2"), &token).await;
        assert!(v.block && v.reason.is_some_and(|r| r.contains("no one is available")));
    }

    #[tokio::test]
    async fn a_recorded_no_holds_when_the_policy_now_allows() {
        let token = CancellationToken::new();
        let allows = PermissionGate::new(Policy::new(Action::Allow));
        let run = recovered_with(false).await;
        let v = evaluate(&allows, None, Some(run), call("call_1"), &token).await;
        assert_eq!(
            v.reason.as_deref(),
            Some("Permission denied: the user declined the call (Allow bash?).")
        );
        let run = recovered_with(true).await;
        let v = evaluate(&allows, None, Some(run), call("call_1"), &token).await;
        assert!(!v.block);
        // A "no" with a reason keeps its reason.
        let run = recovered_with(Answer::deny_because("not on main")).await;
        let v = evaluate(&allows, None, Some(run), call("call_1"), &token).await;
        assert_eq!(
            v.reason.as_deref(),
            Some("Permission denied: the user declined the call (Allow bash?). The user said: not on main")
        );
    }
}
