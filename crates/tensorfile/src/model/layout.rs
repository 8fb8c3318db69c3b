//! Layouts: how a tensor's elements are arranged in the parts its data is made of, and how
//! each layout decodes itself to dense.
//!
//! A tensor is an object: a logical dtype and shape, a layout, and named parts, each with its
//! own storage dtype. Dense data is one part (`data`); sparse COO is `indices` and `values`,
//! sparse CSR `indptr`, `indices` and `values`. Layouts that only say where dense elements sit
//! in a file (another dim order, a strided view) read as dense.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_DENSE_EXPANSION, MAX_VIEW_EXPANSION};
use crate::model::quant::{self, Quant};
use crate::model::{DType, SparseData, TensorData, cast};
use crate::source::Bytes;

/// Sparse storage schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SparseFormat {
    /// Coordinates: an `ndim x nnz` index matrix and `nnz` values.
    Coo,
    /// Compressed rows (2-D): `rows + 1` row pointers, `nnz` column indices, `nnz` values.
    Csr,
}

impl SparseFormat {
    /// `coo` or `csr`.
    pub fn name(self) -> &'static str {
        match self {
            SparseFormat::Coo => "coo",
            SparseFormat::Csr => "csr",
        }
    }
}

/// How the elements of a tensor are arranged where it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// Contiguous, row-major.
    Dense,
    /// Dense, with bytes stored in this order of dimensions (outermost first).
    DimOrder(Vec<u8>),
    /// Dense view into a larger storage: strides and offset in elements.
    Strided {
        /// Elements to step over for one step along each dimension.
        strides: Vec<u64>,
        /// Where the view starts in its storage, in elements.
        storage_offset: u64,
    },
    /// Sparse, with this many stored values.
    Sparse {
        /// Coordinates or compressed rows.
        format: SparseFormat,
        /// How many values are stored.
        nnz: u64,
    },
    /// Quantized: codes and scales, dequantized on demand to the tensor's dtype (`float32`).
    Quantized(Quant),
}

/// A layout without its parameters: what a format's [`crate::formats::Caps`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutKind {
    /// Contiguous, row-major.
    Dense,
    /// Dense, stored in another order of dimensions.
    DimOrder,
    /// Dense view into a larger storage.
    Strided,
    /// Sparse coordinates.
    SparseCoo,
    /// Sparse compressed rows.
    SparseCsr,
    /// ggml's quantized blocks (GGUF).
    GgmlBlocks,
    /// Affine group quantization.
    GroupQuant,
    /// OCP Microscaling.
    Mx,
}

impl LayoutKind {
    /// `dense`, `dim_order`, `strided`, `sparse_coo`, `sparse_csr`, `ggml_blocks`,
    /// `quant_group`, `mx`.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Dense => "dense",
            LayoutKind::DimOrder => "dim_order",
            LayoutKind::Strided => "strided",
            LayoutKind::SparseCoo => "sparse_coo",
            LayoutKind::SparseCsr => "sparse_csr",
            LayoutKind::GgmlBlocks => "ggml_blocks",
            LayoutKind::GroupQuant => "quant_group",
            LayoutKind::Mx => "mx",
        }
    }
}

/// One part of a tensor's data as its layout defines it: a role, a storage dtype and a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSpec {
    name: &'static str,
    dtype: DType,
    shape: Vec<u64>,
}

impl PartSpec {
    fn new(name: &'static str, dtype: DType, shape: Vec<u64>) -> Self {
        PartSpec { name, dtype, shape }
    }

    /// The part's role: `data`, `indices`, `indptr`, `values`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// How the part's elements are stored.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The part's own shape (`[ndim, nnz]` for COO indices...).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The part's size in bytes.
    pub fn nbytes(&self) -> Result<u64> {
        self.dtype.nbytes(checked::numel(&self.shape)?)
    }
}

/// The role of dense data, the one part of a dense tensor.
pub const DATA: &str = "data";
/// The role of sparse indices (COO: the `ndim x nnz` matrix; CSR: column indices).
pub const INDICES: &str = "indices";
/// The role of CSR row pointers.
pub const INDPTR: &str = "indptr";
/// The role of sparse values.
pub const VALUES: &str = "values";

impl Layout {
    /// The layout without its parameters.
    pub fn kind(&self) -> LayoutKind {
        match self {
            Layout::Dense => LayoutKind::Dense,
            Layout::DimOrder(_) => LayoutKind::DimOrder,
            Layout::Strided { .. } => LayoutKind::Strided,
            Layout::Sparse { format: SparseFormat::Coo, .. } => LayoutKind::SparseCoo,
            Layout::Sparse { format: SparseFormat::Csr, .. } => LayoutKind::SparseCsr,
            Layout::Quantized(Quant::Ggml(_)) => LayoutKind::GgmlBlocks,
            Layout::Quantized(Quant::Group(_)) => LayoutKind::GroupQuant,
            Layout::Quantized(Quant::Mx(_)) => LayoutKind::Mx,
        }
    }

    /// The quantization scheme, for a quantized layout.
    pub fn quant(&self) -> Option<&Quant> {
        match self {
            Layout::Quantized(q) => Some(q),
            _ => None,
        }
    }

    /// Whether this is a sparse layout.
    pub fn is_sparse(&self) -> bool {
        matches!(self, Layout::Sparse { .. })
    }

    /// Whether reading a tensor of this layout yields dense data (one `data` part).
    pub fn reads_dense(&self) -> bool {
        matches!(self, Layout::Dense | Layout::DimOrder(_) | Layout::Strided { .. })
    }

    /// A short description: `dense`, `dim_order[0,2,1]`, `strided`, `sparse_coo`, `sparse_csr`,
    /// `ggml.q4_k`, `quant_group.4bit.g128`, `mx.f4_e2m1`.
    pub fn describe(&self) -> String {
        match self {
            Layout::Dense => "dense".into(),
            Layout::DimOrder(order) => format!("dim_order{order:?}"),
            Layout::Strided { .. } => "strided".into(),
            Layout::Sparse { format, .. } => format!("sparse_{}", format.name()),
            Layout::Quantized(q) => q.describe(),
        }
    }

    /// The parts a tensor of this layout, `dtype` and `shape` reads as, in order.
    pub fn parts(&self, dtype: DType, shape: &[u64]) -> Result<Vec<PartSpec>> {
        match self {
            Layout::Sparse { format: SparseFormat::Coo, nnz } => Ok(vec![
                PartSpec::new(INDICES, DType::UInt64, vec![shape.len() as u64, *nnz]),
                PartSpec::new(VALUES, dtype, vec![*nnz]),
            ]),
            Layout::Sparse { format: SparseFormat::Csr, nnz } => {
                let rows = shape.first().copied().unwrap_or(0);
                Ok(vec![
                    PartSpec::new(INDPTR, DType::UInt64, vec![checked::add(rows, 1, "CSR indptr")?]),
                    PartSpec::new(INDICES, DType::UInt64, vec![*nnz]),
                    PartSpec::new(VALUES, dtype, vec![*nnz]),
                ])
            }
            Layout::Quantized(q) => {
                Ok(q.parts(shape)?.into_iter().map(|p| PartSpec::new(p.name, p.dtype, vec![p.count])).collect())
            }
            _ => Ok(vec![PartSpec::new(DATA, dtype, shape.to_vec())]),
        }
    }

    /// [`Layout::decode_dense`], the values then cast to `to` (a dtype [`cast::cast`] casts
    /// between, checked): ggml-quantized data is dequantized and cast a piece at a time,
    /// never held whole as `float32`; every output is fresh memory of the result's own.
    pub fn decode_dense_as(&self, dtype: DType, shape: &[u64], data: &TensorData, to: DType) -> Result<Bytes> {
        let dense_dtype = if matches!(self, Layout::Quantized(_)) { DType::Float32 } else { dtype };
        if to == dense_dtype {
            return self.decode_dense(dtype, shape, data);
        }
        if !cast::can_cast_from(dense_dtype) {
            return Err(Error::usage(format!("{dense_dtype} values cannot be cast to {to}")));
        }
        if let Layout::Quantized(q) = self {
            return quant::dequantize_as(q, shape, data, to);
        }
        cast::cast_fresh(&self.decode_dense(dtype, shape, data)?, dtype, to)
    }

    /// Decode data read in this layout to dense bytes (contiguous, row-major,
    /// little-endian) of `dtype` and `shape`: dense data as it is (no copy); sparse values
    /// scattered into zeros, as torch's `to_dense()` places them; quantized data dequantized
    /// to `float32` (an error for a scheme without a reference dequantization).
    pub fn decode_dense(&self, dtype: DType, shape: &[u64], data: &TensorData) -> Result<Bytes> {
        if self.reads_dense() {
            return data.as_dense().cloned();
        }
        if let Layout::Quantized(q) = self {
            return quant::dequantize(q, shape, data);
        }
        let sparse = data.to_sparse()?;
        sparse.validate(shape)?;
        let values = dtype.nbytes(sparse.nnz())?;
        if sparse.values().len() as u64 != values {
            return Err(Error::invalid(
                Rule::BadSparse,
                format!("{} bytes of values for {} stored {dtype} values", sparse.values().len(), sparse.nnz()),
            ));
        }
        let dense_len = dtype.nbytes(checked::numel(shape)?)?;
        // Zeros cost nothing to store sparse: bound what a small file can make us allocate.
        let justified = MAX_VIEW_EXPANSION.max(data.len().saturating_mul(MAX_DENSE_EXPANSION));
        if dense_len > justified {
            return Err(Error::invalid(
                Rule::ExpansionTooLarge,
                format!("decoding {} stored bytes to {dense_len} dense bytes (at most {justified})", data.len()),
            ));
        }
        let mut dense = checked::zeroed(dense_len, justified, "dense tensor")?;
        scatter(&sparse, dtype, shape, &mut dense)?;
        Ok(Bytes::from_vec(dense))
    }
}

/// Place each stored value of `s` at its coordinates in `dense`.
fn scatter(s: &SparseData, dtype: DType, shape: &[u64], dense: &mut [u8]) -> Result<()> {
    let width = match dtype.size() {
        Some(w) if w > 0 => w as usize,
        _ => return Err(Error::unsupported(format!("sparse {dtype} values cannot be placed one by one"))),
    };
    let positions = positions(s, shape)?;
    let mut seen = positions.clone();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::unsupported(format!(
            "sparse tensor with repeated coordinates (element {} stored twice): coalesce it first",
            w[0]
        )));
    }
    for (k, &at) in positions.iter().enumerate() {
        let to = checked::to_usize(at, "dense position")? * width;
        dense[to..to + width].copy_from_slice(&s.values()[k * width..(k + 1) * width]);
    }
    Ok(())
}

/// The row-major element index of each stored value (indices checked against the shape).
fn positions(s: &SparseData, shape: &[u64]) -> Result<Vec<u64>> {
    let nnz = checked::to_usize(s.nnz(), "nnz")?;
    match s.format() {
        SparseFormat::Coo => {
            let mut at = vec![0u64; nnz];
            for (dim, &extent) in shape.iter().enumerate() {
                let row = &s.indices()[dim * nnz..(dim + 1) * nnz];
                for (a, &i) in at.iter_mut().zip(row) {
                    *a = checked::add(checked::mul(*a, extent, "dense position")?, i, "dense position")?;
                }
            }
            Ok(at)
        }
        SparseFormat::Csr => {
            let cols = shape.get(1).copied().unwrap_or(0);
            let mut at = Vec::with_capacity(nnz);
            for (row, w) in s.indptr().windows(2).enumerate() {
                let (from, to) = (checked::to_usize(w[0], "indptr")?, checked::to_usize(w[1], "indptr")?);
                for &col in &s.indices()[from..to] {
                    at.push(checked::add(checked::mul(row as u64, cols, "dense position")?, col, "dense position")?);
                }
            }
            Ok(at)
        }
    }
}
