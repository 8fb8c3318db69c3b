//! The version 1 B-tree of chunks (node type 1) that layout version 3 indexes chunks with.
//!
//! A node: `TREE`, type, level, entries used, left and right siblings, then keys and children
//! alternating (one more key than children). A chunk key: the chunk's stored size (u32), its
//! filter mask (u32) and the element offset of its first element in each dimension plus a
//! trailing zero (u64 each). Children of a level-0 node are chunks; of others, nodes one
//! level down.

use std::collections::HashSet;

use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io::{self, H5Io};

use super::grid::{ChunkRef, Grid};

/// The deepest B-tree this library walks.
const MAX_LEVEL: u8 = 64;

/// The chunks of the tree at `addr` that lie in `grid`, for chunks of shape `chunk`.
pub(in crate::formats::hdf5) fn chunks(io: &H5Io, addr: u64, chunk: &[u64], grid: &Grid) -> Result<Vec<ChunkRef>> {
    let rank = chunk.len();
    let offset_size = io.offset_size();
    let key_len = 8 + 8 * (rank as u64 + 1);
    let head_len = 8 + 2 * u64::from(offset_size);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut pending = vec![(addr, None::<u8>)];
    while let Some((node, want_level)) = pending.pop() {
        if seen.len() as u64 > grid.total.saturating_mul(2).saturating_add(64) {
            return Err(Error::invalid(
                Rule::TooManyEntries,
                format!("HDF5 chunk B-tree of more nodes than the dataset's {} chunks need", grid.total),
            ));
        }
        if !seen.insert(node) {
            return Err(Error::invalid(Rule::Overlap, format!("HDF5 chunk B-tree node at {node} is reached twice")));
        }
        let head = io.read_what(node, head_len, "chunk B-tree node")?;
        if &head[..4] != b"TREE" {
            return Err(Error::invalid(Rule::BadMagic, format!("HDF5 chunk B-tree node at {node}: no TREE signature")));
        }
        let (kind, level, entries) = (head[4], head[5], u64::from(u16::from_le_bytes([head[6], head[7]])));
        if kind != 1 {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 B-tree node at {node} of type {kind} in a chunk index"),
            ));
        }
        if level > MAX_LEVEL || want_level.is_some_and(|w| w != level) {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 chunk B-tree node at {node} of level {level} where {want_level:?} was expected"),
            ));
        }
        let body_len = entries * (key_len + u64::from(offset_size)) + key_len;
        let body = io.read_what(node + head_len, body_len, "chunk B-tree node entries")?;
        let mut c = Cursor::new(&body);
        for _ in 0..entries {
            let size = c.u32_le("chunk size")?;
            let mask = c.u32_le("chunk filter mask")?;
            let mut scaled = Vec::with_capacity(rank);
            for &extent in chunk {
                let offset = c.u64_le("chunk offset")?;
                if offset % extent != 0 {
                    return Err(Error::invalid(
                        Rule::Misaligned,
                        format!("HDF5 chunk at element offset {offset} does not start on a chunk boundary ({extent})"),
                    ));
                }
                scaled.push(offset / extent);
            }
            c.skip(8, "chunk key's element offset")?;
            let child = io::uint(&mut c, offset_size, "chunk B-tree child address")?;
            if level > 0 {
                pending.push((child, Some(level - 1)));
            } else if grid.contains(&scaled) {
                out.push(ChunkRef { scaled, addr: child, size: u64::from(size), mask });
            }
        }
        if out.len() as u64 > grid.total {
            return Err(Error::invalid(
                Rule::TooManyEntries,
                format!("HDF5 chunk B-tree lists more chunks than the dataset's {}", grid.total),
            ));
        }
    }
    Ok(out)
}
