//! What the four providers share around their wire format: the [`WireApi`] trait each one
//! implements, and [`run`] / [`read_body`], which own the run prologue (credentials, request,
//! sending), the read loop (framing, abort and idle handling, decode failures) and the
//! end-of-stream checks, so an API only maps records and says how a stream may end.
//! [`prepare`] and [`send_and_read`] are the two halves of [`run`], for an API that may send
//! its request another way first (Codex's WebSocket).

use std::future::Future;

use super::http::{self, Body, HttpFailure, HttpRequest, SendError};
use super::model_options::api_key;
use super::output::Output;
use super::ProviderSink;
use crate::message::StopReason;
use crate::model::Model;
use crate::sse::{GeminiRecord, GeminiRecordSplitter, SseDecoder, TooLong};
use crate::stream_fn::{Context, StreamOptions};

/// How the body of a streaming response is cut into records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Server-sent events as the OpenAI SDK reads them: a record without its blank line at
    /// the end of the body is dropped.
    Sse,
    /// Server-sent events as pi-ai's own reader reads them: the pending record is dispatched
    /// at the end of the body.
    SseFlushAtEnd,
    /// The Gemini SDK's records (split on blank lines, `data:`-prefixed only); leftover text
    /// at the end of the body is an error.
    Gemini,
    /// The AWS event-stream binary framing (Bedrock). A record's `event` is the
    /// `:message-type` and, after a space, the `:event-type` (`event`), `:exception-type`
    /// (`exception`) or `:error-code` (`error`); its data is the payload, or the
    /// `:error-message` of an `error`.
    EventStream,
}

/// One record of the body: the SSE event name (if any) and the data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SseRecord<'r> {
    /// The `event:` field; `None` for Gemini records and unnamed events.
    pub event: Option<&'r str>,
    /// The data (the text after `data:`).
    pub data: &'r str,
}

impl Framing {
    /// Whether `data` ends the stream before the body does: the OpenAI SDK stops at
    /// `[DONE]` and leaves the rest of the body unread.
    pub(crate) fn ends_stream(self, data: &str) -> bool {
        self == Framing::Sse && data == "[DONE]"
    }
}

/// What a request needs before it is sent.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Credentials {
    /// Nothing: the host may not need a key.
    Optional,
    /// An API key (option or environment).
    ApiKey,
    /// An API key, or one of these headers (lower-case) in the model or option headers.
    ApiKeyOrHeader(&'static [&'static str]),
}

/// The reference's words, then where tern looked: the option, the provider's variables and,
/// when headers count, those headers.
fn missing_key_message(model: &Model, credentials: Credentials) -> String {
    let vars = super::catalog::env_api_key_vars(&model.provider);
    let mut tried = vec!["the apiKey option".to_string()];
    tried.extend(vars.iter().map(|v| v.to_string()));
    if let Credentials::ApiKeyOrHeader(headers) = credentials {
        tried.extend(headers.iter().map(|h| format!("the {h} header")));
    }
    let last = tried.pop().unwrap_or_default();
    let list = match tried.is_empty() {
        true => last,
        false => format!("{} and {last}", tried.join(", ")),
    };
    format!("No API key for provider: {} (tried {list})", model.provider)
}

impl Credentials {
    fn check(self, model: &Model, options: &StreamOptions) -> Result<(), String> {
        let present = match self {
            Credentials::Optional => true,
            Credentials::ApiKey => api_key(model, options).is_some(),
            Credentials::ApiKeyOrHeader(names) => {
                api_key(model, options).is_some()
                    || options
                        .headers
                        .keys()
                        .chain(model.headers.iter().flat_map(|h| h.keys()))
                        .any(|k| names.contains(&k.to_ascii_lowercase().as_str()))
            }
        };
        match present {
            true => Ok(()),
            false => Err(missing_key_message(model, self)),
        }
    }
}

/// A request as [`WireApi::build_request`] builds it, or why it cannot be sent.
pub(crate) type Built = Result<HttpRequest, String>;

/// [`Built`] with whether it sends any `prefer` strict tool strict
/// ([`WireApi::build_request_with`]).
pub(crate) type BuiltWith = Result<(HttpRequest, bool), String>;

/// One attempt at a request: its options, and whether its `prefer` strict tools go
/// non-strict (Claude rejected them for its strict-tool limits, in this session or the
/// attempt before).
#[derive(Clone, Copy)]
pub(crate) struct Attempt<'a> {
    pub(crate) options: &'a StreamOptions,
    pub(crate) preferred_strict_off: bool,
}

/// The request half of one wire API: what it needs, how to build its request, how its SDK
/// words HTTP failures, and which mapper reads its responses (each API implements it in
/// its `request.rs`).
pub(crate) trait WireApi: 'static {
    /// What the run fails without, before any request.
    const CREDENTIALS: Credentials = Credentials::Optional;

    /// Whether failures before the first byte are retried (`maxRetries`); hosts read with a
    /// bare `fetch` never retry.
    const RETRIES: bool = true;

    /// The message of a run the caller aborted while the request or the body was pending.
    const ABORT_MESSAGE: &'static str = "Request was aborted";

    /// Whether an abort while the body is read just ends the body (the OpenAI SDK's stream
    /// swallows its `AbortError`), so the end-of-stream checks word the failure.
    const ABORT_ENDS_BODY: bool = false;

    /// Retries before the first byte whatever `maxRetries` says (an SDK with its own retry
    /// strategy); `None` follows the options.
    const MAX_RETRIES: Option<u32> = None;

    /// The mapper of a response.
    type Stream: WireStream;

    /// Fields of the message known before anything is sent (they are in every event).
    fn initial_message(
        _model: &Model,
        _options: &StreamOptions,
        _message: &mut crate::message::AssistantMessage,
    ) {
    }

    /// Configuration the request cannot go without (beyond credentials), checked first.
    fn check(_model: &Model, _options: &StreamOptions) -> Result<(), String> {
        Ok(())
    }

    /// Headers that need a round trip first (an OAuth token minted from credentials);
    /// none by default. `Err` ends the run with that message, before the request.
    fn authorize<'a>(
        _model: &'a Model,
        _options: &'a StreamOptions,
    ) -> impl Future<Output = Result<Vec<(String, String)>, String>> + Send + 'a {
        async { Ok(Vec::new()) }
    }

    /// The request the reference would send; `Err` fails the run with that message before
    /// anything is sent (a tool the request cannot declare). An API implements this or
    /// [`build_request_with`](WireApi::build_request_with) (each is the other by default).
    fn build_request(model: &Model, context: &Context, options: &StreamOptions) -> Built {
        let attempt = Attempt {
            options,
            preferred_strict_off: false,
        };
        Self::build_request_with(model, context, attempt).map(|(request, _)| request)
    }

    /// [`build_request`](WireApi::build_request) for one attempt (`prefer` strict tools sent
    /// non-strict when [`Attempt::preferred_strict_off`]), and whether the request sends any
    /// `prefer` tool strict. Only the APIs that retry after Claude's strict-tool limits
    /// ([`strict_limit_rejection`](WireApi::strict_limit_rejection)) tell the two apart.
    fn build_request_with(model: &Model, context: &Context, attempt: Attempt<'_>) -> BuiltWith {
        Self::build_request(model, context, attempt.options).map(|r| (r, false))
    }

    /// When `failure` is Claude's rejection of too many or too complex strict tools: the
    /// diagnostic type of the retry without `prefer` strict tools and the SDK error's
    /// message; `None` (the default) never retries.
    fn strict_limit_rejection(_failure: &HttpFailure) -> Option<(&'static str, String)> {
        None
    }

    /// The mapper of a response to this request (by default a fresh one; the OpenAI APIs
    /// tell theirs the declared grammar tools).
    fn new_stream(_model: &Model, _context: &Context) -> Self::Stream {
        Self::Stream::default()
    }

    /// The SDK's error message for an HTTP failure (also the text of a refused retry delay);
    /// by default the OpenAI SDK's, which most hosts share.
    fn sdk_message(failure: &HttpFailure) -> String {
        super::openai_sdk::sdk_message(failure)
    }

    /// The displayed text of an HTTP error status.
    fn status_message(_model: &Model, failure: &HttpFailure) -> String {
        Self::sdk_message(failure)
    }

    /// Last touches to the message of a run that failed with an HTTP error status.
    fn on_status_failure(_failure: &HttpFailure, _message: &mut crate::message::AssistantMessage) {}
}

/// The stream half of one wire API: the mapper state of one response and how its records
/// map to events (each API implements it in its `stream.rs`).
pub(crate) trait WireStream: Default + Send {
    /// How the response body is cut into records.
    const FRAMING: Framing;

    /// Whether `start` is reported when the body begins; `false` leaves it to the mapper.
    const STARTS_ON_BODY: bool = true;

    /// Sees the response (its headers) before the body is read.
    fn on_response(&mut self, _body: &Body) {}

    /// Maps one record; `Err` ends the stream with that message.
    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String>;

    /// Checks once the body is read without failure; `Err` ends the stream with that message.
    fn end_of_stream(&mut self, _out: &mut Output<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Last touches to the message before a failure is reported.
    fn on_failure(&mut self, _out: &mut Output<'_>) {}

    /// Last touches to the message before an abort is reported; by default those of a
    /// failure.
    fn on_abort(&mut self, out: &mut Output<'_>) {
        self.on_failure(out);
    }

    /// After a clean end: `Ok` ends with `done`, `Err` with an `error` carrying the message.
    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String>;
}

/// The usual end of a stream: no stop reason is `no_stop_reason`; an `error` or `aborted`
/// stop reason fails with `error_text` of the message (or a generic text).
pub(crate) fn settle_stop_reason(
    out: &Output<'_>,
    no_stop_reason: &str,
    error_text: impl FnOnce(&crate::message::AssistantMessage) -> Option<String>,
) -> Result<(), String> {
    let (reason, error) = out.with(|m| (m.stop_reason, error_text(m)));
    match reason {
        StopReason::Pending => Err(no_stop_reason.to_string()),
        StopReason::Error | StopReason::Aborted => {
            Err(error.unwrap_or_else(|| "An unknown error occurred".into()))
        }
        _ => Ok(()),
    }
}

/// How a stream's error text is read off the finished message, for [`settle_stop_reason`].
pub(crate) type ErrorText = fn(&crate::message::AssistantMessage) -> Option<String>;

/// An API that streams in another API's format (Azure in OpenAI's Responses, Vertex in
/// Gemini's): the other API's mapper, under this API's own name when a stream ends without
/// a stop reason.
pub(crate) trait Variant: Send + 'static {
    /// The mapper this API shares.
    type Base: WireStream;
    /// The error of a body that ended without a stop reason.
    const NO_STOP_REASON: &'static str;
    /// The error text of a message whose stop reason is `error` or `aborted`.
    const ERROR_TEXT: ErrorText;

    /// A fresh mapper for one response.
    fn base() -> Self::Base {
        Self::Base::default()
    }
}

/// The [`WireStream`] of a [`Variant`]: every step is the base mapper's but the settle.
pub(crate) struct VariantStream<V: Variant>(V::Base);

impl<V: Variant> VariantStream<V> {
    /// The variant's stream over this base mapper.
    pub(crate) fn with_base(base: V::Base) -> Self {
        VariantStream(base)
    }
}

impl<V: Variant> Default for VariantStream<V> {
    fn default() -> Self {
        VariantStream(V::base())
    }
}

impl<V: Variant> WireStream for VariantStream<V> {
    const FRAMING: Framing = V::Base::FRAMING;

    fn record(&mut self, out: &mut Output<'_>, record: SseRecord<'_>) -> Result<(), String> {
        self.0.record(out, record)
    }

    fn end_of_stream(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        self.0.end_of_stream(out)
    }

    fn on_failure(&mut self, out: &mut Output<'_>) {
        self.0.on_failure(out);
    }

    fn settle(&mut self, out: &mut Output<'_>) -> Result<(), String> {
        settle_stop_reason(out, V::NO_STOP_REASON, V::ERROR_TEXT)
    }
}

/// Runs API `A` against the network: credentials, request, then [`read_body`].
pub(crate) async fn run<A: WireApi>(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    sink: &mut dyn ProviderSink,
) {
    let mut out = Output::new(model, sink);
    if let Some(authorization) = prepare::<A>(model, options, &mut out).await {
        send_and_read::<A>(model, context, options, &mut out, &authorization).await;
    }
}

/// The run prologue of API `A`: the initial message fields, the credentials and
/// configuration checks and the authorization round trip, whose headers it returns. `None`
/// when the run already ended (its `error` event reported).
pub(crate) async fn prepare<A: WireApi>(
    model: &Model,
    options: &StreamOptions,
    out: &mut Output<'_>,
) -> Option<Vec<(String, String)>> {
    out.update(|m| A::initial_message(model, options, m));
    if let Err(message) = A::CREDENTIALS
        .check(model, options)
        .and_then(|()| A::check(model, options))
    {
        out.fail(message, false);
        return None;
    }
    match A::authorize(model, options).await {
        Ok(headers) => Some(headers),
        Err(message) => {
            out.fail(message, options.signal.is_cancelled());
            None
        }
    }
}

/// Builds the request, sends it over HTTP (retrying before the first byte as `A` says, and
/// once without `prefer` strict tools after Claude's strict-tool limits) and maps the
/// streaming response with [`read_body`]; a failure ends the run with `error`.
pub(crate) async fn send_and_read<A: WireApi>(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    out: &mut Output<'_>,
    authorization: &[(String, String)],
) {
    let without_retries;
    let send_options = match (A::RETRIES, A::MAX_RETRIES) {
        (true, None) => options,
        (retries, fixed) => {
            without_retries = StreamOptions {
                max_retries: Some(if retries { fixed.unwrap_or(0) } else { 0 }),
                ..options.clone()
            };
            &without_retries
        }
    };
    let session = options.session_id.as_deref();
    let mut preferred_strict_off = super::strict_limits::exceeded(session);
    let response = loop {
        let (mut request, preferred_strict) = match A::build_request_with(
            model,
            context,
            Attempt {
                options,
                preferred_strict_off,
            },
        ) {
            Ok(built) => built,
            Err(message) => {
                out.fail(message, false);
                return;
            }
        };
        request.headers.extend(authorization.iter().cloned());
        let e = match http::send(&request, send_options, &A::sdk_message).await {
            Ok(response) => break response,
            Err(e) => e,
        };
        if let SendError::Status(f) = &e {
            // Claude rejected the strict tools: once per request, only when `prefer` tools
            // went strict, and the session sends them non-strict from now on.
            let retry =
                (preferred_strict && !preferred_strict_off && !options.signal.is_cancelled())
                    .then(|| A::strict_limit_rejection(f))
                    .flatten();
            if let Some((kind, message)) = retry {
                preferred_strict_off = true;
                super::strict_limits::mark_exceeded(session);
                out.update(|m| super::strict_limits::append_fallback(m, kind, &message));
                continue;
            }
            out.update(|m| A::on_status_failure(f, m));
        }
        let (message, aborted) = send_failure(e, A::ABORT_MESSAGE, |f| A::status_message(model, f));
        out.fail(message, aborted || options.signal.is_cancelled());
        return;
    };
    let stream = A::new_stream(model, context);
    read_body::<A>(model, options, out, Body::Http(response), stream).await;
}

/// The message of a failed send or read, and whether it was an abort.
fn send_failure(
    e: SendError,
    abort_message: &str,
    status_message: impl Fn(&HttpFailure) -> String,
) -> (String, bool) {
    match e {
        SendError::Status(f) => (status_message(&f), false),
        SendError::Network(m) | SendError::Message(m) => (m, false),
        SendError::Aborted => (abort_message.to_string(), true),
    }
}

/// Maps a streaming response body to events (everything after the response head): `start`,
/// the records, then exactly one `done` or `error`.
pub(crate) async fn read_body<A: WireApi>(
    model: &Model,
    options: &StreamOptions,
    out: &mut Output<'_>,
    mut body: Body,
    mut api: A::Stream,
) {
    if A::Stream::STARTS_ON_BODY {
        out.start();
    }
    let content_type = body.content_type();
    api.on_response(&body);
    let mut reader = RecordReader::new(A::Stream::FRAMING);
    let result =
        match read_records::<A>(&mut api, model, options, out, &mut body, &mut reader).await {
            Ok(()) => api.end_of_stream(out).map_err(|message| (message, false)),
            Err(failure) => Err(failure),
        };
    if let Err((message, aborted)) = result {
        let aborted = aborted || options.signal.is_cancelled();
        if aborted {
            api.on_abort(out);
        } else {
            api.on_failure(out);
        }
        let message = if aborted {
            message
        } else {
            reader.seen.explain(message, content_type.as_deref())
        };
        out.fail(message, aborted);
        return;
    }
    if options.signal.is_cancelled() {
        out.fail("Request was aborted".into(), true);
        return;
    }
    match api.settle(out) {
        Ok(()) => out.done(),
        Err(message) => out.fail(reader.seen.explain(message, content_type.as_deref()), false),
    }
}

/// What a body held, to say what arrived when it held no event at all.
#[derive(Default)]
struct Seen {
    bytes: u64,
    records: u64,
    /// The first bytes, for the message.
    head: Vec<u8>,
}

impl Seen {
    const HEAD: usize = 64;

    fn chunk(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        let room = Self::HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
    }

    /// `message`, followed by what the body was when it held bytes but no event (an HTML
    /// page or a compressed body with status 200): the reference's words stay first.
    fn explain(&self, message: String, content_type: Option<&str>) -> String {
        let event_stream = content_type.is_some_and(|t| {
            let t = t.to_ascii_lowercase();
            t.starts_with("text/event-stream")
                || t.contains("json")
                || t.starts_with("application/vnd.amazon.eventstream")
        });
        // A compressed body is never events, whatever its type says (a proxy that gzips
        // the stream without `Content-Encoding` being undone).
        let gzip = self.head.starts_with(&[0x1f, 0x8b]);
        if self.records > 0 || self.bytes == 0 || content_type.is_none() || (event_stream && !gzip)
        {
            return message;
        }
        let what = if gzip {
            "gzip-compressed data".to_string()
        } else {
            let text: String = String::from_utf8_lossy(&self.head)
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let more = if self.bytes > self.head.len() as u64 {
                "…"
            } else {
                ""
            };
            format!("\"{}{more}\"", text.trim())
        };
        format!(
            "{message} (the server answered 200 with {} bytes of {}, not an event stream: {what})",
            self.bytes,
            content_type.unwrap_or("unknown type")
        )
    }
}

/// The read loop: chunk by chunk, each chunk decoded whole before its records are mapped (a
/// chunk on which decoding fails yields none of them).
async fn read_records<A: WireApi>(
    api: &mut A::Stream,
    model: &Model,
    options: &StreamOptions,
    out: &mut Output<'_>,
    body: &mut Body,
    reader: &mut RecordReader,
) -> Result<(), (String, bool)> {
    loop {
        let chunk = match body.next_chunk(options).await {
            Ok(chunk) => chunk,
            Err(SendError::Aborted) if A::ABORT_ENDS_BODY => return Ok(()),
            Err(e) => {
                return Err(send_failure(e, A::ABORT_MESSAGE, |f| {
                    A::status_message(model, f)
                }))
            }
        };
        let last = chunk.is_none();
        // A framing error fails the run after the records decoded before it, as the SDKs
        // hand those out first (a Bedrock frame with a bad checksum behind good ones).
        let fed = match chunk {
            Some(chunk) => {
                reader.seen.chunk(&chunk);
                reader.feed(&chunk)
            }
            None => reader.finish(),
        };
        reader.seen.records += reader.records.records.len() as u64;
        // Nothing is awaited while a read's records are mapped, so their events can reach
        // the sink together (see `ProviderSink::takes_batches`).
        let ended = out.batched(|out| {
            for (event, data) in reader.records.iter() {
                if A::Stream::FRAMING.ends_stream(data) {
                    return Ok(true);
                }
                api.record(out, SseRecord { event, data })
                    .map_err(|message| (message, false))?;
            }
            Ok(false)
        })?;
        if ended {
            return Ok(());
        }
        fed.map_err(|message| (message, false))?;
        if last {
            return Ok(());
        }
    }
}

/// The decoder of one framing plus the records of the current chunk.
struct RecordReader {
    decoder: Decoder,
    records: Records,
    seen: Seen,
}

enum Decoder {
    Sse { flush_at_end: bool, sse: SseDecoder },
    Gemini(GeminiRecordSplitter),
    EventStream(super::bedrock::event_stream::Decoder),
}

/// The record of one event-stream message (see [`Framing::EventStream`]).
fn push_event_message(records: &mut Records, m: super::bedrock::event_stream::Message) {
    let message_type = m.string_header(":message-type").unwrap_or("");
    let (kind, data) = match message_type {
        "event" => (m.string_header(":event-type"), None),
        "exception" => (m.string_header(":exception-type"), None),
        "error" => (
            m.string_header(":error-code"),
            Some(m.string_header(":error-message").unwrap_or("")),
        ),
        _ => (m.string_header(":event-type"), None),
    };
    let event = format!("{message_type} {}", kind.unwrap_or(""));
    match data {
        Some(d) => records.push(Some(&event), d),
        None => records.push(Some(&event), &String::from_utf8_lossy(&m.payload)),
    }
}

impl RecordReader {
    fn new(framing: Framing) -> Self {
        let decoder = match framing {
            Framing::Sse | Framing::SseFlushAtEnd => Decoder::Sse {
                flush_at_end: framing == Framing::SseFlushAtEnd,
                sse: SseDecoder::new(),
            },
            Framing::Gemini => Decoder::Gemini(GeminiRecordSplitter::new()),
            Framing::EventStream => {
                Decoder::EventStream(super::bedrock::event_stream::Decoder::new())
            }
        };
        RecordReader {
            decoder,
            records: Records::default(),
            seen: Seen::default(),
        }
    }

    /// Decodes one chunk into `records`.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        let records = &mut self.records;
        records.clear();
        match &mut self.decoder {
            Decoder::Sse { sse, .. } => sse.feed_borrowed(chunk, &mut |ev, data| {
                records.push(ev, data);
            }),
            Decoder::Gemini(splitter) => splitter.feed(chunk, &mut |r| {
                if let GeminiRecord::Data(d) = r {
                    records.push(None, &d);
                }
            }),
            Decoder::EventStream(decoder) => {
                return decoder
                    .feed(chunk, &mut |m| push_event_message(records, m))
                    .map_err(|e| e.to_string())
            }
        }
        .map_err(|e: TooLong| e.to_string())
    }

    /// Ends the body, leaving in `records` what the framing dispatches at the end.
    fn finish(&mut self) -> Result<(), String> {
        let records = &mut self.records;
        records.clear();
        match &mut self.decoder {
            Decoder::Sse { flush_at_end, sse } => {
                let push = &mut |e: crate::sse::SseEvent| records.push(e.event.as_deref(), &e.data);
                if *flush_at_end {
                    sse.finish_and_flush(push);
                } else {
                    sse.finish(push);
                }
                Ok(())
            }
            Decoder::Gemini(splitter) => match splitter.finish() {
                Some(_) => Err("Incomplete JSON segment at the end".into()),
                None => Ok(()),
            },
            Decoder::EventStream(decoder) => decoder.finish().map_err(|e| e.to_string()),
        }
    }
}

/// The records of one chunk, stored back to back in one reused buffer.
#[derive(Default)]
struct Records {
    data: String,
    /// Event name and end of the data in `data`, per record.
    records: Vec<(Option<String>, usize)>,
}

impl Records {
    fn clear(&mut self) {
        self.data.clear();
        self.records.clear();
    }

    fn push(&mut self, event: Option<&str>, data: &str) {
        self.data.push_str(data);
        self.records
            .push((event.map(str::to_owned), self.data.len()));
    }

    fn iter(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        let mut start = 0;
        self.records.iter().map(move |(event, end)| {
            let data = &self.data[start..*end];
            start = *end;
            (event.as_deref(), data)
        })
    }
}

/// A boxed provider run, for the table of APIs.
pub(crate) type RunFuture<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// [`run`] of `A`, boxed.
pub(crate) fn boxed_run<'a, A: WireApi>(
    model: &'a Model,
    context: &'a Context,
    options: &'a StreamOptions,
    sink: &'a mut dyn ProviderSink,
) -> RunFuture<'a> {
    Box::pin(run::<A>(model, context, options, sink))
}

/// [`read_body`] of `A` on a body already in memory, boxed.
#[cfg(feature = "testing")]
pub(crate) fn boxed_map_body<'a, A: WireApi>(
    model: &'a Model,
    options: &'a StreamOptions,
    chunks: Vec<bytes::Bytes>,
    sink: &'a mut dyn ProviderSink,
) -> RunFuture<'a> {
    Box::pin(async move {
        let mut out = Output::new(model, sink);
        let stream = A::Stream::default();
        read_body::<A>(
            model,
            options,
            &mut out,
            Body::Chunks(chunks.into()),
            stream,
        )
        .await;
    })
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
