//! Tool selection (pi's `--tools`, `--exclude-tools`, `--no-tools`) and the system prompt
//! (pi's sections, `AGENTS.md`, `SYSTEM.md`, `--append-system-prompt`), checked in the
//! request bodies the scripted server receives.

mod common;

use std::path::Path;

use common::{assert_contains, command, dirs, run, stderr, stdout, Reply, Server};
use serde_json::Value;

/// The tool names a request declares.
fn declared(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|x| x["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The system prompt of a Chat Completions request.
fn system_prompt(body: &Value) -> String {
    common::messages(body)
        .iter()
        .find(|m| m["role"] == "system" || m["role"] == "developer")
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One print-mode run with `flags`; returns the output and the first request body.
fn one_run(home: &Path, cwd: &Path, flags: &[&str]) -> (std::process::Output, Option<Value>) {
    let server = Server::start(vec![Reply::text("ok")]);
    let mut c = command(home, cwd);
    c.args(["--base-url", &server.url, "--no-session"])
        .args(flags)
        .args(["-p", "hi"]);
    let o = run(c);
    (o, server.requests().first().cloned())
}

#[test]
fn the_default_tools_are_pis_and_print_mode_says_once_which_run_unasked() {
    let (home, cwd) = dirs();
    let (o, req) = one_run(home.path(), cwd.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let req = req.expect("a request");
    assert_eq!(declared(&req), ["read", "write", "edit", "bash"]);
    let err = stderr(&o);
    let note = "write, edit and bash are enabled and run without asking";
    assert_eq!(err.matches(note).count(), 1, "{err}");
    // The prompt lists exactly the declared tools, with pi's snippets and rules.
    let prompt = system_prompt(&req);
    assert!(
        prompt
            .starts_with("You are a coding assistant running inside tern, a coding agent harness."),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "<tools>\n- read: Read file contents\n- write: Create or overwrite files\n\
             - edit: Make precise file edits with exact text replacement, including multiple \
             disjoint edits in one call\n- bash: Execute bash commands (ls, grep, find, etc.)\
             \n\nAdditional tools may be available.\n</tools>"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains("<rules>\n- Use bash for file operations like ls, rg, find\n"),
        "{prompt}"
    );
    let cwd_text = cwd.path().to_string_lossy().to_string();
    assert!(
        prompt.ends_with(&format!("<cwd>\n{cwd_text}\n</cwd>")),
        "{prompt}"
    );

    // An --allow rule: the user chose what runs, so no note.
    let (o, _) = one_run(home.path(), cwd.path(), &["--allow", "bash:git *"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains(note), "{}", stderr(&o));
}

#[test]
fn tools_edits_exclusions_and_no_tools_follow_pi() {
    let (home, cwd) = dirs();
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--tools", "+ls,-bash"], &["read", "write", "edit", "ls"]),
        (&["--tools", "read,grep"], &["read", "grep"]),
        (
            &["-t", "all", "-xt", "b*,w*"],
            &["read", "edit", "ls", "grep", "find"],
        ),
        (&["--exclude-tools", "edit"], &["read", "write", "bash"]),
        (&["-nt"], &[]),
        (&["--no-tools", "--tools", "+find"], &["find"]),
    ];
    for (flags, want) in cases {
        let (o, req) = one_run(home.path(), cwd.path(), flags);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
        let req = req.expect("a request");
        assert_eq!(declared(&req), want, "{flags:?}");
        let prompt = system_prompt(&req);
        if want.is_empty() {
            assert!(prompt.contains("<tools>\n(none)\n"), "{prompt}");
        }
        for tool in ["read", "write", "edit", "bash", "ls", "grep", "find"] {
            let listed = prompt.contains(&format!("\n- {tool}: "));
            assert_eq!(listed, want.contains(&tool), "{flags:?} {tool}: {prompt}");
        }
    }
    // Only mutating tools the run has are named.
    let (o, _) = one_run(home.path(), cwd.path(), &["--tools", "read,edit"]);
    assert_contains(
        &stderr(&o),
        "tern: note: edit is enabled and run without asking",
    );
    let (o, _) = one_run(home.path(), cwd.path(), &["--tools", "read,grep"]);
    assert!(!stderr(&o).contains("tern: note:"), "{}", stderr(&o));
}

#[test]
fn bad_tool_lists_are_usage_errors_and_nothing_is_sent() {
    let (home, cwd) = dirs();
    for (flags, message) in [
        (
            ["--tools", "read,+ls"],
            "--tools: tool names cannot be mixed with +name or -name entries",
        ),
        (
            ["--tools", "+r*"],
            "--tools: +name and -name entries take exact tool names, not patterns: +r*",
        ),
        (["--tools", "raed"], "--tools: unknown tool raed"),
    ] {
        let (o, req) = one_run(home.path(), cwd.path(), &flags);
        assert_eq!(o.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&o).contains(message), "{flags:?}: {}", stderr(&o));
        assert!(req.is_none(), "{flags:?}: nothing is sent");
    }
}

#[test]
fn context_files_and_prompt_flags_are_placed_as_pi_places_them() {
    let (home, top) = dirs();
    let repo = top.path().join("repo");
    let cwd = repo.join("sub");
    std::fs::create_dir_all(&cwd).unwrap();
    let global = home.path().join(".config").join("tern");
    let pi_dir = home.path().join(".pi").join("agent");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(&pi_dir).unwrap();
    std::fs::write(global.join("AGENTS.md"), "GLOBAL RULE").unwrap();
    std::fs::write(pi_dir.join("AGENTS.md"), "PI GLOBAL RULE").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "REPO RULE").unwrap();
    std::fs::write(cwd.join("CLAUDE.md"), "SUB RULE").unwrap();
    std::fs::write(cwd.join("extra.md"), "FROM A FILE").unwrap();

    let (o, req) = one_run(
        home.path(),
        &cwd,
        &[
            "--tools",
            "read",
            "--append-system-prompt",
            "MORE",
            "--append-system-prompt",
            "extra.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prompt = system_prompt(&req.expect("a request"));
    let at = |s: &str| {
        prompt
            .find(s)
            .unwrap_or_else(|| panic!("{s} not in the prompt: {prompt}"))
    };
    // pi's order: preamble, tools, rules, addendum, project context (global files, then the
    // folders from the outermost in), cwd.
    assert!(at("<tools>") < at("<rules>") && at("<rules>") < at("<addendum>"));
    assert!(
        prompt.contains("<addendum>\nMORE\n\nFROM A FILE\n</addendum>"),
        "{prompt}"
    );
    assert!(at("</addendum>") < at("<project_context>"));
    assert!(prompt.contains(&format!(
        "<project_context>\nProject-specific instructions and guidelines:\n\n\
         <project_instructions path=\"{}\">\nGLOBAL RULE\n</project_instructions>",
        global.join("AGENTS.md").display()
    )));
    assert!(at("GLOBAL RULE") < at("PI GLOBAL RULE"));
    assert!(at("PI GLOBAL RULE") < at("REPO RULE") && at("REPO RULE") < at("SUB RULE"));
    assert!(prompt.contains(&format!(
        "<project_instructions path=\"{}\">\nSUB RULE\n</project_instructions>\n</project_context>",
        cwd.join("CLAUDE.md").display()
    )));
    assert!(at("</project_context>") < at("<cwd>"));

    // -nc: no context files.
    let (_, req) = one_run(home.path(), &cwd, &["-nc"]);
    let prompt = system_prompt(&req.expect("a request"));
    assert!(
        !prompt.contains("project_context") && !prompt.contains("RULE"),
        "{prompt}"
    );

    // SYSTEM.md of the project's .tern/ replaces the default preamble, tools and rules;
    // --system-prompt wins over it; APPEND_SYSTEM.md is the addendum when no flag gives one.
    std::fs::create_dir_all(cwd.join(".tern")).unwrap();
    std::fs::write(cwd.join(".tern").join("SYSTEM.md"), "PROJECT SYSTEM").unwrap();
    std::fs::write(global.join("APPEND_SYSTEM.md"), "GLOBAL APPEND").unwrap();
    let (_, req) = one_run(home.path(), &cwd, &["-nc"]);
    let prompt = system_prompt(&req.expect("a request"));
    let cwd_text = cwd.to_string_lossy();
    assert_eq!(
        prompt,
        format!(
            "PROJECT SYSTEM\n\n<addendum>\nGLOBAL APPEND\n</addendum>\n\n<cwd>\n{cwd_text}\n</cwd>"
        )
    );
    let (_, req) = one_run(
        home.path(),
        &cwd,
        &["-nc", "--system-prompt", "FLAG SYSTEM"],
    );
    let prompt = system_prompt(&req.expect("a request"));
    assert!(prompt.starts_with("FLAG SYSTEM\n\n<addendum>"), "{prompt}");
    assert!(!stdout(&o).is_empty());
}

#[test]
fn skills_are_listed_for_the_tool_that_reads_them() {
    let (home, cwd) = dirs();
    let repo = cwd.path();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let user = home
        .path()
        .join(".config")
        .join("tern")
        .join("skills")
        .join("pdf-tools");
    let project = repo.join(".agents").join("skills").join("review");
    let extra = repo.join("extra-skill");
    for d in [&user, &project, &extra] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        user.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text from PDFs.\n---\nSteps.\n",
    )
    .unwrap();
    std::fs::write(
        project.join("SKILL.md"),
        "---\nname: review\ndescription: Review a change.\n---\n",
    )
    .unwrap();
    std::fs::write(
        extra.join("SKILL.md"),
        "---\nname: extra\ndescription: Named on the command line.\n---\n",
    )
    .unwrap();

    let (o, req) = one_run(
        home.path(),
        repo,
        &["--tools", "read", "--skill", "extra-skill"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let prompt = system_prompt(&req.expect("a request"));
    let skill = |name: &str, desc: &str, file: &Path| {
        format!(
            "  <skill>\n    <name>{name}</name>\n    <description>{desc}</description>\n    \
             <location>{}</location>\n  </skill>",
            file.display()
        )
    };
    let listed = format!(
        "<skills>\nThe following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         Resolve relative paths against the skill's directory (parent of SKILL.md). Use \
         absolute paths in tool calls.\n\n<available_skills>\n{}\n{}\n{}\n</available_skills>\n\
         </skills>\n\n<cwd>",
        skill(
            "pdf-tools",
            "Extract text from PDFs.",
            &user.join("SKILL.md")
        ),
        skill("review", "Review a change.", &project.join("SKILL.md")),
        skill(
            "extra",
            "Named on the command line.",
            &extra.join("SKILL.md")
        ),
    );
    assert!(prompt.contains(&listed), "{prompt}");

    // bash reads them when read is not declared; --no-skills keeps only --skill paths; with
    // neither reader no skill is listed.
    let (_, req) = one_run(home.path(), repo, &["--tools", "bash", "-ns"]);
    let prompt = system_prompt(&req.expect("a request"));
    assert!(!prompt.contains("<skills>"), "{prompt}");
    let (_, req) = one_run(
        home.path(),
        repo,
        &["--tools", "bash", "-ns", "--skill", "extra-skill"],
    );
    let prompt = system_prompt(&req.expect("a request"));
    assert!(
        prompt.contains("Use bash to load a skill's file"),
        "{prompt}"
    );
    assert!(prompt.contains("<name>extra</name>") && !prompt.contains("pdf-tools"));
    let (_, req) = one_run(home.path(), repo, &["--tools", "grep"]);
    assert!(!system_prompt(&req.expect("a request")).contains("<skills>"));
}

/// The text of the last user message of a request.
fn last_user_text(body: &Value) -> String {
    common::messages(body)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other[0]["text"].as_str().unwrap_or_default().to_string(),
        })
        .unwrap_or_default()
}

#[test]
fn prompt_templates_expand_slash_commands_in_print_and_rpc_modes() {
    let (home, cwd) = dirs();
    let prompts = home.path().join(".config").join("tern").join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\n\
         Review the staged changes. Focus on ${1:-correctness}; then $2.\n",
    )
    .unwrap();
    std::fs::write(cwd.path().join("fix.md"), "Fix $@ now.").unwrap();

    let run_with = |flags: &[&str], prompt: &str| {
        let server = Server::start(vec![Reply::text("ok")]);
        let mut c = command(home.path(), cwd.path());
        c.args(["--base-url", &server.url, "--no-session", "--tools", "read"])
            .args(flags)
            .args(["-p", prompt]);
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        last_user_text(&server.requests()[0])
    };
    assert_eq!(
        run_with(&[], r#"/review "API shape" tests"#),
        "Review the staged changes. Focus on API shape; then tests."
    );
    assert_eq!(
        run_with(&[], "/review"),
        "Review the staged changes. Focus on correctness; then ."
    );
    assert_eq!(run_with(&[], "/unknown x"), "/unknown x");
    assert_eq!(run_with(&["-np"], "/review x"), "/review x");
    assert_eq!(
        run_with(&["-np", "--prompt-template", "fix.md"], "/fix the bug"),
        "Fix the bug now."
    );

    let server = Server::start(vec![Reply::text("ok")]);
    let mut rpc = common::Rpc::start(
        home.path(),
        cwd.path(),
        &server,
        &["--no-session", "--tools", "read"],
    );
    let r = rpc.call(
        "p1",
        serde_json::json!({"type": "prompt", "message": "/review speed"}),
    );
    assert_eq!(r["success"], true, "{r}");
    rpc.wait_for("settled", |v| v["type"] == "agent_settled");
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Review the staged changes. Focus on speed; then ."
    );
    assert_eq!(rpc.finish(), Some(0));
}

#[test]
fn a_skill_command_sends_the_skills_body_then_the_request() {
    let (home, cwd) = dirs();
    let dir = cwd.path().join(".tern").join("skills").join("pdf-tools");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("SKILL.md");
    std::fs::write(
        &file,
        "---\nname: pdf-tools\ndescription: Extract text from PDFs.\n---\n\n# PDF tools\nRun scripts/x.sh.\n",
    )
    .unwrap();
    let server = Server::answering(&["ok", "ok"]);
    for (prompt, want) in [
        (
            "/skill:pdf-tools extract report.pdf",
            format!(
                "<skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\n\
                 # PDF tools\nRun scripts/x.sh.\n</skill>\n\nextract report.pdf",
                file.display(),
                dir.display()
            ),
        ),
        ("/skill:nosuch x", "/skill:nosuch x".to_string()),
    ] {
        let mut c = command(home.path(), cwd.path());
        c.args([
            "--base-url",
            &server.url,
            "--no-session",
            "--tools",
            "read",
            "-p",
            prompt,
        ]);
        let o = run(c);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let reqs = server.requests();
        assert_eq!(last_user_text(reqs.last().expect("a request")), want);
    }
}
