//! Shell command analysis and command rules: any text parses without a panic (or a stack
//! overflow), and the policy agrees with the analysis: a line that runs `rm …` is never
//! allowed by `bash:rm *`, and one with a command nobody can judge is never allowed either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tern_tools::policy::{Action, Decision, Policy, Rule};
use tern_tools::shell_rules::{analyze, Invocation};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let units = analyze(line);
    let Ok(rule) = Rule::deny("bash").matching_glob("rm *") else {
        return;
    };
    let policy = Policy::new(Action::Allow).rule(rule);
    let verdict = policy.check("bash", &json!({ "command": line }));
    let runs_rm = units.iter().any(|u| match u {
        Invocation::Judged { forms } => forms.iter().any(|f| f.starts_with("rm ")),
        Invocation::Unjudged { .. } => false,
    });
    let unjudged = units.iter().any(|u| matches!(u, Invocation::Unjudged { .. }));
    if runs_rm {
        assert!(matches!(verdict, Decision::Deny(_)), "{line:?}: {verdict:?}");
    }
    if unjudged {
        assert_ne!(verdict, Decision::Allow, "{line:?}");
    }
});
