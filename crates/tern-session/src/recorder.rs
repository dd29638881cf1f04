//! Recording an agent into its session: every finished message (`message_end`) becomes a
//! `message` entry, settings changes become their entries. Write failures do not stop the
//! agent; the first one of a session is reported to a callback.

use std::sync::Arc;

use parking_lot::Mutex;
use tern_agent::{Agent, AgentEvent, Subscription};
use tern_ai::Message;

use crate::{SessionError, SessionFile};

/// Called with the first write failure of a session (later ones of the same session are
/// not reported again).
pub type WriteFailure = Box<dyn FnMut(&SessionError) + Send>;

/// Appends an agent's finished messages to a [`SessionFile`].
///
/// ```
/// use std::sync::Arc;
/// use parking_lot::Mutex;
/// use tern_agent::{Agent, AgentOptions};
/// use tern_ai::faux::{FauxModel, FauxResponse};
/// use tern_session::{Recorder, SessionFile};
///
/// let root = tempfile::tempdir()?;
/// let agent = Agent::new(AgentOptions {
///     stream_fn: Some(Arc::new(FauxModel::new(vec![FauxResponse::text("Hi.")]))),
///     ..Default::default()
/// });
/// let session = SessionFile::create(root.path(), std::path::Path::new("/p"));
/// let recorder = Arc::new(Mutex::new(Recorder::new(session)));
/// let _recording = Recorder::attach(&recorder, &agent);
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// agent.prompt("Hello").await.expect("a run");
/// # });
/// let path = recorder.lock().session().path().expect("on disk").to_path_buf();
/// let loaded = tern_session::load(&path).expect("readable");
/// assert_eq!(loaded.messages.len(), 2, "the prompt and the answer");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Recorder {
    session: SessionFile,
    prefix: Vec<Message>,
    /// Settings entries waiting for the first message (see [`Recorder::defer`]).
    pending: Vec<Setting>,
    on_failure: Option<WriteFailure>,
    failed: bool,
}

/// A settings entry: the model, the thinking level or the session's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// A `model_change` entry: provider and model id.
    Model(String, String),
    /// A `thinking_level_change` entry.
    Thinking(String),
    /// A `session_info` entry: the display name.
    Name(String),
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("session", &self.session)
            .field("prefix", &self.prefix.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl Recorder {
    /// A recorder writing into `session`.
    pub fn new(session: SessionFile) -> Self {
        Recorder {
            session,
            prefix: Vec::new(),
            pending: Vec::new(),
            on_failure: None,
            failed: false,
        }
    }

    /// Messages to write before the next recorded one: a new session's leading system
    /// message, which the agent holds from the start and never announces with an event.
    pub fn with_prefix(mut self, prefix: Vec<Message>) -> Self {
        self.prefix = prefix;
        self
    }

    /// Reports the first write failure of each session to `f`.
    pub fn on_first_failure(mut self, f: impl FnMut(&SessionError) + Send + 'static) -> Self {
        self.on_failure = Some(Box::new(f));
        self
    }

    /// Records `agent`'s finished messages from now on, until the subscription is dropped
    /// or unsubscribed.
    pub fn attach(recorder: &Arc<Mutex<Recorder>>, agent: &Agent) -> Subscription {
        let rec = recorder.clone();
        agent.subscribe_sync(move |event| {
            if let AgentEvent::MessageEnd { message } = event {
                rec.lock().record_message(message);
            }
        })
    }

    /// Goes on in another session (a new conversation) with its own prefix; the failure
    /// callback and the keys to redact stay, and the callback will report that session's
    /// first failure.
    pub fn switch_to(&mut self, session: SessionFile, prefix: Vec<Message>) {
        self.session = session.with_secrets(self.session.secrets());
        self.prefix = prefix;
        self.failed = false;
    }

    /// The session being written.
    pub fn session(&self) -> &SessionFile {
        &self.session
    }

    /// The session being written, to append entries of its own (durable journals append
    /// their step records here, so they chain into the same tree as the messages). Queued
    /// settings entries are written first: they go ahead of whatever the session holds.
    pub fn session_mut(&mut self) -> &mut SessionFile {
        self.flush_pending();
        &mut self.session
    }

    /// Queues a settings entry for the first message, so a session that records nothing is
    /// not created by its settings alone; pi, too, writes a new session's file with its first
    /// reply, the model and thinking level entries ahead of the messages.
    ///
    /// ```
    /// use tern_session::{recorder::Setting, Recorder, SessionFile};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s.jsonl");
    /// let mut rec = Recorder::new(SessionFile::create_at(&path, std::path::Path::new("/p")));
    /// rec.defer(Setting::Model("openai".into(), "gpt-4o".into()));
    /// rec.defer(Setting::Thinking("high".into()));
    /// assert!(!path.exists());
    /// rec.record_message(&tern_ai::Message::user_text("hi"));
    /// let loaded = tern_session::load(&path).expect("readable");
    /// assert_eq!(loaded.model, Some(("openai".into(), "gpt-4o".into())));
    /// assert_eq!(loaded.thinking_level.as_deref(), Some("high"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn defer(&mut self, setting: Setting) {
        self.pending.push(setting);
    }

    /// Writes the queued settings entries.
    fn flush_pending(&mut self) {
        for s in std::mem::take(&mut self.pending) {
            let r = match &s {
                Setting::Model(p, id) => self.session.append_model_change(p, id),
                Setting::Thinking(level) => self.session.append_thinking_change(level),
                Setting::Name(name) => self.session.append_session_info(name),
            };
            self.report(r);
        }
    }

    /// Writes a finished message (after any queued settings and pending prefix).
    pub fn record_message(&mut self, message: &Message) {
        self.flush_pending();
        for m in std::mem::take(&mut self.prefix) {
            let r = self.session.append_message(&m);
            self.report(r);
        }
        let r = self.session.append_message(message);
        self.report(r);
    }

    /// Writes a `model_change` entry.
    pub fn record_model_change(&mut self, provider: &str, model_id: &str) {
        self.flush_pending();
        let r = self.session.append_model_change(provider, model_id);
        self.report(r);
    }

    /// Writes a `thinking_level_change` entry.
    pub fn record_thinking_change(&mut self, level: &str) {
        self.flush_pending();
        let r = self.session.append_thinking_change(level);
        self.report(r);
    }

    fn report(&mut self, result: Result<(), SessionError>) {
        if let Err(e) = result {
            if !self.failed {
                self.failed = true;
                if let Some(f) = self.on_failure.as_mut() {
                    f(&e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_prefix_goes_first_and_a_failure_is_reported_once() {
        let dir = tempfile::tempdir().expect("dir");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").expect("write");
        let failures = Arc::new(Mutex::new(Vec::new()));
        let seen = failures.clone();
        let mut rec = Recorder::new(SessionFile::create_at(
            &blocker.join("s.jsonl"),
            Path::new("/p"),
        ))
        .on_first_failure(move |e| seen.lock().push(e.to_string()));
        rec.record_message(&Message::user_text("a"));
        rec.record_thinking_change("high");
        assert_eq!(failures.lock().len(), 1);

        let good = dir.path().join("good.jsonl");
        rec.switch_to(
            SessionFile::create_at(&good, Path::new("/p")),
            vec![Message::user_text("first")],
        );
        rec.record_message(&Message::user_text("second"));
        let loaded = crate::load(&good).expect("load");
        let expected = [Message::user_text("first"), Message::user_text("second")];
        let content = |ms: &[Message]| ms.iter().map(Message::content_json).collect::<Vec<_>>();
        assert_eq!(content(&loaded.messages), content(&expected));
        assert_eq!(failures.lock().len(), 1, "the good session did not fail");
    }
}
