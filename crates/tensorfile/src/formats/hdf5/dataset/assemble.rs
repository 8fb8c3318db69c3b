//! Assembling a chunked dataset: every stored chunk read, its filters undone and its part
//! inside the dataset copied into place; chunks never written keep the fill value. Chunks are
//! decoded in parallel, in batches of bounded size.

use rayon::prelude::*;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io::H5Io;
use crate::source::Bytes;

use super::Dataset;
use super::chunks;
use super::filters;
use super::grid::{ChunkRef, Grid};
use super::layout::Chunking;

/// Most bytes of decoded chunks held at once before they are copied into place.
const BATCH_BYTES: u64 = 64 << 20;

/// The `len` bytes of a chunked dataset, in stored byte order.
pub(super) fn chunked(d: &Dataset, io: &H5Io, chunking: &Chunking, len: u64) -> Result<Vec<u8>> {
    let dims = &d.space.dims;
    let grid = Grid::new(dims, &d.space.max_dims, &chunking.chunk)?;
    let chunk_bytes = checked::mul(checked::numel(&chunking.chunk)?, d.element.size, "HDF5 chunk size")?;
    let mut out = d.filled(io, len)?;
    if len == 0 {
        return Ok(out);
    }
    if chunk_bytes > Dataset::justified(io) {
        return Err(Error::invalid(
            Rule::ExpansionTooLarge,
            format!("HDF5 chunks of {chunk_bytes} bytes, more than the file can justify"),
        ));
    }
    let refs = chunks::locate(io, chunking, &grid, chunk_bytes)?;
    let per_batch = usize::try_from((BATCH_BYTES / chunk_bytes.max(1)).max(1)).unwrap_or(1);
    for batch in refs.chunks(per_batch) {
        let decoded: Vec<Bytes> =
            batch.par_iter().map(|r| decode(d, io, chunking, r, chunk_bytes)).collect::<Result<_>>()?;
        for (r, data) in batch.iter().zip(&decoded) {
            place(&mut out, data, &r.scaled, &chunking.chunk, dims, d.element.size)?;
        }
    }
    Ok(out)
}

/// One chunk's bytes with its filters undone: `chunk_bytes` of them (an unfiltered chunk's
/// are a slice of the file).
fn decode(d: &Dataset, io: &H5Io, chunking: &Chunking, r: &ChunkRef, chunk_bytes: u64) -> Result<Bytes> {
    let stored = io.read_what(r.addr, r.size, "HDF5 chunk")?;
    let edge = r
        .scaled
        .iter()
        .zip(&chunking.chunk)
        .zip(&d.space.dims)
        .any(|((&s, &c), &n)| s.saturating_add(1).saturating_mul(c) > n);
    let mask = if chunking.unfiltered_edges && edge { u32::MAX } else { r.mask };
    let active = d.filters.iter().enumerate().any(|(i, _)| i >= 32 || mask & (1 << i) == 0);
    if !active {
        if r.size != chunk_bytes {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("HDF5 unfiltered chunk of {} bytes where a chunk holds {chunk_bytes}", r.size),
            ));
        }
        return Ok(stored);
    }
    filters::undo(&d.filters, mask, &stored, chunk_bytes).map(Bytes::from_vec)
}

/// Copies the part of a decoded chunk at grid position `scaled` that lies inside the dataset
/// into `out`, row by row.
fn place(out: &mut [u8], data: &[u8], scaled: &[u64], chunk: &[u64], dims: &[u64], element: u64) -> Result<()> {
    let rank = dims.len();
    let start: Vec<u64> = scaled.iter().zip(chunk).map(|(&s, &c)| s * c).collect();
    let extent: Vec<u64> = start.iter().zip(chunk).zip(dims).map(|((&s, &c), &n)| c.min(n - s)).collect();
    let row = checked::to_usize(extent[rank - 1] * element, "chunk row")?;
    // Index over the chunk's rows (all dimensions but the last).
    let rows = &extent[..rank - 1];
    let mut at = vec![0u64; rank - 1];
    loop {
        let (mut src, mut dst) = (0u64, 0u64);
        for k in 0..rank {
            let i = if k < rank - 1 { at[k] } else { 0 };
            src = src * chunk[k] + i;
            dst = dst * dims[k] + start[k] + i;
        }
        let (src, dst) =
            (checked::to_usize(src * element, "chunk offset")?, checked::to_usize(dst * element, "dataset offset")?);
        out[dst..dst + row].copy_from_slice(&data[src..src + row]);
        let mut k = rows.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            at[k] += 1;
            if at[k] < rows[k] {
                break;
            }
            at[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_chunks_are_clipped() {
        // A 3x5 dataset of bytes in chunks of 2x3: the chunk at (1, 1) holds rows 2.. and
        // columns 3..; only row 2, columns 3 and 4, lie inside.
        let mut out = vec![0u8; 15];
        place(&mut out, &[1, 2, 3, 4, 5, 6], &[1, 1], &[2, 3], &[3, 5], 1).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
        place(&mut out, &[1, 2, 3, 4, 5, 6], &[0, 0], &[2, 3], &[3, 5], 1).unwrap();
        assert_eq!(out[..8], [1, 2, 3, 0, 0, 4, 5, 6]);
    }
}
