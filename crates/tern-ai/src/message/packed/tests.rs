//! A damaged buffer decodes to errors, never to a panic. (The round trip of every message
//! shape is proven in `tests/packed.rs`, through the public API.)

use proptest::prelude::*;

use super::*;

fn sample() -> PackedTranscript {
    let text = r#"[
        {"role":"system","content":"p","timestamp":1},
        {"role":"user","content":[{"type":"text","text":"héllo"},{"type":"image","data":"AA==","mimeType":"image/png"}],"timestamp":2},
        {"role":"assistant","content":[{"type":"thinking","thinking":"t","thinkingSignature":"s","redacted":true},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/a","n":[1,-2,0.5,null,true]}}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.5,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}},"stopReason":"toolUse","timestamp":3,"responseModel":"rm"},
        {"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"ok"}],"details":{"k":1},"isError":false,"timestamp":4,"extraField":"x"},
        {"role":"note","body":{"a":[1,2]}}
    ]"#;
    let messages: Vec<Message> = serde_json::from_str(text).unwrap();
    PackedTranscript::from(messages)
}

/// Every message either decodes or reports an error with its index.
fn decode_all(p: &PackedTranscript) {
    for (i, r) in p.iter().enumerate() {
        match r {
            Ok(m) => {
                // What decodes is a real message: it serializes.
                serde_json::to_string(&m).unwrap();
            }
            Err(PackError::Corrupt { index, .. }) => assert_eq!(index, i),
            Err(e) => panic!("unexpected {e}"),
        }
    }
}

#[test]
fn the_sample_decodes() {
    let p = sample();
    assert_eq!(p.len(), 5);
    assert!(p.to_vec().is_ok());
}

#[test]
fn a_truncated_record_is_an_error() {
    let mut p = sample();
    let last = p.ends.len() - 1;
    p.ends[last] -= 1;
    assert!(matches!(
        p.get(last),
        Err(PackError::Corrupt { index: 4, .. })
    ));
    // And an end past the buffer.
    p.ends[last] = u32::MAX;
    assert!(matches!(
        p.get(last),
        Err(PackError::Corrupt { index: 4, .. })
    ));
}

#[test]
fn a_reference_past_the_name_table_is_an_error() {
    let mut p = sample();
    p.tables.names.clear();
    assert!(p.get(2).is_err());
}

proptest! {
    #[test]
    fn flipped_bytes_never_panic(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut p = sample();
        let len = p.buf.len();
        for (at, byte) in flips {
            p.buf[at % len] = byte;
        }
        decode_all(&p);
    }

    #[test]
    fn arbitrary_buffers_never_panic(
        buf in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(any::<u32>(), 0..12),
    ) {
        let mut p = sample();
        let mut ends: Vec<u32> = cuts.into_iter().map(|c| c % 420).collect();
        ends.sort_unstable();
        p.buf = buf;
        p.ends = ends;
        decode_all(&p);
    }

    #[test]
    fn truncated_buffers_never_panic(cut in 0usize..2000) {
        let mut p = sample();
        let cut = cut % (p.buf.len() + 1);
        p.buf.truncate(cut);
        decode_all(&p);
    }
}
