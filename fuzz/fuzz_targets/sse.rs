//! SSE decoder and Gemini record splitter: arbitrary bytes, cut into chunks at arbitrary
//! points, give the same events as the whole body fed at once; no panic; a small limit
//! (exercised on every input) fails cleanly and stays failed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_ai::sse::{GeminiRecordSplitter, SseDecoder};

fn sse(chunks: &[&[u8]], limit: usize) -> (Vec<(Option<String>, String)>, bool) {
    let mut d = SseDecoder::with_limit(limit);
    let mut out = Vec::new();
    let mut failed = false;
    for c in chunks {
        let r = d.feed(c, &mut |e| out.push((e.event, e.data)));
        if failed {
            assert!(r.is_err(), "a failed decoder must stay failed");
        }
        failed |= r.is_err();
    }
    if !failed {
        d.finish_and_flush(&mut |e| out.push((e.event, e.data)));
    }
    (out, failed)
}

fn gemini(chunks: &[&[u8]], limit: usize) -> (Vec<String>, Option<String>, bool) {
    let mut s = GeminiRecordSplitter::with_limit(limit);
    let mut out = Vec::new();
    let mut failed = false;
    for c in chunks {
        let r = s.feed(c, &mut |r| out.push(format!("{r:?}")));
        failed |= r.is_err();
    }
    let rest = if failed { None } else { s.finish() };
    (out, rest, failed)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let step = data[0] as usize % 17 + 1;
    let body = &data[1..];
    let pieces: Vec<&[u8]> = body.chunks(step).collect();
    for limit in [usize::MAX, 64] {
        let (whole, wf) = sse(&[body], limit);
        let (split, sf) = sse(&pieces, limit);
        if !wf && !sf {
            assert_eq!(whole, split);
        }
        if limit == usize::MAX {
            assert!(!wf && !sf);
        }
        let (gw, gwr, gwf) = gemini(&[body], limit);
        let (gs, gsr, gsf) = gemini(&pieces, limit);
        if !gwf && !gsf {
            assert_eq!(gw, gs);
            assert_eq!(gwr, gsr);
        }
    }
});
