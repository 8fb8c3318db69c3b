//! Tensor-by-tensor differences between two opened files, of any formats (`diff`).
//!
//! Entries are matched by name. For a name in both files the kind, dtype, shape and layout
//! (dense, or the sparse format) are compared; when dtype, shape and layout agree the data is
//! compared too, one tensor of each file in memory at a time.
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

use std::collections::HashSet;
use std::fmt;

use half::{bf16, f16};
use serde_json::{Value as Json, json};

use crate::error::Error;
use crate::file::TensorFile;
use crate::model::{DType, Kind, Layout, SparseData, TensorData, TensorInfo};

/// One of the two files compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
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
    pub side: Side,
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
    Element,
    Byte,
}

impl Unit {
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
    pub indptr_differ: bool,
    pub indices_differ: bool,
    /// The stored values, compared when nnz agrees.
    pub values: Option<ValueDiff>,
}

/// One way a tensor present in both files changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Kind {
        a: Kind,
        b: Kind,
    },
    DType {
        a: DType,
        b: DType,
    },
    Shape {
        a: Vec<u64>,
        b: Vec<u64>,
    },
    /// `dense`, `sparse_coo` or `sparse_csr`.
    Layout {
        a: &'static str,
        b: &'static str,
    },
    Values(ValueDiff),
    Sparse(SparseDiff),
}

/// The changes of one tensor present in both files.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorDiff {
    pub name: String,
    pub changes: Vec<Change>,
}

/// Everything that differs between two files.
#[derive(Debug, Clone, Default, PartialEq)]
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
}

impl Diff {
    /// Whether the files hold the same tensors, all readable and identical.
    pub fn is_same(&self) -> bool {
        self.only_in_a.is_empty() && self.only_in_b.is_empty() && self.changed.is_empty() && self.unreadable.is_empty()
    }

    pub fn to_json(&self) -> Json {
        json!({
            "same": self.is_same(),
            "identical": self.identical,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "changed": self.changed.iter().map(|t| json!({
                "name": t.name,
                "changes": t.changes.iter().map(Change::to_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "unreadable": self.unreadable.iter().map(|u| json!({
                "file": u.side.name(),
                "name": u.name,
                "error": u.message,
                "rule": u.rule,
            })).collect::<Vec<_>>(),
        })
    }
}

impl Change {
    pub fn to_json(&self) -> Json {
        match self {
            Change::Kind { a, b } => json!({ "what": "kind", "a": a.name(), "b": b.name() }),
            Change::DType { a, b } => json!({ "what": "dtype", "a": a.name(), "b": b.name() }),
            Change::Shape { a, b } => json!({ "what": "shape", "a": a, "b": b }),
            Change::Layout { a, b } => json!({ "what": "layout", "a": a, "b": b }),
            Change::Values(v) => {
                let mut j = json!({ "what": "values" });
                if let (Some(all), Json::Object(fields)) = (j.as_object_mut(), v.to_json()) {
                    all.extend(fields);
                }
                j
            }
            Change::Sparse(s) => json!({
                "what": "sparse",
                "nnz": s.nnz.map(|(a, b)| json!({ "a": a, "b": b })),
                "indptr_differ": s.indptr_differ,
                "indices_differ": s.indices_differ,
                "values": s.values.as_ref().map(ValueDiff::to_json),
            }),
        }
    }
}

impl ValueDiff {
    pub fn to_json(&self) -> Json {
        json!({
            "unit": self.unit.name(),
            "compared": self.compared,
            "differing": self.differing,
            "first_index": self.first_index,
            // JSON has no infinity: an infinite difference is the string "inf".
            "max_abs_diff": self.max_abs_diff.map(|d| serde_json::Number::from_f64(d).map_or(Json::from("inf"), Json::Number)),
            "nan_mismatches": self.nan_mismatches,
        })
    }
}

impl fmt::Display for ValueDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.unit.name();
        write!(f, "{} of {} {unit}s differ (first at {unit} {})", self.differing, self.compared, self.first_index)?;
        if let Some(d) = self.max_abs_diff {
            write!(f, ", max abs difference {d}")?;
        }
        if self.nan_mismatches > 0 {
            write!(f, ", {} with NaN", self.nan_mismatches)?;
        }
        Ok(())
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Kind { a, b } => write!(f, "kind {} -> {}", a.name(), b.name()),
            Change::DType { a, b } => write!(f, "dtype {a} -> {b}"),
            Change::Shape { a, b } => write!(f, "shape {a:?} -> {b:?}"),
            Change::Layout { a, b } => write!(f, "layout {a} -> {b}"),
            Change::Values(v) => v.fmt(f),
            Change::Sparse(s) => {
                let mut parts = Vec::new();
                if let Some((a, b)) = s.nnz {
                    parts.push(format!("nnz {a} -> {b}"));
                }
                if s.indptr_differ {
                    parts.push("row pointers differ".into());
                }
                if s.indices_differ {
                    parts.push("indices differ".into());
                }
                if let Some(v) = &s.values {
                    parts.push(format!("values: {v}"));
                }
                write!(f, "sparse {}", parts.join(", "))
            }
        }
    }
}

/// Compare every entry of `a` with the entry of the same name in `b`.
pub fn compare(a: &TensorFile, b: &TensorFile) -> Diff {
    let mut diff = Diff::default();
    let unreadable_a: HashSet<&str> = a.unreadable().iter().map(|u| u.name.as_str()).collect();
    let unreadable_b: HashSet<&str> = b.unreadable().iter().map(|u| u.name.as_str()).collect();
    for u in a.unreadable() {
        diff.unreadable.push(ReadFailure::new(Side::A, &u.name, &u.error));
    }
    for u in b.unreadable() {
        diff.unreadable.push(ReadFailure::new(Side::B, &u.name, &u.error));
    }
    for (i, entry) in a.entries().iter().enumerate() {
        let name = entry.info.name.as_str();
        match b.index_of(name) {
            Some(j) => compare_entry(a, i, b, j, &mut diff),
            None if unreadable_b.contains(name) => {}
            None => diff.only_in_a.push(name.to_string()),
        }
    }
    let in_a = |name: &str| a.index_of(name).is_some() || unreadable_a.contains(name);
    let in_b = |name: &str| b.index_of(name).is_some() || unreadable_b.contains(name);
    diff.only_in_a.extend(a.unreadable().iter().map(|u| u.name.as_str()).filter(|n| !in_b(n)).map(str::to_string));
    let names_b =
        b.entries().iter().map(|e| e.info.name.as_str()).chain(b.unreadable().iter().map(|u| u.name.as_str()));
    diff.only_in_b.extend(names_b.filter(|n| !in_a(n)).map(str::to_string));
    diff
}

/// Compare entry `i` of `a` with entry `j` of `b` (same name), recording the outcome.
fn compare_entry(a: &TensorFile, i: usize, b: &TensorFile, j: usize, diff: &mut Diff) {
    let (ia, ib) = (&a.entries()[i].info, &b.entries()[j].info);
    let mut changes = described_changes(ia, ib);
    let comparable = ia.dtype == ib.dtype && ia.shape == ib.shape && layout_name(&ia.layout) == layout_name(&ib.layout);
    if comparable {
        match (a.read_index(i), b.read_index(j)) {
            (Ok(da), Ok(db)) => changes.extend(data_change(ia.dtype, &da, &db)),
            (ra, rb) => {
                for (side, r) in [(Side::A, ra), (Side::B, rb)] {
                    if let Err(e) = r {
                        diff.unreadable.push(ReadFailure::new(side, &ia.name, &e));
                    }
                }
                if !changes.is_empty() {
                    diff.changed.push(TensorDiff { name: ia.name.clone(), changes });
                }
                return;
            }
        }
    }
    if changes.is_empty() {
        diff.identical += 1;
    } else {
        diff.changed.push(TensorDiff { name: ia.name.clone(), changes });
    }
}

/// Differences in what the files say about a tensor (kind, dtype, shape, layout).
fn described_changes(a: &TensorInfo, b: &TensorInfo) -> Vec<Change> {
    let mut changes = Vec::new();
    if a.kind != b.kind {
        changes.push(Change::Kind { a: a.kind, b: b.kind });
    }
    if a.dtype != b.dtype {
        changes.push(Change::DType { a: a.dtype, b: b.dtype });
    }
    if a.shape != b.shape {
        changes.push(Change::Shape { a: a.shape.clone(), b: b.shape.clone() });
    }
    let (la, lb) = (layout_name(&a.layout), layout_name(&b.layout));
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

fn sparse_diff(dtype: DType, a: &SparseData, b: &SparseData) -> Option<SparseDiff> {
    let same_nnz = a.nnz == b.nnz;
    let d = SparseDiff {
        nnz: (!same_nnz).then_some((a.nnz, b.nnz)),
        indptr_differ: a.indptr != b.indptr,
        indices_differ: a.indices != b.indices,
        values: if same_nnz { value_diff(dtype, &a.values, &b.values) } else { None },
    };
    (!same_nnz || d.indptr_differ || d.indices_differ || d.values.is_some()).then_some(d)
}

/// Compare two arrays of `dtype` with the same length; `None` when their bytes are equal.
fn value_diff(dtype: DType, a: &[u8], b: &[u8]) -> Option<ValueDiff> {
    if a == b {
        return None;
    }
    let (unit, size) = match dtype.size() {
        Some(s) => (Unit::Element, usize::try_from(s).unwrap_or(1).max(1)),
        None => (Unit::Byte, 1),
    };
    let numeric = if unit == Unit::Element { Numeric::of(dtype) } else { None };
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
        if let Some(n) = &numeric {
            let delta = n.abs_diff(x, y);
            if delta.is_nan() {
                d.nan_mismatches += 1;
            } else {
                d.max_abs_diff = Some(d.max_abs_diff.map_or(delta, |m| m.max(delta)));
            }
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
    Int(fn(&[u8]) -> i128),
    Float(fn(&[u8]) -> f64),
    /// Two parts, each read with this function.
    Complex(fn(&[u8]) -> f64),
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
            DType::Float16 => Numeric::Float(read_f16),
            DType::BFloat16 => Numeric::Float(|b| bf16::from_le_bytes(le(b)).to_f64()),
            DType::Float32 => Numeric::Float(read_f32),
            DType::Float64 => Numeric::Float(|b| f64::from_le_bytes(le(b))),
            DType::Float8E4M3Fn => Numeric::Float(|b| float8(le::<1>(b)[0], 4, 7, Special::Fn)),
            DType::Float8E5M2 => Numeric::Float(|b| float8(le::<1>(b)[0], 5, 15, Special::Ieee)),
            DType::Float8E4M3Fnuz => Numeric::Float(|b| float8(le::<1>(b)[0], 4, 8, Special::Fnuz)),
            DType::Float8E5M2Fnuz => Numeric::Float(|b| float8(le::<1>(b)[0], 5, 16, Special::Fnuz)),
            DType::Float8E8M0Fnu => Numeric::Float(|b| float8_e8m0(le::<1>(b)[0])),
            DType::Complex32 => Numeric::Complex(read_f16),
            DType::Complex64 => Numeric::Complex(read_f32),
            DType::Complex128 => Numeric::Complex(|b| f64::from_le_bytes(le(b))),
            _ => return None,
        })
    }

    /// `|x - y|`, or NaN when either is (or has a part that is) NaN.
    fn abs_diff(&self, x: &[u8], y: &[u8]) -> f64 {
        match self {
            Numeric::Int(read) => (read(x) - read(y)).unsigned_abs() as f64,
            Numeric::Float(read) => float_abs_diff(read(x), read(y)),
            Numeric::Complex(read) => {
                let half = x.len() / 2;
                let re = float_abs_diff(read(&x[..half]), read(&y[..half]));
                let im = float_abs_diff(read(&x[half..]), read(&y[half..]));
                if re.is_nan() || im.is_nan() { f64::NAN } else { re.max(im) }
            }
        }
    }
}

fn read_f16(b: &[u8]) -> f64 {
    f16::from_le_bytes(le(b)).to_f64()
}

fn read_f32(b: &[u8]) -> f64 {
    f64::from(f32::from_le_bytes(le(b)))
}

fn float_abs_diff(x: f64, y: f64) -> f64 {
    if x == y { 0.0 } else { (x - y).abs() }
}

/// Which encodings of a float8 type are special.
#[derive(Clone, Copy)]
enum Special {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// No infinities; only all-ones exponent and mantissa is NaN.
    Fn,
    /// No infinities and no negative zero: `0x80` is the NaN.
    Fnuz,
}

/// The value of a float8 with a sign bit, `exp_bits` of exponent with `bias`, and the rest
/// mantissa.
fn float8(bits: u8, exp_bits: u32, bias: i32, special: Special) -> f64 {
    let man_bits = 7 - exp_bits;
    let sign = if bits & 0x80 == 0 { 1.0 } else { -1.0 };
    let exp = i32::from((bits & 0x7F) >> man_bits);
    let man = f64::from(bits & ((1 << man_bits) - 1));
    match special {
        Special::Ieee if exp == (1 << exp_bits) - 1 => return if man == 0.0 { sign * f64::INFINITY } else { f64::NAN },
        Special::Fn if bits & 0x7F == 0x7F => return f64::NAN,
        Special::Fnuz if bits == 0x80 => return f64::NAN,
        _ => {}
    }
    let fraction = man / f64::from(1u32 << man_bits);
    if exp == 0 { sign * fraction * 2f64.powi(1 - bias) } else { sign * (1.0 + fraction) * 2f64.powi(exp - bias) }
}

/// float8_e8m0fnu: an unsigned power of two, `2^(bits - 127)`; `0xFF` is NaN.
fn float8_e8m0(bits: u8) -> f64 {
    if bits == 0xFF { f64::NAN } else { 2f64.powi(i32::from(bits) - 127) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{Format, WriteOptions};
    use crate::model::{SparseFormat, TensorInfo};
    use crate::source::Bytes;

    fn file(format: Format, tensors: &[(TensorInfo, TensorData)]) -> TensorFile {
        let out = crate::formats::write_to_vec(format, tensors, &WriteOptions::default()).unwrap();
        TensorFile::from_bytes(Bytes::from_vec(out)).unwrap()
    }

    fn dense(name: &str, dtype: DType, shape: &[u64], bytes: Vec<u8>) -> (TensorInfo, TensorData) {
        (TensorInfo::dense(name, dtype, shape.to_vec()), TensorData::dense(Bytes::from_vec(bytes)))
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn sparse(name: &str, indices: Vec<u64>, values: &[f32]) -> (TensorInfo, TensorData) {
        let nnz = values.len() as u64;
        let layout = Layout::Sparse { format: SparseFormat::Coo, nnz };
        let info = TensorInfo { layout, ..TensorInfo::dense(name, DType::Float32, vec![3, 4]) };
        let data = SparseData {
            format: SparseFormat::Coo,
            nnz,
            indptr: vec![],
            indices,
            values: Bytes::from_vec(f32s(values)),
        };
        (info, TensorData::sparse(data))
    }

    #[test]
    fn the_same_tensors_in_two_formats_are_the_same() {
        let tensors = [
            dense("w", DType::Float32, &[2, 2], f32s(&[1.0, 2.0, f32::NAN, -0.0])),
            dense("ids", DType::Int64, &[2], vec![1; 16]),
        ];
        let diff = compare(&file(Format::Zt, &tensors), &file(Format::Safetensors, &tensors));
        assert!(diff.is_same(), "{diff:?}");
        assert_eq!(diff.identical, 2);
        assert_eq!(diff.to_json()["same"], true);
    }

    #[test]
    fn names_dtypes_and_shapes() {
        let a = file(
            Format::Zt,
            &[
                dense("gone", DType::UInt8, &[1], vec![0]),
                dense("retyped", DType::Int16, &[1], vec![0, 0]),
                dense("reshaped", DType::UInt8, &[2, 3], vec![0; 6]),
            ],
        );
        let b = file(
            Format::Zt,
            &[
                dense("reshaped", DType::UInt8, &[3, 2], vec![0; 6]),
                dense("retyped", DType::UInt16, &[1], vec![0, 0]),
                dense("new", DType::UInt8, &[1], vec![0]),
            ],
        );
        let diff = compare(&a, &b);
        assert_eq!(diff.only_in_a, ["gone"]);
        assert_eq!(diff.only_in_b, ["new"]);
        assert_eq!(diff.changed.len(), 2);
        assert_eq!(diff.changed[0].changes, [Change::DType { a: DType::Int16, b: DType::UInt16 }]);
        assert_eq!(diff.changed[1].changes, [Change::Shape { a: vec![2, 3], b: vec![3, 2] }]);
        assert_eq!(diff.changed[1].changes[0].to_string(), "shape [2, 3] -> [3, 2]");
        assert!(!diff.is_same());
        let j = diff.to_json();
        assert_eq!(j["changed"][0]["changes"][0], json!({ "what": "dtype", "a": "int16", "b": "uint16" }));
    }

    #[test]
    fn float_values_report_count_and_largest_difference() {
        let a = f32s(&[1.0, 2.0, 3.0, f32::NAN, 5.0, 0.0]);
        let b = f32s(&[1.0, 2.5, 1.0, 4.0, 5.0, -0.0]);
        let d = value_diff(DType::Float32, &a, &b).unwrap();
        assert_eq!((d.compared, d.differing, d.first_index, d.nan_mismatches), (6, 4, 1, 1));
        assert_eq!(d.max_abs_diff, Some(2.0));
        assert_eq!(d.to_string(), "4 of 6 elements differ (first at element 1), max abs difference 2, 1 with NaN");
        assert_eq!(value_diff(DType::Float32, &a, &a.clone()), None, "the same NaN bits are equal");
        let longer = value_diff(DType::Float32, &f32s(&[1.0]), &f32s(&[1.0, 2.0])).unwrap();
        assert_eq!((longer.compared, longer.differing, longer.first_index), (2, 1, 1));
        let other_nan = f32s(&[f32::from_bits(0x7fc0_0001)]);
        assert_eq!(value_diff(DType::Float32, &f32s(&[f32::NAN]), &other_nan).unwrap().nan_mismatches, 1);
    }

    #[test]
    fn infinite_differences_render_in_json() {
        let d = value_diff(DType::Float32, &f32s(&[f32::INFINITY]), &f32s(&[1.0])).unwrap();
        assert_eq!(d.max_abs_diff, Some(f64::INFINITY));
        assert_eq!(d.to_json()["max_abs_diff"], "inf");
    }

    #[test]
    fn integers_complex_and_half_types() {
        let d = value_diff(DType::Int64, &i64::MIN.to_le_bytes(), &i64::MAX.to_le_bytes()).unwrap();
        assert_eq!(d.max_abs_diff, Some(u64::MAX as f64));
        let c = |re: f32, im: f32| f32s(&[re, im]);
        let d = value_diff(DType::Complex64, &c(1.0, 2.0), &c(1.5, -1.0)).unwrap();
        assert_eq!((d.compared, d.max_abs_diff), (1, Some(3.0)));
        let bf = |v: f32| bf16::from_f32(v).to_le_bytes().to_vec();
        assert_eq!(value_diff(DType::BFloat16, &bf(1.0), &bf(-2.0)).unwrap().max_abs_diff, Some(3.0));
        let d = value_diff(DType::Bool, &[0, 1], &[1, 1]).unwrap();
        assert_eq!((d.differing, d.max_abs_diff), (1, None));
        let d = value_diff(DType::Float4E2M1Fn, &[0x12, 0x34], &[0x12, 0x35]).unwrap();
        assert_eq!((d.unit, d.compared, d.differing), (Unit::Byte, 2, 1));
    }

    #[test]
    fn float8_values() {
        assert_eq!(float8(0x7E, 4, 7, Special::Fn), 448.0);
        assert_eq!(float8(0x01, 4, 7, Special::Fn), 2f64.powi(-9));
        assert!(float8(0xFF, 4, 7, Special::Fn).is_nan());
        assert_eq!(float8(0x7B, 5, 15, Special::Ieee), 57344.0);
        assert_eq!(float8(0xFC, 5, 15, Special::Ieee), f64::NEG_INFINITY);
        assert!(float8(0x7D, 5, 15, Special::Ieee).is_nan());
        assert_eq!(float8(0x7F, 4, 8, Special::Fnuz), 240.0);
        assert_eq!(float8(0x7F, 5, 16, Special::Fnuz), 57344.0);
        assert!(float8(0x80, 5, 16, Special::Fnuz).is_nan());
        assert_eq!(float8(0xB8, 4, 7, Special::Fn), -1.0);
        assert_eq!(float8_e8m0(127), 1.0);
        assert_eq!(float8_e8m0(0), 2f64.powi(-127));
        assert!(float8_e8m0(0xFF).is_nan());
        let d = value_diff(DType::Float8E4M3Fn, &[0x38], &[0x40]).unwrap();
        assert_eq!(d.max_abs_diff, Some(1.0));
    }

    #[test]
    fn sparse_components() {
        let a = file(Format::Zt, &[sparse("s", vec![0, 1, 2, 3], &[1.0, 2.0]), sparse("t", vec![0, 1], &[1.0])]);
        let b =
            file(Format::Zt, &[sparse("s", vec![0, 1, 2, 3], &[1.0, 2.5]), sparse("t", vec![0, 1, 2, 3], &[1.0, 1.0])]);
        let diff = compare(&a, &b);
        let Change::Sparse(s) = &diff.changed[0].changes[0] else { panic!("{diff:?}") };
        assert_eq!((s.nnz, s.indices_differ), (None, false));
        assert_eq!(s.values.as_ref().unwrap().max_abs_diff, Some(0.5));
        let Change::Sparse(t) = &diff.changed[1].changes[0] else { panic!("{diff:?}") };
        assert_eq!((t.nnz, t.indices_differ, t.values.is_none()), (Some((1, 2)), true, true));
        let dense_s = file(Format::Zt, &[dense("s", DType::Float32, &[3, 4], vec![0; 48])]);
        let diff = compare(&a, &dense_s);
        assert_eq!(diff.changed[0].changes, [Change::Layout { a: "sparse_coo", b: "dense" }]);
    }

    #[test]
    fn unreadable_entries_are_reported_not_compared() {
        let header = br#"{"odd":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]},"w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&[1, 2, 3, 4]);
        let a = TensorFile::from_bytes(Bytes::from_vec(bytes)).unwrap();
        assert_eq!(a.unreadable().len(), 1);
        let b = file(
            Format::Zt,
            &[dense("w", DType::UInt8, &[2], vec![3, 4]), dense("odd", DType::UInt8, &[2], vec![0; 2])],
        );
        let diff = compare(&a, &b);
        assert_eq!(diff.identical, 1);
        assert!(diff.only_in_a.is_empty() && diff.only_in_b.is_empty(), "{diff:?}");
        assert_eq!(diff.unreadable.len(), 1);
        assert_eq!((diff.unreadable[0].side, diff.unreadable[0].name.as_str()), (Side::A, "odd"));
        assert!(!diff.is_same());
        let alone = compare(&a, &file(Format::Zt, &[]));
        assert_eq!(alone.only_in_a, ["w", "odd"]);
    }
}
