//! A bash command does not see tern's secrets: provider keys and anything named like a key,
//! secret, token or password, unless passed on purpose. (Its own binary: it sets variables.)

mod common;

use common::ok_text;
use serde_json::json;
use tern_tools::sandbox::SandboxPolicy;
use tern_tools::{bash_tool, ToolConfig};

#[tokio::test]
async fn secrets_stay_out_of_the_environment() {
    let vars = [
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("GEMINI_API_KEY", "gemini-secret-2c7d1"),
        ("OPENROUTER_API_KEY", "openrouter-secret-8e4b6"),
        ("GITHUB_TOKEN", "ghp_secret_5a0c3"),
        ("db_password", "hunter2"),
        // Values no environment holds by chance (build paths hold `aws-lc-sys`, for one).
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-7f3a9"),
        ("NPM_TOKEN", "npm-pass-through"),
        ("TERN_HARMLESS", "visible"),
    ];
    for (k, v) in vars {
        // This binary's only test sets these before any command runs.
        std::env::set_var(k, v);
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy {
        pass_env: vec!["NPM_TOKEN".into()],
        ..SandboxPolicy::default()
    };
    let config = ToolConfig::new(dir.path()).with_sandbox(policy);
    let out = ok_text(&bash_tool(&config), json!({"command": "env"})).await;
    for (k, v) in &vars[..7] {
        assert!(!out.contains(k) && !out.contains(v), "{k} leaked:\n{out}");
    }
    assert!(out.contains("NPM_TOKEN=npm-pass-through"), "{out}");
    assert!(out.contains("TERN_HARMLESS=visible"), "{out}");
    assert!(out.contains("PATH="), "{out}");
}
