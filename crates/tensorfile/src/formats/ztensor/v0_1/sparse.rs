//! Sparse blobs: the spec form we define (docs/zt-sparse.md) and the reference's records.

use super::interpret::BlobForm;
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::{ByteOrder, DType, SparseData, SparseFormat};
use crate::source::Bytes;
use crate::swap;

/// What is needed to take a sparse blob apart.
pub struct SparseShape<'a> {
    pub format: SparseFormat,
    pub dtype: DType,
    pub shape: &'a [u64],
    pub nnz: u64,
}

fn read_u64s(bytes: &[u8], order: ByteOrder) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let a: [u8; 8] = c.try_into().unwrap_or_default();
            match order {
                ByteOrder::Little => u64::from_le_bytes(a),
                ByteOrder::Big => u64::from_be_bytes(a),
            }
        })
        .collect()
}

/// Split a decoded blob (`blob`, in `order`) into validated sparse components.
pub fn decode(blob: &Bytes, form: BlobForm, order: ByteOrder, s: &SparseShape<'_>) -> Result<SparseData> {
    let value_size = s.dtype.size().unwrap_or(1);
    let ndim = s.shape.len() as u64;
    let values_len = checked::mul(s.nnz, value_size, "sparse values")?;
    let (indptr, indices, values) = match (form, s.format) {
        (BlobForm::ReferenceSparse, SparseFormat::Coo) => {
            // nnz records of (ndim x u64 index, value): transpose into dim-major indices.
            let record = 8 * ndim + value_size;
            let need = checked::mul(s.nnz, record, "sparse COO records")?;
            expect_len(blob, need)?;
            let ndim_us = checked::to_usize(ndim, "rank")?;
            let nnz_us = checked::to_usize(s.nnz, "nnz")?;
            let mut indices = vec![0u64; ndim_us * nnz_us];
            let mut values = Vec::with_capacity(checked::to_usize(values_len, "values")?);
            for (k, rec) in blob.chunks_exact(checked::to_usize(record, "record")?).enumerate() {
                let idx = read_u64s(&rec[..8 * ndim_us], order);
                for (d, v) in idx.into_iter().enumerate() {
                    indices[d * nnz_us + k] = v;
                }
                values.extend_from_slice(&rec[8 * ndim_us..]);
            }
            (Vec::new(), indices, Bytes::from_vec(values))
        }
        (_, SparseFormat::Coo) => {
            let index_bytes = checked::mul(checked::mul(ndim, s.nnz, "COO indices")?, 8, "COO indices")?;
            expect_len(blob, checked::add(index_bytes, values_len, "COO size")?)?;
            let indices = read_u64s(&blob.slice(0, index_bytes)?, order);
            (Vec::new(), indices, blob.slice(index_bytes, values_len)?)
        }
        (_, SparseFormat::Csr) => {
            // Same in both forms: indptr, indices, values.
            let rows = s.shape.first().copied().unwrap_or(0);
            let indptr_bytes = checked::mul(checked::add(rows, 1, "CSR rows")?, 8, "CSR indptr")?;
            let indices_bytes = checked::mul(s.nnz, 8, "CSR indices")?;
            let head = checked::add(indptr_bytes, indices_bytes, "CSR size")?;
            expect_len(blob, checked::add(head, values_len, "CSR size")?)?;
            let indptr = read_u64s(&blob.slice(0, indptr_bytes)?, order);
            let indices = read_u64s(&blob.slice(indptr_bytes, indices_bytes)?, order);
            (indptr, indices, blob.slice(head, values_len)?)
        }
    };
    let values = match order {
        ByteOrder::Little => values,
        ByteOrder::Big => Bytes::from_vec(swap::swapped(&values, s.dtype.swap_unit())),
    };
    let data = SparseData::new(s.format, s.nnz, indptr, indices, values)?;
    data.validate(s.shape)?;
    Ok(data)
}

fn expect_len(blob: &[u8], need: u64) -> Result<()> {
    if blob.len() as u64 != need {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!("sparse blob has {} bytes, its nnz and shape need {need}", blob.len()),
        ));
    }
    Ok(())
}

/// The spec-form blob of `d`: index arrays then values, all in `order`.
pub fn encode(d: &SparseData, dtype: DType, order: ByteOrder) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * (d.indptr().len() + d.indices().len()) + d.values().len());
    for &i in d.indptr().iter().chain(d.indices()) {
        match order {
            ByteOrder::Little => out.extend_from_slice(&i.to_le_bytes()),
            ByteOrder::Big => out.extend_from_slice(&i.to_be_bytes()),
        }
    }
    match order {
        ByteOrder::Little => out.extend_from_slice(d.values()),
        ByteOrder::Big => out.extend_from_slice(&swap::swapped(d.values(), dtype.swap_unit())),
    }
    out
}
