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

/// (number, name, our dtype). 4-bit and packed types have no dtype of ours: XNNPACK packs
/// their nibbles per row, which no dtype of ours describes.
const TABLE: [(i64, &str, Option<DType>); 14] = [
    (1, "fp32", Some(DType::Float32)),
    (2, "fp16", Some(DType::Float16)),
    (3, "qint8", Some(DType::Int8)),
    (4, "quint8", Some(DType::UInt8)),
    (5, "qint32", Some(DType::Int32)),
    (6, "qcint8", Some(DType::Int8)),
    (7, "qcint32", Some(DType::Int32)),
    (8, "qcint4", None),
    (9, "qdint8", Some(DType::Int8)),
    (10, "qbint4", None),
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

    /// Our dtype of the same elements, if we have one.
    pub fn dtype(self) -> Option<DType> {
        TABLE.iter().find(|(n, _, _)| *n == self.number).and_then(|(_, _, d)| *d)
    }

    /// Whether the values are quantized (their numbers stand for scaled reals).
    pub fn is_quantized(self) -> bool {
        self.name.starts_with('q')
    }

    /// Bytes of a dense tensor of this datatype and `shape`, when we know the element size;
    /// an overflow is an error.
    pub fn nbytes(self, shape: &[u64]) -> Result<Option<u64>> {
        let numel = checked::numel(shape)?;
        match self.dtype() {
            Some(d) => d.nbytes(numel).map(Some),
            None => Ok(None),
        }
    }
}
