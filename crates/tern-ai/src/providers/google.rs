//! Not yet implemented.
use super::{EventSink, Output};
use crate::model::Model;
use crate::stream_fn::{Context, StreamOptions};

/// Streams one response into `sink`.
pub async fn run(
    model: &Model,
    _context: &Context,
    _options: &StreamOptions,
    sink: &mut dyn EventSink,
) {
    let mut out = Output::new(model, sink);
    out.fail("not implemented".into(), false);
}
