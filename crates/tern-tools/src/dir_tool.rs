//! What `grep`, `find` and `ls` share: a parallel tool over an optional `path`
//! argument (default `.`) that is resolved, checked against the tool's path rules, and then
//! served on the blocking pool, raced against the call's cancellation token; and the
//! bracketed notices their listings end with.

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use tern_agent::{AgentTool, Replay, ToolExecutionMode, ToolResult};
use tokio_util::sync::CancellationToken;

use crate::cancel::blocking;
use crate::config::{config_tool, ToolConfig};
use crate::confine::{enforce_path_rules, path_rules, resolve_path, ResolvedPath};
use crate::policy::PathRules;
use crate::truncate::{format_size, Truncation};

/// Arguments that name the directory (or file) a tool looks in.
pub(crate) trait PathArg {
    /// The `path` argument as the model gave it, if it gave one.
    fn path(&self) -> Option<&str>;
}

/// The directory tools' arguments all name it in an optional `path` field.
macro_rules! path_arg {
    ($($args:ty),*) => {
        $(impl PathArg for $args {
            fn path(&self) -> Option<&str> {
                self.path.as_deref()
            }
        })*
    };
}
path_arg!(
    crate::find::FindArgs,
    crate::grep::GrepArgs,
    crate::ls::LsArgs
);

/// The blocking body of a directory tool: the resolved path, the tool's path rules, the
/// arguments, the output byte budget and the cancellation token.
pub(crate) type DirToolBody<A> = fn(
    &ResolvedPath,
    Option<PathRules>,
    &A,
    usize,
    &CancellationToken,
) -> Result<ToolResult, String>;

/// A parallel tool `name` whose body runs on the path its arguments name.
pub(crate) fn dir_tool<A>(
    config: &ToolConfig,
    name: &'static str,
    description: &str,
    body: DirToolBody<A>,
) -> AgentTool
where
    A: PathArg + DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
    config_tool(
        config,
        name,
        description,
        move |config, args: A, call| async move {
            let arg = args.path().unwrap_or(".").to_string();
            let resolved = resolve_path(&config, &arg)?;
            enforce_path_rules(&config, name, &resolved)?;
            let rules = path_rules(&config, name);
            let max_bytes = config.max_output_bytes;
            let out = blocking(&call.signal, move |token| {
                body(&resolved, rules, &args, max_bytes, &token)
            })
            .await?;
            Ok(out)
        },
    )
    .with_execution_mode(ToolExecutionMode::Parallel)
    // Listing twice changes nothing, so a call cut by a crash is simply run again.
    .with_replay(Replay::Safe)
}

/// The bracketed notices a listing's text ends with, each with its `details` entry, in the
/// order the reference adds them.
#[derive(Default)]
pub(crate) struct Notices {
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Notices {
    /// Adds `notice` to the text and `key: detail` to the details.
    pub(crate) fn add(&mut self, notice: String, key: &str, detail: Value) {
        self.notices.push(notice);
        self.details.insert(key.into(), detail);
    }

    /// The count-limit notice, when the limit `limit` cut the listing (`reached`): "LIMIT
    /// WHAT limit reached. Use limit=2×LIMIT for more" and `hint`, with the detail `key`.
    pub(crate) fn limit(&mut self, reached: bool, limit: usize, what: &str, hint: &str, key: &str) {
        if reached {
            let notice = format!(
                "{limit} {what} limit reached. Use limit={} for more{hint}",
                limit * 2
            );
            self.add(notice, key, json!(limit));
        }
    }

    /// The byte-cap notice, when `truncation` cut the listing.
    pub(crate) fn truncation(&mut self, truncation: &Truncation, max_bytes: usize) {
        if truncation.truncated {
            let notice = format!("{} limit reached", format_size(max_bytes));
            self.add(notice, "truncation", json!(truncation));
        }
    }

    /// The result: `text`, then the notices joined in brackets, with the details if any.
    pub(crate) fn into_result(self, text: String) -> ToolResult {
        let text = if self.notices.is_empty() {
            text
        } else {
            format!("{text}\n\n[{}]", self.notices.join(". "))
        };
        let mut result = ToolResult::text(text);
        if !self.details.is_empty() {
            result.details = Some(Value::Object(self.details));
        }
        result
    }
}
