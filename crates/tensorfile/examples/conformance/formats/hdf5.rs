//! HDF5: files built here (superblock 2, version 2 object headers, compact link messages, a
//! contiguous float32 dataset), the h5py fixtures, and one broken file per rule: signature,
//! versions, checksums, addresses past the end, continuation loops and chains, link names,
//! local heap offsets, B-tree and heap signatures. A broken group or attribute loses nothing
//! else: the file opens, and `verify` names the group (an unreadable entry) or the attribute.

use tensorfile::formats::hdf5::lookup3;
use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
pub(super) const UNDEFINED: u64 = u64::MAX;

fn sealed(mut body: Vec<u8>) -> Vec<u8> {
    let sum = lookup3(&body);
    body.extend_from_slice(&sum.to_le_bytes());
    body
}

/// A version 2 message: type, size, flags, body.
pub(super) fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u16).to_le_bytes());
    m.push(0);
    m.extend_from_slice(body);
    m
}

/// An `OHDR` version 2 header holding `messages` (the size of its chunk in two bytes).
pub(super) fn ohdr(messages: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = messages.concat();
    let mut h = b"OHDR\x02\x01".to_vec();
    h.extend_from_slice(&(body.len() as u16).to_le_bytes());
    h.extend_from_slice(&body);
    sealed(h)
}

/// An `OCHK` continuation block holding `messages`.
fn ochk(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut h = b"OCHK".to_vec();
    h.extend_from_slice(&messages.concat());
    sealed(h)
}

fn continuation(addr: u64, len: u64) -> Vec<u8> {
    let mut b = addr.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    message(0x10, &b)
}

/// A hard link message named `name` to the header at `addr`.
pub(super) fn link(name: &str, addr: u64) -> Vec<u8> {
    let mut b = vec![1, 0, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&addr.to_le_bytes());
    message(0x06, &b)
}

/// The messages of a contiguous float32 dataset of `dims` whose data is at `addr`.
fn dataset(dims: &[u64], addr: u64) -> Vec<Vec<u8>> {
    let mut space = vec![1, dims.len() as u8, 0, 0, 0, 0, 0, 0];
    for d in dims {
        space.extend_from_slice(&d.to_le_bytes());
    }
    let mut dtype = vec![0x11, 0x20, 31, 0];
    dtype.extend_from_slice(&4u32.to_le_bytes());
    dtype.extend_from_slice(&[0, 0, 32, 0, 23, 8, 0, 23]);
    dtype.extend_from_slice(&127u32.to_le_bytes());
    let n: u64 = dims.iter().product::<u64>() * 4;
    let mut layout = vec![3, 1];
    layout.extend_from_slice(&addr.to_le_bytes());
    layout.extend_from_slice(&n.to_le_bytes());
    vec![message(0x01, &space), message(0x03, &dtype), message(0x08, &layout)]
}

/// A superblock 2 of offsets and lengths of 8 bytes, its root at `root`, the file `eof` long.
pub(super) fn superblock(version: u8, eof: u64, root: u64) -> Vec<u8> {
    let mut s = SIGNATURE.to_vec();
    s.extend_from_slice(&[version, 8, 8, 0]);
    for v in [0, UNDEFINED, eof, root] {
        s.extend_from_slice(&v.to_le_bytes());
    }
    sealed(s)
}

/// The superblock is 48 bytes: the root header follows it.
pub(super) const ROOT: u64 = 48;

/// A file: superblock, root group linking `weights` (2x3 float32) and the blocks `extra`
/// makes from the address after the dataset's header; `root_extra` messages join the root.
fn build(root_extra: impl Fn(u64) -> Vec<Vec<u8>>, extra: impl Fn(u64) -> Vec<u8>) -> Vec<u8> {
    build_at(root_extra, extra, None)
}

/// [`build`], the dataset's data said to be at `data_addr` when given.
fn build_at(
    root_extra: impl Fn(u64) -> Vec<Vec<u8>>,
    extra: impl Fn(u64) -> Vec<u8>,
    data_addr: Option<u64>,
) -> Vec<u8> {
    // Lay out once with placeholders to learn the sizes, then again with the addresses.
    let mut sizes = (0u64, 0u64, 0u64);
    for _ in 0..3 {
        let (root_len, ds_len, extra_len) = sizes;
        let ds_at = ROOT + root_len;
        let extra_at = ds_at + ds_len;
        let data_at = data_addr.unwrap_or(extra_at + extra_len);
        let mut root_msgs = vec![link("weights", ds_at)];
        root_msgs.extend(root_extra(extra_at));
        let root = ohdr(&root_msgs);
        let ds = ohdr(&dataset(&[2, 3], data_at));
        let blocks = extra(extra_at);
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
        let eof = extra_at + extra_len + data.len() as u64;
        let file = [superblock(2, eof, ROOT), root, ds, blocks, data].concat();
        let now = (root_len, ds_len, extra_len);
        sizes = (
            ohdr(&root_msgs).len() as u64,
            ohdr(&dataset(&[2, 3], data_at)).len() as u64,
            extra(extra_at).len() as u64,
        );
        if sizes == now {
            return file;
        }
    }
    unreachable!("the layout settles in two passes")
}

fn plain() -> Vec<u8> {
    build(|_| vec![], |_| vec![])
}

/// `bytes` with the eight bytes at `at` replaced by `v`.
fn patch_u64(mut bytes: Vec<u8>, at: usize, v: u64) -> Vec<u8> {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    bytes
}

/// Where `needle` first occurs in `bytes`.
fn find(bytes: &[u8], needle: &[u8]) -> Result<usize, String> {
    bytes.windows(needle.len()).position(|w| w == needle).ok_or_else(|| format!("no {needle:?} in a fixture"))
}

/// Where `needle` last occurs in `bytes`: in h5py's earliest-format fixture, the structures of
/// the deepest group (the root's first ones are stale: its external link made it new-style).
fn find_last(bytes: &[u8], needle: &[u8]) -> Result<usize, String> {
    bytes.windows(needle.len()).rposition(|w| w == needle).ok_or_else(|| format!("no {needle:?} in a fixture"))
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("hdf5", Format::Hdf5, "h5");
    f.valid("superblock-2", F::Valid, "superblock 2, a root of link messages, a contiguous float32 2x3", plain());
    f.valid(
        "continued-root",
        F::Valid,
        "the root's link in an OCHK continuation block",
        build(|at| vec![continuation(at, ochk(&[link("again", ROOT)]).len() as u64)], |_| ochk(&[link("again", ROOT)])),
    );
    for (stem, path, what) in [
        (
            "h5py-earliest",
            "hdf5/files/groups_earliest.h5",
            "superblock 0, old-style groups, attributes, a link cycle (h5py)",
        ),
        (
            "h5py-latest",
            "hdf5/files/groups_latest.h5",
            "superblock 3, new-style and dense groups and attributes (h5py)",
        ),
        ("h5py-keras-layout", "hdf5/files/keras_legacy.h5", "the layout of Keras 2 weights files (h5py)"),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }

    let mut b = plain();
    b[1] = b'X';
    f.open("bad-signature", F::BadMagic, Rule::BadMagic, "the signature \\x89XDF...", b);
    let mut b = plain();
    b[8] = 4;
    f.open("superblock-version-4", F::BadField, Rule::BadField, "superblock version 4", b);
    let mut b = plain();
    b[9] = 3;
    let resealed = [sealed(b[..44].to_vec()), b[48..].to_vec()].concat();
    f.open("offset-size-3", F::BadField, Rule::BadField, "offsets of 3 bytes", resealed);
    let mut b = plain();
    b[11] ^= 1;
    f.open(
        "superblock-checksum",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a superblock flag changed after its checksum",
        b,
    );
    let b = plain();
    let len = b.len() as u64;
    let sb = superblock(2, len + 100, ROOT);
    f.open(
        "eof-past-end",
        F::Truncation,
        Rule::Truncated,
        "the superblock's end of file 100 bytes past the file's end",
        [sb, b[48..].to_vec()].concat(),
    );
    let sb = superblock(2, len, len + 8);
    f.open(
        "root-past-end",
        F::PastEnd,
        Rule::OutOfBounds,
        "the root header's address past the end",
        [sb, b[48..].to_vec()].concat(),
    );
    let mut b = plain();
    b[ROOT as usize + 9] ^= 1;
    f.open("header-checksum", F::Checksum, Rule::ChecksumMismatch, "a byte of the root header changed", b);
    let looped = build(
        |at| vec![continuation(at, ochk(&[continuation(at, 28)]).len() as u64)],
        |at| ochk(&[continuation(at, 28)]),
    );
    f.open("continuation-loop", F::Overlap, Rule::Overlap, "a continuation block continued by itself", looped);
    // A chain of 1025 continuation blocks, each naming the next (the limit is 1024).
    let chain =
        |at: u64| -> Vec<u8> { (0..1025u64).flat_map(|i| ochk(&[continuation(at + (i + 1) * 28, 28)])).collect() };
    f.open(
        "continuation-chain",
        F::Overflow,
        Rule::HeaderTooLarge,
        "1025 continuation blocks in a chain (limit 1024)",
        build(|at| vec![continuation(at, 28)], chain),
    );
    let b = build(|_| vec![link("a/b", ROOT)], |_| vec![]);
    f.verify("link-name-with-slash", F::BadField, Rule::BadField, "a link named a/b", b);
    let b = build(|_| vec![link("weights", ROOT)], |_| vec![]);
    f.verify("duplicate-link", F::DuplicateName, Rule::DuplicateName, "two links named weights", b);
    let b = build_at(|_| vec![], |_| vec![], Some(1 << 40));
    f.verify("data-past-end", F::PastEnd, Rule::OutOfBounds, "a dataset's data at 2^40", b);

    let earliest = fx.read("hdf5/files/groups_earliest.h5")?;
    let mut b = earliest.clone();
    let heap = find_last(&b, b"HEAP")?;
    // The data segment's size (after signature, version, reserved and the free list's offset).
    b = patch_u64(b, heap + 8, 1 << 40);
    f.verify("local-heap-past-end", F::PastEnd, Rule::OutOfBounds, "a local heap of 2^40 bytes", b);
    let mut b = earliest.clone();
    let snod = find_last(&b, b"SNOD")?;
    b = patch_u64(b, snod + 8, 1 << 20);
    f.verify(
        "name-offset-past-heap",
        F::OutOfRangeIndex,
        Rule::OutOfBounds,
        "a symbol's name offset past its local heap",
        b,
    );
    let mut b = earliest.clone();
    let tree = find_last(&b, b"TREE")?;
    b[tree] = b'X';
    f.verify("btree-signature", F::BadMagic, Rule::BadMagic, "a group B-tree node without TREE", b);
    let mut b = earliest;
    let tree = find_last(&b, b"TREE")?;
    b[tree + 4] = 1;
    f.verify("btree-node-type", F::BadField, Rule::BadField, "a group B-tree node of type 1 (chunks)", b);
    let latest = fx.read("hdf5/files/groups_latest.h5")?;
    let mut b = latest.clone();
    let frhp = find(&b, b"FRHP")?;
    b[frhp + 20] ^= 0x55;
    f.verify(
        "fractal-heap-checksum",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a byte of a fractal heap header changed",
        b,
    );
    let mut b = latest;
    let gcol = find(&b, b"GCOL")?;
    b[gcol] = b'X';
    f.verify("global-heap-signature", F::BadMagic, Rule::BadMagic, "a global heap collection without GCOL", b);
    Ok(f)
}
