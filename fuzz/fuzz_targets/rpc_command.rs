//! The RPC command parser and line reader on any bytes: no panic; every line is answered
//! either with a command or with a failure response in pi's shape; lines are cut at the
//! cap and never hold a newline.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/tern/src/modes/rpc/command.rs"]
#[allow(dead_code)]
mod command;
#[path = "../../crates/tern/src/modes/rpc/line_reader.rs"]
#[allow(dead_code)]
mod line_reader;
#[path = "../../crates/tern/src/modes/rpc/parse.rs"]
#[allow(dead_code)]
mod parse;

use line_reader::Next;

fuzz_target!(|data: &[u8]| {
    let Some((&cap, input)) = data.split_first() else {
        return;
    };
    let cap = cap as usize * 4 + 1;
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(async {
        let mut reader = tokio::io::BufReader::with_capacity(7, input);
        loop {
            match line_reader::next_line(&mut reader, cap).await {
                Ok(Next::Line(line)) => {
                    assert!(line.len() <= cap && !line.contains(&b'\n'));
                    if let Err(resp) = parse::read_command_bytes(&line) {
                        assert_eq!(resp["type"], "response");
                        assert_eq!(resp["success"], false);
                        assert!(resp["error"].is_string());
                    }
                }
                Ok(Next::TooLong(n)) => assert!(n > cap),
                Ok(Next::End) => break,
                Err(e) => panic!("in-memory read failed: {e}"),
            }
        }
    });
});
