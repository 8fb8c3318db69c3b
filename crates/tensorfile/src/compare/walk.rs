//! The file-level walk: match entries by name, compare what each file says about them, and
//! read and compare the data of those that agree.

use std::collections::HashSet;

use super::metrics::{Metrics, Tolerance};
use super::stream::{self, SideError};
use super::values::{sparse_diff, value_diff};
use super::{Change, Diff, ReadFailure, Side, TensorDiff};
use crate::error::Result;
use crate::file::TensorFile;
use crate::model::elements::Elements;
use crate::model::quant::can_dequantize;
use crate::model::{DType, Kind, Layout, TensorData, TensorInfo};
use crate::numbers::dense_pieces;

/// Compare every entry of `a` with the entry of the same name in `b`, counting values over
/// numpy's default tolerance (see [`compare_with`]).
pub fn compare(a: &TensorFile, b: &TensorFile) -> Diff {
    compare_with(a, b, Tolerance::default())
}

/// Compare every entry of `a` with the entry of the same name in `b`; `over_tolerance` counts
/// the values not close under `tolerance`.
pub fn compare_with(a: &TensorFile, b: &TensorFile, tolerance: Tolerance) -> Diff {
    let mut diff = Diff {
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        changed: Vec::new(),
        unreadable: Vec::new(),
        identical: 0,
        tolerance,
    };
    let unreadable_a: HashSet<&str> = a.unreadable().iter().map(|u| u.name()).collect();
    let unreadable_b: HashSet<&str> = b.unreadable().iter().map(|u| u.name()).collect();
    for u in a.unreadable() {
        diff.unreadable.push(ReadFailure::new(Side::A, u.name(), u.error()));
    }
    for u in b.unreadable() {
        diff.unreadable.push(ReadFailure::new(Side::B, u.name(), u.error()));
    }
    for (i, entry) in a.entries().iter().enumerate() {
        let name = entry.info().name();
        match b.index_of(name) {
            Some(j) => compare_entry(a, i, b, j, &mut diff),
            None if unreadable_b.contains(name) => {}
            None => diff.only_in_a.push(name.to_string()),
        }
    }
    let in_a = |name: &str| a.index_of(name).is_some() || unreadable_a.contains(name);
    let in_b = |name: &str| b.index_of(name).is_some() || unreadable_b.contains(name);
    diff.only_in_a.extend(a.unreadable().iter().map(|u| u.name()).filter(|n| !in_b(n)).map(str::to_string));
    let names_b = b.entries().iter().map(|e| e.info().name()).chain(b.unreadable().iter().map(|u| u.name()));
    diff.only_in_b.extend(names_b.filter(|n| !in_a(n)).map(str::to_string));
    diff
}

/// Compare entry `i` of `a` with entry `j` of `b` (same name), recording the outcome.
fn compare_entry(a: &TensorFile, i: usize, b: &TensorFile, j: usize, diff: &mut Diff) {
    let (ia, ib) = (&a.entries()[i].info(), &b.entries()[j].info());
    let tol = diff.tolerance;
    let mut changes = described_changes(ia, ib);
    let comparable =
        ia.dtype() == ib.dtype() && ia.shape() == ib.shape() && layout_name(ia.layout()) == layout_name(ib.layout());
    let numeric = ia.kind() == Kind::Tensor && ib.kind() == Kind::Tensor && ia.shape() == ib.shape();
    let mut metrics = None;
    let mut failures: Vec<SideError> = Vec::new();
    if comparable && ia.layout().reads_dense() && ib.layout().reads_dense() {
        // One pass over both tensors' pieces: the bitwise facts and the metrics.
        let numbers = if numeric { numbers_of(ia).ok() } else { None };
        let streamed = a
            .read_chunks(i, false)
            .map_err(|e| (Side::A, e))
            .and_then(|ca| Ok((ca, b.read_chunks(j, false).map_err(|e| (Side::B, e))?)))
            .and_then(|(ca, cb)| stream::same_dtype(ia.dtype(), ca, cb, numbers, tol));
        match streamed {
            Ok(s) => {
                if let Some(v) = s.values {
                    changes.push(Change::Values(v));
                    metrics = s.metrics;
                }
            }
            Err(e) => failures.push(e),
        }
    } else if comparable {
        match (a.read_index(i), b.read_index(j)) {
            (Ok(da), Ok(db)) => {
                let before = changes.len();
                changes.extend(data_change(ia.dtype(), ia.shape(), &da, &db));
                if numeric && changes.len() > before {
                    metrics = by_value(a, i, b, j, tol, &mut failures);
                }
            }
            (ra, rb) => {
                failures
                    .extend([(Side::A, ra.err()), (Side::B, rb.err())].into_iter().filter_map(|(s, e)| Some((s, e?))));
            }
        }
    } else if numeric {
        metrics = by_value(a, i, b, j, tol, &mut failures);
    }
    let unread = !failures.is_empty();
    for (side, e) in failures {
        diff.unreadable.push(ReadFailure::new(side, ia.name(), &e));
    }
    if changes.is_empty() {
        // A tensor whose data could not be read is not known identical (it is unreadable).
        if !unread {
            diff.identical += 1;
        }
    } else {
        diff.changed.push(TensorDiff { name: ia.name().to_string(), changes, metrics });
    }
}

/// The numbers a tensor's values decode to: its elements, twice for complex dtypes.
fn numbers_of(info: &TensorInfo) -> Result<u64> {
    let numel = info.numel()?;
    let parts = if Elements::of(info.dtype())?.is_complex() { 2 } else { 1 };
    Ok(numel.saturating_mul(parts))
}

/// The metrics of two tensors of one shape, whatever their dtypes and storages (quantized
/// ones dequantized, sparse ones scattered); `None` when either's values are not numbers (its
/// dtype has no decoding, or no dequantization), read errors added to `failures`.
fn by_value(
    a: &TensorFile,
    i: usize,
    b: &TensorFile,
    j: usize,
    tol: Tolerance,
    failures: &mut Vec<SideError>,
) -> Option<Metrics> {
    let (ia, ib) = (a.entries()[i].info(), b.entries()[j].info());
    // Values of a dtype that does not read as numbers, or of a quantization without a
    // dequantization, are not compared by value (that is no read failure).
    let decodes = |info: &TensorInfo| match info.layout().quant() {
        Some(q) => can_dequantize(q),
        None => Elements::reads(info.dtype()),
    };
    if !decodes(ia) || !decodes(ib) {
        return None;
    }
    let pa = match dense_pieces(a, i, false) {
        Ok(p) => p,
        Err(e) => {
            failures.push((Side::A, e));
            return None;
        }
    };
    let pb = match dense_pieces(b, j, false) {
        Ok(p) => p,
        Err(e) => {
            failures.push((Side::B, e));
            return None;
        }
    };
    let parts = |d: DType| Elements::of(d).map_or(1, |e| if e.is_complex() { 2 } else { 1 });
    if parts(pa.dtype) != parts(pb.dtype) {
        // A complex tensor against a real one: no pairing of their numbers.
        return None;
    }
    let numbers = pa.numel.saturating_mul(parts(pa.dtype));
    let result = if pa.dtype == pb.dtype {
        stream::same_dtype(pa.dtype, pa.chunks, pb.chunks, Some(numbers), tol).map(|s| s.metrics)
    } else {
        stream::across((pa.dtype, pa.chunks), (pb.dtype, pb.chunks), numbers, tol).map(Some)
    };
    result.unwrap_or_else(|e| {
        failures.push(e);
        None
    })
}

/// Differences in what the files say about a tensor (kind, dtype, shape, layout).
fn described_changes(a: &TensorInfo, b: &TensorInfo) -> Vec<Change> {
    let mut changes = Vec::new();
    if a.kind() != b.kind() {
        changes.push(Change::Kind { a: a.kind(), b: b.kind() });
    }
    if a.dtype() != b.dtype() {
        changes.push(Change::DType { a: a.dtype(), b: b.dtype() });
    }
    if a.shape() != b.shape() {
        changes.push(Change::Shape { a: a.shape().to_vec(), b: b.shape().to_vec() });
    }
    let (la, lb) = (layout_name(a.layout()), layout_name(b.layout()));
    if la != lb {
        changes.push(Change::Layout { a: la, b: lb });
    }
    changes
}

/// The layout as far as decoded data is concerned: readers give every dense layout
/// (strided, dim-ordered) as contiguous row-major bytes.
fn layout_name(layout: &Layout) -> String {
    if layout.reads_dense() { "dense".to_string() } else { layout.describe() }
}

/// How two tensors quantized the same way differ: by their dequantized values when the scheme
/// has a dequantization, else by which stored parts differ.
fn quantized_change(a: &TensorData, b: &TensorData, shape: &[u64]) -> Option<Change> {
    let differing: Vec<&'static str> =
        a.parts().iter().zip(b.parts()).filter(|(x, y)| x.bytes() != y.bytes()).map(|(x, _)| x.name()).collect();
    if differing.is_empty() {
        return None;
    }
    match (a.to_dense(DType::Float32, shape), b.to_dense(DType::Float32, shape)) {
        (Ok(x), Ok(y)) => value_diff(DType::Float32, &x, &y).map(Change::Values),
        _ => Some(Change::Parts(differing)),
    }
}

/// How the decoded data of two tensors of the same dtype, shape and layout differ.
fn data_change(dtype: DType, shape: &[u64], a: &TensorData, b: &TensorData) -> Option<Change> {
    match (a.as_dense(), b.as_dense(), a.to_sparse(), b.to_sparse()) {
        (Ok(x), Ok(y), _, _) => value_diff(dtype, x, y).map(Change::Values),
        (_, _, Ok(x), Ok(y)) => sparse_diff(dtype, &x, &y).map(Change::Sparse),
        _ if a.layout() == b.layout() && a.layout().quant().is_some() => quantized_change(a, b, shape),
        _ => Some(Change::Layout { a: layout_name(a.layout()), b: layout_name(b.layout()) }),
    }
}
