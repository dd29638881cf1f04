//! Tools: what the model may call, and how a call runs.
//!
//! A tool is either **typed** (its arguments are a `serde` + `schemars` type, so the schema
//! is derived) or **dynamic** (a raw JSON Schema and `serde_json::Value` arguments).
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use tern_agent::{AgentTool, ToolResult};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let add = AgentTool::typed("add", "Add two integers.", |args: Add, _call| async move {
//!     Ok(ToolResult::text((args.a + args.b).to_string()))
//! });
//! assert_eq!(add.name(), "add");
//! assert_eq!(add.parameters()["required"], serde_json::json!(["a", "b"]));
//! ```

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tern_ai::schema::CompiledSchema;
use tern_ai::{BoxError, ContentBlock, Name, ToolDeclaration, Usage};

use crate::shared_declarations::{share, SharedDeclaration};
use crate::tool_args::ToolArgs;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How the calls of one assistant message run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecutionMode {
    /// Prepare calls one after another, then execute them concurrently (the default).
    #[default]
    Parallel,
    /// Prepare, execute and finish each call before the next.
    Sequential,
}

/// Whether a call interrupted by a crash may run again on recovery (the reference declares
/// `replay: "never" | "safe"` on tools). Serialized as `"never"` / `"safe"`.
///
/// ```
/// use tern_agent::{AgentTool, Replay, ToolResult};
/// let ls = AgentTool::dynamic("ls", "List.", serde_json::json!({"type":"object"}),
///     |_call| async { Ok(ToolResult::text("a b")) });
/// assert_eq!(ls.replay(), Replay::Never, "never is the safe default");
/// assert_eq!(ls.with_replay(Replay::Safe).replay(), Replay::Safe);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    /// The call may have changed the world: an interrupted call is not re-run; the model is
    /// told its outcome is unknown.
    #[default]
    Never,
    /// Running the call twice is harmless (reads): an interrupted call is re-run.
    Safe,
}

/// What a tool returns (the reference's `AgentToolResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// Text and image blocks the model sees (`None`: the tool returned no content, which
    /// the tool-result message records as `[]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// Data for applications; not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Machine-readable result matching `content` (boxed: rare, and a result moves through
    /// every future of a tool call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Box<Value>>,
    /// Usage of a model the tool called (boxed: rare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<Usage>>,
    /// Marks the result as an error without failing the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Asks the loop to stop after this batch (only when every result of the batch asks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
}

impl ToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: Some(vec![ContentBlock::text(text)]),
            ..Default::default()
        }
    }

    /// The content blocks (empty when there are none).
    pub fn content(&self) -> &[ContentBlock] {
        self.content.as_deref().unwrap_or(&[])
    }

    /// Sets `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The error result the loop builds for a failed call: the message as text, `details: {}`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: Some(vec![ContentBlock::text(message)]),
            details: Some(Value::Object(Default::default())),
            ..Default::default()
        }
    }
}

/// Sends partial results while a tool runs (`tool_execution_update` events).
///
/// Updates sent after the tool's `execute` has settled are dropped, as in the reference.
///
/// ```
/// use tern_agent::{ToolResult, ToolUpdater};
/// let (updater, mut rx) = ToolUpdater::channel();
/// updater.update(ToolResult::text("50%"));
/// updater.close();
/// updater.update(ToolResult::text("late"));
/// assert_eq!(rx.try_recv().unwrap(), ToolResult::text("50%"));
/// assert!(rx.try_recv().is_err());
/// ```
#[derive(Clone, Default)]
pub struct ToolUpdater {
    // One allocation per updater: the open flag lives with whatever takes the updates.
    target: Option<Arc<dyn UpdateTarget>>,
}

/// Where a [`ToolUpdater`]'s updates go: the loop's executor, or a handler closure.
pub(crate) trait UpdateTarget: Send + Sync {
    /// Takes one update (only called while open).
    fn update(&self, partial: ToolResult);
    /// Whether updates are still taken.
    fn is_open(&self) -> bool;
    /// Stops taking updates.
    fn close(&self);
}

struct Handler<F> {
    open: AtomicBool,
    handler: F,
}

impl<F: Fn(ToolResult) + Send + Sync> UpdateTarget for Handler<F> {
    fn update(&self, partial: ToolResult) {
        (self.handler)(partial)
    }
    fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }
    fn close(&self) {
        self.open.store(false, Ordering::SeqCst)
    }
}

impl ToolUpdater {
    /// An updater whose updates go nowhere.
    pub fn noop() -> Self {
        ToolUpdater { target: None }
    }

    /// An updater that hands each update to `handler`, synchronously, until closed.
    pub fn new(handler: impl Fn(ToolResult) + Send + Sync + 'static) -> Self {
        ToolUpdater {
            target: Some(Arc::new(Handler {
                open: AtomicBool::new(true),
                handler,
            })),
        }
    }

    pub(crate) fn to(target: Arc<dyn UpdateTarget>) -> Self {
        ToolUpdater {
            target: Some(target),
        }
    }

    /// An updater and the receiver of its updates (for tests and for tools that run tools).
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ToolResult>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            ToolUpdater::new(move |r| {
                let _ = tx.send(r);
            }),
            rx,
        )
    }

    /// Stops accepting updates; later calls of [`update`](Self::update) are dropped.
    pub fn close(&self) {
        if let Some(t) = &self.target {
            t.close();
        }
    }

    /// Reports a partial result. Never blocks.
    pub fn update(&self, partial: ToolResult) {
        if let Some(t) = self.target.as_ref().filter(|t| t.is_open()) {
            t.update(partial);
        }
    }
}

impl fmt::Debug for ToolUpdater {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolUpdater").finish_non_exhaustive()
    }
}

/// One call of a tool, as `execute` receives it.
#[derive(Clone, Debug)]
pub struct ToolCallInput {
    /// The call id.
    pub tool_call_id: Name,
    /// Prepared and validated arguments (shared with the call when validation changed
    /// nothing).
    pub args: ToolArgs,
    /// The run's cancellation token: a tool should stop when it fires.
    pub signal: CancellationToken,
    /// Partial results.
    pub updater: ToolUpdater,
}

/// What a tool's body returns: a result, or an error whose text becomes an error result.
pub type ToolOutput = Result<ToolResult, BoxError>;

type ExecuteFn = dyn Fn(ToolCallInput) -> BoxFuture<'static, ToolOutput> + Send + Sync;
type PrepareFn = dyn Fn(&Value) -> Option<Value> + Send + Sync;

// Clone for copy-on-write: a builder call on a shared tool changes a copy.
#[derive(Clone)]
struct ToolInner {
    /// The declaration and its compiled parameters schema, shared by every tool with an
    /// equal declaration (the builder calls never change it).
    shared: Arc<SharedDeclaration>,
    label: String,
    execution_mode: Option<ToolExecutionMode>,
    replay: Replay,
    prepare_arguments: Option<Arc<PrepareFn>>,
    execute: Arc<ExecuteFn>,
}

/// A tool the agent can execute. Cheap to clone (shared).
#[derive(Clone)]
pub struct AgentTool {
    inner: Arc<ToolInner>,
}

impl fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.inner.shared.declaration.name)
            .field("execution_mode", &self.inner.execution_mode)
            .finish_non_exhaustive()
    }
}

impl AgentTool {
    /// A tool with a raw JSON Schema; `execute` receives the validated arguments as JSON.
    ///
    /// ```
    /// use serde_json::json;
    /// use tern_agent::{AgentTool, ToolResult};
    /// let echo = AgentTool::dynamic(
    ///     "echo",
    ///     "Echo the text.",
    ///     json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
    ///     |call| async move { Ok(ToolResult::text(call.args["text"].as_str().unwrap_or(""))) },
    /// );
    /// assert_eq!(echo.label(), "echo");
    /// ```
    pub fn dynamic<F, Fut>(name: &str, description: &str, parameters: Value, execute: F) -> Self
    where
        F: Fn(ToolCallInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        AgentTool {
            inner: Arc::new(ToolInner {
                shared: share(ToolDeclaration {
                    name: name.to_string(),
                    description: description.to_string(),
                    parameters,
                    constrained_sampling: None,
                }),
                label: name.to_string(),
                execution_mode: None,
                replay: Replay::Never,
                prepare_arguments: None,
                execute: Arc::new(move |input| Box::pin(execute(input))),
            }),
        }
    }

    /// A tool whose arguments are the type `A`; the schema is derived with `schemars`.
    /// Arguments that pass the schema but not `serde` fail the call with serde's message.
    pub fn typed<A, F, Fut>(name: &str, description: &str, execute: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(A, ToolCallInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        let execute = Arc::new(execute);
        Self::dynamic(name, description, schema_for::<A>(), move |input| {
            let execute = execute.clone();
            async move {
                let args: A = input
                    .args
                    .parse()
                    .map_err(|e| format!("Invalid arguments: {e}"))?;
                execute(args, input).await
            }
        })
    }

    /// Changes this handle's tool; when other handles share it, they keep the unchanged
    /// tool and this handle gets a changed copy.
    fn map_inner(mut self, f: impl FnOnce(&mut ToolInner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Sets the display label.
    pub fn with_label(self, label: &str) -> Self {
        let label = label.to_string();
        self.map_inner(|i| i.label = label)
    }

    /// Replaces the JSON Schema the model sees and the arguments are validated against (a
    /// typed tool keeps deserializing its type from the validated arguments).
    ///
    /// ```
    /// use serde_json::json;
    /// use tern_agent::{AgentTool, ToolResult};
    /// let tool = AgentTool::dynamic("t", "A tool.", json!({"type": "object"}), |_| async {
    ///     Ok(ToolResult::text("ok"))
    /// })
    /// .with_parameters(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
    /// assert_eq!(tool.declaration().parameters["properties"]["q"]["type"], "string");
    /// ```
    pub fn with_parameters(self, parameters: Value) -> Self {
        self.map_inner(|i| {
            let mut declaration = (*i.shared.declaration).clone();
            declaration.parameters = parameters;
            i.shared = share(declaration);
        })
    }

    /// Sets the tool's constrained-sampling preference (pi's `constrainedSampling`), e.g.
    /// `{"type": "json_schema", "strict": "prefer"}`: providers that support strict tools
    /// then send this one strict, its schema in the strict subset, where the schema fits.
    /// [`tern_ai::message::ConstrainedSampling`] converts into this JSON; its `Grammar`
    /// variant makes the tool an OpenAI custom tool with that grammar on models that take
    /// them (its parameters then have exactly one required string property, the input).
    ///
    /// ```
    /// use serde_json::json;
    /// use tern_agent::{AgentTool, ToolResult};
    /// let tool = AgentTool::dynamic("t", "A tool.", json!({"type": "object"}), |_| async {
    ///     Ok(ToolResult::text("ok"))
    /// })
    /// .with_constrained_sampling(json!({"type": "json_schema", "strict": "prefer"}));
    /// assert!(tool.declaration().constrained_sampling.is_some());
    /// ```
    pub fn with_constrained_sampling(self, config: Value) -> Self {
        self.map_inner(|i| {
            let mut declaration = (*i.shared.declaration).clone();
            declaration.constrained_sampling = Some(config);
            i.shared = share(declaration);
        })
    }

    /// Sets the execution mode (`Sequential` makes every batch containing this tool sequential).
    pub fn with_execution_mode(self, mode: ToolExecutionMode) -> Self {
        self.map_inner(|i| i.execution_mode = Some(mode))
    }

    /// The same tool (name, schema, label, mode, replay policy) with another `execute`:
    /// the seam for layers that wrap a call without changing the tool the model sees
    /// (durable runs journal each call around the original `execute`).
    ///
    /// ```
    /// use tern_agent::{AgentTool, ToolResult};
    /// let t = AgentTool::dynamic("t", "T.", serde_json::json!({"type":"object"}),
    ///     |_c| async { Ok(ToolResult::text("inner")) });
    /// let inner = t.clone();
    /// let wrapped = t.with_execute(move |call| {
    ///     let run = inner.execute(call);
    ///     async move { run.await.map(|r| ToolResult::text(format!("wrapped {:?}", r.content().len()))) }
    /// });
    /// assert_eq!(wrapped.name(), "t");
    /// ```
    pub fn with_execute<F, Fut>(self, execute: F) -> Self
    where
        F: Fn(ToolCallInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        self.map_inner(|i| i.execute = Arc::new(move |input| Box::pin(execute(input))))
    }

    /// Sets the replay policy durable runs follow when a call of this tool was interrupted.
    pub fn with_replay(self, replay: Replay) -> Self {
        self.map_inner(|i| i.replay = replay)
    }

    /// The replay policy ([`Replay::Never`] unless set).
    pub fn replay(&self) -> Replay {
        self.inner.replay
    }

    /// Rewrites raw arguments before validation; return `None` to keep them unchanged.
    pub fn with_prepare_arguments(
        self,
        f: impl Fn(&Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.map_inner(|i| i.prepare_arguments = Some(Arc::new(f)))
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.inner.shared.declaration.name
    }

    /// Display label.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// Description for the model.
    pub fn description(&self) -> &str {
        &self.inner.shared.declaration.description
    }

    /// JSON Schema of the arguments.
    pub fn parameters(&self) -> &Value {
        &self.inner.shared.declaration.parameters
    }

    /// The parameters schema compiled for argument validation: compiled on first use, then
    /// shared by every clone of the tool and every tool with an equal declaration (one
    /// compilation per process, however many agents build the tool).
    pub fn compiled_parameters(&self) -> &CompiledSchema {
        self.inner.shared.compiled()
    }

    /// The declaration the model sees, shared by every clone of the tool, every tool with an
    /// equal declaration and every transcript that declares it.
    ///
    /// ```
    /// use tern_agent::{AgentTool, ToolResult};
    /// let make = || AgentTool::dynamic("t", "T.", serde_json::json!({"type": "object"}),
    ///     |_c| async { Ok(ToolResult::text("ok")) });
    /// // Two agents' copies of one tool hold one declaration.
    /// assert!(std::sync::Arc::ptr_eq(make().declaration(), make().declaration()));
    /// ```
    pub fn declaration(&self) -> &Arc<ToolDeclaration> {
        &self.inner.shared.declaration
    }

    /// The execution mode, when set.
    pub fn execution_mode(&self) -> Option<ToolExecutionMode> {
        self.inner.execution_mode
    }

    /// Applies `prepareArguments`; `None` when the tool has none or it changed nothing.
    pub fn prepare_arguments(&self, args: &Value) -> Option<Value> {
        self.inner.prepare_arguments.as_ref().and_then(|f| f(args))
    }

    /// Runs the tool.
    pub fn execute(&self, input: ToolCallInput) -> BoxFuture<'static, ToolOutput> {
        (self.inner.execute)(input)
    }

    /// Whether two handles are the same tool object.
    pub fn ptr_eq(&self, other: &AgentTool) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// The JSON Schema of `A` as a tool-parameters object (no `$schema`/`title` noise).
pub fn schema_for<A: schemars::JsonSchema>() -> Value {
    let schema = schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft07())
        .into_root_schema_for::<A>();
    let mut v = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.shift_remove("$schema");
        m.shift_remove("title");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_calls_on_a_shared_tool_change_only_that_handle() {
        let tool = AgentTool::dynamic("t", "A tool.", serde_json::json!({}), |_| async {
            Ok(ToolResult::text("ok"))
        });
        let shared = tool.clone();
        let sequential = shared.with_execution_mode(ToolExecutionMode::Sequential);
        assert_eq!(
            sequential.execution_mode(),
            Some(ToolExecutionMode::Sequential)
        );
        assert_eq!(tool.execution_mode(), None);
        let labelled = sequential.with_label("Labelled");
        assert_eq!(labelled.label(), "Labelled");
        assert_eq!(
            labelled.execution_mode(),
            Some(ToolExecutionMode::Sequential)
        );
    }
}
