//! What the ExecuTorch formats (`.pte` programs, `.ptd` named data) share: their schemas,
//! scalar types, tensor layouts (sizes and dim order) and segment alignment.

pub mod ptd;
pub mod pte;
pub mod xnnpack;

use std::sync::OnceLock;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::flatbuf::{Schema, Table, Value, schema};
use crate::model::DType;
use crate::source::{Bytes, Source};

/// Segments start at multiples of this (ExecuTorch's default since late 2024).
pub const SEGMENT_ALIGNMENT: u64 = 128;
/// Tensors inside a constant segment start at multiples of this.
#[cfg(any(test, feature = "internals"))]
pub const TENSOR_ALIGNMENT: u64 = 16;
/// The runtime's limit on tensor rank.
pub const MAX_RANK: usize = 16;

fn parse(text: &str) -> Schema {
    // The schemas are ours, compiled in, and tested to parse: a failure is a build bug.
    schema::parse(text).unwrap_or_else(|e| panic!("bad compiled-in schema: {}", e.0))
}

/// The program schema (`ET12`).
pub fn program_schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(include_str!("../../../schema/program.fbs")))
}

/// The named-data schema (`FT01`).
pub fn flat_tensor_schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(include_str!("../../../schema/flat_tensor.fbs")))
}

/// The named-data schema of ExecuTorch 0.6 (`FT01` too; tensors with offsets inside segments).
pub fn flat_tensor_0_6_schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| parse(include_str!("../../../schema/flat_tensor_0_6.fbs")))
}

/// The first `n` bytes of `src`, of which `head` (its first bytes) is already in memory: a
/// slice of `head` when it covers them, of the map for a local file, else `head` and the
/// rest fetched.
pub fn prefix(src: &Source, head: &Bytes, n: u64) -> Result<Bytes> {
    if n <= head.len() as u64 {
        return head.slice(0, n);
    }
    if let Some(local) = src.as_local() {
        return local.slice(0, n);
    }
    let have = head.len() as u64;
    let rest = src.range(have, n - have)?;
    let mut all = Vec::with_capacity(checked::to_usize(n, "flatbuffer")?);
    all.extend_from_slice(head);
    all.extend_from_slice(&rest);
    Ok(Bytes::from_vec(all))
}

/// ExecuTorch's `ScalarType` numbers (c10's): those of its Python enum (`exir/scalar_type.py`)
/// and runtime (`ComplexHalf`, `ComplexFloat`, `ComplexDouble` included, which its flatbuffer
/// schema lists only in a comment).
const SCALAR_TYPES: [(i64, DType); 26] = [
    (0, DType::UInt8),
    (1, DType::Int8),
    (2, DType::Int16),
    (3, DType::Int32),
    (4, DType::Int64),
    (5, DType::Float16),
    (6, DType::Float32),
    (7, DType::Float64),
    (8, DType::Complex32),
    (9, DType::Complex64),
    (10, DType::Complex128),
    (11, DType::Bool),
    (12, DType::QInt8),
    (13, DType::QUInt8),
    (14, DType::QInt32),
    (15, DType::BFloat16),
    (16, DType::QUInt4x2),
    (17, DType::QUInt2x4),
    (22, DType::Bits16),
    (23, DType::Float8E5M2),
    (24, DType::Float8E4M3Fn),
    (25, DType::Float8E5M2Fnuz),
    (26, DType::Float8E4M3Fnuz),
    (27, DType::UInt16),
    (28, DType::UInt32),
    (29, DType::UInt64),
];

/// The dtype of an ExecuTorch `ScalarType` number.
pub fn dtype_of(scalar_type: i64) -> Result<DType> {
    SCALAR_TYPES
        .iter()
        .find(|(n, _)| *n == scalar_type)
        .map(|(_, d)| *d)
        .ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown ScalarType {scalar_type}")))
}

/// The `ScalarType` number of a dtype, if ExecuTorch has one.
pub fn scalar_type_of(dtype: DType) -> Option<i64> {
    SCALAR_TYPES.iter().find(|(_, d)| *d == dtype).map(|(n, _)| *n)
}

/// A tensor's type and shape as ExecuTorch stores them, checked as the runtime checks them:
/// sizes non-negative, rank at most 16, dim order a permutation of the dimensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorLayout {
    /// The element type, from `scalar_type`.
    pub dtype: DType,
    /// The logical shape (`sizes`), whatever order the data is stored in.
    pub shape: Vec<u64>,
    /// Outermost to innermost; the identity for contiguous tensors.
    pub dim_order: Vec<u8>,
}

impl TensorLayout {
    /// Read `scalar_type`, `sizes` and `dim_order` from a `Tensor` or `TensorLayout` table.
    pub fn from_table(t: &Table) -> Result<TensorLayout> {
        let dtype = dtype_of(t.int("scalar_type")?)?;
        let sizes = t.ints("sizes")?;
        if sizes.len() > MAX_RANK {
            return Err(Error::invalid(Rule::BadField, format!("rank {} exceeds {MAX_RANK}", sizes.len())));
        }
        let shape = sizes
            .iter()
            .map(|&s| u64::try_from(s).map_err(|_| Error::invalid(Rule::BadField, format!("negative size {s}"))))
            .collect::<Result<Vec<u64>>>()?;
        let dim_order: Vec<u8> = match t.get("dim_order") {
            None => (0..shape.len() as u8).collect(),
            Some(Value::Bytes(b)) => b.to_vec(),
            Some(_) => return Err(Error::invalid(Rule::BadField, "dim_order is not bytes")),
        };
        let mut seen = vec![false; shape.len()];
        let is_permutation = dim_order.len() == shape.len()
            && dim_order.iter().all(|&d| seen.get_mut(usize::from(d)).is_some_and(|s| !std::mem::replace(s, true)));
        if !is_permutation {
            return Err(Error::invalid(
                Rule::BadField,
                format!("dim_order {dim_order:?} is not a permutation of {} dimensions", shape.len()),
            ));
        }
        checked::numel(&shape)?;
        Ok(TensorLayout { dtype, shape, dim_order })
    }

    /// Bytes of the tensor's data (ExecuTorch counts one byte per element for packed
    /// sub-byte quantized types).
    pub fn nbytes(&self) -> Result<u64> {
        self.dtype.nbytes(checked::numel(&self.shape)?)
    }

    /// Whether the dim order is the identity: the data is stored row-major.
    pub fn is_contiguous(&self) -> bool {
        self.dim_order.iter().enumerate().all(|(i, &d)| usize::from(d) == i)
    }

    /// The shape as stored: dimensions in dim order.
    fn stored_shape(&self) -> Vec<u64> {
        self.dim_order.iter().map(|&d| self.shape[usize::from(d)]).collect()
    }

    /// Bytes stored in dim order, rearranged to contiguous row-major order.
    pub fn to_row_major(&self, stored: &[u8]) -> Vec<u8> {
        permute(stored, &self.stored_shape(), &self.dim_order, self.element_size(), Direction::ToRowMajor)
    }

    /// Row-major bytes rearranged into this layout's dim order.
    pub fn stored_from_row_major(&self, row_major: &[u8]) -> Vec<u8> {
        permute(row_major, &self.stored_shape(), &self.dim_order, self.element_size(), Direction::ToStored)
    }

    fn element_size(&self) -> usize {
        self.dtype.size().map_or(1, |s| s as usize)
    }
}

enum Direction {
    ToRowMajor,
    ToStored,
}

/// Move elements between the stored order (dimensions listed by `dim_order`, with sizes
/// `stored_shape`) and row-major order.
fn permute(src: &[u8], stored_shape: &[u64], dim_order: &[u8], elem: usize, dir: Direction) -> Vec<u8> {
    let rank = stored_shape.len();
    let mut dst = vec![0u8; src.len()];
    if src.is_empty() {
        return dst;
    }
    // Row-major strides (in elements) of the logical shape.
    let mut logical = vec![0u64; rank];
    for (k, &d) in dim_order.iter().enumerate() {
        logical[usize::from(d)] = stored_shape[k];
    }
    let mut row_major_stride = vec![1u64; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        row_major_stride[i] = row_major_stride[i + 1] * logical[i + 1];
    }
    // Walk the stored order with an index counter; find each element's row-major position.
    let mut index = vec![0u64; rank];
    let count = src.len() / elem;
    for stored_pos in 0..count {
        let row_major_pos: u64 = index.iter().zip(dim_order).map(|(&i, &d)| i * row_major_stride[usize::from(d)]).sum();
        let (from, to) = match dir {
            Direction::ToRowMajor => (stored_pos, row_major_pos as usize),
            Direction::ToStored => (row_major_pos as usize, stored_pos),
        };
        dst[to * elem..(to + 1) * elem].copy_from_slice(&src[from * elem..(from + 1) * elem]);
        for k in (0..rank).rev() {
            index[k] += 1;
            if index[k] < stored_shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_types_round_trip() {
        for (n, d) in SCALAR_TYPES {
            assert_eq!(dtype_of(n).unwrap(), d);
            assert_eq!(scalar_type_of(d), Some(n));
        }
        assert_eq!(scalar_type_of(DType::Complex64), Some(9), "ComplexFloat");
        // Bits1x8 (18): no dtype of ours.
        assert_eq!(dtype_of(18).unwrap_err().rule(), Some(Rule::UnknownDType));
    }

    #[test]
    fn channels_last_permutes_both_ways() {
        // Logical NCHW [1, 2, 2, 3] stored as NHWC (dim order 0, 2, 3, 1).
        let layout = TensorLayout { dtype: DType::UInt8, shape: vec![1, 2, 2, 3], dim_order: vec![0, 2, 3, 1] };
        let row_major: Vec<u8> = (0..12).collect();
        let stored = layout.stored_from_row_major(&row_major);
        // Stored element (h, w, c) is logical element (c, h, w) = c*6 + h*3 + w.
        assert_eq!(stored[..4], [0, 6, 1, 7]);
        assert_eq!(layout.to_row_major(&stored), row_major);
    }

    #[test]
    fn the_schemas_parse() {
        assert_eq!(program_schema().tables[program_schema().root].name, "Program");
        assert_eq!(flat_tensor_schema().tables[flat_tensor_schema().root].name, "FlatTensor");
    }
}
