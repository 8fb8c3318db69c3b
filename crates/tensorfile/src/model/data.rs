//! Decoded tensor data: what reading an entry yields.

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::layout::{DATA, INDICES, INDPTR, VALUES};
use crate::model::{DType, Layout, SparseFormat};
use crate::source::Bytes;

/// One named part of a tensor's decoded data: contiguous little-endian bytes whose dtype and
/// shape the tensor's layout gives ([`crate::model::PartSpec`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    name: &'static str,
    bytes: Bytes,
}

impl Part {
    /// The part's role (`data`, `indices`, `indptr`, `values`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The part's bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// The decoded data of one entry: the parts its layout names, in the layout's order.
///
/// Dense data is one part, contiguous, row-major and little-endian. When the file stores it
/// that way the bytes are borrowed from the file's memory map (no copy); otherwise they are
/// decoded into an owned buffer. Sparse data is its index and value parts
/// ([`TensorData::to_sparse`] gives them typed).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// `Dense` for every layout that reads as dense; the sparse layout otherwise.
    layout: Layout,
    parts: Vec<Part>,
}

impl TensorData {
    /// Dense data: one `data` part.
    pub fn dense(bytes: Bytes) -> Self {
        TensorData { layout: Layout::Dense, parts: vec![Part { name: DATA, bytes }] }
    }

    /// Sparse data as its parts (indices as little-endian `u64`).
    pub fn sparse(s: SparseData) -> Self {
        let u64s = |v: &[u64]| Bytes::from_vec(v.iter().flat_map(|i| i.to_le_bytes()).collect());
        let mut parts = Vec::with_capacity(3);
        if s.format == SparseFormat::Csr {
            parts.push(Part { name: INDPTR, bytes: u64s(&s.indptr) });
        }
        parts.push(Part { name: INDICES, bytes: u64s(&s.indices) });
        parts.push(Part { name: VALUES, bytes: s.values });
        TensorData { layout: Layout::Sparse { format: s.format, nnz: s.nnz }, parts }
    }

    /// Quantized data: its stored parts (see [`crate::model::quant`]), named as the layout's
    /// [`Layout::parts`] name them. Their sizes are checked when the data is dequantized.
    pub fn quantized(quant: crate::model::quant::Quant, parts: Vec<(&'static str, Bytes)>) -> Self {
        TensorData {
            layout: Layout::Quantized(quant),
            parts: parts.into_iter().map(|(name, bytes)| Part { name, bytes }).collect(),
        }
    }

    /// The layout the parts are in: [`Layout::Dense`] for any dense data.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Every part, in the layout's order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The bytes of the part called `name`.
    pub fn part(&self, name: &str) -> Option<&Bytes> {
        self.parts.iter().find(|p| p.name == name).map(|p| &p.bytes)
    }

    /// Whether the data is dense (one `data` part).
    pub fn is_dense(&self) -> bool {
        self.layout == Layout::Dense
    }

    /// The dense bytes, or an error naming the layout the data is in.
    pub fn as_dense(&self) -> Result<&Bytes> {
        match (&self.layout, self.parts.as_slice()) {
            (Layout::Dense, [only]) => Ok(&only.bytes),
            (layout, _) => Err(Error::unsupported(format!("{} data where dense bytes are needed", layout.describe()))),
        }
    }

    /// The dense bytes, taken out.
    pub fn into_dense(self) -> Result<Bytes> {
        self.as_dense()?;
        Ok(self.parts.into_iter().next().map(|p| p.bytes).unwrap_or_else(|| Bytes::from_vec(Vec::new())))
    }

    /// Sparse data with its indices typed, or an error when the data is not sparse.
    pub fn to_sparse(&self) -> Result<SparseData> {
        let Layout::Sparse { format, nnz } = self.layout else {
            return Err(Error::unsupported("dense data where sparse components are needed"));
        };
        let u64s = |name: &str| -> Vec<u64> {
            let b = self.part(name).map_or(&[][..], |b| &b[..]);
            b.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
        };
        let values = self.part(VALUES).cloned().unwrap_or_else(|| Bytes::from_vec(Vec::new()));
        SparseData::new(format, nnz, u64s(INDPTR), u64s(INDICES), values)
    }

    /// Total decoded bytes: the sum of the parts (for sparse: values plus 8 bytes per index).
    pub fn len(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes.len() as u64).sum()
    }

    /// Whether there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data decoded to dense bytes of `dtype` and `shape` (see [`Layout::decode_dense`]):
    /// what a consumer that knows no layout works on.
    pub fn to_dense(&self, dtype: DType, shape: &[u64]) -> Result<Bytes> {
        self.layout.decode_dense(dtype, shape, self)
    }

    /// [`TensorData::to_dense`], its values then cast to `to` as `convert --dtype` casts
    /// (see [`Layout::decode_dense_as`]); `to == dtype` is the dense bytes as they are.
    pub fn to_dense_as(&self, dtype: DType, shape: &[u64], to: DType) -> Result<Bytes> {
        self.layout.decode_dense_as(dtype, shape, self, to)
    }
}

/// A dense tensor's decoded bytes in pieces, in order: joined, they are the contiguous,
/// row-major, little-endian bytes of [`TensorData::dense`] data. Readers hand a large
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

/// A sparse tensor's components: built consistent with their format and nnz
/// ([`SparseData::new`]), checked against a shape by [`SparseData::validate`].
#[derive(Clone, Debug, PartialEq)]
pub struct SparseData {
    format: SparseFormat,
    nnz: u64,
    indptr: Vec<u64>,
    indices: Vec<u64>,
    values: Bytes,
}

impl SparseData {
    /// Sparse components, checked for lengths that fit `format` and `nnz` ([`Rule::BadSparse`]
    /// otherwise): COO has no row pointers and a whole number of rows of `nnz` indices (none
    /// when `nnz` is 0); CSR has `nnz` column indices. How many row pointers and index rows
    /// there must be depends on the shape: [`SparseData::validate`] checks those.
    pub fn new(format: SparseFormat, nnz: u64, indptr: Vec<u64>, indices: Vec<u64>, values: Bytes) -> Result<Self> {
        let fail = |msg: String| Err(Error::invalid(Rule::BadSparse, msg));
        let n = indices.len() as u64;
        match format {
            SparseFormat::Coo => {
                if !indptr.is_empty() {
                    return fail(format!("{} row pointers in a COO tensor", indptr.len()));
                }
                if (nnz == 0 && n != 0) || (nnz != 0 && n % nnz != 0) {
                    return fail(format!("{n} COO indices are no whole number of rows of nnz {nnz}"));
                }
            }
            SparseFormat::Csr => {
                if n != nnz {
                    return fail(format!("{n} column indices for nnz {nnz}"));
                }
            }
        }
        Ok(SparseData { format, nnz, indptr, indices, values })
    }

    /// The sparse format.
    pub fn format(&self) -> SparseFormat {
        self.format
    }

    /// How many values are stored.
    pub fn nnz(&self) -> u64 {
        self.nnz
    }

    /// CSR row pointers (`rows + 1`, non-decreasing, first 0, last nnz); empty for COO.
    pub fn indptr(&self) -> &[u64] {
        &self.indptr
    }

    /// COO: the `ndim x nnz` index matrix, one dimension after another (as torch's
    /// `indices()`). CSR: the `nnz` column indices.
    pub fn indices(&self) -> &[u64] {
        &self.indices
    }

    /// The `nnz` stored values, little-endian.
    pub fn values(&self) -> &Bytes {
        &self.values
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_components_must_fit_their_format_and_nnz() {
        let values = || Bytes::from_vec(vec![0; 8]);
        let rule = |r: Result<SparseData>| r.unwrap_err().rule();
        let coo = SparseData::new(SparseFormat::Coo, 2, vec![], vec![0, 1, 2, 3], values()).unwrap();
        assert_eq!(
            (coo.format(), coo.nnz(), coo.indices(), coo.indptr()),
            (SparseFormat::Coo, 2, &[0, 1, 2, 3][..], &[][..])
        );
        assert_eq!(rule(SparseData::new(SparseFormat::Coo, 2, vec![0], vec![0, 1], values())), Some(Rule::BadSparse));
        assert_eq!(rule(SparseData::new(SparseFormat::Coo, 2, vec![], vec![0, 1, 2], values())), Some(Rule::BadSparse));
        assert_eq!(rule(SparseData::new(SparseFormat::Coo, 0, vec![], vec![0], values())), Some(Rule::BadSparse));
        assert!(SparseData::new(SparseFormat::Coo, 0, vec![], vec![], values()).is_ok());
        assert!(SparseData::new(SparseFormat::Csr, 2, vec![0, 2], vec![0, 1], values()).is_ok());
        assert_eq!(rule(SparseData::new(SparseFormat::Csr, 2, vec![0, 2], vec![0], values())), Some(Rule::BadSparse));
    }
}
