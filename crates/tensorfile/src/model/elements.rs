//! Elements of a numeric dtype read as `f64` numbers: the one decoder behind every command that
//! looks at values (statistics, printing, numeric differences, the finiteness check).
//!
//! Every integer, floating and complex dtype the library reads decodes here, the narrow ones
//! too: float8 (every variant), float4, the packed 4- and 2-bit integers, bool as 0 and 1.
//! Every value of those dtypes is exactly representable as an `f64` except 64-bit integers
//! beyond 2^53, which round to the nearest `f64` (as numpy's `astype(float64)` does).
//!
//! Bytes are little-endian (what readers hand over). Decoding works on *groups*: the smallest
//! run of bytes holding whole elements (one element, or one byte of packed sub-byte elements);
//! a group decodes to [`Elements::group_values`] numbers (the real and imaginary parts of a
//! complex number are two numbers, real first).

use half::f16;

use crate::error::{Error, Result};
use crate::model::DType;

/// How to read the elements of one dtype as `f64` numbers.
#[derive(Clone)]
pub struct Elements {
    dtype: DType,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// One byte per element, each value from a table.
    Byte(Box<[f64; 256]>),
    /// Several elements per byte of `bits` each, lowest bits first, each value from a table.
    Packed {
        bits: u32,
        table: Box<[f64; 16]>,
    },
    /// Complex numbers: two parts, each read as this kind.
    Complex(Box<Kind>),
}

impl Elements {
    /// The decoder for `dtype`; an error for dtypes whose elements are not plain numbers
    /// (6-bit floats, torch's quantized integers without their scales, opaque bits).
    pub fn of(dtype: DType) -> Result<Elements> {
        let kind = match dtype {
            DType::Bool => Kind::Bool,
            DType::UInt8 => Kind::U8,
            DType::Int8 => Kind::I8,
            DType::UInt16 => Kind::U16,
            DType::Int16 => Kind::I16,
            DType::UInt32 => Kind::U32,
            DType::Int32 => Kind::I32,
            DType::UInt64 => Kind::U64,
            DType::Int64 => Kind::I64,
            DType::Float16 => Kind::F16,
            DType::BFloat16 => Kind::BF16,
            DType::Float32 => Kind::F32,
            DType::Float64 => Kind::F64,
            DType::Complex32 => Kind::Complex(Box::new(Kind::F16)),
            DType::Complex64 => Kind::Complex(Box::new(Kind::F32)),
            DType::Complex128 => Kind::Complex(Box::new(Kind::F64)),
            DType::Float8E4M3Fn => byte_table(|b| float8(b, 4, 7, Special::Fn)),
            DType::Float8E5M2 => byte_table(|b| float8(b, 5, 15, Special::Ieee)),
            DType::Float8E4M3Fnuz => byte_table(|b| float8(b, 4, 8, Special::Fnuz)),
            DType::Float8E5M2Fnuz => byte_table(|b| float8(b, 5, 16, Special::Fnuz)),
            DType::Float8E8M0Fnu => byte_table(float8_e8m0),
            DType::UInt4 => packed(4, f64::from),
            DType::Int4 => packed(4, |v| f64::from(v) - if v >= 8 { 16.0 } else { 0.0 }),
            DType::UInt2 => packed(2, f64::from),
            DType::Int2 => packed(2, |v| f64::from(v) - if v >= 2 { 4.0 } else { 0.0 }),
            // One element of float4_e2m1fn_x2 is a byte of two fp4 values, low nibble first.
            DType::Float4E2M1Fn | DType::Float4E2M1FnX2 => packed(4, float4_e2m1),
            // The rest are the opaque dtypes (DType::is_opaque): a guard would not make the
            // match exhaustive.
            _ => {
                debug_assert!(dtype.is_opaque(), "{dtype} has no decoder");
                return Err(Error::unsupported(format!("{dtype} elements are not read as numbers")));
            }
        };
        Ok(Elements { dtype, kind })
    }

    /// Whether elements of `dtype` read as numbers.
    pub fn reads(dtype: DType) -> bool {
        Elements::of(dtype).is_ok()
    }

    /// The dtype decoded.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Whether elements are complex (each decodes to a real and an imaginary part).
    pub fn is_complex(&self) -> bool {
        matches!(self.kind, Kind::Complex(_))
    }

    /// Whether elements are integers or bools (each value exact, no NaN or infinity).
    pub fn is_integer(&self) -> bool {
        matches!(
            self.dtype,
            DType::Bool
                | DType::UInt8
                | DType::Int8
                | DType::UInt16
                | DType::Int16
                | DType::UInt32
                | DType::Int32
                | DType::UInt64
                | DType::Int64
                | DType::UInt4
                | DType::Int4
                | DType::UInt2
                | DType::Int2
        )
    }

    /// Bytes of one group: the smallest run of whole elements (1 for packed dtypes).
    pub fn group_bytes(&self) -> usize {
        match &self.kind {
            Kind::Packed { .. } => 1,
            Kind::Complex(part) => 2 * part_bytes(part),
            k => part_bytes(k),
        }
    }

    /// Numbers one group decodes to: 1, 2 for a complex number or a byte of 4-bit elements,
    /// 4 for a byte of 2-bit elements.
    pub fn group_values(&self) -> usize {
        match &self.kind {
            Kind::Packed { bits, .. } => (8 / bits) as usize,
            Kind::Complex(_) => 2,
            _ => 1,
        }
    }

    /// Numbers `bytes` decode to (whole groups only).
    pub fn values_in(&self, bytes: usize) -> usize {
        bytes / self.group_bytes() * self.group_values()
    }

    /// Append the numbers of the whole groups in `bytes` to `out` (a trailing partial group is
    /// left out: callers cut pieces on group boundaries, see `numbers::aligned`).
    pub fn decode_into(&self, bytes: &[u8], out: &mut Vec<f64>) {
        let whole = bytes.len() / self.group_bytes() * self.group_bytes();
        decode_kind(&self.kind, &bytes[..whole], out);
    }

    /// The numbers of the whole groups in `bytes`.
    pub fn decode(&self, bytes: &[u8]) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.values_in(bytes.len()));
        self.decode_into(bytes, &mut out);
        out
    }
}

fn part_bytes(kind: &Kind) -> usize {
    match kind {
        Kind::Bool | Kind::U8 | Kind::I8 | Kind::Byte(_) | Kind::Packed { .. } => 1,
        Kind::U16 | Kind::I16 | Kind::F16 | Kind::BF16 => 2,
        Kind::U32 | Kind::I32 | Kind::F32 => 4,
        Kind::U64 | Kind::I64 | Kind::F64 => 8,
        Kind::Complex(part) => 2 * part_bytes(part),
    }
}

macro_rules! each {
    ($bytes:expr, $out:expr, $n:literal, $read:expr) => {{
        let read = $read;
        $out.extend($bytes.chunks_exact($n).map(|c| {
            let mut a = [0u8; $n];
            a.copy_from_slice(c);
            read(a)
        }))
    }};
}

fn decode_kind(kind: &Kind, bytes: &[u8], out: &mut Vec<f64>) {
    match kind {
        Kind::Bool => out.extend(bytes.iter().map(|&b| if b != 0 { 1.0 } else { 0.0 })),
        Kind::U8 => out.extend(bytes.iter().map(|&b| f64::from(b))),
        Kind::I8 => out.extend(bytes.iter().map(|&b| f64::from(b as i8))),
        Kind::U16 => each!(bytes, out, 2, |a| f64::from(u16::from_le_bytes(a))),
        Kind::I16 => each!(bytes, out, 2, |a| f64::from(i16::from_le_bytes(a))),
        Kind::U32 => each!(bytes, out, 4, |a| f64::from(u32::from_le_bytes(a))),
        Kind::I32 => each!(bytes, out, 4, |a| f64::from(i32::from_le_bytes(a))),
        Kind::U64 => each!(bytes, out, 8, |a| u64::from_le_bytes(a) as f64),
        Kind::I64 => each!(bytes, out, 8, |a| i64::from_le_bytes(a) as f64),
        Kind::F16 => each!(bytes, out, 2, |a| f16::from_le_bytes(a).to_f64()),
        Kind::BF16 => each!(bytes, out, 2, |a| f64::from(f32::from_bits(u32::from(u16::from_le_bytes(a)) << 16))),
        Kind::F32 => each!(bytes, out, 4, |a| f64::from(f32::from_le_bytes(a))),
        Kind::F64 => each!(bytes, out, 8, f64::from_le_bytes),
        Kind::Byte(table) => out.extend(bytes.iter().map(|&b| table[usize::from(b)])),
        Kind::Packed { bits, table } => {
            let mask = (1u8 << bits) - 1;
            for &b in bytes {
                let mut shift = 0;
                while shift < 8 {
                    out.push(table[usize::from((b >> shift) & mask)]);
                    shift += bits;
                }
            }
        }
        // Parts are stored one after the other: decoding the bytes as parts gives re, im, re...
        Kind::Complex(part) => decode_kind(part, bytes, out),
    }
}

fn byte_table(value: impl Fn(u8) -> f64) -> Kind {
    let mut table = Box::new([0.0; 256]);
    for (b, v) in table.iter_mut().enumerate() {
        *v = value(b as u8);
    }
    Kind::Byte(table)
}

fn packed(bits: u32, value: impl Fn(u8) -> f64) -> Kind {
    let mut table = Box::new([0.0; 16]);
    for (v, slot) in table.iter_mut().enumerate().take(1 << bits) {
        *slot = value(v as u8);
    }
    Kind::Packed { bits, table }
}

/// Which encodings of a float8 type are special.
#[derive(Clone, Copy)]
pub(crate) enum Special {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// No infinities; only all-ones exponent and mantissa is NaN.
    Fn,
    /// No infinities and no negative zero: `0x80` is the NaN.
    Fnuz,
}

/// The value of a float8 with a sign bit, `exp_bits` of exponent with `bias`, and the rest
/// mantissa.
pub(crate) fn float8(bits: u8, exp_bits: u32, bias: i32, special: Special) -> f64 {
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
pub(crate) fn float8_e8m0(bits: u8) -> f64 {
    if bits == 0xFF { f64::NAN } else { 2f64.powi(i32::from(bits) - 127) }
}

/// fp4 E2M1 (OCP microscaling): a sign bit, 2 exponent bits of bias 1, 1 mantissa bit; no
/// infinities or NaN.
fn float4_e2m1(v: u8) -> f64 {
    const MAGNITUDES: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let m = MAGNITUDES[usize::from(v & 7)];
    if v & 8 != 0 { -m } else { m }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_decodes() {
        let e = Elements::of(DType::BFloat16).unwrap();
        assert_eq!(e.decode(&[0x80, 0x3F, 0x00, 0xC0]), vec![1.0, -2.0]);
        let e = Elements::of(DType::Int4).unwrap();
        assert_eq!(e.decode(&[0xF7]), vec![7.0, -1.0]);
        let e = Elements::of(DType::Int2).unwrap();
        assert_eq!(e.decode(&[0b11_10_01_00]), vec![0.0, 1.0, -2.0, -1.0]);
        let e = Elements::of(DType::Float4E2M1Fn).unwrap();
        assert_eq!(e.decode(&[0xF2]), vec![1.0, -6.0]);
        let e = Elements::of(DType::Complex64).unwrap();
        let bytes: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!((e.group_bytes(), e.group_values()), (8, 2));
        assert_eq!(e.decode(&bytes), vec![1.5, -2.0]);
    }

    #[test]
    fn float8_specials() {
        let e = Elements::of(DType::Float8E4M3Fn).unwrap().decode(&[0x7E, 0x7F, 0x01]);
        assert_eq!(e[0], 448.0);
        assert!(e[1].is_nan());
        assert_eq!(e[2], 2f64.powi(-9));
        let e = Elements::of(DType::Float8E5M2).unwrap().decode(&[0x7C, 0xFC]);
        assert_eq!(e, vec![f64::INFINITY, f64::NEG_INFINITY]);
        assert!(Elements::of(DType::Float8E4M3Fnuz).unwrap().decode(&[0x80])[0].is_nan());
    }

    #[test]
    fn partial_groups_are_left_out() {
        let e = Elements::of(DType::Float32).unwrap();
        assert_eq!(e.decode(&[0, 0, 0x80, 0x3F, 1, 2]), vec![1.0]);
    }

    #[test]
    fn opaque_dtypes_are_refused_by_name() {
        let err = Elements::of(DType::Float6E2M3Fn).err().unwrap();
        assert!(err.to_string().contains("float6_e2m3fn"), "{err}");
    }
}
