//! Tensor-by-tensor differences between two opened files, of any formats (`diff`).
//!
//! Entries are matched by name. For a name in both files the kind, dtype, shape and layout
//! (dense, or the sparse format) are compared; when dtype, shape and layout agree the data is
//! compared bitwise too. Tensors of the same shape are also compared by value whenever their
//! data differs, across dtypes (bfloat16 against float32) and storages (a quantized tensor
//! dequantized against a dense one): see [`Metrics`] for the metrics and their rules. Dense
//! data is read in lockstep pieces (see `stream.rs`), never whole.
//!
//! What counts as a difference:
//! - Dense data is compared element by element, **bitwise**: an element differs when its
//!   bytes differ. So a NaN equals a NaN only when both have the same bits, and `-0.0`
//!   differs from `0.0` (with an absolute difference of 0). Dtypes narrower than a byte are
//!   compared byte by byte.
//! - For numeric dtypes (integers, floats including bfloat16 and the float8 types, complex
//!   numbers part by part) the largest absolute difference over the differing elements is
//!   reported. Pairs where either side is NaN have no difference; they are counted apart.
//! - Sparse tensors are compared component by component, as stored: nnz, row pointers,
//!   indices, values. The same tensor stored with its values in another order differs.
//! - An entry that either file declares but cannot read (or that fails to decode) is not
//!   compared; it is reported, and the files are then not the same.

mod metrics;
mod report;
mod stream;
mod values;
mod walk;

#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::model::{DType, Kind};

pub use metrics::{Metrics, Tolerance};
pub use walk::{compare, compare_with};

/// One of the two files compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first file given (`a`).
    A,
    /// The second file given (`b`).
    B,
}

impl Side {
    /// `a` or `b`: how reports name the file (JSON `unreadable[].file`).
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

/// An entry that could not be compared: declared unreadable by its file, or failing to decode.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFailure {
    /// The file whose entry could not be compared.
    pub side: Side,
    /// The entry's name in that file.
    pub name: String,
    /// The error message (without the file name).
    pub message: String,
    /// The broken rule's id, when the file breaks one.
    pub rule: Option<&'static str>,
}

impl ReadFailure {
    fn new(side: Side, name: &str, error: &Error) -> Self {
        ReadFailure { side, name: name.to_string(), message: error.message(), rule: error.rule().map(|r| r.id()) }
    }
}

/// What is compared in units of: elements, or bytes for dtypes narrower than a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Whole elements of the dtype.
    Element,
    /// Bytes, for dtypes narrower than a byte (several elements to a byte).
    Byte,
}

impl Unit {
    /// `element` or `byte`: how reports spell the unit.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Element => "element",
            Unit::Byte => "byte",
        }
    }
}

/// How two arrays of the same dtype and length differ.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueDiff {
    /// What `compared`, `differing` and `first_index` count.
    pub unit: Unit,
    /// Units compared.
    pub compared: u64,
    /// Units whose bytes differ.
    pub differing: u64,
    /// Index of the first differing unit.
    pub first_index: u64,
    /// Largest absolute difference over differing pairs without NaN (numeric dtypes only).
    pub max_abs_diff: Option<f64>,
    /// Differing pairs where either side is NaN (or has a NaN part).
    pub nan_mismatches: u64,
}

/// How two sparse tensors of the same dtype, shape and format differ.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseDiff {
    /// `(a, b)` when the number of stored values differs.
    pub nnz: Option<(u64, u64)>,
    /// Whether the CSR row pointers differ (COO tensors have none).
    pub indptr_differ: bool,
    /// Whether the stored indices differ: COO coordinates, or CSR column indices.
    pub indices_differ: bool,
    /// The stored values, compared when nnz agrees.
    pub values: Option<ValueDiff>,
}

/// One way a tensor present in both files changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// One is a tensor and the other a blob.
    Kind {
        /// The kind in file A.
        a: Kind,
        /// The kind in file B.
        b: Kind,
    },
    /// The element types differ; the data is not compared.
    DType {
        /// The dtype in file A.
        a: DType,
        /// The dtype in file B.
        b: DType,
    },
    /// The shapes differ; the data is not compared.
    Shape {
        /// The shape in file A.
        a: Vec<u64>,
        /// The shape in file B.
        b: Vec<u64>,
    },
    /// `dense`, `sparse_coo`, `sparse_csr`, or a quantized layout's description.
    Layout {
        /// The layout in file A.
        a: String,
        /// The layout in file B.
        b: String,
    },
    /// Stored parts of a quantized tensor differ (named) where the scheme has no
    /// dequantization to compare values by.
    Parts(Vec<&'static str>),
    /// The dense data differs.
    Values(ValueDiff),
    /// The components of a sparse tensor differ.
    Sparse(SparseDiff),
}

/// The changes of one tensor present in both files.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorDiff {
    /// The tensor's name, the same in both files.
    pub name: String,
    /// How it changed; never empty.
    pub changes: Vec<Change>,
    /// How far its values are apart, when both have the same shape and numeric values.
    pub metrics: Option<Metrics>,
}

/// Everything that differs between two files.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Names only file A declares, in its order.
    pub only_in_a: Vec<String>,
    /// Names only file B declares, in its order.
    pub only_in_b: Vec<String>,
    /// Tensors in both files that differ, in A's order.
    pub changed: Vec<TensorDiff>,
    /// Entries that could not be compared.
    pub unreadable: Vec<ReadFailure>,
    /// Tensors in both files found identical.
    pub identical: usize,
    /// The tolerance `over_tolerance` counts against.
    pub tolerance: Tolerance,
}

impl Diff {
    /// Whether the files hold the same tensors, all readable and identical.
    pub fn is_same(&self) -> bool {
        self.only_in_a.is_empty() && self.only_in_b.is_empty() && self.changed.is_empty() && self.unreadable.is_empty()
    }

    /// Whether the files hold the same tensors, all readable, and every changed tensor has the
    /// same shape and values within the tolerance (none over it). A dtype or storage change
    /// alone passes; a tensor whose values cannot be compared as numbers does not.
    pub fn is_close(&self) -> bool {
        self.only_in_a.is_empty()
            && self.only_in_b.is_empty()
            && self.unreadable.is_empty()
            && self.changed.iter().all(|t| t.metrics.as_ref().is_some_and(|m| m.over_tolerance == 0))
    }
}
