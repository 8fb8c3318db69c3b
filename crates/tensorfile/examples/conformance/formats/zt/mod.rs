//! zTensor `.zt`: magic, 64-byte aligned blobs, a CBOR index, its length last. Every file is
//! built here byte by byte (the index with `build::cbor`), a few copied from the fixtures
//! made by the zTensor reference.

mod data;
mod index;

use tensorfile::Format;

use super::Fixtures;
use crate::build::cbor::{C, encode, t};
use crate::build::zstd::{raw_frame, rle_frame};
use crate::case::{Family as F, Folder};

pub(super) type Entry = Vec<(C, C)>;

/// An index entry with the structural fields, in the reference's key order.
pub(super) fn entry(name: &str, offset: u64, size: u64, dtype: &str, shape: &[u64], encoding: &str) -> Entry {
    vec![
        (t("name"), t(name)),
        (t("offset"), C::U(offset)),
        (t("size"), C::U(size)),
        (t("dtype"), t(dtype)),
        (t("layout"), t("dense")),
        (t("shape"), C::Array(shape.iter().map(|&d| C::U(d)).collect())),
        (t("encoding"), t(encoding)),
    ]
}

/// `e` with `key` set to `value` (replaced in place, or appended).
pub(super) fn with(mut e: Entry, key: &str, value: C) -> Entry {
    match e.iter().position(|(k, _)| matches!(k, C::Text(s) if s == key)) {
        Some(i) => e[i].1 = value,
        None => e.push((t(key), value)),
    }
    e
}

pub(super) fn without(mut e: Entry, key: &str) -> Entry {
    e.retain(|(k, _)| !matches!(k, C::Text(s) if s == key));
    e
}

/// The index the reference writes: a definite array of indefinite maps.
pub(super) fn index(entries: Vec<Entry>) -> Vec<u8> {
    encode(&C::Array(entries.into_iter().map(C::IndefMap).collect()))
}

/// A file: magic, padding to 64, `data`, then `index` and its length.
pub(super) fn file(data: &[u8], index: &[u8]) -> Vec<u8> {
    let mut f = b"ZTEN0001".to_vec();
    f.resize(64, 0);
    f.extend_from_slice(data);
    f.extend_from_slice(index);
    f.extend_from_slice(&(index.len() as u64).to_le_bytes());
    f
}

/// Blobs placed one after another at multiples of 64 from offset 64.
#[derive(Default)]
pub(super) struct Blobs {
    pub(super) data: Vec<u8>,
}

impl Blobs {
    /// Place `bytes`; returns (offset, size).
    pub(super) fn add(&mut self, bytes: &[u8]) -> (u64, u64) {
        let offset = 64 + self.data.len() as u64;
        self.data.extend_from_slice(bytes);
        self.data.resize(self.data.len().next_multiple_of(64), 0);
        (offset, bytes.len() as u64)
    }
}

/// `n` deterministic bytes.
pub(super) fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

pub(super) fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file of one tensor whose entry is `e` (offset 64) and whose blob is `blob`.
pub(super) fn one(blob: &[u8], e: Entry) -> Vec<u8> {
    let mut b = Blobs::default();
    b.add(blob);
    file(&b.data, &index(vec![e]))
}

/// One uint8 tensor `name` of `n` bytes at 64, raw.
pub(super) fn u8_entry(name: &str, offset: u64, n: u64) -> Entry {
    entry(name, offset, n, "uint8", &[n], "raw")
}

/// A small valid file: a float32 matrix and an int64 vector.
pub(super) fn two_tensors() -> (Vec<u8>, Vec<Entry>) {
    let mut b = Blobs::default();
    let (o1, s1) = b.add(&f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    let (o2, s2) = b.add(&u64s(&[7, 8, 9]));
    let e1 = with(entry("weight", o1, s1, "float32", &[2, 3], "raw"), "data_endianness", t("little"));
    let e2 = with(entry("bias", o2, s2, "int64", &[3], "raw"), "data_endianness", t("little"));
    (b.data, vec![e1, e2])
}

/// Arrays nested `depth` deep around a 0.
pub(super) fn nested(depth: usize) -> C {
    (0..depth).fold(C::U(0), |inner, _| C::Array(vec![inner]))
}

pub(super) fn sparse(name: &str, offset: u64, size: u64, format: &str, nnz: u64, shape: &[u64]) -> Entry {
    let e = with(entry(name, offset, size, "float32", shape, "raw"), "layout", t("sparse"));
    let e = with(e, "sparse_format", t(format));
    let e = with(e, "nnz", C::U(nnz));
    with(e, "data_endianness", t("little"))
}

/// The spec's example (docs/zt-sparse.md): a 3x4 float32 matrix with 3 values, as COO.
pub(super) fn coo_blob(indices: &[u64]) -> Vec<u8> {
    let mut b = u64s(indices);
    b.extend_from_slice(&f32s(&[1.0, -2.0, 4.0]));
    b
}

pub(super) fn csr_blob(indptr: &[u64], cols: &[u64]) -> Vec<u8> {
    let mut b = u64s(indptr);
    b.extend_from_slice(&u64s(cols));
    b.extend_from_slice(&f32s(&[1.0, -2.0, 4.0]));
    b
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("zt", Format::Zt, "zt");
    valid(&mut f, fx)?;
    index::structure(&mut f);
    index::cbor(&mut f);
    index::entries(&mut f);
    data::checksums_and_zstd(&mut f);
    data::sparse(&mut f);
    Ok(f)
}

fn valid(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    let (data, es) = two_tensors();
    f.valid(
        "two-tensors",
        F::Valid,
        "float32 matrix and int64 vector, raw, indefinite maps as the reference writes",
        file(&data, &index(es.clone())),
    );
    let definite = encode(&C::Array(es.into_iter().map(C::Map).collect()));
    f.valid("definite-maps", F::Valid, "the same index written with definite-length maps", file(&data, &definite));
    f.valid("empty", F::Valid, "no tensors: the 17-byte file of the spec", file(&[], &index(vec![])));

    let mut b = Blobs::default();
    let names = [
        "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16",
        "uint8", "bool",
    ];
    let sizes = [8u64, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1];
    let mut es = Vec::new();
    for (i, (name, size)) in names.iter().zip(sizes).enumerate() {
        let bytes = if *name == "bool" { vec![1, 0] } else { pattern(2 * size as usize, i as u8) };
        let (o, s) = b.add(&bytes);
        es.push(entry(&format!("t.{name}"), o, s, name, &[2], "raw"));
    }
    f.valid("every-dtype", F::Valid, "one tensor of each of the 13 zTensor dtypes", file(&b.data, &index(es)));

    let be: Vec<u8> = [1u32, 2, 3, 4].iter().flat_map(|v| v.to_be_bytes()).collect();
    f.valid(
        "big-endian",
        F::Valid,
        "int32 stored big-endian (data_endianness big)",
        one(&be, with(entry("x", 64, 16, "int32", &[4], "raw"), "data_endianness", t("big"))),
    );

    let raw = f32s(&[0.5, 1.5, 2.5, 3.5]);
    let z = raw_frame(&raw);
    f.valid(
        "zstd",
        F::Valid,
        "a zstd frame of one raw block stating its size",
        one(&z, entry("z", 64, z.len() as u64, "float32", &[4], "zstd")),
    );
    let z = rle_frame(7, 300_000, None);
    f.valid(
        "zstd-unsized-rle",
        F::Valid,
        "a zstd frame of RLE blocks that does not state its size (300000 bytes from 15)",
        one(&z, entry("z", 64, z.len() as u64, "uint8", &[300_000], "zstd")),
    );

    let blob = pattern(32, 3);
    let crc = format!("crc32c:0x{:08X}", crc32c::crc32c(&blob));
    f.valid(
        "crc32c",
        F::Valid,
        "a CRC-32C checksum that matches",
        one(&blob, with(u8_entry("c", 64, 32), "checksum", C::Text(crc))),
    );
    let sha = format!("sha256:{}", hex(&sha256(&blob)));
    f.valid(
        "sha256",
        F::Valid,
        "a SHA-256 checksum that matches",
        one(&blob, with(u8_entry("c", 64, 32), "checksum", C::Text(sha))),
    );

    let mut b = Blobs::default();
    let (o, s) = b.add(&2.5f64.to_le_bytes());
    let scalar = entry("scalar", o, s, "float64", &[], "raw");
    let empty = entry("empty", 128, 0, "float32", &[0, 5], "raw");
    let (o, s) = b.add(&[1, 2, 3, 4]);
    let next = u8_entry("next", o, s);
    f.valid(
        "scalar-and-zero-size",
        F::Valid,
        "a 0-d tensor, and a zero-size tensor sharing its offset with the next blob (the reference does this)",
        file(&b.data, &index(vec![scalar, empty, next])),
    );

    let e = with(u8_entry("nul\0and ünïcødé/ŵ.0", 64, 4), "origin", t("elsewhere"));
    let e = with(e, "nested", nested(40));
    f.valid(
        "names-and-custom-fields",
        F::Valid,
        "a name with NUL and non-ASCII characters; custom fields, one nested 40 deep (within the limit)",
        one(&[1, 2, 3, 4], e),
    );

    let coo = coo_blob(&[0, 2, 2, 1, 0, 3]);
    f.valid(
        "sparse-coo",
        F::Valid,
        "docs/zt-sparse.md's example as COO",
        one(&coo, sparse("s", 64, coo.len() as u64, "coo", 3, &[3, 4])),
    );
    let csr = csr_blob(&[0, 1, 1, 3], &[1, 0, 3]);
    f.valid(
        "sparse-csr",
        F::Valid,
        "docs/zt-sparse.md's example as CSR",
        one(&csr, sparse("s", 64, csr.len() as u64, "csr", 3, &[3, 4])),
    );

    for (stem, path, what) in [
        (
            "reference-sparse-coo",
            "zt/rust/sparse_coo.zt",
            "the reference's sparsecoo layout (fixture made by the ztensor crate)",
        ),
        (
            "reference-sparse-csr",
            "zt/rust/sparse_csr.zt",
            "the reference's sparsecsr layout (fixture made by the ztensor crate)",
        ),
        (
            "reference-crc32c",
            "zt/rust/crc32c.zt",
            "checksums as the reference writes them (fixture made by the ztensor crate)",
        ),
        ("reference-python-multi", "zt/python/multi.zt", "several tensors (fixture made by pip ztensor)"),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }
    Ok(())
}

pub(super) fn sha256(b: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(b).to_vec()
}

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
