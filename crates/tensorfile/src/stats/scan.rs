//! A tensor's values visited block by block, in bounded memory and on all cores.
//!
//! The tensor's dense pieces ([`numbers::dense_pieces`], re-cut on element boundaries) are
//! cut into spans of [`SPAN_BYTES`]; spans run on rayon's threads, each decoding
//! [`BLOCK`](super::kernel::BLOCK) values at a time into its own buffer and folding them into
//! its own state; the states are then joined in the order of the spans. Where the cuts fall
//! depends only on the pieces, never on the number of threads: results are the same on any
//! machine.

use rayon::prelude::*;

use super::kernel::BLOCK;
use crate::error::Result;
use crate::file::TensorFile;
use crate::model::elements::Elements;
use crate::numbers;

/// Bytes of one span (one unit of parallel work).
const SPAN_BYTES: usize = 1 << 20;

/// What a scan folds the values into.
pub(crate) trait Fold: Send + Sized {
    /// Add `values` (the next ones, in order).
    fn add(&mut self, values: &[f64]);
    /// Add what `later` holds (values after this one's).
    fn join(&mut self, later: Self);
}

/// Visit the values of entry `index` of `file`: `make` gives an empty state for each span,
/// the states are joined in order into the one returned. `progress` is told how many values
/// each span held once it is done.
pub(crate) fn scan<T: Fold>(
    file: &TensorFile,
    index: usize,
    make: &(dyn Fn() -> T + Sync),
    progress: &(dyn Fn(u64) + Sync),
) -> Result<T> {
    let pieces = numbers::dense_pieces(file, index, false)?;
    let elements = Elements::of(pieces.dtype)?;
    let group = elements.group_bytes();
    let per_group = elements.group_values() as u64;
    let span = (SPAN_BYTES / group).max(1) * group;
    let block = (BLOCK / elements.group_values()).max(1) * group;
    let numel = pieces.numel;
    let mut total = make();
    // Values before the current piece (a packed dtype's last byte may hold padding beyond
    // numel: values from numel on are left out).
    let mut seen = 0u64;
    for piece in numbers::aligned(pieces.chunks, group) {
        let piece = piece?;
        let spans: Vec<T> = piece
            .par_chunks(span)
            .enumerate()
            .map(|(k, bytes)| {
                let first = seen + (k * span / group) as u64 * per_group;
                let mut state = make();
                let mut values = Vec::with_capacity(BLOCK);
                let mut at = first;
                for b in bytes.chunks(block) {
                    values.clear();
                    elements.decode_into(b, &mut values);
                    let keep = numel.saturating_sub(at).min(values.len() as u64) as usize;
                    state.add(&values[..keep]);
                    at += values.len() as u64;
                }
                progress(at.min(numel).saturating_sub(first.min(numel)));
                state
            })
            .collect();
        for s in spans {
            total.join(s);
        }
        seen += (piece.len() / group) as u64 * per_group;
    }
    Ok(total)
}
