//! Memory footprint guards: a service runs thousands of agents at once, and each waiting
//! prompt holds its future. The run itself is boxed, so the future an application holds stays
//! small whatever the loop's state machine grows to.

use std::sync::Arc;

use tern_agent::{Agent, AgentOptions};
use tern_ai::faux::FauxModel;

#[test]
fn a_waiting_prompt_future_is_small() {
    let agent = Agent::new(AgentOptions {
        stream_fn: Some(Arc::new(FauxModel::new(vec![]))),
        ..Default::default()
    });
    let prompt = agent.prompt("go");
    let size = std::mem::size_of_val(&prompt);
    assert!(size <= 1024, "prompt future is {size} bytes");
    let resume = agent.continue_run();
    let size = std::mem::size_of_val(&resume);
    assert!(size <= 1024, "continue future is {size} bytes");
}

#[test]
fn events_are_small() {
    // Every event is moved through the sink and the listeners; tool results and final
    // messages are boxed so that no variant carries them inline.
    let size = std::mem::size_of::<tern_agent::AgentEvent>();
    assert!(size <= 128, "AgentEvent is {size} bytes");
    let size = std::mem::size_of::<tern_ai::AssistantMessageEvent>();
    assert!(size <= 64, "AssistantMessageEvent is {size} bytes");
}
