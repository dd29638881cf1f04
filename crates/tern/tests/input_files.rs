//! `@file` arguments as pi: a text file inlined in a `<file>` block with its absolute path,
//! an image attached (or left out with a note when the model takes none), and each further
//! message argument its own prompt.

mod common;

use common::{
    assert_contains, assert_exit, command, dirs, last_user, run, run_against, stderr, Reply, Server,
};

#[test]
fn an_image_for_a_text_only_model_is_left_out_with_a_note() {
    let (home, cwd) = dirs();
    std::fs::write(cwd.path().join("pic.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "NOTE-BODY").unwrap();
    let server = Server::start(vec![Reply::text("ok")]);
    let args = ["-p", "@notes.txt", "@pic.png", "describe"];
    let o = run_against(home.path(), cwd.path(), &server, &args);
    assert_exit(&o, 0);
    assert_contains(&stderr(&o), "takes no images; 1 attached image(s) not sent");
    let user = last_user(&server.requests()[0]);
    let text = user["content"].to_string();
    let root = cwd.path().canonicalize().unwrap();
    let notes = format!(
        "<file name=\\\"{}\\\">\\nNOTE-BODY\\n</file>\\n",
        root.join("notes.txt").display()
    );
    let pic = format!(
        "<file name=\\\"{}\\\"></file>\\ndescribe",
        root.join("pic.png").display()
    );
    assert!(text.contains(&notes), "{text}");
    assert!(text.contains(&pic), "{text}");
    assert!(!text.contains("image_url"), "{text}");
}

#[test]
fn a_missing_file_is_named() {
    let (home, cwd) = dirs();
    let mut c = command(home.path(), cwd.path());
    c.args(["--base-url", "http://127.0.0.1:9/v1", "-p", "@gone.txt"]);
    let o = run(c);
    assert_exit(&o, 2);
    assert_contains(&stderr(&o), "File not found: ");
}

#[test]
fn a_large_image_is_sent_resized_as_pi_resizes_it() {
    let (home, cwd) = dirs();
    // Noise does not compress: pi 1.6 sent this one as JPEG at 2000x293, with this note.
    let mut seed: u32 = 12345;
    let img = image::RgbImage::from_fn(2050, 300, |_, _| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345) & 0x7fff_ffff;
        image::Rgb([(seed >> 16) as u8, (seed >> 8) as u8, seed as u8])
    });
    img.save(cwd.path().join("big.png")).expect("write the PNG");
    let agent = home.path().join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let server = Server::start(vec![Reply::text("ok")]);
    let models = serde_json::json!({"providers": {"scripted": {
        "baseUrl": server.url, "api": "openai-completions", "apiKey": "k",
        "models": [{"id": "vision", "input": ["text", "image"]}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let mut c = command(home.path(), cwd.path());
    c.args(["--model", "scripted/vision", "-p", "@big.png", "describe"]);
    let o = run(c);
    assert_exit(&o, 0);
    let user = last_user(&server.requests()[0]);
    let parts = user["content"].as_array().expect("parts").clone();
    let text = parts[0]["text"].as_str().unwrap_or_default();
    assert!(
        text.ends_with(
            "describe\n\n[Image: original 2050x300, displayed at 2000x293. Multiply \
             coordinates by 1.02 to map to original image.]"
        ),
        "{text}"
    );
    let url = parts[1]["image_url"]["url"].as_str().expect("an image");
    let data = url
        .strip_prefix("data:image/jpeg;base64,")
        .expect("sent as JPEG");
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64");
    let sent =
        image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG");
    assert_eq!((sent.width(), sent.height()), (2000, 293));
}
