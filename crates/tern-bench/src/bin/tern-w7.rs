//! W7 cold start: one whole process builds an agent (no tools, scripted text `hello`), runs
//! `prompt("hi")`, checks the text and the 11 events, prints one JSON line and exits.

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (text, events) = rt.block_on(tern_bench::workloads::w7_once()).expect("w7");
    if text != "hello" || events != 11 {
        eprintln!("bad run {text} {events}");
        std::process::exit(1);
    }
    println!("{{\"workload\":\"W7\",\"events\":{events}}}");
}
