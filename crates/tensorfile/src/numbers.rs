//! A tensor's numbers, whatever its storage: the decoded dense bytes of an entry in pieces
//! ([`dense_pieces`]), re-cut on element boundaries ([`aligned`]) for
//! [`Elements`](crate::model::elements::Elements) to decode. Statistics, printing, numeric
//! differences and the finiteness check all read values this way.
//!
//! Dense tensors (also strided and dim-ordered ones, which readers hand over row-major) come in
//! the pieces their reader gives: one piece borrowed from a mapped file, bounded pieces of a
//! compressed one. Quantized tensors are dequantized to float32 and sparse tensors scattered to
//! dense, each whole (bounded by the library's expansion limits).

use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::model::{Chunks, DType, Kind};
use crate::source::Bytes;

/// The values of one tensor as decoded dense pieces.
pub struct DensePieces<'a> {
    /// The dtype of the pieces' elements: the tensor's, or float32 for a dequantized one.
    pub dtype: DType,
    /// Elements of the tensor (the product of its shape).
    pub numel: u64,
    /// Whether the values were dequantized from a quantized layout.
    pub dequantized: bool,
    /// The pieces, in row-major order.
    pub chunks: Chunks<'a>,
}

/// The values of entry `index` of `file` as dense pieces; `verify` checks stored checksums on
/// the way. Errors name the file and the tensor; a blob is an error.
pub fn dense_pieces(file: &TensorFile, index: usize, verify: bool) -> Result<DensePieces<'_>> {
    let in_file = |e: Error| match file.path() {
        Some(p) => e.in_file(p),
        None => e,
    };
    let entry = file.entries().get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
    let info = entry.info();
    if info.kind() == Kind::Blob {
        return Err(in_file(Error::unsupported("it is a blob of bytes, not a tensor").for_tensor(info.name())));
    }
    let numel = info.numel().map_err(|e| in_file(e.for_tensor(info.name())))?;
    if info.layout().reads_dense() {
        let chunks = file.read_chunks(index, verify)?;
        return Ok(DensePieces { dtype: info.dtype(), numel, dequantized: false, chunks });
    }
    let data = if verify { file.read_verified(index)? } else { file.read_index(index)? };
    let dense = data.to_dense(info.dtype(), info.shape()).map_err(|e| in_file(e.for_tensor(info.name())))?;
    let dequantized = info.layout().quant().is_some();
    let dtype = if dequantized { DType::Float32 } else { info.dtype() };
    Ok(DensePieces { dtype, numel, dequantized, chunks: Box::new(std::iter::once(Ok(dense))) })
}

/// `chunks` re-cut so that every piece holds whole groups of `group` bytes: pieces that
/// already do pass through as they are (no copy); a group split between pieces is joined.
/// Bytes left over at the end (no whole group) are an error.
pub fn aligned(chunks: Chunks<'_>, group: usize) -> Chunks<'_> {
    Box::new(Aligned { chunks, group: group.max(1), carry: Vec::new(), pending: None })
}

struct Aligned<'a> {
    chunks: Chunks<'a>,
    group: usize,
    /// The start of a group split between pieces.
    carry: Vec<u8>,
    /// A piece to hand out after the one just handed out.
    pending: Option<Bytes>,
}

impl Iterator for Aligned<'_> {
    type Item = Result<Bytes>;

    fn next(&mut self) -> Option<Result<Bytes>> {
        loop {
            if let Some(p) = self.pending.take() {
                return Some(Ok(p));
            }
            let piece = match self.chunks.next() {
                None if self.carry.is_empty() => return None,
                None => {
                    let left = std::mem::take(&mut self.carry).len();
                    return Some(Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!("the data ends {left} bytes into an element of {} bytes", self.group),
                    )));
                }
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(p)) => p,
            };
            let mut start = 0;
            let mut joined = None;
            if !self.carry.is_empty() {
                start = (self.group - self.carry.len()).min(piece.len());
                self.carry.extend_from_slice(&piece[..start]);
                if self.carry.len() == self.group {
                    joined = Some(Bytes::from_vec(std::mem::take(&mut self.carry)));
                }
            }
            let whole = (piece.len() - start) / self.group * self.group;
            let body = if whole == 0 {
                None
            } else {
                match piece.slice(start as u64, whole as u64) {
                    Ok(b) => Some(b),
                    Err(e) => return Some(Err(e)),
                }
            };
            self.carry.extend_from_slice(&piece[start + whole..]);
            match (joined, body) {
                (Some(a), b) => {
                    self.pending = b;
                    return Some(Ok(a));
                }
                (None, Some(b)) => return Some(Ok(b)),
                (None, None) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(parts: &[&[u8]]) -> Chunks<'static> {
        let owned: Vec<Result<Bytes>> = parts.iter().map(|p| Ok(Bytes::from_vec(p.to_vec()))).collect();
        Box::new(owned.into_iter())
    }

    #[test]
    fn split_groups_are_joined_and_whole_pieces_pass() {
        let out: Vec<Vec<u8>> = aligned(pieces(&[&[1, 2, 3], &[4, 5, 6, 7, 8], &[], &[9], &[10, 11, 12]]), 4)
            .map(|p| p.unwrap().to_vec())
            .collect();
        assert_eq!(out, vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8], vec![9, 10, 11, 12]]);
    }

    #[test]
    fn a_trailing_partial_group_is_an_error() {
        let out: Vec<Result<Bytes>> = aligned(pieces(&[&[1, 2, 3, 4, 5]]), 2).collect();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().unwrap().to_vec(), vec![1, 2, 3, 4]);
        assert_eq!(out[1].as_ref().err().unwrap().rule(), Some(Rule::SizeMismatch));
    }
}
