//! The decision step: a hook that asks outside the program (a person answering a permission
//! question) journals the question before asking (intent) and the answer before it takes
//! effect (outcome). Recovering, a recorded answer is used and nobody is asked again; a
//! replay uses it too, and reports a divergence when the hook now asks something else, asks
//! where the recording did not, or decides without asking where the recording asked.

use std::future::Future;

use serde_json::Value;

use super::{DurableRun, RecordedDecision};
use crate::{Divergence, JournalError, Record, Step};

/// What to do about one decision.
enum Plan {
    /// Use the recorded answer.
    Recorded(Value),
    /// Ask, under this step id.
    Ask(String),
}

impl DurableRun {
    /// Decides about tool call `call_id` by `ask` (someone outside the program), as a
    /// journaled step: `question` is journaled before `ask` runs, the answer before it is
    /// returned. When the run already recorded an answer to the same question for this call
    /// (a recovery, a replay), that answer is returned and `ask` is not called. A replay never
    /// asks: a decision it lacks is a [`Divergence::HookDecision`] and the answer `null`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use tern_durable::{DurableRun, MemoryJournal, Journal, Recovery};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let journal = Arc::new(MemoryJournal::default());
    /// let run = DurableRun::start(journal.clone(), &[], &[]).await.unwrap();
    /// let q = json!({"tool": "bash", "prompt": "Allow bash?"});
    /// let yes = run.decide("permission", "call_1", q.clone(), async { json!(true) }).await.unwrap();
    /// assert_eq!(yes, json!(true));
    /// // Cut off here: the recovered run gets the recorded answer without asking.
    /// let Recovery::Interrupted { run, .. } = DurableRun::recover(journal, &[]).unwrap() else {
    ///     unreachable!("the run did not end")
    /// };
    /// let again = run.decide("permission", "call_1", q, async { unreachable!("asked again") });
    /// assert_eq!(again.await.unwrap(), json!(true));
    /// # });
    /// ```
    pub async fn decide<F>(
        &self,
        hook: &str,
        call_id: &str,
        question: Value,
        ask: F,
    ) -> Result<Value, JournalError>
    where
        F: Future<Output = Value>,
    {
        let id = match self.plan_decision(hook, call_id, &question) {
            Plan::Recorded(answer) => return Ok(answer),
            Plan::Ask(id) => id,
        };
        let journal = &self.inner.journal;
        journal
            .append(&Record::new(Step::DecisionIntent {
                id: id.clone(),
                run_id: self.inner.run_id.clone(),
                hook: hook.to_string(),
                tool_call_id: call_id.to_string(),
                question,
            }))
            .await?;
        let answer = ask.await;
        journal
            .append(&Record::new(Step::Decision {
                id,
                hook: hook.to_string(),
                value: answer.clone(),
            }))
            .await?;
        Ok(answer)
    }

    /// Tells the run that `hook` decided about tool call `call_id` without asking anyone
    /// (`decision` says how, e.g. `denies`). In a replay whose recording asked there, that is
    /// a [`Divergence::HookDecision`].
    pub fn decided_without_asking(&self, hook: &str, call_id: &str, decision: &str) {
        if !self.inner.offline {
            return;
        }
        if let Some(d) = self.recorded_decision(hook, call_id) {
            let answer = d.answer.unwrap_or(Value::Null);
            self.inner.note_divergence(Divergence::HookDecision {
                hook: hook.to_string(),
                call_id: call_id.to_string(),
                detail: format!(
                    "the recording asked {} and was answered {answer}; now it {decision} without \
                     asking",
                    d.question
                ),
            });
        }
    }

    /// Whether this run is a replay (nothing goes live; nobody is asked).
    pub fn is_replay(&self) -> bool {
        self.inner.offline
    }

    /// The decision recorded for `hook` about tool call `call_id`, if the run has one.
    pub fn recorded_decision(&self, hook: &str, call_id: &str) -> Option<RecordedDecision> {
        self.decision_at(call_id).filter(|d| d.hook == hook)
    }

    /// The decision recorded about tool call `call_id`, whichever hook made it.
    fn decision_at(&self, call_id: &str) -> Option<RecordedDecision> {
        self.inner
            .cursor
            .lock()
            .recorded
            .decisions
            .get(call_id)
            .cloned()
    }

    fn plan_decision(&self, hook: &str, call_id: &str, question: &Value) -> Plan {
        let recorded = self.decision_at(call_id);
        let fresh = format!("{}:d:{call_id}", self.inner.run_id);
        let offline = self.inner.offline;
        let diverge = |detail: String| {
            self.inner.note_divergence(Divergence::HookDecision {
                hook: hook.to_string(),
                call_id: call_id.to_string(),
                detail,
            });
        };
        match recorded {
            Some(d) if d.hook == hook && &d.question == question => match d.answer {
                Some(answer) => Plan::Recorded(answer),
                // Asked, never answered (cut off while asking): nothing took effect.
                None if !offline => Plan::Ask(d.id),
                None => {
                    diverge("the recording has the question but no answer".into());
                    Plan::Recorded(Value::Null)
                }
            },
            // The recorded answer was to another question: it does not answer this one.
            Some(d) if offline => {
                diverge(format!(
                    "the recording asked {}, now it asks {question}",
                    d.question
                ));
                Plan::Recorded(d.answer.unwrap_or(Value::Null))
            }
            None if offline => {
                diverge(format!(
                    "now it asks {question}, the recording decided without asking"
                ));
                Plan::Recorded(Value::Null)
            }
            Some(d) => Plan::Ask(d.id),
            None => Plan::Ask(fresh),
        }
    }
}
