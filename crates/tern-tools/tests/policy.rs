use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;
use tern_tools::policy::{Action, Answer, Decision, PermissionGate, Policy, Rule, RuleSpec};
use tokio_util::sync::CancellationToken;

fn sample() -> Policy {
    Policy::new(Action::Allow)
        .with_cwd("/repo")
        .rule(
            Rule::deny("bash")
                .matching_regex(r"^\s*sudo\b")
                .unwrap()
                .because("no root"),
        )
        .rule(Rule::ask("bash").matching_glob("git push*").unwrap())
        .rule(
            Rule::allow("read")
                .matching_glob("secrets/public.txt")
                .unwrap(),
        )
        .rule(Rule::deny("*").matching_glob("secrets/**").unwrap())
        .rule(Rule::deny("write").matching_glob("*.lock").unwrap())
}

#[test]
fn first_matching_rule_decides() {
    let p = sample();
    assert_eq!(
        p.check("bash", &json!({"command": "cargo test"})),
        Decision::Allow
    );
    match p.check("bash", &json!({"command": "sudo rm -rf /"})) {
        Decision::Deny(reason) => {
            assert_eq!(
                reason,
                "Permission denied: bash `sudo rm -rf /` was refused by the tool policy (no root)."
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        p.check("bash", &json!({"command": "git push origin main"})),
        Decision::Ask("Allow bash `git push origin main`?".to_string())
    );
    assert_eq!(
        p.check("read", &json!({"path": "secrets/public.txt"})),
        Decision::Allow
    );
    assert!(matches!(
        p.check("read", &json!({"path": "secrets/key.pem"})),
        Decision::Deny(_)
    ));
    assert!(matches!(
        p.check("grep", &json!({"pattern": "x", "path": "secrets/"})),
        Decision::Deny(_)
    ));
}

#[test]
fn paths_match_as_written_relative_and_absolute() {
    let p = sample();
    for path in [
        "./secrets/a",
        "/repo/secrets/a",
        "src/../secrets/a",
        "@secrets/a",
    ] {
        assert!(
            matches!(p.check("read", &json!({"path": path})), Decision::Deny(_)),
            "{path}"
        );
    }
    // `*` does not cross folders for paths: sub/Cargo.lock is not `*.lock`.
    assert!(matches!(
        p.check("write", &json!({"path": "Cargo.lock", "content": ""})),
        Decision::Deny(_)
    ));
    assert_eq!(
        p.check("write", &json!({"path": "sub/Cargo.lock", "content": ""})),
        Decision::Allow
    );
}

#[test]
fn default_deny_and_tool_without_subject() {
    let p = Policy::new(Action::Deny)
        .rule(Rule::allow("read"))
        .rule(Rule::allow("ls"));
    assert_eq!(p.check("read", &json!({"path": "x"})), Decision::Allow);
    assert_eq!(p.check("ls", &json!({})), Decision::Allow);
    match p.check("bash", &json!({"command": "ls"})) {
        Decision::Deny(r) => assert!(r.contains("this tool is not allowed"), "{r}"),
        other => panic!("{other:?}"),
    }
    // A pattern rule never matches a call without a subject.
    let p = Policy::new(Action::Allow).rule(Rule::deny("*").matching_glob("*").unwrap());
    assert_eq!(p.check("custom", &json!({"x": 1})), Decision::Allow);
}

#[test]
fn rules_from_configuration() {
    let specs: Vec<RuleSpec> = serde_json::from_value(json!([
        {"tool": "bash", "action": "deny", "glob": "rm *", "reason": "no deleting"},
        {"tool": "*", "action": "ask", "regex": "\\.env$"}
    ]))
    .unwrap();
    let mut p = Policy::new(Action::Allow);
    for s in specs {
        p = p.rule(s.into_rule().unwrap());
    }
    assert!(
        matches!(p.check("bash", &json!({"command": "rm -f a"})), Decision::Deny(r) if r.contains("no deleting"))
    );
    assert!(matches!(
        p.check("read", &json!({"path": "app/.env"})),
        Decision::Ask(_)
    ));
    let bad: RuleSpec =
        serde_json::from_value(json!({"tool": "x", "action": "deny", "regex": "("})).unwrap();
    assert!(bad.into_rule().is_err());
}

#[tokio::test]
async fn gate_asks_and_refuses_with_a_reason() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let gate = PermissionGate::new(sample()).with_ask(Arc::new(move |req, _signal| {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match req.args["command"].as_str() {
                Some("git push origin feature") => Answer::Allow,
                Some("git push origin dev") => Answer::deny_because("  push to a fork  "),
                _ => Answer::Deny { reason: None },
            }
        })
    }));
    let token = CancellationToken::new();
    let v = gate
        .evaluate(
            "bash",
            &json!({"command": "git push origin feature"}),
            &token,
        )
        .await;
    assert!(!v.block);
    let v = gate
        .evaluate("bash", &json!({"command": "git push origin main"}), &token)
        .await;
    assert!(v.block);
    assert_eq!(
        v.reason.as_deref(),
        Some("Permission denied: the user declined the call (Allow bash `git push origin main`?).")
    );
    // A refusal with a reason: the model reads what the person said.
    let v = gate
        .evaluate("bash", &json!({"command": "git push origin dev"}), &token)
        .await;
    assert_eq!(
        v.reason.as_deref(),
        Some("Permission denied: the user declined the call (Allow bash `git push origin dev`?). The user said: push to a fork")
    );
    let v = gate
        .evaluate("bash", &json!({"command": "sudo ls"}), &token)
        .await;
    assert!(v.block);
    assert_eq!(asked.load(Ordering::SeqCst), 3, "deny rules do not ask");
}

#[tokio::test]
async fn gate_without_asker_and_aborted_question_refuse() {
    let token = CancellationToken::new();
    let v = PermissionGate::new(sample())
        .evaluate("bash", &json!({"command": "git push"}), &token)
        .await;
    assert!(v.block);
    assert!(v.reason.unwrap().contains("no one is available to approve"));

    let gate = PermissionGate::new(sample()).with_ask(Arc::new(|_req, _signal| {
        Box::pin(async { futures::future::pending::<Answer>().await })
    }));
    let aborted = CancellationToken::new();
    let args = json!({"command": "git push"});
    let ask = gate.evaluate("bash", &args, &aborted);
    aborted.cancel();
    assert!(ask.await.block);
}
