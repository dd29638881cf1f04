//! `/proc/self/cwd` names the process's working directory: a rule on a folder in it holds
//! through that name too. (Its own test binary: it changes the process's directory.)

mod common;

use common::{err, Sandbox};
use serde_json::json;
use tern_tools::policy::{Action, Decision, Policy, Rule};
use tern_tools::read_tool;

#[tokio::test]
async fn proc_self_cwd_does_not_dodge_a_path_rule() {
    let sb = Sandbox::new();
    sb.write("secrets/key", "hunter2\n");
    std::env::set_current_dir(sb.work()).unwrap();
    let policy = Policy::new(Action::Allow)
        .with_cwd(sb.work())
        .rule(Rule::deny("*").matching_glob("secrets/**").unwrap());
    let decision = policy.check("read", &json!({"path": "/proc/self/cwd/secrets/key"}));
    assert!(matches!(decision, Decision::Deny(_)), "{decision:?}");
    let config = sb
        .config
        .clone()
        .with_allow_outside(true)
        .with_path_policy(policy);
    let e = err(
        &read_tool(&config),
        json!({"path": "/proc/self/cwd/secrets/key"}),
    )
    .await;
    assert!(e.contains("refused by the tool policy"), "{e}");
}
