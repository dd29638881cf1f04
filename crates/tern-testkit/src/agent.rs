//! Helpers for agent runs in tests: a model pointed at a local Chat Completions server, a
//! scripted model that answers by the request, and what the tools answered in a transcript.

use std::sync::{Arc, Mutex, PoisonError};

use tern_ai::faux::{FauxModel, FauxResponse};
use tern_ai::{content_text, Context, Message, Model, StreamFn, StreamOptions, StreamStart};

/// An `openai-completions` model named `id` of `provider`, served at `base_url`: text
/// input, a 128k context window and `max_tokens` output, as a local scripted server is
/// declared.
pub fn chat_model(id: &str, provider: &str, base_url: &str, max_tokens: u64) -> Model {
    let mut m = Model::new(id, "openai-completions", provider, base_url);
    m.input = vec!["text".into()];
    m.context_window = 128_000;
    m.max_tokens = max_tokens;
    m
}

/// Each tool result of `messages`, in order: the tool's name, whether it is an error, and
/// its text blocks joined by newlines.
pub fn tool_results(messages: &[Message]) -> Vec<(String, bool, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((
                r.tool_name.to_string(),
                r.is_error,
                content_text(&r.content, "\n"),
            )),
            _ => None,
        })
        .collect()
}

/// How many assistant messages `messages` holds: which turn of a script a request is.
pub fn assistant_turns(messages: &[Message]) -> usize {
    messages.iter().filter(|m| m.role() == "assistant").count()
}

type Answer = dyn Fn(usize, &[Message]) -> FauxResponse + Send + Sync;

/// A scripted model whose responses depend on the request: `answer(n, transcript)` makes
/// the response to request `n` (0 for the first) from the transcript it carries, streamed
/// as a [`FauxModel`] streams it. It keeps every transcript it was sent; clones share them.
#[derive(Clone)]
pub struct ScriptFn {
    answer: Arc<Answer>,
    requests: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl ScriptFn {
    /// A model answering with `answer`.
    pub fn new(answer: impl Fn(usize, &[Message]) -> FauxResponse + Send + Sync + 'static) -> Self {
        ScriptFn {
            answer: Arc::new(answer),
            requests: Arc::default(),
        }
    }

    /// The transcripts of the requests so far, in order.
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.lock().clone()
    }

    /// How many requests it was sent.
    pub fn sent(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Message>>> {
        // A test that panicked while holding the lock has failed already: read on.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl StreamFn for ScriptFn {
    fn stream(&self, model: &Model, context: Context, options: &StreamOptions) -> StreamStart {
        let n = {
            let mut requests = self.lock();
            requests.push(context.messages.to_vec());
            requests.len() - 1
        };
        let response = (self.answer)(n, &context.messages);
        FauxModel::new(vec![response]).stream(model, context, options)
    }
}
