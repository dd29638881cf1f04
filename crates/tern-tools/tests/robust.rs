//! What is not a regular file, odd names, odd headers and concurrent writers.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{err, ok, ok_text, run, text, Sandbox};
use serde_json::json;
use tern_agent::ToolOutput;
use tern_tools::{edit_tool, find_tool, grep_tool, ls_tool, read_tool, write_tool};

/// Runs a call that must end promptly (it used to hang).
async fn bounded(tool: &tern_agent::AgentTool, args: serde_json::Value) -> ToolOutput {
    tokio::time::timeout(Duration::from_secs(10), run(tool, args))
        .await
        .unwrap_or_else(|_| panic!("{} hung", tool.name()))
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_is_refused_not_waited_on() {
    let sb = Sandbox::new();
    mkfifo(&sb.work().join("pipe"));
    for (tool, args) in [
        (read_tool(&sb.config), json!({"path": "pipe"})),
        (
            edit_tool(&sb.config),
            json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        (
            grep_tool(&sb.config),
            json!({"pattern": "a", "path": "pipe"}),
        ),
        (
            write_tool(&sb.config),
            json!({"path": "pipe", "content": "x"}),
        ),
    ] {
        let e = bounded(&tool, args).await.unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{}: {e}", tool.name());
    }
    // Still the FIFO: write did not replace it.
    let meta = std::fs::symlink_metadata(sb.work().join("pipe")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
    // A walk passes it by.
    let t = text(
        &bounded(&grep_tool(&sb.config), json!({"pattern": "a"}))
            .await
            .unwrap(),
    );
    assert_eq!(t, "No matches found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_refused_before_reading() {
    let sb = Sandbox::new();
    let config = sb.config.clone().with_allow_outside(true);
    for dev in ["/dev/zero", "/dev/null"] {
        let e = bounded(&read_tool(&config), json!({"path": dev}))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("character device"), "{dev}: {e}");
        let e = bounded(
            &edit_tool(&config),
            json!({"path": dev, "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await
        .unwrap_err();
        assert!(e.to_string().contains("character device"), "{dev}: {e}");
    }
}

#[tokio::test]
async fn write_to_a_folder_path_makes_no_file() {
    let sb = Sandbox::new();
    for path in ["newdir/", "newdir/."] {
        let e = err(
            &write_tool(&sb.config),
            json!({"path": path, "content": "x"}),
        )
        .await;
        assert!(e.contains("names a folder"), "{path}: {e}");
    }
    assert!(!sb.work().join("newdir").exists());
    std::fs::create_dir(sb.work().join("dir")).unwrap();
    let e = err(
        &write_tool(&sb.config),
        json!({"path": "dir", "content": "x"}),
    )
    .await;
    assert!(e.contains("is a directory"), "{e}");
}

/// A 54-byte BMP header (BITMAPINFOHEADER, 1x1, 24 bits) and its one pixel.
fn bmp() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&58u32.to_le_bytes()); // file size
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes()); // pixel data offset
    b.extend_from_slice(&40u32.to_le_bytes()); // DIB header size
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // planes
    b.extend_from_slice(&24u16.to_le_bytes()); // bits per pixel
    b.extend_from_slice(&[0; 24]);
    b.extend_from_slice(&[0xff, 0, 0, 0]);
    b
}

#[tokio::test]
async fn only_real_image_headers_are_images() {
    let sb = Sandbox::new();
    sb.write("real.bmp", bmp());
    let r = ok(&read_tool(&sb.config), json!({"path": "real.bmp"})).await;
    assert_eq!(text(&r), "Read image file [image/bmp]");
    // "BM" and a NUL are not a bitmap: binary.
    sb.write(
        "notes.txt",
        b"BMW parts list\0\0\0 and more text here, long enough",
    );
    let e = err(&read_tool(&sb.config), json!({"path": "notes.txt"})).await;
    assert!(e.contains("binary file"), "{e}");
    // A PNG signature without its IHDR chunk is not a PNG either (pi's check).
    sb.write("fake.png", b"\x89PNG\r\n\x1a\n\0\0\0\0nope-and-then-some");
    let e = err(&read_tool(&sb.config), json!({"path": "fake.png"})).await;
    assert!(e.contains("binary file"), "{e}");
    // JPEG-LS (FF D8 FF F7) is not sent as JPEG.
    sb.write("ls.jpg", b"\xff\xd8\xff\xf7\0\0");
    let e = err(&read_tool(&sb.config), json!({"path": "ls.jpg"})).await;
    assert!(e.contains("binary file"), "{e}");
}

#[tokio::test]
async fn names_that_are_not_utf8_are_listed_in_a_form_read_accepts() {
    let sb = Sandbox::new();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::create_dir(sb.work().join("sub")).unwrap();
    std::fs::write(sb.work().join("sub").join(name), "bonjour\n").unwrap();
    let listed = ok_text(&ls_tool(&sb.config), json!({"path": "sub"})).await;
    assert_eq!(listed, "caf\\xe9.txt");
    let found = ok_text(&find_tool(&sb.config), json!({"pattern": "*.txt"})).await;
    assert_eq!(found, "sub/caf\\xe9.txt");
    let grepped = ok_text(&grep_tool(&sb.config), json!({"pattern": "bonjour"})).await;
    assert_eq!(grepped, "sub/caf\\xe9.txt:1: bonjour");
    let r = ok(&read_tool(&sb.config), json!({"path": "sub/caf\\xe9.txt"})).await;
    assert_eq!(text(&r), "bonjour");
    ok(
        &edit_tool(&sb.config),
        json!({"path": "sub/caf\\xe9.txt", "edits": [{"oldText": "bonjour", "newText": "salut"}]}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sb.work().join("sub").join(name)).unwrap(),
        "salut\n"
    );
}

/// An appender writes lines while edits run on the same file. A line that reached the live
/// file must be in the final file, unless an edit said a concurrent change was lost or
/// refused (a line written to an already replaced file was never the edit's to keep).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_never_loses_a_concurrent_write_without_a_word() {
    use std::io::Write;
    let sb = Sandbox::new();
    sb.write("log.txt", "counter: a\n");
    let path = sb.work().join("log.txt");
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut live = Vec::new();
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let line = format!("line {i}\n");
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                f.write_all(line.as_bytes()).unwrap();
                let nlink = std::os::unix::fs::MetadataExt::nlink(&f.metadata().unwrap());
                if nlink > 0 {
                    live.push(line);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(3));
            }
            live
        })
    };
    let tool = edit_tool(&sb.config);
    let (mut said_lost, mut saved) = (0, 0);
    for _ in 0..200 {
        let now = std::fs::read_to_string(&path).unwrap();
        let (old, new) = if now.contains("counter: a") {
            ("counter: a", "counter: b")
        } else {
            ("counter: b", "counter: a")
        };
        let args = json!({"path": "log.txt", "edits": [{"oldText": old, "newText": new}]});
        match run(&tool, args).await {
            Ok(_) => saved += 1,
            Err(e) => {
                let e = e.to_string();
                said_lost += usize::from(e.contains("changed the file at the same moment"));
                assert!(
                    e.contains("changed by someone else") || e.contains("at the same moment"),
                    "{e}"
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let live = appender.join().unwrap();
    let last = std::fs::read_to_string(&path).unwrap();
    let lost: Vec<&String> = live.iter().filter(|l| !last.contains(l.as_str())).collect();
    assert!(
        lost.len() <= said_lost,
        "{} appended lines lost and no edit said so: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(live.len() > 10, "the appender barely ran");
    assert!(saved > 0, "no edit went through");
}
