//! Images attached to a prompt, fitted to what a model takes as pi fits them
//! (`utils/image-resize-core.js`, `image-process.js`, `AgentSession._normalizePromptImages`):
//! an image larger than the limits (2000 by 2000 pixels and 4.5 MiB of base64 by default, or
//! the model's `inputLimits.images.resize`) is scaled down with Lanczos3 and sent as the
//! smaller of PNG and JPEG; a note tells the model the original size.

use std::io::Cursor;

use base64::Engine;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use serde_json::Value;
use tern_ai::{ImageContent, Model};

/// The note for an image that cannot be brought under the limits (pi's words).
pub const OMITTED: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";

/// How large an image may be (pi's `ImageResizeOptions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Widest, in pixels.
    pub max_width: u32,
    /// Tallest, in pixels.
    pub max_height: u32,
    /// Largest base64 payload, in bytes.
    pub max_bytes: usize,
    /// The first JPEG quality tried.
    pub jpeg_quality: u8,
}

impl Default for Limits {
    /// pi's defaults: 2000 by 2000, 4.5 MiB of base64 (below Anthropic's 5 MB), quality 80.
    fn default() -> Self {
        Limits {
            max_width: 2000,
            max_height: 2000,
            max_bytes: 4 * 1024 * 1024 + 512 * 1024,
            jpeg_quality: 80,
        }
    }
}

impl Limits {
    /// pi's defaults with the fields `model`'s `inputLimits.images.resize` sets.
    pub fn of(model: &Model) -> Self {
        let d = Limits::default();
        let r = &model.extra.get("inputLimits").unwrap_or(&Value::Null)["images"]["resize"];
        let field = |k: &str| r[k].as_u64().filter(|v| *v > 0);
        let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Limits {
            max_width: field("maxWidth").map_or(d.max_width, clamp),
            max_height: field("maxHeight").map_or(d.max_height, clamp),
            max_bytes: field("maxBytes")
                .map_or(d.max_bytes, |v| usize::try_from(v).unwrap_or(usize::MAX)),
            jpeg_quality: field("jpegQuality").map_or(d.jpeg_quality, |v| v.min(100) as u8),
        }
    }
}

/// An image as it will be sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    /// The image.
    pub image: ImageContent,
    /// Its size before, width by height (after the EXIF orientation).
    pub original: (u32, u32),
    /// Its size now.
    pub size: (u32, u32),
}

impl Fitted {
    /// pi's `formatDimensionNote`: what the model needs to map coordinates back, when the
    /// image was scaled.
    pub fn note(&self) -> Option<String> {
        if self.original == self.size {
            return None;
        }
        let ((ow, oh), (w, h)) = (self.original, self.size);
        let scale = f64::from(ow) / f64::from(w);
        Some(format!(
            "[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by \
             {scale:.2} to map to original image.]"
        ))
    }
}

/// The length of `n` bytes in base64.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// JavaScript's `Math.round` of a positive ratio.
fn round(x: f64) -> u32 {
    (x + 0.5).floor() as u32
}

/// An encoded candidate.
struct Candidate {
    bytes: Vec<u8>,
    mime: &'static str,
}

fn png(img: &DynamicImage) -> Option<Candidate> {
    let mut bytes = Vec::new();
    img.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .ok()?;
    Some(Candidate {
        bytes,
        mime: "image/png",
    })
}

fn jpeg(img: &DynamicImage, quality: u8) -> Option<Candidate> {
    let mut bytes = Vec::new();
    // JPEG has no alpha channel.
    let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
    JpegEncoder::new_with_quality(&mut bytes, quality)
        .encode_image(&rgb)
        .ok()?;
    Some(Candidate {
        bytes,
        mime: "image/jpeg",
    })
}

/// The encoding of `img` that goes: the smaller of PNG and JPEG at the first quality if it
/// fits `max_bytes`, else the other, else JPEG at the lower qualities (each encoded only when
/// needed: the choice is the one pi makes after encoding them all).
fn choose(img: &DynamicImage, qualities: &[u8], max_bytes: usize) -> Option<Candidate> {
    let fits = |c: &Candidate| base64_len(c.bytes.len()) < max_bytes;
    let p = png(img)?;
    let j = qualities.first().and_then(|q| jpeg(img, *q));
    let jpeg_first = j.as_ref().is_some_and(|j| j.bytes.len() < p.bytes.len());
    let first = if jpeg_first {
        [j, Some(p)]
    } else {
        [Some(p), j]
    };
    if let Some(c) = first.into_iter().flatten().find(&fits) {
        return Some(c);
    }
    qualities
        .iter()
        .skip(1)
        .filter_map(|q| jpeg(img, *q))
        .find(fits)
}

/// Decodes `bytes` with its EXIF orientation applied.
fn decode(bytes: &[u8]) -> Option<DynamicImage> {
    let mut decoder = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_decoder()
        .ok()?;
    let orientation = decoder.orientation().ok();
    let mut img = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(o) = orientation {
        img.apply_orientation(o);
    }
    Some(img)
}

/// Fits the image `bytes` of type `mime` within `limits`, as pi's `resizeImageInProcess`:
/// within them it goes as it is; otherwise it is scaled to fit the dimensions and encoded
/// as PNG and as JPEG, the smaller that fits the byte limit going (then JPEG at lower
/// qualities), shrinking by a quarter until one fits. `None` when it cannot be decoded or
/// never fits (pi omits it then).
pub fn fit(bytes: &[u8], mime: &str, limits: Limits) -> Option<Fitted> {
    let img = decode(bytes)?;
    let original = (img.width(), img.height());
    let (ow, oh) = original;
    let b64 = base64::engine::general_purpose::STANDARD;
    if ow <= limits.max_width
        && oh <= limits.max_height
        && base64_len(bytes.len()) < limits.max_bytes
    {
        return Some(Fitted {
            image: ImageContent {
                data: b64.encode(bytes),
                mime_type: mime.to_string(),
                ..Default::default()
            },
            original,
            size: original,
        });
    }
    let (mut w, mut h) = original;
    if w > limits.max_width {
        h = round(f64::from(h) * f64::from(limits.max_width) / f64::from(w));
        w = limits.max_width;
    }
    if h > limits.max_height {
        w = round(f64::from(w) * f64::from(limits.max_height) / f64::from(h));
        h = limits.max_height;
    }
    let (mut w, mut h) = (w.max(1), h.max(1));
    let mut qualities = vec![limits.jpeg_quality];
    for q in [85, 70, 55, 40] {
        if !qualities.contains(&q) {
            qualities.push(q);
        }
    }
    loop {
        let resized = img.resize_exact(w, h, FilterType::Lanczos3);
        let chosen = choose(&resized, &qualities, limits.max_bytes);
        if let Some(c) = chosen {
            return Some(Fitted {
                image: ImageContent {
                    data: b64.encode(&c.bytes),
                    mime_type: c.mime.to_string(),
                    ..Default::default()
                },
                original,
                size: (w, h),
            });
        }
        if w == 1 && h == 1 {
            return None;
        }
        let shrink = |v: u32| {
            if v == 1 {
                1
            } else {
                ((v as f64 * 0.75).floor() as u32).max(1)
            }
        };
        let (nw, nh) = (shrink(w), shrink(h));
        if (nw, nh) == (w, h) {
            return None;
        }
        (w, h) = (nw, nh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_of(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, _| {
            image::Rgb([(x % 2) as u8 * 255, 0, 0])
        }));
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .expect("encode");
        out
    }

    #[test]
    fn within_the_limits_the_image_goes_as_it_is() {
        let bytes = png_of(30, 20);
        let f = fit(&bytes, "image/png", Limits::default()).expect("fits");
        assert_eq!((f.original, f.size), ((30, 20), (30, 20)));
        assert_eq!(
            f.image.data,
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
        assert_eq!(f.note(), None);
    }

    #[test]
    fn a_wide_image_is_scaled_to_the_width_keeping_its_ratio() {
        let limits = Limits {
            max_width: 10,
            ..Limits::default()
        };
        let f = fit(&png_of(30, 20), "image/png", limits).expect("fits");
        // pi: height Math.round(20 * 10 / 30) = 7.
        assert_eq!(f.size, (10, 7));
        assert_eq!(
            f.note().as_deref(),
            Some(
                "[Image: original 30x20, displayed at 10x7. Multiply coordinates by 3.00 to \
                 map to original image.]"
            )
        );
    }

    #[test]
    fn bytes_that_are_no_image_are_not_fitted() {
        assert_eq!(
            fit(b"\x89PNG\r\n\x1a\nrest", "image/png", Limits::default()),
            None
        );
    }

    #[test]
    fn the_models_input_limits_replace_the_defaults() {
        let mut m = Model::default();
        m.extra.insert(
            "inputLimits".into(),
            serde_json::json!({"images": {"resize": {"maxWidth": 1568, "jpegQuality": 75}}}),
        );
        let l = Limits::of(&m);
        assert_eq!(
            (l.max_width, l.max_height, l.jpeg_quality),
            (1568, 2000, 75)
        );
        assert_eq!(l.max_bytes, 4_718_592);
    }
}
