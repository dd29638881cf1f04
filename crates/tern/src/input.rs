//! The first prompts, as pi builds them from the command line: `@path` arguments (text
//! files inlined in `<file>` blocks, images attached), piped stdin, and the message
//! arguments. The first prompt is stdin, then the files, then the first message; each
//! further message argument is a prompt of its own, sent after the one before it settles.

use std::io::Read;
use std::path::Path;

use base64::Engine;
use tern_ai::{Content, ContentBlock, ImageContent, Message, UserMessage};

use crate::usage_error::UsageError;

/// The prompts the command line asks for.
#[derive(Debug, Default)]
pub struct Prompts {
    /// The first prompt's text (empty: none given).
    pub text: String,
    /// Images attached to the first prompt (`@image.png`).
    pub images: Vec<ImageContent>,
    /// The further prompts, in order.
    pub rest: Vec<String>,
}

impl Prompts {
    /// Whether no prompt was given.
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty() && self.images.is_empty() && self.rest.is_empty()
    }

    /// The messages to send, in order, each stamped now; `expand` expands templates.
    pub fn into_messages(self, expand: impl Fn(&str) -> String) -> Vec<Message> {
        let mut first = vec![ContentBlock::text(expand(&self.text))];
        first.extend(self.images.into_iter().map(ContentBlock::Image));
        let stamp = tern_ai::clock::now_ms;
        let mut out = vec![Message::from(UserMessage {
            content: Content::Blocks(first),
            timestamp: stamp(),
            extra: None,
        })];
        out.extend(self.rest.iter().map(|t| Message::user_text(expand(t))));
        out
    }

    /// Fits the images to `model`: dropped when it takes none, saying so on stderr (their
    /// `<file>` tags stay in the text, so the model knows a file was named); else each is
    /// scaled down as pi scales it when over the model's limits, and pi's notes (the
    /// original size, or why an image was left out) follow the prompt's text after a blank
    /// line, as pi's session adds them.
    pub fn fit_model(&mut self, model: &tern_ai::Model) {
        if !self.images.is_empty() && !model.input.iter().any(|i| i == "image") {
            crate::secrets::eprintln_redacted!(
                "tern: note: {}/{} takes no images; {} attached image(s) not sent",
                model.provider,
                model.id,
                self.images.len()
            );
            self.images.clear();
        }
        let limits = crate::images::Limits::of(model);
        let mut notes = Vec::new();
        let b64 = base64::engine::general_purpose::STANDARD;
        self.images = std::mem::take(&mut self.images)
            .into_iter()
            .filter_map(|image| {
                let fitted = b64
                    .decode(&image.data)
                    .ok()
                    .and_then(|bytes| crate::images::fit(&bytes, &image.mime_type, limits));
                match fitted {
                    Some(f) => {
                        notes.extend(f.note());
                        Some(f.image)
                    }
                    None => {
                        notes.push(crate::images::OMITTED.to_string());
                        None
                    }
                }
            })
            .collect();
        if !notes.is_empty() {
            self.text = format!("{}\n\n{}", self.text, notes.join("\n"));
        }
    }
}

/// The image type of a file's first bytes (the types pi attaches).
fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Builds the prompts from the arguments (`@path` words are files, resolved against
/// `base`) and piped stdin, as pi's `processFileArguments` and `buildInitialMessage`.
pub fn build_prompts(
    words: &[String],
    base: &Path,
    stdin: Option<String>,
) -> Result<Prompts, UsageError> {
    let mut files = String::new();
    let mut images = Vec::new();
    let mut messages = Vec::new();
    for w in words {
        let Some(p) = w.strip_prefix('@').filter(|p| !p.is_empty()) else {
            messages.push(w.clone());
            continue;
        };
        let path = base.join(p);
        let shown = path.display();
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => UsageError(format!("File not found: {shown}")),
            _ => UsageError(format!("Could not read file {shown}: {e}")),
        })?;
        // pi skips empty files.
        if bytes.is_empty() {
            continue;
        }
        match image_mime(&bytes) {
            Some(mime) => {
                images.push(ImageContent {
                    data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                    mime_type: mime.to_string(),
                    ..Default::default()
                });
                files.push_str(&format!("<file name=\"{shown}\"></file>\n"));
            }
            None => {
                let text = String::from_utf8(bytes).map_err(|_| {
                    UsageError(format!(
                        "Could not read file {shown}: not UTF-8 text nor a PNG, JPEG, GIF or WebP image"
                    ))
                })?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                files.push_str(&format!("<file name=\"{shown}\">\n{text}\n</file>\n"));
            }
        }
    }
    let mut text = String::new();
    if let Some(s) = stdin.filter(|s| !s.trim().is_empty()) {
        text.push_str(&s);
    }
    text.push_str(&files);
    let mut messages = messages.into_iter();
    if let Some(first) = messages.next() {
        text.push_str(&first);
    }
    Ok(Prompts {
        text,
        images,
        rest: messages.collect(),
    })
}

/// All of stdin, when it is not a terminal.
pub fn read_piped_stdin() -> Result<Option<String>, UsageError> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| UsageError(format!("cannot read stdin: {e}")))?;
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_images_and_messages_as_pi_builds_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.md"), "\u{feff}BODY").expect("write");
        std::fs::write(dir.path().join("empty.txt"), "").expect("write");
        std::fs::write(dir.path().join("i.png"), b"\x89PNG\r\n\x1a\nrest").expect("write");
        let words: Vec<String> = ["@a.md", "first", "@empty.txt", "@i.png", "second"]
            .map(String::from)
            .to_vec();
        let p = build_prompts(&words, dir.path(), Some("IN".into())).expect("built");
        let a = dir.path().join("a.md");
        let i = dir.path().join("i.png");
        assert_eq!(
            p.text,
            format!(
                "IN<file name=\"{}\">\nBODY\n</file>\n<file name=\"{}\"></file>\nfirst",
                a.display(),
                i.display()
            )
        );
        assert_eq!(p.images.len(), 1);
        assert_eq!(p.images[0].mime_type, "image/png");
        assert_eq!(p.rest, ["second"]);
        let e = build_prompts(&["@nope".into()], dir.path(), None).unwrap_err();
        assert!(e.0.starts_with("File not found: "), "{}", e.0);
    }
}
