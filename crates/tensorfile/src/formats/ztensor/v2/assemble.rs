//! Reading an object (spec §8 step 7): each part's bytes from its file, decoded, checked
//! against its digest when verifying and against its type's content rules, then put
//! together as the model's layout, with the sparse profiles' data rules checked.

use super::layouts::{SEEKABLE, ZSTD};
use super::manifest::{check_digest, in_part};
use super::plan::PartPlan;
use super::seekable;
use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::zstd_frames;
use crate::model::{Entry, Layout, SparseData, SparseFormat, TensorData};
use crate::source::{Bytes, Source};

/// The decoded bytes of part `p`, from the file `file_of` finds it in (the root file or a
/// shard): a slice of the file when it is raw (no copy), decoded when encoded; with
/// `verify`, checked against its digest.
pub fn part_bytes<'a>(file_of: impl Fn(&PartPlan) -> Result<&'a Source>, p: &PartPlan, verify: bool) -> Result<Bytes> {
    let get = || -> Result<Bytes> {
        let stored = file_of(p)?.range(p.part.offset, p.part.length)?;
        // zTensor 1.x digests cover the stored bytes, zTensor 2's the decoded ones.
        let digest = p.part.digest.as_ref().filter(|_| verify);
        if let Some(d) = digest.filter(|_| p.part.legacy) {
            check_digest(d, &stored)?;
        }
        let decoded = match (&p.part.encoding, p.part.decoded_length, p.part.legacy) {
            (None, _, _) => stored,
            (Some(e), Some(len), false) if e == SEEKABLE => Bytes::from_vec(seekable::decode(&stored, len)?),
            (Some(e), Some(len), true) if e == ZSTD => Bytes::from_vec(zstd_frames::decompress(&stored, len)?),
            // Unknown encodings make their object unreadable at open.
            (Some(e), _, _) => return Err(Error::unsupported(format!("encoding {e:?}"))),
        };
        if let Some(d) = digest.filter(|_| !p.part.legacy) {
            check_digest(d, &decoded)?;
        }
        p.element.check_values(&decoded)?;
        Ok(decoded)
    };
    get().map_err(|e| in_part(e, &p.part.name))
}

/// Readable entry `entry`, of parts `parts`, each in the file `file_of` finds it in.
pub fn read<'a>(
    file_of: impl Fn(&PartPlan) -> Result<&'a Source>,
    entry: &Entry,
    parts: &[PartPlan],
    verify: bool,
) -> Result<TensorData> {
    let mut bytes = Vec::with_capacity(parts.len());
    for p in parts {
        bytes.push(part_bytes(&file_of, p, verify)?);
    }
    let info = entry.info();
    match info.layout() {
        Layout::Quantized(q) => Ok(TensorData::quantized(q.clone(), parts.iter().map(|p| p.role).zip(bytes).collect())),
        Layout::Sparse { format, nnz } => {
            // Parts in the layout's order: (indptr,) indices, values.
            let mut indices: Vec<Vec<u64>> = Vec::new();
            for (p, b) in parts.iter().zip(&bytes).filter(|(p, _)| p.widen) {
                indices.push(widen(b, p.part.dtype.width()));
            }
            let values = bytes.pop().unwrap_or_else(|| Bytes::from_vec(Vec::new()));
            let s = match (format, indices.as_mut_slice()) {
                (SparseFormat::Coo, [coords]) => {
                    SparseData::new(*format, *nnz, Vec::new(), std::mem::take(coords), values)?
                }
                (SparseFormat::Csr, [indptr, cols]) => {
                    SparseData::new(*format, *nnz, std::mem::take(indptr), std::mem::take(cols), values)?
                }
                _ => {
                    return Err(Error::unsupported(format!(
                        "a {} tensor of {} parts",
                        info.layout().describe(),
                        parts.len()
                    )));
                }
            };
            s.validate(info.shape())?;
            match format {
                SparseFormat::Csr => check_rows(&s)?,
                _ => check_unique(&s, info.shape().len())?,
            }
            Ok(TensorData::sparse(s))
        }
        _ => Ok(TensorData::dense(bytes.pop().unwrap_or_else(|| Bytes::from_vec(Vec::new())))),
    }
}

/// Little-endian indices of `width` bytes (4 or 8) as `u64`s.
fn widen(bytes: &[u8], width: u64) -> Vec<u64> {
    if width == 4 {
        bytes.chunks_exact(4).map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect()
    } else {
        bytes.chunks_exact(8).map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()
    }
}

/// `zt.sparse_coo/1`'s data rule: no two values at one coordinate.
fn check_unique(s: &SparseData, ndim: usize) -> Result<()> {
    let nnz = s.indices().len() / ndim.max(1);
    let at = |i: usize| (0..ndim).map(move |d| s.indices()[d * nnz + i]);
    let mut order: Vec<usize> = (0..nnz).collect();
    order.sort_unstable_by(|&a, &b| at(a).cmp(at(b)));
    if let Some(w) = order.windows(2).find(|w| at(w[0]).eq(at(w[1]))) {
        let coords: Vec<u64> = at(w[0]).collect();
        return Err(Error::invalid(
            Rule::BadSparse,
            format!("values {} and {} are both at {coords:?}", w[0].min(w[1]), w[0].max(w[1])),
        ));
    }
    Ok(())
}

/// `zt.sparse_csr/1`'s data rule beyond the model's: column indices strictly increase within
/// each row (row pointers were checked to run from 0 to nnz without decreasing).
fn check_rows(s: &SparseData) -> Result<()> {
    for (row, w) in s.indptr().windows(2).enumerate() {
        let cols = &s.indices()[w[0] as usize..w[1] as usize];
        if cols.windows(2).any(|c| c[1] <= c[0]) {
            return Err(Error::invalid(Rule::BadSparse, format!("the column indices of row {row} do not increase")));
        }
    }
    Ok(())
}
