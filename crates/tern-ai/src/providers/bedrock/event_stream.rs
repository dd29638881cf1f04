//! The AWS event-stream binary framing (`application/vnd.amazon.eventstream`) that Bedrock's
//! `ConverseStream` answers in: each message is a prelude (total length, headers length,
//! prelude CRC32), typed headers, a payload and a CRC32 of everything before it.
//!
//! [`Decoder`] is incremental: chunks may split a message anywhere, a message is checked
//! and handed out once all of its bytes are in, and a bad message is an error value with
//! the AWS SDK's words, never a panic. [`encode`] writes the same framing (the replay server
//! and the tests answer with it).

use thiserror::Error;

/// Prelude: total length and headers length.
const PRELUDE: usize = 8;
/// One CRC32.
const CRC: usize = 4;
/// The smallest message: prelude, its CRC and the message CRC.
const MIN_MESSAGE: usize = PRELUDE + 2 * CRC;
/// A larger message is refused instead of buffered (Bedrock's are a few kilobytes; the
/// service documents 16 MiB as the event-stream maximum).
pub(crate) const MAX_MESSAGE: usize = 24 * 1024 * 1024;

/// A header value, as the framing types it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeaderValue {
    /// Types 0 and 1.
    Bool(bool),
    /// Type 2.
    Byte(i8),
    /// Type 3.
    Short(i16),
    /// Type 4.
    Int(i32),
    /// Type 5.
    Long(i64),
    /// Type 6.
    Bytes(Vec<u8>),
    /// Type 7.
    String(String),
    /// Type 8: milliseconds since the epoch.
    Timestamp(i64),
    /// Type 9.
    Uuid([u8; 16]),
}

/// One decoded message: its headers in order and its payload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Message {
    /// Name and value of each header.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload (JSON for Bedrock).
    pub payload: Vec<u8>,
}

impl Message {
    /// The value of a string header (`:event-type`, `:message-type`, ...).
    pub(crate) fn string_header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Why a body is not a valid event stream. The texts are the AWS SDK's where it has one.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// A message shorter than its own prelude and checksums.
    #[error("Provided message too short to accommodate event stream message overhead")]
    TooShort,
    /// A message longer than [`MAX_MESSAGE`].
    #[error("Event stream message of {0} bytes is larger than the {MAX_MESSAGE}-byte limit")]
    TooLong(usize),
    /// The prelude CRC does not match.
    #[error("The prelude checksum specified in the message ({expected}) does not match the calculated CRC32 checksum ({actual})")]
    PreludeChecksum {
        /// The CRC the message carries.
        expected: u32,
        /// The CRC of the bytes received.
        actual: u32,
    },
    /// The message CRC does not match.
    #[error("The message checksum ({actual}) did not match the expected value of {expected}")]
    MessageChecksum {
        /// The CRC the message carries.
        expected: u32,
        /// The CRC of the bytes received.
        actual: u32,
    },
    /// The headers length points past the message, or a header runs past the headers.
    #[error("Malformed event stream headers: {0}")]
    BadHeaders(&'static str),
    /// A header of an unknown type.
    #[error("Unrecognized header type tag")]
    UnknownHeaderType,
    /// The body ended inside a message.
    #[error("Truncated event message received.")]
    Truncated,
}

/// An incremental decoder: feed it chunks as they arrive, then [`finish`](Decoder::finish).
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// A decoder at the start of a body.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `chunk` and hands each message it completes to `on_message`, in order. After an
    /// error the decoder's state is unspecified: the body is not an event stream.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        on_message: &mut dyn FnMut(Message),
    ) -> Result<(), FrameError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let result = loop {
            let rest = &self.buf[start..];
            let Some(total) = rest.get(..4).map(be_u32) else {
                break Ok(());
            };
            let total = total as usize;
            if total > MAX_MESSAGE {
                break Err(FrameError::TooLong(total));
            }
            // The SDK waits for the length the prelude announces, even a too-short one.
            if rest.len() < total.max(4) {
                break Ok(());
            }
            match split(&rest[..total.max(4)]) {
                Ok(message) => on_message(message),
                Err(e) => break Err(e),
            }
            start += total.max(4);
        };
        self.buf.drain(..start);
        result
    }

    /// Ends the body: bytes of an incomplete message are an error.
    pub(crate) fn finish(&self) -> Result<(), FrameError> {
        match self.buf.is_empty() {
            true => Ok(()),
            false => Err(FrameError::Truncated),
        }
    }
}

fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

/// Checks and decodes one whole message (its bytes exactly).
fn split(bytes: &[u8]) -> Result<Message, FrameError> {
    if bytes.len() < MIN_MESSAGE {
        return Err(FrameError::TooShort);
    }
    let headers_len = be_u32(&bytes[4..8]) as usize;
    let prelude_crc = be_u32(&bytes[8..12]);
    let actual = crc32fast::hash(&bytes[..PRELUDE]);
    if prelude_crc != actual {
        return Err(FrameError::PreludeChecksum {
            expected: prelude_crc,
            actual,
        });
    }
    let end = bytes.len() - CRC;
    let message_crc = be_u32(&bytes[end..]);
    let actual = crc32fast::hash(&bytes[..end]);
    if message_crc != actual {
        return Err(FrameError::MessageChecksum {
            expected: message_crc,
            actual,
        });
    }
    let body = &bytes[PRELUDE + CRC..end];
    if headers_len > body.len() {
        return Err(FrameError::BadHeaders("the headers run past the message"));
    }
    let (headers, payload) = body.split_at(headers_len);
    Ok(Message {
        headers: parse_headers(headers)?,
        payload: payload.to_vec(),
    })
}

/// Reads headers from a byte slice, failing instead of reading past it.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::BadHeaders("a header runs past the headers"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], FrameError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn text(&mut self, n: usize) -> Result<String, FrameError> {
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
}

fn parse_headers(bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    let mut c = Cursor(bytes);
    let mut out = Vec::new();
    while !c.0.is_empty() {
        let [name_len] = c.array()?;
        let name = c.text(name_len as usize)?;
        let [tag] = c.array()?;
        let value = match tag {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(c.array()?)),
            3 => HeaderValue::Short(i16::from_be_bytes(c.array()?)),
            4 => HeaderValue::Int(i32::from_be_bytes(c.array()?)),
            5 => HeaderValue::Long(i64::from_be_bytes(c.array()?)),
            6 => {
                let n = u16::from_be_bytes(c.array()?) as usize;
                HeaderValue::Bytes(c.take(n)?.to_vec())
            }
            7 => {
                let n = u16::from_be_bytes(c.array()?) as usize;
                HeaderValue::String(c.text(n)?)
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(c.array()?)),
            9 => HeaderValue::Uuid(c.array()?),
            _ => return Err(FrameError::UnknownHeaderType),
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Encodes one message in the framing (names and byte values longer than the framing allows
/// are cut to its limits: 255 bytes for a name, 65,535 for a value).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn encode(message: &Message) -> Vec<u8> {
    let mut headers = Vec::new();
    for (name, value) in &message.headers {
        let name = &name.as_bytes()[..name.len().min(255)];
        headers.push(name.len() as u8);
        headers.extend_from_slice(name);
        let sized = |headers: &mut Vec<u8>, tag: u8, b: &[u8]| {
            let b = &b[..b.len().min(u16::MAX as usize)];
            headers.push(tag);
            headers.extend_from_slice(&(b.len() as u16).to_be_bytes());
            headers.extend_from_slice(b);
        };
        match value {
            HeaderValue::Bool(true) => headers.push(0),
            HeaderValue::Bool(false) => headers.push(1),
            HeaderValue::Byte(v) => {
                headers.push(2);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Short(v) => {
                headers.push(3);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Int(v) => {
                headers.push(4);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Long(v) => {
                headers.push(5);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Bytes(b) => sized(&mut headers, 6, b),
            HeaderValue::String(s) => sized(&mut headers, 7, s.as_bytes()),
            HeaderValue::Timestamp(v) => {
                headers.push(8);
                headers.extend_from_slice(&v.to_be_bytes());
            }
            HeaderValue::Uuid(u) => {
                headers.push(9);
                headers.extend_from_slice(u);
            }
        }
    }
    let total = MIN_MESSAGE + headers.len() + message.payload.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&headers);
    out.extend_from_slice(&message.payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
#[path = "event_stream_tests.rs"]
mod tests;
