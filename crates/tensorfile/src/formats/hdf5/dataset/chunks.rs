//! Finding a chunked dataset's stored chunks through its index, whichever it is.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::btree2;
use crate::formats::hdf5::io::{self, H5Io};

use super::farray::Entry;
use super::grid::{ChunkRef, Grid};
use super::layout::{ChunkIndex, Chunking};
use super::{btree1, earray, farray};

/// The stored chunks of a dataset of this `grid`, chunked as `chunking`, each chunk holding
/// `chunk_bytes` bytes before filters. Chunks never written are left out.
pub(in crate::formats::hdf5) fn locate(
    io: &H5Io,
    chunking: &Chunking,
    grid: &Grid,
    chunk_bytes: u64,
) -> Result<Vec<ChunkRef>> {
    let rank = chunking.chunk.len();
    let mut out = match chunking.index {
        ChunkIndex::BTreeV1(addr) => {
            if io.is_undefined(addr) {
                return Ok(Vec::new());
            }
            btree1::chunks(io, addr, &chunking.chunk, grid)?
        }
        ChunkIndex::Single { addr, filtered } => {
            if io.is_undefined(addr) || grid.total == 0 {
                return Ok(Vec::new());
            }
            if grid.total != 1 {
                return Err(Error::invalid(
                    Rule::BadField,
                    format!("HDF5 single chunk index for a dataset of {} chunks", grid.total),
                ));
            }
            let (size, mask) = filtered.unwrap_or((chunk_bytes, 0));
            vec![ChunkRef { scaled: vec![0; rank], addr, size, mask }]
        }
        ChunkIndex::Implicit(addr) => {
            if io.is_undefined(addr) {
                return Ok(Vec::new());
            }
            let numbering = grid.numbering(false)?;
            let mut out = Vec::new();
            each_position(&grid.counts, |scaled| {
                let n = numbering.number(scaled)?;
                let at = checked::add(
                    addr,
                    checked::mul(n, chunk_bytes, "implicit chunk address")?,
                    "implicit chunk address",
                )?;
                out.push(ChunkRef { scaled: scaled.to_vec(), addr: at, size: chunk_bytes, mask: 0 });
                Ok(())
            })?;
            out
        }
        ChunkIndex::FixedArray(addr) | ChunkIndex::ExtensibleArray(addr) => {
            if io.is_undefined(addr) {
                return Ok(Vec::new());
            }
            let extensible = matches!(chunking.index, ChunkIndex::ExtensibleArray(_));
            let numbering = grid.numbering(extensible)?;
            let entries = if extensible { earray::entries(io, addr)? } else { farray::entries(io, addr)? };
            let mut out = Vec::new();
            for (n, Entry { addr, filtered }) in entries {
                if io.is_undefined(addr) {
                    continue;
                }
                if let Some(scaled) = numbering.position(n) {
                    let (size, mask) = filtered.unwrap_or((chunk_bytes, 0));
                    out.push(ChunkRef { scaled, addr, size, mask });
                }
            }
            out
        }
        ChunkIndex::BTreeV2(addr) => {
            if io.is_undefined(addr) {
                return Ok(Vec::new());
            }
            btree2_chunks(io, addr, rank, grid, chunk_bytes)?
        }
    };
    out.retain(|c| !io.is_undefined(c.addr));
    Ok(out)
}

/// Calls `f` with every position of a grid of `counts` chunks, in row-major order.
pub(in crate::formats::hdf5) fn each_position(counts: &[u64], mut f: impl FnMut(&[u64]) -> Result<()>) -> Result<()> {
    if counts.contains(&0) {
        return Ok(());
    }
    let mut scaled = vec![0u64; counts.len()];
    loop {
        f(&scaled)?;
        let mut d = counts.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            scaled[d] += 1;
            if scaled[d] < counts[d] {
                break;
            }
            scaled[d] = 0;
        }
    }
}

/// The chunks of a B-tree v2 index: records of type 10 (address, then the chunk's grid
/// position, 8 bytes per dimension) or 11 (address, stored size, filter mask, position).
fn btree2_chunks(io: &H5Io, addr: u64, rank: usize, grid: &Grid, chunk_bytes: u64) -> Result<Vec<ChunkRef>> {
    let tree = btree2::records(io, addr)?;
    let o = usize::from(io.offset_size());
    let fixed = o + 8 * rank;
    let size_width = match tree.kind {
        10 if tree.record_size == fixed => 0,
        11 if (fixed + 5..=fixed + 12).contains(&tree.record_size) => tree.record_size - fixed - 4,
        k => {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 chunk index B-tree v2 of type {k} with records of {} bytes", tree.record_size),
            ));
        }
    };
    let mut out = Vec::with_capacity(tree.records.len());
    for record in &tree.records {
        let mut c = Cursor::new(record);
        let addr = io::uint(&mut c, io.offset_size(), "chunk address")?;
        let (size, mask) = if size_width > 0 {
            (io::uint(&mut c, size_width as u8, "chunk size")?, c.u32_le("chunk filter mask")?)
        } else {
            (chunk_bytes, 0)
        };
        let scaled: Vec<u64> = (0..rank).map(|_| c.u64_le("chunk position")).collect::<Result<_>>()?;
        if grid.contains(&scaled) {
            out.push(ChunkRef { scaled, addr, size, mask });
        }
    }
    Ok(out)
}
