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
            (Ok(da), Ok(db)) => changes.extend(data_change(ia.dtype(), &da, &db)),
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
fn layout_name(layout: &Layout) -> &'static str {
    match layout {
        Layout::Sparse { format: crate::model::SparseFormat::Coo, .. } => "sparse_coo",
        Layout::Sparse { format: crate::model::SparseFormat::Csr, .. } => "sparse_csr",
        Layout::Dense | Layout::DimOrder(_) | Layout::Strided { .. } => "dense",
    }
}

/// How the decoded data of two tensors of the same dtype, shape and layout differ.
fn data_change(dtype: DType, a: &TensorData, b: &TensorData) -> Option<Change> {
    match (a.as_dense(), b.as_dense(), a.to_sparse(), b.to_sparse()) {
        (Ok(x), Ok(y), _, _) => value_diff(dtype, x, y).map(Change::Values),
        (_, _, Ok(x), Ok(y)) => sparse_diff(dtype, &x, &y).map(Change::Sparse),
        _ => Some(Change::Layout { a: layout_name(a.layout()), b: layout_name(b.layout()) }),
    }
}
