//! Element types: every dtype any of our formats can hold.

use std::fmt;

use crate::checked;
use crate::error::{Error, Result, Rule};

/// An element type. Names follow torch (`float32`, `bfloat16`, `float8_e4m3fn`, `bool`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DType {
    /// A boolean, one byte (0 or 1).
    Bool,
    /// An unsigned 8-bit integer.
    UInt8,
    /// A signed 8-bit integer.
    Int8,
    /// An unsigned 16-bit integer.
    UInt16,
    /// A signed 16-bit integer.
    Int16,
    /// An unsigned 32-bit integer.
    UInt32,
    /// A signed 32-bit integer.
    Int32,
    /// An unsigned 64-bit integer.
    UInt64,
    /// A signed 64-bit integer.
    Int64,
    /// An unsigned 4-bit integer (torch `uint4`, ONNX `UINT4`): 4 bits per element, two packed
    /// per byte, the first in the low nibble.
    UInt4,
    /// A signed 4-bit two's-complement integer (torch `int4`, ONNX `INT4`): 4 bits per element,
    /// two packed per byte, the first in the low nibble.
    Int4,
    /// An unsigned 2-bit integer (torch `uint2`, ONNX `UINT2`): 2 bits per element, four packed
    /// per byte, the first in the lowest two bits.
    UInt2,
    /// A signed 2-bit two's-complement integer (torch `int2`, ONNX `INT2`): 2 bits per element,
    /// four packed per byte, the first in the lowest two bits.
    Int2,
    /// IEEE 754 half precision (torch `float16`).
    Float16,
    /// bfloat16: the upper half of a float32.
    BFloat16,
    /// IEEE 754 single precision.
    Float32,
    /// IEEE 754 double precision.
    Float64,
    /// Two float16 parts (torch `complex32` / `chalf`).
    Complex32,
    /// Two float32 parts.
    Complex64,
    /// Two float64 parts.
    Complex128,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities (OCP FP8 E4M3).
    Float8E4M3Fn,
    /// 8-bit float, 5 exponent and 2 mantissa bits (OCP FP8 E5M2).
    Float8E5M2,
    /// 8-bit float E4M3 with one NaN and no negative zero (torch `float8_e4m3fnuz`).
    Float8E4M3Fnuz,
    /// 8-bit float E5M2 with one NaN and no negative zero (torch `float8_e5m2fnuz`).
    Float8E5M2Fnuz,
    /// 8-bit exponent-only scale (torch `float8_e8m0fnu`, microscaling scales).
    Float8E8M0Fnu,
    /// Two packed fp4 values per byte (torch `float4_e2m1fn_x2`); one element is one byte.
    Float4E2M1FnX2,
    /// One fp4 value per element, 4 bits each (safetensors `F4`).
    Float4E2M1Fn,
    /// 6 bits per element (safetensors `F6_E2M3`).
    Float6E2M3Fn,
    /// 6 bits per element (safetensors `F6_E3M2`).
    Float6E3M2Fn,
    /// A quantized signed 8-bit integer (torch `qint8`).
    QInt8,
    /// A quantized unsigned 8-bit integer (torch `quint8`).
    QUInt8,
    /// A quantized signed 32-bit integer (torch `qint32`).
    QInt32,
    /// Two 4-bit values per byte; ExecuTorch counts one byte per element.
    QUInt4x2,
    /// Four 2-bit values per byte; ExecuTorch counts one byte per element.
    QUInt2x4,
    /// 16 opaque bits.
    Bits16,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 35] = [
        DType::Bool,
        DType::UInt8,
        DType::Int8,
        DType::UInt16,
        DType::Int16,
        DType::UInt32,
        DType::Int32,
        DType::UInt64,
        DType::Int64,
        DType::UInt4,
        DType::Int4,
        DType::UInt2,
        DType::Int2,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Complex32,
        DType::Complex64,
        DType::Complex128,
        DType::Float8E4M3Fn,
        DType::Float8E5M2,
        DType::Float8E4M3Fnuz,
        DType::Float8E5M2Fnuz,
        DType::Float8E8M0Fnu,
        DType::Float4E2M1FnX2,
        DType::Float4E2M1Fn,
        DType::Float6E2M3Fn,
        DType::Float6E3M2Fn,
        DType::QInt8,
        DType::QUInt8,
        DType::QInt32,
        DType::QUInt4x2,
        DType::QUInt2x4,
        DType::Bits16,
    ];

    /// The lowercase torch-style name.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::UInt16 => "uint16",
            DType::Int16 => "int16",
            DType::UInt32 => "uint32",
            DType::Int32 => "int32",
            DType::UInt64 => "uint64",
            DType::Int64 => "int64",
            DType::UInt4 => "uint4",
            DType::Int4 => "int4",
            DType::UInt2 => "uint2",
            DType::Int2 => "int2",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Complex32 => "complex32",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
            DType::Float8E4M3Fn => "float8_e4m3fn",
            DType::Float8E5M2 => "float8_e5m2",
            DType::Float8E4M3Fnuz => "float8_e4m3fnuz",
            DType::Float8E5M2Fnuz => "float8_e5m2fnuz",
            DType::Float8E8M0Fnu => "float8_e8m0fnu",
            DType::Float4E2M1FnX2 => "float4_e2m1fn_x2",
            DType::Float4E2M1Fn => "float4_e2m1fn",
            DType::Float6E2M3Fn => "float6_e2m3fn",
            DType::Float6E3M2Fn => "float6_e3m2fn",
            DType::QInt8 => "qint8",
            DType::QUInt8 => "quint8",
            DType::QInt32 => "qint32",
            DType::QUInt4x2 => "quint4x2",
            DType::QUInt2x4 => "quint2x4",
            DType::Bits16 => "bits16",
        }
    }

    /// Parse a name as [`DType::name`] prints it.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bits per element.
    pub fn bits(self) -> u64 {
        match self {
            DType::UInt2 | DType::Int2 => 2,
            DType::Float4E2M1Fn | DType::UInt4 | DType::Int4 => 4,
            DType::Float6E2M3Fn | DType::Float6E3M2Fn => 6,
            DType::Bool
            | DType::UInt8
            | DType::Int8
            | DType::Float8E4M3Fn
            | DType::Float8E5M2
            | DType::Float8E4M3Fnuz
            | DType::Float8E5M2Fnuz
            | DType::Float8E8M0Fnu
            | DType::Float4E2M1FnX2
            | DType::QInt8
            | DType::QUInt8
            | DType::QUInt4x2
            | DType::QUInt2x4 => 8,
            DType::UInt16 | DType::Int16 | DType::Float16 | DType::BFloat16 | DType::Bits16 => 16,
            DType::UInt32 | DType::Int32 | DType::Float32 | DType::QInt32 | DType::Complex32 => 32,
            DType::UInt64 | DType::Int64 | DType::Float64 | DType::Complex64 => 64,
            DType::Complex128 => 128,
        }
    }

    /// Bytes per element, or `None` for dtypes narrower than a byte.
    pub fn size(self) -> Option<u64> {
        let bits = self.bits();
        (bits % 8 == 0).then_some(bits / 8)
    }

    /// The unit whose bytes are reversed when changing byte order: the element, or for complex
    /// numbers each of the two parts. 1 means byte order does not apply.
    pub fn swap_unit(self) -> usize {
        match self {
            DType::Complex32 => 2,
            DType::Complex64 => 4,
            DType::Complex128 => 8,
            d => d.size().map_or(1, |s| s as usize),
        }
    }

    /// Whether elements are real floating-point numbers (any width).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16
                | DType::BFloat16
                | DType::Float32
                | DType::Float64
                | DType::Float8E4M3Fn
                | DType::Float8E5M2
                | DType::Float8E4M3Fnuz
                | DType::Float8E5M2Fnuz
                | DType::Float8E8M0Fnu
        )
    }

    /// Whether elements are opaque: bits with no value of their own here (float6, torch's
    /// quantized integers, whose scale lives elsewhere, and raw 16-bit words). The library
    /// keeps and copies them, never reads them as numbers.
    pub fn is_opaque(self) -> bool {
        matches!(
            self,
            DType::Float6E2M3Fn
                | DType::Float6E3M2Fn
                | DType::QInt8
                | DType::QUInt8
                | DType::QInt32
                | DType::QUInt4x2
                | DType::QUInt2x4
                | DType::Bits16
        )
    }

    /// Whether elements are packed several to a byte (4- and 2-bit integers, float4).
    pub fn is_sub_byte(self) -> bool {
        self.bits() < 8
    }

    /// Whether elements are complex numbers (two floats each).
    pub fn is_complex(self) -> bool {
        matches!(self, DType::Complex32 | DType::Complex64 | DType::Complex128)
    }

    /// Bytes taken by `numel` elements. Errors on overflow and, for sub-byte dtypes, when the
    /// elements do not end on a byte boundary.
    pub fn nbytes(self, numel: u64) -> Result<u64> {
        let bits = checked::mul(numel, self.bits(), "tensor size in bits")?;
        if bits % 8 != 0 {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("{numel} elements of {self} do not fill a whole number of bytes"),
            ));
        }
        Ok(bits / 8)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        DType::from_name(s).ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown dtype {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert!(seen.insert(d.name()));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(DType::BFloat16.size(), Some(2));
        assert_eq!(DType::Complex128.size(), Some(16));
        assert_eq!(DType::Float4E2M1Fn.size(), None);
        assert_eq!(DType::QUInt4x2.size(), Some(1));
        assert_eq!(DType::Float4E2M1Fn.nbytes(4).unwrap(), 2);
        assert_eq!(DType::Float4E2M1Fn.nbytes(3).unwrap_err().rule(), Some(Rule::SizeMismatch));
        assert_eq!(DType::Float64.nbytes(u64::MAX).unwrap_err().rule(), Some(Rule::ShapeOverflow));
        assert_eq!(DType::Complex64.swap_unit(), 4);
        assert_eq!((DType::Int4.size(), DType::UInt4.nbytes(6).unwrap()), (None, 3));
        assert_eq!(DType::Int4.nbytes(5).unwrap_err().rule(), Some(Rule::SizeMismatch));
        assert_eq!((DType::UInt2.bits(), DType::Int2.nbytes(8).unwrap()), (2, 2));
        assert_eq!(DType::UInt2.nbytes(6).unwrap_err().rule(), Some(Rule::SizeMismatch));
        assert_eq!(DType::from_name("int4"), Some(DType::Int4));
    }
}
