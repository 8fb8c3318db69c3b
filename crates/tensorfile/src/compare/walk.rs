//! The file-level walk: match entries by name, compare what each file says about them, and
//! read and compare the data of those that agree.

use std::collections::HashSet;

use super::values::{sparse_diff, value_diff};
use super::{Change, Diff, ReadFailure, Side, TensorDiff};
use crate::file::TensorFile;
use crate::model::{DType, Layout, TensorData, TensorInfo};

/// Compare every entry of `a` with the entry of the same name in `b`.
pub fn compare(a: &TensorFile, b: &TensorFile) -> Diff {
    let mut diff = Diff::default();
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
    let mut changes = described_changes(ia, ib);
    let comparable =
        ia.dtype() == ib.dtype() && ia.shape() == ib.shape() && layout_name(ia.layout()) == layout_name(ib.layout());
    if comparable {
        match (a.read_index(i), b.read_index(j)) {
            (Ok(da), Ok(db)) => changes.extend(data_change(ia.dtype(), ia.shape(), &da, &db)),
            (ra, rb) => {
                for (side, r) in [(Side::A, ra), (Side::B, rb)] {
                    if let Err(e) = r {
                        diff.unreadable.push(ReadFailure::new(side, ia.name(), &e));
                    }
                }
                if !changes.is_empty() {
                    diff.changed.push(TensorDiff { name: ia.name().to_string(), changes });
                }
                return;
            }
        }
    }
    if changes.is_empty() {
        diff.identical += 1;
    } else {
        diff.changed.push(TensorDiff { name: ia.name().to_string(), changes });
    }
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
