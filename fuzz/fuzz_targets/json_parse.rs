//! Partial-JSON parsing of streamed tool-call arguments: arbitrary text appended in arbitrary
//! pieces never panics, the partial value is always an object, and the finished value does not
//! depend on how the text was cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_ai::json_parse::{
    parse_json_with_repair, parse_tool_call_arguments, repair_json, StreamingJsonParser,
    ToolCallArgumentsStream,
};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let step = data[0] as usize % 13 + 1;
    let text = String::from_utf8_lossy(&data[1..]);
    let mut args = ToolCallArgumentsStream::new();
    let mut parser = StreamingJsonParser::new();
    let mut piece = String::new();
    for (i, ch) in text.chars().enumerate() {
        piece.push(ch);
        if (i + 1) % step == 0 {
            assert!(args.append(&piece).is_object());
            parser.append(&piece);
            let _ = parser.snapshot();
            piece.clear();
        }
    }
    if !piece.is_empty() {
        args.append(&piece);
        parser.append(&piece);
        let _ = parser.snapshot();
    }
    let (value, _error) = args.finish();
    assert!(value.is_object());
    let (whole, _) = parse_tool_call_arguments(&text);
    assert_eq!(value, whole);
    let _ = repair_json(&text);
    let _ = parse_json_with_repair(&text);
    let mut again = ToolCallArgumentsStream::new();
    let _ = again.replace(&text);
});
