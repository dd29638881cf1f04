use proptest::prelude::*;

use super::*;

/// A message the AWS SDK's codec (`@smithy/core` `EventStreamCodec.encode`) wrote: string,
/// boolean and integer headers and a JSON payload.
const SDK_FRAME: &str = "000000a10000006462bacc0e0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e7404666c616701016e04fffffffe7b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b2274657874223a224869227d7dee9431a6";
/// The SDK's empty message (no headers, no payload).
const SDK_EMPTY: &str = "000000100000000005c248eb7d98c8ff";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn sdk_message() -> Message {
    let s = |v: &str| HeaderValue::String(v.to_string());
    Message {
        headers: vec![
            (":event-type".into(), s("contentBlockDelta")),
            (":content-type".into(), s("application/json")),
            (":message-type".into(), s("event")),
            ("flag".into(), HeaderValue::Bool(false)),
            ("n".into(), HeaderValue::Int(-2)),
        ],
        payload: br#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#.to_vec(),
    }
}

/// Decodes `chunks` one after the other, then finishes.
fn decode(chunks: &[&[u8]]) -> Result<Vec<Message>, FrameError> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.feed(c, &mut |m| out.push(m))?;
    }
    d.finish()?;
    Ok(out)
}

#[test]
fn decodes_what_the_sdk_encodes() {
    let got = decode(&[&hex(SDK_FRAME), &hex(SDK_EMPTY)]).unwrap();
    assert_eq!(got, vec![sdk_message(), Message::default()]);
    assert_eq!(
        got[0].string_header(":event-type"),
        Some("contentBlockDelta")
    );
    assert_eq!(got[0].string_header("flag"), None);
}

#[test]
fn encodes_what_the_sdk_encodes() {
    assert_eq!(encode(&sdk_message()), hex(SDK_FRAME));
    assert_eq!(encode(&Message::default()), hex(SDK_EMPTY));
}

#[test]
fn every_header_type_round_trips() {
    let m = Message {
        headers: vec![
            ("t".into(), HeaderValue::Bool(true)),
            ("f".into(), HeaderValue::Bool(false)),
            ("b".into(), HeaderValue::Byte(-7)),
            ("s".into(), HeaderValue::Short(-300)),
            ("i".into(), HeaderValue::Int(1 << 20)),
            ("l".into(), HeaderValue::Long(-(1 << 40))),
            ("y".into(), HeaderValue::Bytes(vec![0, 255, 3])),
            ("str".into(), HeaderValue::String("é".into())),
            ("ts".into(), HeaderValue::Timestamp(1_700_000_000_000)),
            ("u".into(), HeaderValue::Uuid([9; 16])),
        ],
        payload: b"{}".to_vec(),
    };
    assert_eq!(decode(&[&encode(&m)]).unwrap(), vec![m]);
}

#[test]
fn a_message_split_at_every_byte_decodes_the_same() {
    let bytes = [hex(SDK_FRAME), hex(SDK_EMPTY)].concat();
    for cut in 0..=bytes.len() {
        let (a, b) = bytes.split_at(cut);
        assert_eq!(
            decode(&[a, b]).unwrap(),
            vec![sdk_message(), Message::default()],
            "cut at {cut}"
        );
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode(&singles).unwrap().len(), 2);
}

#[test]
fn a_wrong_prelude_crc_is_reported_with_both_values() {
    let mut bytes = hex(SDK_EMPTY);
    bytes[8] ^= 1;
    let err = decode(&[&bytes]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The prelude checksum specified in the message (79841515) does not match the calculated CRC32 checksum (96618731)"
    );
}

#[test]
fn a_wrong_message_crc_is_reported_with_both_values() {
    let mut bytes = hex(SDK_FRAME);
    let payload_byte = bytes.len() - 6;
    bytes[payload_byte] ^= 0x20;
    let err = decode(&[&bytes]).unwrap_err();
    assert!(matches!(err, FrameError::MessageChecksum { expected, .. } if expected == 0xee9431a6));
    assert!(err
        .to_string()
        .ends_with("did not match the expected value of 4002689446"));
}

#[test]
fn an_incomplete_message_at_the_end_is_truncated() {
    let bytes = hex(SDK_FRAME);
    for cut in 1..bytes.len() {
        assert_eq!(
            decode(&[&bytes[..cut]]),
            Err(FrameError::Truncated),
            "cut at {cut}"
        );
    }
}

#[test]
fn lengths_that_cannot_hold_a_message_are_errors() {
    // Announces 8 bytes: too short for the prelude and the checksums.
    assert_eq!(
        decode(&[&[0, 0, 0, 8, 0, 0, 0, 0]]),
        Err(FrameError::TooShort)
    );
    assert_eq!(
        decode(&[&[0xff, 0xff, 0xff, 0xff]]),
        Err(FrameError::TooLong(u32::MAX as usize))
    );
    // Headers length past the message, with valid checksums.
    let mut bytes = hex(SDK_EMPTY);
    bytes[7] = 1;
    let crc = crc32fast::hash(&bytes[..8]).to_be_bytes();
    bytes[8..12].copy_from_slice(&crc);
    let crc = crc32fast::hash(&bytes[..12]).to_be_bytes();
    bytes[12..16].copy_from_slice(&crc);
    assert!(matches!(decode(&[&bytes]), Err(FrameError::BadHeaders(_))));
}

#[test]
fn an_unknown_header_type_is_an_error() {
    let mut bytes = encode(&Message {
        headers: vec![("x".into(), HeaderValue::Bool(true))],
        payload: vec![],
    });
    // name length, name, then the tag at offset 14.
    bytes[14] = 42;
    let end = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..end]).to_be_bytes();
    bytes[end..].copy_from_slice(&crc);
    assert_eq!(decode(&[&bytes]), Err(FrameError::UnknownHeaderType));
}

fn header_value() -> impl Strategy<Value = HeaderValue> {
    prop_oneof![
        any::<bool>().prop_map(HeaderValue::Bool),
        any::<i8>().prop_map(HeaderValue::Byte),
        any::<i16>().prop_map(HeaderValue::Short),
        any::<i32>().prop_map(HeaderValue::Int),
        any::<i64>().prop_map(HeaderValue::Long),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(HeaderValue::Bytes),
        "[a-z:-]{0,20}".prop_map(HeaderValue::String),
        any::<i64>().prop_map(HeaderValue::Timestamp),
        any::<[u8; 16]>().prop_map(HeaderValue::Uuid),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    (
        proptest::collection::vec(("[a-z:-]{1,12}", header_value()), 0..5),
        proptest::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(headers, payload)| Message { headers, payload })
}

proptest! {
    /// Any messages, cut into chunks anywhere, decode to themselves.
    #[test]
    fn any_chunking_decodes_the_messages(
        messages in proptest::collection::vec(message(), 0..6),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let bytes: Vec<u8> = messages.iter().flat_map(encode).collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.sort_unstable();
        let mut chunks = Vec::new();
        let mut last = 0;
        for a in at.into_iter().chain([bytes.len()]) {
            chunks.push(&bytes[last..a]);
            last = a;
        }
        prop_assert_eq!(decode(&chunks).unwrap(), messages);
    }

    /// Any corruption of one byte is an error (never a panic, never a silently wrong
    /// message): every byte is under a CRC.
    #[test]
    fn a_flipped_byte_never_passes(
        m in message(),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let mut bytes = encode(&m);
        let i = at.index(bytes.len());
        bytes[i] ^= 1 << bit;
        prop_assert!(decode(&[&bytes]).is_err());
    }

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cut in any::<prop::sample::Index>(),
    ) {
        let (a, b) = bytes.split_at(cut.index(bytes.len() + 1));
        let _ = decode(&[a, b]);
    }
}
