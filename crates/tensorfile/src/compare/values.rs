//! The comparison kernels: two arrays of one dtype, element by element, and two sparse
//! tensors component by component.

use half::{bf16, f16};

use super::{SparseDiff, Unit, ValueDiff};
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
pub(super) enum Special {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// No infinities; only all-ones exponent and mantissa is NaN.
    Fn,
    /// No infinities and no negative zero: `0x80` is the NaN.
    Fnuz,
}

/// The value of a float8 with a sign bit, `exp_bits` of exponent with `bias`, and the rest
/// mantissa.
pub(super) fn float8(bits: u8, exp_bits: u32, bias: i32, special: Special) -> f64 {
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
pub(super) fn float8_e8m0(bits: u8) -> f64 {
    if bits == 0xFF { f64::NAN } else { 2f64.powi(i32::from(bits) - 127) }
}
