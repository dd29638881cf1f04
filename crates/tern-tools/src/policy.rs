//! A permission policy for tool calls: allow / deny / ask rules by tool and by path or
//! command pattern, meant to run as the agent's `before_tool_call` hook.
//!
//! Rules are tried in order and the first that matches decides; when none matches, the
//! policy's default does. A rule matches a tool by name (`"*"` for any) and, optionally, by a
//! glob or regex tested against the call's subject: the `command` of `bash`, the `path` of the
//! file tools (tested as written, relative to the working directory, and absolute).
//!
//! Command patterns are tested against each simple command the line runs, as
//! [`shell_rules`] finds them (so `bash:rm *` also denies `/bin/rm -r x`,
//! `true; rm x`, `sh -c 'rm x'`, `sudo env rm x`, `echo $(rm x)`); a command whose program is
//! only known at run time is asked about rather than allowed.
//!
//! ```
//! use serde_json::json;
//! use tern_tools::policy::{Action, Decision, Policy, Rule};
//!
//! let policy = Policy::new(Action::Allow)
//!     .rule(Rule::deny("bash").matching_glob("rm -rf *").unwrap().because("no recursive deletes"))
//!     .rule(Rule::ask("write").matching_glob("**/.env").unwrap())
//!     .rule(Rule::deny("*").matching_glob("secrets/**").unwrap());
//!
//! assert_eq!(policy.check("bash", &json!({"command": "ls"})), Decision::Allow);
//! assert!(matches!(policy.check("bash", &json!({"command": "rm -rf /"})), Decision::Deny(r) if r.contains("no recursive deletes")));
//! assert!(matches!(policy.check("write", &json!({"path": "app/.env", "content": ""})), Decision::Ask(_)));
//! assert!(matches!(policy.check("read", &json!({"path": "./secrets/key"})), Decision::Deny(_)));
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::shell_rules::{self, Invocation};

/// What a rule does with a call it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run the call.
    Allow,
    /// Refuse it; the model sees the reason.
    Deny,
    /// Ask someone (a user, a supervisor) first.
    Ask,
}

/// The policy's verdict on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Refuse it, with the reason the model sees.
    Deny(String),
    /// Ask first, with the question to put.
    Ask(String),
}

#[derive(Clone, Debug)]
enum Pattern {
    Glob {
        source: String,
        path: GlobMatcher,
        command: GlobMatcher,
    },
    Regex(Regex),
}

impl Pattern {
    fn matches(&self, subject: &Subject) -> bool {
        match (self, subject) {
            (Pattern::Glob { path, .. }, Subject::Path(candidates)) => {
                candidates.iter().any(|c| path.is_match(c))
            }
            (_, Subject::Command(c)) => self.matches_command(c),
            (Pattern::Regex(re), Subject::Path(candidates)) => {
                candidates.iter().any(|c| re.is_match(c))
            }
        }
    }

    /// Tests one form of a command (a glob's `*` matches anything, `/` included).
    fn matches_command(&self, text: &str) -> bool {
        match self {
            Pattern::Glob { command, .. } => command.is_match(text),
            Pattern::Regex(re) => re.is_match(text),
        }
    }

    fn source(&self) -> &str {
        match self {
            Pattern::Glob { source, .. } => source,
            Pattern::Regex(re) => re.as_str(),
        }
    }
}

/// One rule of a [`Policy`].
#[derive(Clone, Debug)]
pub struct Rule {
    tool: String,
    pattern: Option<Pattern>,
    action: Action,
    reason: Option<String>,
}

impl Rule {
    /// A rule for `tool` with `action`: a tool's name, `"*"` for every tool, or a prefix and
    /// `*` (`"mcp__*"`: every MCP tool, `"mcp__github__*"`: one server's).
    ///
    /// ```
    /// use serde_json::json;
    /// use tern_tools::policy::{Action, Decision, Policy, Rule};
    /// let policy = Policy::new(Action::Allow).rule(Rule::deny("mcp__github__*"));
    /// assert!(matches!(policy.check("mcp__github__merge", &json!({})), Decision::Deny(_)));
    /// assert_eq!(policy.check("mcp__files__read", &json!({})), Decision::Allow);
    /// ```
    pub fn new(tool: &str, action: Action) -> Self {
        Rule {
            tool: tool.to_string(),
            pattern: None,
            action,
            reason: None,
        }
    }

    /// Whether the rule is about tool `name`.
    fn names(&self, name: &str) -> bool {
        match self.tool.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => self.tool == name,
        }
    }

    /// An allow rule.
    pub fn allow(tool: &str) -> Self {
        Self::new(tool, Action::Allow)
    }

    /// A deny rule.
    pub fn deny(tool: &str) -> Self {
        Self::new(tool, Action::Deny)
    }

    /// An ask rule.
    pub fn ask(tool: &str) -> Self {
        Self::new(tool, Action::Ask)
    }

    /// Restricts the rule to calls whose subject matches a glob. For paths `*` stays within
    /// one folder and `**` crosses folders; for commands `*` matches anything.
    pub fn matching_glob(mut self, glob: &str) -> Result<Self, globset::Error> {
        let path = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        let command = GlobBuilder::new(glob)
            .literal_separator(false)
            .build()?
            .compile_matcher();
        self.pattern = Some(Pattern::Glob {
            source: glob.to_string(),
            path,
            command,
        });
        Ok(self)
    }

    /// Restricts the rule to calls whose subject matches a regex (unanchored).
    pub fn matching_regex(mut self, regex: &str) -> Result<Self, regex::Error> {
        self.pattern = Some(Pattern::Regex(Regex::new(regex)?));
        Ok(self)
    }

    /// The reason given to the model when this rule refuses a call (or the question asked).
    pub fn because(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_string());
        self
    }
}

/// A rule as written in a configuration file.
///
/// ```
/// let spec: tern_tools::policy::RuleSpec = serde_json::from_value(serde_json::json!(
///     {"tool": "bash", "action": "deny", "glob": "git push*", "reason": "no pushing"}
/// )).unwrap();
/// assert!(spec.into_rule().is_ok());
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RuleSpec {
    /// Tool name, or `"*"`.
    pub tool: String,
    /// What to do.
    pub action: Action,
    /// A glob the subject must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// A regex the subject must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RuleSpec {
    /// Compiles the rule.
    pub fn into_rule(self) -> Result<Rule, String> {
        let mut rule = Rule::new(&self.tool, self.action);
        if let Some(g) = &self.glob {
            rule = rule
                .matching_glob(g)
                .map_err(|e| format!("invalid glob {g:?}: {e}"))?;
        }
        if let Some(r) = &self.regex {
            rule = rule
                .matching_regex(r)
                .map_err(|e| format!("invalid regex {r:?}: {e}"))?;
        }
        if let Some(reason) = &self.reason {
            rule = rule.because(reason);
        }
        Ok(rule)
    }
}

/// What a call is about.
enum Subject {
    /// Forms of a path argument: as written, relative to the cwd, absolute.
    Path(Vec<String>),
    Command(String),
}

/// Ordered allow / deny / ask rules with a default.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    default: Action,
    cwd: Option<PathBuf>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(Action::Allow)
    }
}

impl Policy {
    /// A policy with no rules whose verdict is `default`.
    pub fn new(default: Action) -> Self {
        Policy {
            rules: Vec::new(),
            default,
            cwd: None,
        }
    }

    /// Appends a rule (rules are tried in order, the first match decides).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// The working directory relative paths are resolved against for matching.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// The verdict on a call of `tool_name` with (validated) `args`.
    pub fn check(&self, tool_name: &str, args: &Value) -> Decision {
        let subject = self.subject(tool_name, args);
        if let Some(Subject::Command(command)) = &subject {
            return self.check_command(tool_name, command, &subject);
        }
        for rule in &self.rules {
            if !rule.names(tool_name) {
                continue;
            }
            if let Some(pattern) = &rule.pattern {
                match &subject {
                    Some(s) if pattern.matches(s) => {}
                    _ => continue,
                }
            }
            return self.verdict(rule.action, tool_name, &subject, Some(rule));
        }
        self.verdict(self.default, tool_name, &subject, None)
    }

    /// Command rules judge every simple command the line runs (see [`crate::shell_rules`]):
    /// each gets the verdict of the first rule that matches it, and the line gets the worst
    /// of them (deny, then ask, then allow). A deny or ask rule matches a command when it
    /// matches any of its forms (as written, or what a wrapper runs) or the whole line; an
    /// allow rule only when it matches the command as written, so `sudo rm` is not allowed
    /// by `rm *`-style allows meant for plain `rm`. A command the analysis cannot judge is
    /// asked about unless an earlier rule decides it on its text.
    fn check_command(&self, tool: &str, line: &str, subject: &Option<Subject>) -> Decision {
        let mut units = shell_rules::analyze(line);
        if units.is_empty() {
            units.push(Invocation::Judged {
                forms: vec![line.trim().to_string()],
            });
        }
        let mut worst: Option<Decision> = None;
        for unit in &units {
            let d = self.command_verdict(tool, line, unit, subject);
            let rank = |d: &Decision| match d {
                Decision::Allow => 0,
                Decision::Ask(_) => 1,
                Decision::Deny(_) => 2,
            };
            if worst.as_ref().is_none_or(|w| rank(&d) > rank(w)) {
                worst = Some(d);
            }
        }
        worst.unwrap_or(Decision::Allow)
    }

    fn command_verdict(
        &self,
        tool: &str,
        line: &str,
        unit: &Invocation,
        subject: &Option<Subject>,
    ) -> Decision {
        for rule in &self.rules {
            if !rule.names(tool) {
                continue;
            }
            let Some(pattern) = &rule.pattern else {
                return self.verdict(rule.action, tool, subject, Some(rule));
            };
            let strict = rule.action == Action::Allow;
            let matched = match unit {
                Invocation::Judged { forms } if strict => {
                    forms.first().is_some_and(|f| pattern.matches_command(f))
                }
                Invocation::Judged { forms } => {
                    forms.iter().any(|f| pattern.matches_command(f))
                        || pattern.matches_command(line)
                }
                Invocation::Unjudged { text, .. } => {
                    let seen = pattern.matches_command(text) || pattern.matches_command(line);
                    if !seen && !strict {
                        // This rule might match what the command runs: nobody can tell.
                        return self.unjudged(tool, line, unit);
                    }
                    seen
                }
            };
            if matched {
                return self.verdict(rule.action, tool, subject, Some(rule));
            }
        }
        self.verdict(self.default, tool, subject, None)
    }

    fn unjudged(&self, tool: &str, line: &str, unit: &Invocation) -> Decision {
        let (text, why) = match unit {
            Invocation::Unjudged { text, why } => (text.as_str(), *why),
            Invocation::Judged { .. } => (line, "it could not be analyzed"),
        };
        Decision::Ask(format!(
            "Allow {tool} `{line}`? (the tool policy cannot judge `{text}`: {why})"
        ))
    }

    fn verdict(
        &self,
        action: Action,
        tool: &str,
        subject: &Option<Subject>,
        rule: Option<&Rule>,
    ) -> Decision {
        let what = match subject {
            Some(Subject::Command(c)) => format!("{tool} `{c}`"),
            Some(Subject::Path(p)) => format!("{tool} {}", p.first().map_or("", String::as_str)),
            None => tool.to_string(),
        };
        match action {
            Action::Allow => Decision::Allow,
            Action::Deny => {
                let because = match rule {
                    Some(Rule {
                        reason: Some(r), ..
                    }) => r.clone(),
                    Some(Rule {
                        pattern: Some(p), ..
                    }) => format!("it matches the denied pattern {:?}", p.source()),
                    _ => "this tool is not allowed".to_string(),
                };
                Decision::Deny(format!(
                    "Permission denied: {what} was refused by the tool policy ({because})."
                ))
            }
            Action::Ask => Decision::Ask(match rule.and_then(|r| r.reason.clone()) {
                Some(r) => format!("Allow {what}? ({r})"),
                None => format!("Allow {what}?"),
            }),
        }
    }

    fn subject(&self, tool: &str, args: &Value) -> Option<Subject> {
        if let Some(c) = args.get("command").and_then(Value::as_str) {
            return Some(Subject::Command(c.to_string()));
        }
        let path = match args.get("path").and_then(Value::as_str) {
            Some(p) => p.to_string(),
            None if matches!(tool, "ls" | "grep" | "find") => ".".to_string(),
            None => return None,
        };
        let mut forms = vec![path.clone()];
        if let Some(cwd) = &self.cwd {
            let cleaned = path.strip_prefix('@').unwrap_or(&path);
            let abs = normalize(&cwd.join(cleaned));
            let cwd = normalize(cwd);
            if let Ok(rel) = abs.strip_prefix(&cwd) {
                let rel = rel.to_string_lossy().into_owned();
                forms.push(if rel.is_empty() { ".".to_string() } else { rel });
            }
            forms.push(abs.to_string_lossy().into_owned());
        } else if let Some(stripped) = path.strip_prefix("./") {
            forms.push(stripped.to_string());
        }
        // The path the tool will really open (symlinks, `/proc/self/cwd`, `..` resolved), so
        // a rule cannot be dodged by naming its folder another way.
        let rules = self.path_rules(tool, Path::new("."));
        if let Ok(real) = crate::confine::resolve_arg(&rules.cwd, &path) {
            forms.extend(rules.forms(&real));
        }
        Some(Subject::Path(forms))
    }

    /// The path rules for `tool`, ready to judge resolved paths (the working directory is
    /// the policy's, else `cwd`).
    pub fn path_rules(&self, tool: &str, cwd: &Path) -> PathRules {
        let cwd = self.cwd.as_deref().unwrap_or(cwd);
        let cwd = std::env::current_dir()
            .map(|d| d.join(cwd))
            .unwrap_or_else(|_| cwd.to_path_buf());
        let cwd = crate::confine::real_path(&cwd).unwrap_or(cwd);
        PathRules {
            rules: self
                .rules
                .iter()
                .filter(|r| r.tool == "*" || r.tool == tool)
                .cloned()
                .collect(),
            policy: Policy::new(self.default),
            tool: tool.to_string(),
            cwd,
        }
    }
}

/// A policy's path rules for one tool, judging resolved paths: what the file tools apply to
/// the path they open and to each entry of a walk.
///
/// Only rules with a pattern judge paths; the first rule for the tool without one (which
/// decided the call as a whole) ends the search with `Allow`.
///
/// ```
/// use std::path::Path;
/// use tern_tools::policy::{Action, Decision, Policy, Rule};
/// let policy = Policy::new(Action::Allow)
///     .with_cwd("/repo")
///     .rule(Rule::deny("*").matching_glob("secrets/**").unwrap());
/// let rules = policy.path_rules("grep", Path::new("/repo"));
/// assert!(matches!(rules.decide(Path::new("/repo/secrets/key")), Decision::Deny(_)));
/// assert_eq!(rules.decide(Path::new("/repo/src/main.rs")), Decision::Allow);
/// ```
#[derive(Clone, Debug)]
pub struct PathRules {
    /// The policy's rules for this tool, in order.
    rules: Vec<Rule>,
    /// Renders verdicts (the rules live above).
    policy: Policy,
    tool: String,
    cwd: PathBuf,
}

impl PathRules {
    /// Whether no rule with a pattern applies to this tool (every path is then allowed).
    pub fn is_empty(&self) -> bool {
        !self.rules.iter().any(|r| r.pattern.is_some())
    }

    /// The verdict on the resolved path `real`.
    pub fn decide(&self, real: &Path) -> Decision {
        let subject = Some(Subject::Path(self.forms(real)));
        for rule in &self.rules {
            let Some(pattern) = &rule.pattern else {
                return Decision::Allow;
            };
            if subject.as_ref().is_some_and(|s| pattern.matches(s)) {
                return self
                    .policy
                    .verdict(rule.action, &self.tool, &subject, Some(rule));
            }
        }
        Decision::Allow
    }

    /// `real` relative to the working directory (when inside it), then absolute.
    fn forms(&self, real: &Path) -> Vec<String> {
        let mut forms = Vec::with_capacity(2);
        if let Ok(rel) = real.strip_prefix(&self.cwd) {
            let rel = rel.to_string_lossy().into_owned();
            forms.push(if rel.is_empty() { ".".to_string() } else { rel });
        }
        forms.push(real.to_string_lossy().into_owned());
        forms
    }
}

/// Lexical normalization (`.` and `..` removed); symlinks are the confinement's business.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A question for whoever approves calls.
#[derive(Clone, Debug)]
pub struct AskRequest {
    /// The tool called.
    pub tool_name: String,
    /// Its arguments.
    pub args: Value,
    /// The policy's question.
    pub prompt: String,
}

/// A person's answer to an [`AskRequest`].
///
/// ```
/// use tern_tools::policy::Answer;
/// assert_eq!(Answer::from(true), Answer::Allow);
/// let no = Answer::deny_because("use the test runner instead");
/// assert_eq!(Answer::from_value(&no.to_value()), no);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The call may run.
    Allow,
    /// The call is refused; a reason, when the person gave one, goes to the model.
    Deny {
        /// What the person said.
        reason: Option<String>,
    },
}

impl Answer {
    /// A refusal with what the person said (an empty reason counts as none).
    pub fn deny_because(reason: impl Into<String>) -> Self {
        let reason: String = reason.into();
        let reason = reason.trim();
        Answer::Deny {
            reason: (!reason.is_empty()).then(|| reason.to_string()),
        }
    }

    /// Whether the call may run.
    pub fn allows(&self) -> bool {
        matches!(self, Answer::Allow)
    }

    /// The answer as a journal holds it: `true`, `false`, or `{"allow": false, "reason"}`.
    pub fn to_value(&self) -> Value {
        match self {
            Answer::Allow => Value::Bool(true),
            Answer::Deny { reason: None } => Value::Bool(false),
            Answer::Deny {
                reason: Some(reason),
            } => serde_json::json!({"allow": false, "reason": reason}),
        }
    }

    /// An answer read back from [`Answer::to_value`]'s form; anything else is a refusal.
    pub fn from_value(value: &Value) -> Self {
        match value {
            Value::Bool(yes) => Answer::from(*yes),
            Value::Object(o) if o.get("allow") == Some(&Value::Bool(true)) => Answer::Allow,
            Value::Object(o) => Answer::Deny {
                reason: o.get("reason").and_then(Value::as_str).map(str::to_string),
            },
            _ => Answer::Deny { reason: None },
        }
    }
}

impl From<bool> for Answer {
    fn from(yes: bool) -> Self {
        if yes {
            Answer::Allow
        } else {
            Answer::Deny { reason: None }
        }
    }
}

/// Answers an [`AskRequest`]. The token fires when the run is aborted; an unanswered
/// question then counts as "no".
pub type AskFn =
    Arc<dyn Fn(AskRequest, CancellationToken) -> BoxFuture<'static, Answer> + Send + Sync>;

/// The outcome of [`PermissionGate::evaluate`], shaped for `BeforeToolCallResult`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Refuse the call.
    pub block: bool,
    /// What the model sees when the call is refused.
    pub reason: Option<String>,
}

impl Verdict {
    /// The call may run.
    pub fn allowed() -> Self {
        Verdict {
            block: false,
            reason: None,
        }
    }

    /// The person asked `prompt` said no (also when a recorded "no" is replayed).
    ///
    /// ```
    /// let v = tern_tools::policy::Verdict::declined("Allow bash?");
    /// assert!(v.block && v.reason.unwrap().contains("declined"));
    /// ```
    pub fn declined(prompt: &str) -> Self {
        Verdict {
            block: true,
            reason: Some(format!(
                "Permission denied: the user declined the call ({prompt})."
            )),
        }
    }

    /// The verdict for a person's `answer` to `prompt`: a refusal carries their reason.
    ///
    /// ```
    /// use tern_tools::policy::{Answer, Verdict};
    /// let v = Verdict::answered("Allow bash?", &Answer::deny_because("run the tests first"));
    /// assert!(v.block && v.reason.unwrap().ends_with("The user said: run the tests first"));
    /// ```
    pub fn answered(prompt: &str, answer: &Answer) -> Self {
        match answer {
            Answer::Allow => Verdict::allowed(),
            Answer::Deny { reason: None } => Verdict::declined(prompt),
            Answer::Deny {
                reason: Some(reason),
            } => Verdict {
                block: true,
                reason: Some(format!(
                    "Permission denied: the user declined the call ({prompt}). The user said: {reason}"
                )),
            },
        }
    }
}

/// A policy plus someone to ask: the `before_tool_call` hook's body.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use tern_tools::policy::{Action, PermissionGate, Policy, Rule};
///
/// let policy = Policy::new(Action::Allow).rule(Rule::ask("bash"));
/// let gate = PermissionGate::new(policy)
///     .with_ask(Arc::new(|req, _signal| Box::pin(async move { (req.args["command"] == "ls").into() })));
/// let token = tokio_util::sync::CancellationToken::new();
/// let ok = gate.evaluate("bash", &serde_json::json!({"command": "ls"}), &token).await;
/// assert!(!ok.block);
/// let no = gate.evaluate("bash", &serde_json::json!({"command": "make"}), &token).await;
/// assert!(no.block);
/// # });
/// ```
#[derive(Clone)]
pub struct PermissionGate {
    policy: Policy,
    ask: Option<AskFn>,
}

impl std::fmt::Debug for PermissionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionGate")
            .field("policy", &self.policy)
            .field("ask", &self.ask.is_some())
            .finish()
    }
}

impl PermissionGate {
    /// A gate without anyone to ask: `Ask` verdicts refuse the call.
    pub fn new(policy: Policy) -> Self {
        PermissionGate { policy, ask: None }
    }

    /// Sets who answers `Ask` verdicts.
    pub fn with_ask(mut self, ask: AskFn) -> Self {
        self.ask = Some(ask);
        self
    }

    /// The gate as an agent `before_tool_call` hook: refused calls become error results
    /// whose text is the policy's reason.
    ///
    /// ```
    /// use tern_tools::{Action, PermissionGate, Policy, Rule};
    /// let hook = PermissionGate::new(Policy::new(Action::Allow).rule(Rule::deny("bash"))).into_hook();
    /// let mut options = tern_agent::AgentOptions::default();
    /// options.hooks.before_tool_call = Some(hook);
    /// ```
    pub fn into_hook(self) -> tern_agent::hooks::BeforeToolCallHook {
        let gate = Arc::new(self);
        tern_agent::hooks::before_tool_call(move |ctx, signal| {
            let gate = gate.clone();
            async move {
                let verdict = gate.evaluate(&ctx.tool_call.name, &ctx.args, &signal).await;
                let blocked = tern_agent::hooks::BeforeToolCallResult {
                    block: true,
                    reason: verdict.reason,
                    ..Default::default()
                };
                Ok(verdict.block.then_some(blocked))
            }
        })
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Decides a call, asking when the policy says so.
    pub async fn evaluate(
        &self,
        tool_name: &str,
        args: &Value,
        signal: &CancellationToken,
    ) -> Verdict {
        match self.policy.check(tool_name, args) {
            Decision::Allow => Verdict {
                block: false,
                reason: None,
            },
            Decision::Deny(reason) => Verdict {
                block: true,
                reason: Some(reason),
            },
            Decision::Ask(prompt) => {
                let Some(ask) = &self.ask else {
                    return Verdict {
                        block: true,
                        reason: Some(format!(
                            "Permission denied: the tool policy requires approval ({prompt}) and no one is available to approve it."
                        )),
                    };
                };
                let request = AskRequest {
                    tool_name: tool_name.to_string(),
                    args: args.clone(),
                    prompt: prompt.clone(),
                };
                let answer = tokio::select! {
                    biased;
                    _ = signal.cancelled() => Answer::Deny { reason: None },
                    a = ask(request, signal.clone()) => a,
                };
                Verdict::answered(&prompt, &answer)
            }
        }
    }
}
