//! XNNPACK's value datatypes (`XNNDatatype`), and ours for each where one exists.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::DType;

/// An XNNPACK value datatype: what the payload says its elements are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Datatype {
    /// The enum number in the payload.
    pub number: i64,
    /// Its name without the `xnn_datatype_` prefix (`fp32`, `qcint8`...).
    pub name: &'static str,
}

/// (number, name, our dtype). The 4-bit types are stored as unsigned nibbles (the signed value
/// plus 8), two per byte, the first in the low nibble, each row padded to whole bytes: our
/// `uint4` where rows have an even length (see [`Datatype::dtype_for`]). The packed types
/// (`qpint8`, `pfp32`) have none.
const TABLE: [(i64, &str, Option<DType>); 14] = [
    (1, "fp32", Some(DType::Float32)),
    (2, "fp16", Some(DType::Float16)),
    (3, "qint8", Some(DType::Int8)),
    (4, "quint8", Some(DType::UInt8)),
    (5, "qint32", Some(DType::Int32)),
    (6, "qcint8", Some(DType::Int8)),
    (7, "qcint32", Some(DType::Int32)),
    (8, "qcint4", Some(DType::UInt4)),
    (9, "qdint8", Some(DType::Int8)),
    (10, "qbint4", Some(DType::UInt4)),
    (11, "qpint8", None),
    (12, "int32", Some(DType::Int32)),
    (13, "pfp32", None),
    (14, "bf16", Some(DType::BFloat16)),
];

impl Datatype {
    /// The datatype numbered `number`; 0 (`invalid`) and unknown numbers are errors.
    pub fn from_number(number: i64) -> Result<Datatype> {
        TABLE
            .iter()
            .find(|(n, _, _)| *n == number)
            .map(|&(number, name, _)| Datatype { number, name })
            .ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("XNNPACK datatype {number} is not a known one")))
    }

    /// Our dtype of the same elements, if we have one (4-bit: `uint4`, whatever the shape).
    pub fn dtype(self) -> Option<DType> {
        TABLE.iter().find(|(n, _, _)| *n == self.number).and_then(|(_, _, d)| *d)
    }

    /// Whether elements are 4-bit, packed two per byte with each row padded to a whole byte.
    pub fn is_4bit(self) -> bool {
        matches!(self.name, "qcint4" | "qbint4")
    }

    /// Our dtype for a tensor of this datatype and `shape`, when its bytes are exactly that
    /// dtype's in that shape (4-bit: rows of even length, so no padding nibble; a scalar is a
    /// row of one value and so has one).
    pub fn dtype_for(self, shape: &[u64]) -> Option<DType> {
        if self.is_4bit() && shape.last().is_none_or(|l| l % 2 != 0) {
            return None;
        }
        self.dtype()
    }

    /// Whether the values are quantized (their numbers stand for scaled reals).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_quantized(self) -> bool {
        self.name.starts_with('q')
    }

    /// Bytes of a dense tensor of this datatype and `shape`, when we know the element size;
    /// an overflow is an error.
    pub fn nbytes(self, shape: &[u64]) -> Result<Option<u64>> {
        let numel = checked::numel(shape)?;
        if self.is_4bit() {
            // Rows (the last dimension) padded to whole bytes.
            let (rows, last) = match shape.split_last() {
                Some((last, rest)) => (checked::numel(rest)?, *last),
                None => (1, 1),
            };
            return Ok(Some(checked::mul(rows, last.div_ceil(2), "4-bit tensor size")?));
        }
        match self.dtype() {
            Some(d) => d.nbytes(numel).map(Some),
            None => Ok(None),
        }
    }
}
