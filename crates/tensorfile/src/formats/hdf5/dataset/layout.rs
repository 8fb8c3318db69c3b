//! The data layout message (type 0x08, versions 1 to 5): where a dataset's elements are.
//!
//! Version 5 (HDF5 2.0, written for filtered chunked datasets) is version 4's message; only
//! the entries of its chunk indexes store a filtered chunk's size in a length's width.

use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io;
use crate::source::Bytes;

/// Where a dataset's elements are stored.
#[derive(Clone)]
pub(in crate::formats::hdf5) enum Storage {
    /// In the layout message itself.
    Compact(Bytes),
    /// In one run of bytes at `addr` (undefined: never written).
    Contiguous {
        /// The run's address.
        addr: u64,
        /// Its length (before version 3: not stored, the datatype and dataspace give it).
        size: Option<u64>,
    },
    /// In chunks of equal shape, found through an index.
    Chunked(Chunking),
}

/// A chunked layout: the chunks' shape and their index.
#[derive(Debug, Clone)]
pub(in crate::formats::hdf5) struct Chunking {
    /// The shape of a chunk, one entry per dataset dimension.
    pub chunk: Vec<u64>,
    /// The element size the layout declares.
    pub element_size: u64,
    /// The index that finds the chunks.
    pub index: ChunkIndex,
    /// Edge chunks (partly outside the dataset) are stored unfiltered.
    pub unfiltered_edges: bool,
}

/// How a chunked dataset finds its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::formats::hdf5) enum ChunkIndex {
    /// A version 1 B-tree of type 1 (layout version 3).
    BTreeV1(u64),
    /// One chunk, the whole dataset; with its stored size and filter mask when filtered.
    Single {
        /// The chunk's address.
        addr: u64,
        /// Stored size and filter mask of a filtered chunk.
        filtered: Option<(u64, u32)>,
    },
    /// Chunks one after another from an address, in index order (no filters).
    Implicit(u64),
    /// A fixed array of chunk addresses.
    FixedArray(u64),
    /// An extensible array of chunk addresses (one unlimited dimension).
    ExtensibleArray(u64),
    /// A version 2 B-tree of chunk records (types 10 and 11).
    BTreeV2(u64),
}

/// Decodes a layout message of a dataset of `rank` dimensions.
pub(in crate::formats::hdf5) fn parse(body: &Bytes, rank: usize, offset_size: u8, length_size: u8) -> Result<Storage> {
    let mut c = Cursor::new(body);
    let version = c.u8("layout version")?;
    match version {
        1 | 2 => parse_v1(&mut c, body, rank, offset_size),
        3..=5 => {
            let class = c.u8("layout class")?;
            match class {
                0 => {
                    let size = c.u16_le("compact data size")?;
                    let at = c.position() as u64;
                    Ok(Storage::Compact(body.slice(at, u64::from(size))?))
                }
                1 => {
                    let addr = io::uint(&mut c, offset_size, "contiguous data address")?;
                    let size = io::uint(&mut c, length_size, "contiguous data size")?;
                    Ok(Storage::Contiguous { addr, size: Some(size) })
                }
                2 if version == 3 => chunked_v3(&mut c, rank, offset_size),
                2 => chunked_v4(&mut c, rank, offset_size, length_size),
                3 => Err(Error::unsupported("HDF5 virtual dataset (layout class 3)")),
                k => Err(Error::invalid(Rule::UnknownLayout, format!("HDF5 layout class {k}"))),
            }
        }
        v => Err(Error::invalid(Rule::UnknownLayout, format!("HDF5 data layout message version {v}"))),
    }
}

/// Versions 1 and 2: dimensionality, class, reserved bytes, address, dimensions, and for a
/// compact layout its data.
fn parse_v1(c: &mut Cursor<'_>, body: &Bytes, rank: usize, offset_size: u8) -> Result<Storage> {
    let ndims = usize::from(c.u8("layout dimensionality")?);
    let class = c.u8("layout class")?;
    c.skip(5, "layout reserved bytes")?;
    let addr = if class == 0 { None } else { Some(io::uint(c, offset_size, "layout data address")?) };
    let mut dims = Vec::with_capacity(ndims);
    for _ in 0..ndims {
        dims.push(u64::from(c.u32_le("layout dimension")?));
    }
    match (class, addr) {
        (0, _) => {
            let size = c.u32_le("compact data size")?;
            let at = c.position() as u64;
            Ok(Storage::Compact(body.slice(at, u64::from(size))?))
        }
        (1, Some(addr)) => Ok(Storage::Contiguous { addr, size: None }),
        (2, Some(addr)) => {
            let (chunk, element_size) = split_chunk_dims(dims, rank)?;
            Ok(Storage::Chunked(Chunking {
                chunk,
                element_size,
                index: ChunkIndex::BTreeV1(addr),
                unfiltered_edges: false,
            }))
        }
        (k, _) => Err(Error::invalid(Rule::UnknownLayout, format!("HDF5 layout class {k}"))),
    }
}

/// The chunk dimensions of a layout: one per dataset dimension, then the element size.
fn split_chunk_dims(mut dims: Vec<u64>, rank: usize) -> Result<(Vec<u64>, u64)> {
    if dims.len() != rank + 1 {
        return Err(Error::invalid(
            Rule::BadField,
            format!("HDF5 chunked layout of {} dimensions for a dataset of rank {rank}", dims.len().saturating_sub(1)),
        ));
    }
    let element_size = dims.pop().unwrap_or(0);
    if dims.contains(&0) {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 chunk shape {dims:?} has a zero dimension")));
    }
    Ok((dims, element_size))
}

fn chunked_v3(c: &mut Cursor<'_>, rank: usize, offset_size: u8) -> Result<Storage> {
    let ndims = usize::from(c.u8("layout dimensionality")?);
    let addr = io::uint(c, offset_size, "chunk B-tree address")?;
    let mut dims = Vec::with_capacity(ndims);
    for _ in 0..ndims {
        dims.push(u64::from(c.u32_le("chunk dimension")?));
    }
    let (chunk, element_size) = split_chunk_dims(dims, rank)?;
    Ok(Storage::Chunked(Chunking { chunk, element_size, index: ChunkIndex::BTreeV1(addr), unfiltered_edges: false }))
}

fn chunked_v4(c: &mut Cursor<'_>, rank: usize, offset_size: u8, length_size: u8) -> Result<Storage> {
    let flags = c.u8("chunked layout flags")?;
    let ndims = usize::from(c.u8("layout dimensionality")?);
    let width = c.u8("chunk dimension width")?;
    if !(1..=8).contains(&width) {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 chunk dimensions of {width} bytes")));
    }
    let mut dims = Vec::with_capacity(ndims);
    for _ in 0..ndims {
        dims.push(io::uint(c, width, "chunk dimension")?);
    }
    let (chunk, element_size) = split_chunk_dims(dims, rank)?;
    let kind = c.u8("chunk index type")?;
    let index = match kind {
        1 => {
            let filtered = if flags & 2 != 0 {
                let size = io::uint(c, length_size, "filtered chunk size")?;
                Some((size, c.u32_le("filtered chunk filter mask")?))
            } else {
                None
            };
            ChunkIndex::Single { addr: io::uint(c, offset_size, "chunk address")?, filtered }
        }
        2 => ChunkIndex::Implicit(io::uint(c, offset_size, "chunk index address")?),
        3 => {
            c.skip(1, "fixed array page bits")?;
            ChunkIndex::FixedArray(io::uint(c, offset_size, "chunk index address")?)
        }
        4 => {
            c.skip(5, "extensible array parameters")?;
            ChunkIndex::ExtensibleArray(io::uint(c, offset_size, "chunk index address")?)
        }
        5 => {
            c.skip(6, "B-tree v2 parameters")?;
            ChunkIndex::BTreeV2(io::uint(c, offset_size, "chunk index address")?)
        }
        k => return Err(Error::invalid(Rule::UnknownLayout, format!("HDF5 chunk index type {k}"))),
    };
    Ok(Storage::Chunked(Chunking { chunk, element_size, index, unfiltered_edges: flags & 1 != 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: &[u8]) -> Bytes {
        Bytes::from_vec(v.to_vec())
    }

    #[test]
    fn compact_contiguous_and_chunked() {
        let Storage::Compact(d) = parse(&bytes(&[3, 0, 2, 0, 7, 9]), 1, 8, 8).unwrap() else { panic!() };
        assert_eq!(&*d, &[7, 9]);
        let mut v = vec![3, 1];
        v.extend_from_slice(&100u64.to_le_bytes());
        v.extend_from_slice(&48u64.to_le_bytes());
        let Storage::Contiguous { addr, size } = parse(&bytes(&v), 1, 8, 8).unwrap() else { panic!() };
        assert_eq!((addr, size), (100, Some(48)));
        // Version 4, fixed array, chunk 2x3 of 4-byte elements.
        let mut v = vec![4, 2, 0, 3, 1, 2, 3, 4, 3, 10];
        v.extend_from_slice(&500u64.to_le_bytes());
        let Storage::Chunked(k) = parse(&bytes(&v), 2, 8, 8).unwrap() else { panic!() };
        assert_eq!((k.chunk, k.element_size, k.index), (vec![2, 3], 4, ChunkIndex::FixedArray(500)));
    }

    #[test]
    fn hostile_layouts() {
        let rule = |v: &[u8], rank| parse(&bytes(v), rank, 8, 8).err().and_then(|e| e.rule());
        assert_eq!(rule(&[6, 1], 1), Some(Rule::UnknownLayout));
        assert_eq!(rule(&[3, 7], 1), Some(Rule::UnknownLayout));
        assert_eq!(rule(&[3, 0, 9, 0, 1], 1), Some(Rule::OutOfBounds));
        // Chunk rank 1 for a dataset of rank 2; a zero chunk dimension; an unknown index.
        assert_eq!(rule(&[4, 2, 0, 2, 1, 2, 4, 3, 0], 2), Some(Rule::BadField));
        assert_eq!(rule(&[4, 2, 0, 2, 1, 0, 4, 3, 0], 1), Some(Rule::BadField));
        assert_eq!(rule(&[4, 2, 0, 2, 1, 2, 4, 9], 1), Some(Rule::UnknownLayout));
    }
}
