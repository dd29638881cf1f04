//! A run's messages join the agent's compact transcript when it ends; a large run's are
//! packed off the caller's path, by a task that may run only after the next reset or prompt.
//! Whenever the packing happens, readers see the same messages.

use std::sync::Arc;

use tern_agent::{Agent, AgentOptions};
use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::Message;

/// An answer well past the size packed on the caller's path.
fn large(tag: char) -> String {
    std::iter::repeat_n(tag, 40 * 1024).collect()
}

fn agent(answers: &[&str]) -> Agent {
    let responses = answers.iter().map(|a| FauxResponse::text(a)).collect();
    Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(responses))),
        ..Default::default()
    })
}

/// (role, text) of every message.
fn transcript(agent: &Agent) -> Vec<(String, String)> {
    agent.with_messages(|ms| {
        ms.iter()
            .map(|m| {
                let text = match m {
                    Message::User(u) => u.content.text(""),
                    Message::Assistant(a) => a.text(),
                    _ => String::new(),
                };
                (m.role().to_string(), text)
            })
            .collect()
    })
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_string(), text.to_string())
}

/// Lets the runtime's other tasks (the packing) run.
async fn let_tasks_run() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_large_answer_reads_the_same_before_and_after_it_is_packed() {
    let answer = large('a');
    let agent = agent(&[&answer, "short"]);
    agent.prompt("one").await.expect("first prompt");
    let expected = vec![pair("user", "one"), pair("assistant", &answer)];
    assert_eq!(transcript(&agent), expected, "before the packing ran");
    let_tasks_run().await;
    assert_eq!(transcript(&agent), expected, "after the packing ran");
    agent.prompt("two").await.expect("second prompt");
    let_tasks_run().await;
    let mut expected = expected;
    expected.extend([pair("user", "two"), pair("assistant", "short")]);
    assert_eq!(transcript(&agent), expected);
}

#[tokio::test]
async fn a_prompt_before_the_packing_ran_keeps_every_message() {
    let (first, second) = (large('a'), large('b'));
    let agent = agent(&[&first, &second]);
    agent.prompt("one").await.expect("first prompt");
    // No yield between: the first run's packing task has not run when the second begins.
    agent.prompt("two").await.expect("second prompt");
    let expected = vec![
        pair("user", "one"),
        pair("assistant", &first),
        pair("user", "two"),
        pair("assistant", &second),
    ];
    assert_eq!(transcript(&agent), expected, "before the packing ran");
    let_tasks_run().await;
    assert_eq!(transcript(&agent), expected, "after the packing ran");
}

#[tokio::test]
async fn a_reset_before_the_packing_ran_leaves_an_empty_transcript() {
    let agent = agent(&[&large('a'), "after"]);
    agent.prompt("one").await.expect("first prompt");
    agent.reset().expect("reset");
    let_tasks_run().await;
    assert_eq!(transcript(&agent), Vec::new());
    agent.prompt("two").await.expect("prompt after the reset");
    let_tasks_run().await;
    assert_eq!(
        transcript(&agent),
        vec![pair("user", "two"), pair("assistant", "after")]
    );
}
