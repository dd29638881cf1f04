//! The chunks of one response mostly differ only in the text of one delta field: the rest
//! of the bytes repeat from chunk to chunk. A [`Template`] keeps the bytes around that field
//! in the last chunk [`chunk_scan`](super::chunk_scan) read; a chunk made of the same bytes
//! around a plain string (no quote, backslash or control character) reads the same fields
//! with that string in the field, and is read without scanning it again.
//!
//! Why that is the scan's answer: the scan's course depends on a string's text only through
//! where it ends and whether it has escapes. With the same bytes before and after and a
//! plain string between, it takes the same course over the new text, so every field is the
//! same slice of it (at the same place before the hole, shifted after it) and the field of
//! the hole is the new string.

use std::borrow::Cow;

use super::chunk::{Choice, Chunk, Delta};
use super::chunk_scan::special_at;

/// Where a field of the template chunk comes from.
#[derive(Clone, Debug, Default)]
enum Piece {
    /// Absent (`None`).
    #[default]
    Absent,
    /// These bytes before the hole.
    Before(usize, usize),
    /// These bytes after the hole, counted from its end.
    After(usize, usize),
    /// A string with escapes, read once.
    Owned(String),
}

impl Piece {
    /// Where `field` lies in `text` around the hole `hole`; `None` when it is not a slice
    /// of the text outside the hole (the template is then not made).
    fn of(text: &str, hole: (usize, usize), field: &Option<Cow<'_, str>>) -> Option<Piece> {
        let s = match field {
            None => return Some(Piece::Absent),
            Some(Cow::Owned(s)) => return Some(Piece::Owned(s.clone())),
            Some(Cow::Borrowed(s)) => s,
        };
        let start = (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        let end = start + s.len();
        if end > text.len() {
            return None;
        }
        match () {
            _ if end <= hole.0 => Some(Piece::Before(start, end)),
            _ if start >= hole.1 => Some(Piece::After(start - hole.1, end - hole.1)),
            _ => None,
        }
    }

    /// The field in `text`, whose hole ends at `hole_end`.
    #[inline]
    fn get<'a>(&self, text: &'a str, hole_end: usize) -> Option<Option<Cow<'a, str>>> {
        Some(match self {
            Piece::Absent => None,
            Piece::Before(a, b) => Some(Cow::Borrowed(text.get(*a..*b)?)),
            Piece::After(a, b) => Some(Cow::Borrowed(text.get(hole_end + a..hole_end + b)?)),
            Piece::Owned(s) => Some(Cow::Owned(s.clone())),
        })
    }
}

/// The delta's text fields, in [`Delta`]'s order.
const TEXT_FIELDS: usize = 4;

fn text_fields<'d, 'a>(d: &'d Delta<'a>) -> [&'d Option<Cow<'a, str>>; TEXT_FIELDS] {
    [
        &d.content,
        &d.reasoning_content,
        &d.reasoning,
        &d.reasoning_text,
    ]
}

/// The bytes around the hole of the last chunk read, and where its other fields lie.
#[derive(Debug, Default)]
pub(crate) struct Template {
    /// Up to the hole (ending with its opening quote); empty when there is no template.
    before: String,
    /// From the end of the hole (starting with its closing quote).
    after: String,
    /// Which of the delta's text fields is the hole.
    hole: usize,
    id: Piece,
    model: Piece,
    finish_reason: Piece,
    /// The delta's text fields (the hole's entry is unused).
    texts: [Piece; TEXT_FIELDS],
    /// Whether the hole is the delta's only text field (the usual case: `texts` need not
    /// be read).
    hole_alone: bool,
}

impl Template {
    /// `text`'s fields when it is the template's bytes around a plain string.
    pub(crate) fn read<'a>(&self, text: &'a str) -> Option<Chunk<'a>> {
        if self.before.is_empty()
            || text.len() < self.before.len() + self.after.len()
            || !text.starts_with(&self.before)
            || !text.ends_with(&self.after)
        {
            return None;
        }
        let start = self.before.len();
        let end = text.len() - self.after.len();
        // The first quote, backslash or control character must be the closing quote.
        if special_at(text.as_bytes(), start)? != end {
            return None;
        }
        let mut delta = Delta::default();
        if self.hole_alone {
            let hole = Some(Cow::Borrowed(text.get(start..end)?));
            match self.hole {
                0 => delta.content = hole,
                1 => delta.reasoning_content = hole,
                2 => delta.reasoning = hole,
                _ => delta.reasoning_text = hole,
            }
            return self.chunk(text, end, delta);
        }
        let fields = [
            &mut delta.content,
            &mut delta.reasoning_content,
            &mut delta.reasoning,
            &mut delta.reasoning_text,
        ];
        for (i, field) in fields.into_iter().enumerate() {
            *field = match i == self.hole {
                true => Some(Cow::Borrowed(text.get(start..end)?)),
                false => self.texts[i].get(text, end)?,
            };
        }
        self.chunk(text, end, delta)
    }

    /// The chunk around `delta`, its other fields read from `text` (hole ending at `end`).
    fn chunk<'a>(&self, text: &'a str, end: usize, delta: Delta<'a>) -> Option<Chunk<'a>> {
        Some(Chunk {
            id: self.id.get(text, end)?,
            model: self.model.get(text, end)?,
            usage: None,
            choice: Some(Choice {
                usage: None,
                finish_reason: self.finish_reason.get(text, end)?,
                delta: Some(delta),
            }),
            error: false,
        })
    }

    /// Makes `chunk`, just read from `text` by the scan, the template, when its shape
    /// allows one: only text fields, the hole a plain string in the delta. Otherwise the
    /// template stays as it was.
    pub(crate) fn learn(&mut self, text: &str, chunk: &Chunk<'_>) {
        let _ = self.try_learn(text, chunk);
    }

    fn try_learn(&mut self, text: &str, chunk: &Chunk<'_>) -> Option<()> {
        let choice = chunk.choice.as_ref()?;
        let delta = choice.delta.as_ref()?;
        if chunk.usage.is_some()
            || chunk.error
            || choice.usage.is_some()
            || delta.reasoning_details.is_some()
            || delta.tool_calls.is_some()
        {
            return None;
        }
        let texts = text_fields(delta);
        // The hole: the first text field present, read without escapes.
        let hole = texts.iter().position(|f| f.is_some())?;
        let Some(Cow::Borrowed(s)) = texts[hole] else {
            return None;
        };
        let start = (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        let span = (start, start + s.len());
        let bytes = text.as_bytes();
        if start == 0 || bytes.get(start - 1) != Some(&b'"') || bytes.get(span.1) != Some(&b'"') {
            return None;
        }
        let id = Piece::of(text, span, &chunk.id)?;
        let model = Piece::of(text, span, &chunk.model)?;
        let finish_reason = Piece::of(text, span, &choice.finish_reason)?;
        let mut pieces: [Piece; TEXT_FIELDS] = Default::default();
        for (i, f) in texts.iter().enumerate() {
            if i != hole {
                pieces[i] = Piece::of(text, span, f)?;
            }
        }
        self.before.clear();
        self.before.push_str(text.get(..span.0)?);
        self.after.clear();
        self.after.push_str(text.get(span.1..)?);
        self.hole = hole;
        self.id = id;
        self.model = model;
        self.finish_reason = finish_reason;
        self.hole_alone = pieces.iter().all(|p| matches!(p, Piece::Absent));
        self.texts = pieces;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk_scan;
    use super::*;

    /// Reads `texts` in turn through a template learned as the stream would, checking each
    /// against the scan; returns how many the template read.
    fn replay(texts: &[String]) -> usize {
        let mut template = Template::default();
        let mut hits = 0;
        for t in texts {
            let scanned = chunk_scan::read(t);
            match template.read(t) {
                Some(c) => {
                    assert_eq!(Some(&c), scanned.as_ref(), "{t}");
                    hits += 1;
                }
                None => {
                    if let Some(c) = &scanned {
                        template.learn(t, c);
                    }
                }
            }
        }
        hits
    }

    #[test]
    fn repeated_bytes_around_the_text_read_like_the_scan() {
        let head = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":"#;
        let mut texts = vec![format!(
            r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}"#
        )];
        let middles = [
            "t000001 ",
            "",
            "é☃😀",
            "a\\\"b",
            "q\"",
            "tab\there",
            "\\u0041",
            "\\n",
            "x\\",
            "ok",
        ];
        for m in middles {
            texts.push(format!(
                r#"{head}[{{"index":0,"delta":{{"content":"{m}"}},"finish_reason":null}}]}}"#
            ));
        }
        // Fields after the hole, escapes around it, a repeated key, reasoning as the hole.
        for m in ["a", "bb", "", "c\\n"] {
            texts.push(format!(
                r#"{{"id":"i\"d","choices":[{{"delta":{{"content":"x","content":"{m}","reasoning":null}},"finish_reason":"stop","index":1}}],"model":"m2"}}"#
            ));
        }
        for m in ["r1", "r2", "r3"] {
            texts.push(format!(
                r#"{{"choices":[{{"delta":{{"reasoning_content":"{m}","content":"fixed"}}}}]}} "#
            ));
        }
        // Hits: "", "é☃😀", "ok" after "t000001 "; "bb", "" after "a". The reasoning chunks
        // differ before their hole (`content`, the first text field present).
        assert_eq!(replay(&texts), 5);
    }

    proptest::proptest! {
        #[test]
        fn any_text_in_the_hole_reads_like_the_scan(
            shape in 0usize..6,
            middles in proptest::collection::vec("[a-z\"\\\\\t\n é😀]{0,5}", 1..8),
        ) {
            let shapes = [
                r#"{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"@@"},"finish_reason":null}]}"#,
                r#"{"choices":[{"delta":{"reasoning":"@@","content":"k\"k"},"finish_reason":"stop"}],"id":"after"}"#,
                r#" { "choices" : [ { "delta" : { "reasoning_text" : "@@" } } ] , "x" : [ 1 , "\n" ] } "#,
                r#"{"choices":[{"delta":{"content":"@@"}},{"delta":{"content":"@@"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":"before","content":"@@","reasoning_text":"after"}}]}"#,
                r#"{"choices":[{"delta":{"content":"@@","reasoning_content":"a\nb"}}]}"#,
            ];
            let texts: Vec<String> =
                middles.iter().map(|m| shapes[shape].replace("@@", m)).collect();
            replay(&texts);
        }
    }

    #[test]
    fn other_text_fields_are_read_from_the_template_too() {
        for shape in [
            r#"{"choices":[{"delta":{"reasoning":"before","content":"@@","reasoning_text":"after"}}]}"#,
            r#"{"choices":[{"delta":{"content":"@@","reasoning_content":"a\nb"}}]}"#,
        ] {
            let texts: Vec<String> = ["a", "bc", ""]
                .iter()
                .map(|m| shape.replace("@@", m))
                .collect();
            assert_eq!(replay(&texts), 2, "{shape}");
        }
    }

    #[test]
    fn other_shapes_make_no_template() {
        for t in [
            r#"{"choices":[{"delta":{"content":"a\nb"}}]}"#,
            r#"{"choices":[{"delta":{}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","tool_calls":[]}}]}"#,
            r#"{"choices":[]}"#,
        ] {
            let mut template = Template::default();
            let chunk = chunk_scan::read(t).expect("the scan reads it");
            template.learn(t, &chunk);
            assert!(template.before.is_empty(), "{t}");
            assert!(template.read(t).is_none());
        }
    }
}
