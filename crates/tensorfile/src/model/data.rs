//! Decoded tensor data: what reading an entry yields.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::SparseFormat;
use crate::source::Bytes;

/// The decoded bytes of one entry.
///
/// Dense data is contiguous, row-major and little-endian. When the file stores it that way the
/// bytes are borrowed from the file's memory map (no copy); otherwise they are decoded into an
/// owned buffer.
#[derive(Clone, Debug)]
pub enum TensorData {
    Dense(Bytes),
    Sparse(SparseData),
}

impl TensorData {
    /// The dense bytes, or an error naming the sparse layout.
    pub fn dense(&self) -> Result<&Bytes> {
        match self {
            TensorData::Dense(b) => Ok(b),
            TensorData::Sparse(s) => {
                Err(Error::unsupported(format!("sparse {} data where dense bytes are needed", s.format.name())))
            }
        }
    }

    /// Total decoded bytes (for sparse: values plus 8 bytes per index).
    pub fn len(&self) -> u64 {
        match self {
            TensorData::Dense(b) => b.len() as u64,
            TensorData::Sparse(s) => s.values.len() as u64 + 8 * (s.indices.len() as u64 + s.indptr.len() as u64),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A dense tensor's decoded bytes in pieces, in order: joined, they are the contiguous,
/// row-major, little-endian bytes [`TensorData::Dense`] would hold. Readers hand a large
/// compressed tensor over this way so that it never sits whole in memory; a tensor stored
/// plainly comes as one piece borrowed from the file.
pub type Chunks<'a> = Box<dyn Iterator<Item = Result<Bytes>> + 'a>;

/// All the pieces joined: the single piece itself when there is one (no copy).
pub fn gather(mut chunks: Chunks<'_>) -> Result<Bytes> {
    let Some(first) = chunks.next().transpose()? else {
        return Ok(Bytes::from_vec(Vec::new()));
    };
    let Some(second) = chunks.next().transpose()? else {
        return Ok(first);
    };
    let mut all = Vec::with_capacity(first.len() + second.len());
    all.extend_from_slice(&first);
    all.extend_from_slice(&second);
    for chunk in chunks {
        all.extend_from_slice(&chunk?);
    }
    Ok(Bytes::from_vec(all))
}

/// A sparse tensor's components, validated against its shape.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseData {
    pub format: SparseFormat,
    pub nnz: u64,
    /// CSR row pointers (`rows + 1`, non-decreasing, first 0, last nnz); empty for COO.
    pub indptr: Vec<u64>,
    /// COO: the `ndim x nnz` index matrix, one dimension after another (as torch's
    /// `indices()`). CSR: the `nnz` column indices.
    pub indices: Vec<u64>,
    /// The `nnz` stored values, little-endian.
    pub values: Bytes,
}

impl SparseData {
    /// Indices within the shape; CSR row pointers start at 0, never decrease and end at nnz.
    pub fn validate(&self, shape: &[u64]) -> Result<()> {
        let d = self;
        let fail = |msg: String| Err(Error::invalid(Rule::BadSparse, msg));
        match d.format {
            SparseFormat::Coo => {
                let nnz = checked::to_usize(d.nnz, "nnz")?;
                if d.indices.len() as u64 != checked::mul(shape.len() as u64, d.nnz, "COO indices")? {
                    return fail(format!("{} COO indices for rank {} and nnz {}", d.indices.len(), shape.len(), d.nnz));
                }
                for (dim, &extent) in shape.iter().enumerate() {
                    let row = &d.indices[dim * nnz..(dim + 1) * nnz];
                    if let Some(bad) = row.iter().find(|&&i| i >= extent) {
                        return fail(format!("COO index {bad} out of range for dimension {dim} of size {extent}"));
                    }
                }
            }
            SparseFormat::Csr => {
                let [rows, cols] = shape else {
                    return fail(format!("CSR tensor of rank {}, not 2", shape.len()));
                };
                if d.indptr.len() as u64 != rows.saturating_add(1) {
                    return fail(format!("{} row pointers for {rows} rows", d.indptr.len()));
                }
                if d.indptr.first() != Some(&0) || d.indptr.last() != Some(&d.nnz) {
                    return fail(format!("row pointers must run from 0 to nnz {}", d.nnz));
                }
                if d.indptr.windows(2).any(|w| w[1] < w[0]) {
                    return fail("row pointers decrease".into());
                }
                if d.indices.len() as u64 != d.nnz {
                    return fail(format!("{} column indices for nnz {}", d.indices.len(), d.nnz));
                }
                if let Some(bad) = d.indices.iter().find(|&&i| i >= *cols) {
                    return fail(format!("column index {bad} out of range for {cols} columns"));
                }
            }
        }
        Ok(())
    }
}
