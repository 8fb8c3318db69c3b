//! The comparison kernels: two arrays of one dtype, element by element, and two sparse
//! tensors component by component.

use super::{SparseDiff, Unit, ValueDiff};
use crate::model::elements::Elements;
use crate::model::{DType, SparseData};

pub(super) fn sparse_diff(dtype: DType, a: &SparseData, b: &SparseData) -> Option<SparseDiff> {
    let same_nnz = a.nnz() == b.nnz();
    let d = SparseDiff {
        nnz: (!same_nnz).then_some((a.nnz(), b.nnz())),
        indptr_differ: a.indptr() != b.indptr(),
        indices_differ: a.indices() != b.indices(),
        values: if same_nnz { value_diff(dtype, a.values(), b.values()) } else { None },
    };
    (!same_nnz || d.indptr_differ || d.indices_differ || d.values.is_some()).then_some(d)
}

/// Compare two arrays of `dtype` with the same length; `None` when their bytes are equal.
pub(super) fn value_diff(dtype: DType, a: &[u8], b: &[u8]) -> Option<ValueDiff> {
    if a == b {
        return None;
    }
    let (unit, size) = match dtype.size() {
        Some(s) => (Unit::Element, usize::try_from(s).unwrap_or(1).max(1)),
        None => (Unit::Byte, 1),
    };
    let numeric = if unit == Unit::Element { Numeric::of(dtype) } else { None };
    // Floating values decoded once for the whole arrays (a part of each for complex numbers).
    let floats = match &numeric {
        Some(Numeric::Float(e)) => Some((e.decode(a), e.decode(b), e.group_values())),
        _ => None,
    };
    let mut d = ValueDiff {
        unit,
        compared: (a.len().max(b.len()) / size) as u64,
        differing: 0,
        first_index: 0,
        max_abs_diff: None,
        nan_mismatches: 0,
    };
    for (k, (x, y)) in a.chunks_exact(size).zip(b.chunks_exact(size)).enumerate() {
        if x == y {
            continue;
        }
        if d.differing == 0 {
            d.first_index = k as u64;
        }
        d.differing += 1;
        let delta = match (&numeric, &floats) {
            (Some(Numeric::Int(read)), _) => (read(x) - read(y)).unsigned_abs() as f64,
            (_, Some((va, vb, parts))) => {
                let range = k * parts..(k + 1) * parts;
                let pairs = va.get(range.clone()).unwrap_or(&[]).iter().zip(vb.get(range).unwrap_or(&[]));
                pairs.fold(0.0, |m: f64, (&p, &q)| {
                    let delta = float_abs_diff(p, q);
                    if m.is_nan() || delta.is_nan() { f64::NAN } else { m.max(delta) }
                })
            }
            _ => continue,
        };
        if delta.is_nan() {
            d.nan_mismatches += 1;
        } else {
            d.max_abs_diff = Some(d.max_abs_diff.map_or(delta, |m| m.max(delta)));
        }
    }
    // Arrays of different lengths (never from a valid file): the extra units differ too.
    let common = (a.len().min(b.len()) / size) as u64;
    if d.differing == 0 {
        d.first_index = common;
    }
    d.differing += d.compared - common;
    Some(d)
}

/// How to read one element of a numeric dtype.
enum Numeric {
    /// Integers, read exactly.
    Int(fn(&[u8]) -> i128),
    /// Floating and complex numbers, decoded to `f64` (complex numbers as two parts).
    Float(Elements),
}

/// The first `N` bytes of `s` (callers pass exactly `N`).
fn le<const N: usize>(s: &[u8]) -> [u8; N] {
    s.get(..N).and_then(|p| p.try_into().ok()).unwrap_or([0; N])
}

macro_rules! int {
    ($t:ty) => {
        Numeric::Int(|b| i128::from(<$t>::from_le_bytes(le(b))))
    };
}

impl Numeric {
    fn of(dtype: DType) -> Option<Numeric> {
        Some(match dtype {
            DType::UInt8 => int!(u8),
            DType::Int8 => int!(i8),
            DType::UInt16 => int!(u16),
            DType::Int16 => int!(i16),
            DType::UInt32 => int!(u32),
            DType::Int32 => int!(i32),
            DType::UInt64 => int!(u64),
            DType::Int64 => int!(i64),
            d if d.is_float() || d.is_complex() => Numeric::Float(Elements::of(dtype).ok()?),
            _ => return None,
        })
    }
}

/// `|x - y|`: 0 for equal values (equal infinities too), NaN when either is NaN.
fn float_abs_diff(x: f64, y: f64) -> f64 {
    if x == y { 0.0 } else { (x - y).abs() }
}
