//! HDF5 datasets: files built here (superblock 2, a root of one link, a dataset `x` of eight
//! float32 in two chunks indexed by a version 1 B-tree, deflated and shuffled), and one broken
//! dataset per rule: chunks past the end, inflating past their size or not inflating, a
//! fletcher32 mismatch, a B-tree that loops or misplaces a chunk, overflowing dimensions, an
//! unknown filter, layout version or chunk index, a string datatype, sizes that disagree and a
//! dataset larger than its file justifies. The file opens; reading the dataset fails.

use tensorfile::{Format, Rule};

use super::Fixtures;
use super::hdf5::{ROOT, UNDEFINED, link, message, ohdr, superblock};
use crate::build::deflate::deflate;
use crate::case::{Family as F, Folder};

fn u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A zlib stream (deflate with its header and Adler-32).
fn zlib(data: &[u8]) -> Vec<u8> {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    [vec![0x78, 0x01], deflate(data), ((b << 16) | a).to_be_bytes().to_vec()].concat()
}

/// Dataspace version 2 of `dims`.
fn dataspace(dims: &[u64]) -> Vec<u8> {
    message(0x01, &[vec![2, dims.len() as u8, 0, 1], u64s(dims)].concat())
}

/// Little-endian IEEE float32.
fn float32() -> Vec<u8> {
    let mut t = vec![0x11, 0x20, 31, 0, 4, 0, 0, 0, 0, 0, 32, 0, 23, 8, 0, 23];
    t.extend_from_slice(&127u32.to_le_bytes());
    message(0x03, &t)
}

/// Layout version 3, chunked: a B-tree at `btree`, chunks of `chunk` float32 elements.
fn chunked(btree: u64, chunk: u64) -> Vec<u8> {
    let mut l = vec![3, 2, 2];
    l.extend_from_slice(&btree.to_le_bytes());
    l.extend_from_slice(&(chunk as u32).to_le_bytes());
    l.extend_from_slice(&4u32.to_le_bytes());
    message(0x08, &l)
}

/// Filter pipeline version 2 of filters `(id, client values)`.
fn pipeline(filters: &[(u16, &[u32])]) -> Vec<u8> {
    let mut p = vec![2, filters.len() as u8];
    for (id, values) in filters {
        p.extend_from_slice(&id.to_le_bytes());
        if *id >= 256 {
            p.extend_from_slice(&0u16.to_le_bytes());
        }
        p.extend_from_slice(&0u16.to_le_bytes());
        p.extend_from_slice(&(values.len() as u16).to_le_bytes());
        values.iter().for_each(|v| p.extend_from_slice(&v.to_le_bytes()));
    }
    message(0x0b, &p)
}

/// A leaf of a version 1 chunk B-tree: one key and child per `(stored size, element offset,
/// address)`, then the closing key at `end`.
fn leaf(level: u8, chunks: &[(u32, u64, u64)], end: u64) -> Vec<u8> {
    let mut n = b"TREE".to_vec();
    n.extend_from_slice(&[1, level]);
    n.extend_from_slice(&(chunks.len() as u16).to_le_bytes());
    n.extend_from_slice(&u64s(&[UNDEFINED, UNDEFINED]));
    for &(size, offset, addr) in chunks {
        n.extend_from_slice(&size.to_le_bytes());
        n.extend_from_slice(&0u32.to_le_bytes());
        n.extend_from_slice(&u64s(&[offset, 0, addr]));
    }
    n.extend_from_slice(&[0; 8]);
    n.extend_from_slice(&u64s(&[end, 0]));
    n
}

/// The eight float32 of dataset `x`.
fn values() -> Vec<u8> {
    (0..8).flat_map(|i| (i as f32 * 1.5 - 2.0).to_le_bytes()).collect()
}

/// Four float32, their bytes shuffled (all first bytes, then all second bytes...).
fn shuffled(data: &[u8]) -> Vec<u8> {
    (0..4).flat_map(|j| data.chunks(4).map(move |e| e[j])).collect()
}

/// A whole file: superblock 2, a root linking `x` to a dataset of `messages(payload_at)`,
/// then `payload(payload_at)` (whose length may not depend on its address).
fn file(messages: impl Fn(u64) -> Vec<Vec<u8>>, payload: impl Fn(u64) -> Vec<u8>) -> Vec<u8> {
    let dataset_at = ROOT + ohdr(&[link("x", 0)]).len() as u64;
    let root = ohdr(&[link("x", dataset_at)]);
    let payload_at = dataset_at + ohdr(&messages(0)).len() as u64;
    let dataset = ohdr(&messages(payload_at));
    let data = payload(payload_at);
    let eof = payload_at + data.len() as u64;
    [superblock(2, eof, ROOT), root, dataset, data].concat()
}

/// Dataset `x` (8 float32 in chunks of 4) with `filters`, its two stored chunks made by
/// `store` from each chunk's bytes; `tree` may rewrite the B-tree's entries.
fn chunked_file(
    dims: u64,
    filters: &[(u16, &[u32])],
    store: impl Fn(&[u8]) -> Vec<u8>,
    tree: impl Fn(u64, Vec<(u32, u64, u64)>) -> Vec<(u32, u64, u64)>,
) -> Vec<u8> {
    let v = values();
    let (a, b) = (store(&v[..16]), store(&v[16..]));
    let node_len = leaf(0, &[(0, 0, 0), (0, 0, 0)], 0).len() as u64;
    let pipeline = if filters.is_empty() { vec![] } else { vec![pipeline(filters)] };
    file(
        |at| [vec![dataspace(&[dims]), float32(), chunked(at, 4)], pipeline.clone()].concat(),
        |at| {
            let entries = vec![(a.len() as u32, 0, at + node_len), (b.len() as u32, 4, at + node_len + a.len() as u64)];
            [leaf(0, &tree(at, entries), 8), a.clone(), b.clone()].concat()
        },
    )
}

const DEFLATE: (u16, &[u32]) = (1, &[6]);
const SHUFFLE: (u16, &[u32]) = (2, &[4]);

fn filtered(chunk: &[u8]) -> Vec<u8> {
    zlib(&shuffled(chunk))
}

fn same<T>(_: u64, entries: T) -> T {
    entries
}

/// A file whose dataset `x` has the `messages` given (and no data).
fn dataset_of(messages: Vec<Vec<u8>>) -> Vec<u8> {
    file(|_| messages.clone(), |_| Vec::new())
}

pub fn cases(_fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("hdf5", Format::Hdf5, "h5");
    let good = chunked_file(8, &[SHUFFLE, DEFLATE], filtered, same);
    f.valid("dataset-chunked-deflate", F::Valid, "8 float32 in 2 chunks, shuffled and deflated, B-tree v1", good);
    let plain = chunked_file(8, &[], |c| c.to_vec(), same);
    f.valid("dataset-chunked-plain", F::Valid, "8 float32 in 2 unfiltered chunks, B-tree v1", plain);

    let past = chunked_file(
        8,
        &[],
        |c| c.to_vec(),
        |_, mut e| {
            e[1].2 = 1 << 40;
            e
        },
    );
    f.verify("dataset-chunk-past-end", F::PastEnd, Rule::OutOfBounds, "a chunk's address at 2^40", past);
    let big = chunked_file(8, &[DEFLATE], |_| zlib(&[7; 64]), same);
    f.verify(
        "dataset-chunk-inflates-past-size",
        F::SizeMismatch,
        Rule::DecompressedSizeMismatch,
        "deflated chunks inflating to 64 bytes where a chunk holds 16",
        big,
    );
    let broken = chunked_file(8, &[DEFLATE], |c| [vec![0x78, 0x01, 0xff], c.to_vec()].concat(), same);
    f.verify(
        "dataset-chunk-bad-deflate",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "chunks that are not deflate",
        broken,
    );
    let fletcher = chunked_file(8, &[(3, &[])], |c| [c, &[1, 2, 3, 4]].concat(), same);
    f.verify(
        "dataset-fletcher32-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "fletcher32 checksums that do not match",
        fletcher,
    );
    let short = chunked_file(8, &[], |c| c[..12].to_vec(), same);
    f.verify(
        "dataset-chunk-short",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "unfiltered chunks of 12 bytes where 16 are held",
        short,
    );
    let misplaced = chunked_file(
        8,
        &[],
        |c| c.to_vec(),
        |_, mut e| {
            e[1].1 = 3;
            e
        },
    );
    f.verify(
        "dataset-chunk-misaligned",
        F::Misaligned,
        Rule::Misaligned,
        "a chunk at element 3, chunks of 4",
        misplaced,
    );
    // A level-1 node whose child is itself.
    let looped = file(
        |at| vec![dataspace(&[8]), float32(), chunked(at, 4)],
        |at| [leaf(1, &[(16, 0, at)], 8), values()].concat(),
    );
    f.verify("dataset-btree-loop", F::Overlap, Rule::Overlap, "a chunk B-tree node that is its own child", looped);
    let lzf = chunked_file(8, &[(32000, &[])], |c| c.to_vec(), same);
    f.verify("dataset-unknown-filter", F::BadField, Rule::UnknownEncoding, "the lzf filter (32000)", lzf);

    let contiguous = |size: u64| {
        let mut l = vec![3, 1];
        l.extend_from_slice(&u64s(&[UNDEFINED, size]));
        message(0x08, &l)
    };
    let overflow = dataset_of(vec![dataspace(&[1 << 33, 1 << 33]), float32(), contiguous(0)]);
    f.verify("dataset-dims-overflow", F::Overflow, Rule::ShapeOverflow, "dimensions 2^33 x 2^33", overflow);
    let huge = dataset_of(vec![dataspace(&[1 << 20, 1 << 20]), float32(), contiguous(1 << 42)]);
    f.verify(
        "dataset-unwritten-too-large",
        F::Overflow,
        Rule::ExpansionTooLarge,
        "4 TiB never written, in a tiny file",
        huge,
    );
    let v6 = dataset_of(vec![dataspace(&[8]), float32(), message(0x08, &[6, 1])]);
    f.verify("dataset-layout-version-6", F::BadField, Rule::UnknownLayout, "data layout message version 6", v6);
    let mut index9 = vec![4, 2, 0, 2, 1, 4, 4, 9];
    index9.extend_from_slice(&u64s(&[UNDEFINED]));
    let index9 = dataset_of(vec![dataspace(&[8]), float32(), message(0x08, &index9)]);
    f.verify("dataset-chunk-index-9", F::BadField, Rule::UnknownLayout, "chunk index type 9", index9);
    let string = message(0x03, &[0x13, 0, 0, 0, 5, 0, 0, 0]);
    let string = dataset_of(vec![dataspace(&[8]), string, contiguous(40)]);
    f.verify("dataset-string", F::BadField, Rule::UnknownDType, "a string datatype: not a tensor", string);
    let sized = file(
        |at| {
            let mut l = vec![3, 1];
            l.extend_from_slice(&u64s(&[at, 28]));
            vec![dataspace(&[8]), float32(), message(0x08, &l)]
        },
        |_| values(),
    );
    f.verify(
        "dataset-contiguous-size",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "28 contiguous bytes for 8 float32",
        sized,
    );
    let fill = message(0x05, &[3, 0x20, 2, 0, 0, 0, 1, 2]);
    let fill = dataset_of(vec![dataspace(&[8]), float32(), contiguous(32), fill]);
    f.verify("dataset-fill-size", F::SizeMismatch, Rule::SizeMismatch, "a fill value of 2 bytes for float32", fill);
    Ok(f)
}
