//! zTensor 1.x `.zt`: the magic `ZTEN1000`, components at multiples of 64, a CBOR manifest,
//! its length and the magic last. Files built here byte by byte, two copied from the
//! fixtures made by pip `ztensor` 1.2.3.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::build::cbor::{C, encode, t};
use crate::build::zstd::raw_frame;
use crate::case::{Family as F, Folder};

const MAGIC: &[u8; 8] = b"ZTEN1000";

fn map(pairs: Vec<(&str, C)>) -> C {
    C::Map(pairs.into_iter().map(|(k, v)| (t(k), v)).collect())
}

fn uints(v: &[u64]) -> C {
    C::Array(v.iter().map(|&d| C::U(d)).collect())
}

/// A file: the magic, `data` from offset 64, the manifest `cbor`, its length, the magic.
fn file_raw(data: &[u8], cbor: &[u8]) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.resize(64, 0);
    b.extend_from_slice(data);
    b.extend_from_slice(cbor);
    b.extend_from_slice(&(cbor.len() as u64).to_le_bytes());
    b.extend_from_slice(MAGIC);
    b
}

fn file(data: &[u8], objects: Vec<(&str, C)>) -> Vec<u8> {
    file_raw(data, &encode(&map(vec![("version", t("1.2.0")), ("objects", map(objects))])))
}

fn component(dtype: &str, offset: u64, length: u64, more: Vec<(&str, C)>) -> C {
    let mut fields = vec![("dtype", t(dtype)), ("offset", C::U(offset)), ("length", C::U(length))];
    fields.extend(more);
    map(fields)
}

fn object(shape: &[u64], format: &str, components: Vec<(&str, C)>) -> C {
    map(vec![("shape", uints(shape)), ("format", t(format)), ("components", map(components))])
}

/// One dense object `t` at 64.
fn dense(dtype: &str, shape: &[u64], data: &[u8], more: Vec<(&str, C)>) -> Vec<u8> {
    let c = component(dtype, 64, data.len() as u64, more);
    file(data, vec![("t", object(shape, "dense", vec![("data", c)]))])
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("zt1", Format::Zt1, "zt");
    f.valid("minimal", F::Valid, "one f32 tensor at 64", dense("f32", &[2], &[0, 0, 128, 63, 0, 0, 0, 64], vec![]));
    f.valid("no-objects", F::Valid, "a manifest with no objects", file(&[], vec![]));
    f.valid("bool", F::Valid, "dtype bool (one byte each)", dense("bool", &[3], &[1, 0, 1], vec![]));
    let frame = raw_frame(&[7; 40]);
    let crc = format!("crc32c:0x{:08X}", crc32c::crc32c(&frame));
    let z = vec![("encoding", t("zstd")), ("uncompressed_length", C::U(40)), ("digest", C::Text(crc))];
    f.valid(
        "zstd-crc32c",
        F::Valid,
        "a zstd component with a CRC-32C of its stored bytes",
        dense("u8", &[40], &frame, z),
    );
    let mut data = u64s(&[0, 1, 3]);
    data.resize(64, 0);
    data.extend_from_slice(&u64s(&[2, 0, 1]));
    data.resize(128, 0);
    data.extend_from_slice(&[0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64]);
    let csr = object(
        &[2, 3],
        "sparse_csr",
        vec![
            ("values", component("f32", 192, 12, vec![])),
            ("indices", component("u64", 128, 24, vec![])),
            ("indptr", component("u64", 64, 24, vec![])),
        ],
    );
    f.valid("sparse-csr", F::Valid, "a sparse_csr object", file(&data, vec![("m", csr)]));
    for (stem, path, what) in [
        (
            "ztensor-checksums",
            "zt1/checksums.zt",
            "crc32c and sha256 digests, raw and zstd (fixture made by pip ztensor 1.2.3)",
        ),
        (
            "ztensor-zero-size",
            "zt1/zero_size.zt",
            "zero-size tensors between others (fixture made by pip ztensor 1.2.3)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }

    let good = dense("u8", &[8], &[1; 8], vec![]);
    let n = good.len();
    let patched = |at: usize, with: &[u8]| {
        let mut b = good.clone();
        b[at..at + with.len()].copy_from_slice(with);
        b
    };
    f.open("truncated", F::Truncation, Rule::Truncated, "20 bytes", good[..20].to_vec());
    f.open("head-magic", F::BadMagic, Rule::BadMagic, "ZTEN0001 at the start", patched(0, b"ZTEN0001"));
    f.open("tail-magic", F::BadMagic, Rule::BadMagic, "not the magic at the end", patched(n - 1, b"1"));
    f.open(
        "manifest-length-huge",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a manifest length of 2^64-1",
        patched(n - 16, &u64::MAX.to_le_bytes()),
    );
    f.open(
        "manifest-length-past-start",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a manifest longer than the file",
        patched(n - 16, &(n as u64).to_le_bytes()),
    );
    f.open("not-a-map", F::BadField, Rule::BadField, "a manifest that is an array", file_raw(&[], &[0x80]));
    f.open(
        "no-objects-field",
        F::BadField,
        Rule::MissingField,
        "a manifest without objects",
        file_raw(&[], &encode(&map(vec![("version", t("1.2.0"))]))),
    );
    f.open("bad-cbor", F::MalformedCbor, Rule::BadCbor, "a reserved CBOR head", file_raw(&[], &[0x1c]));
    f.open(
        "misaligned",
        F::Misaligned,
        Rule::Misaligned,
        "a component at 65",
        file(&[0; 16], vec![("t", object(&[8], "dense", vec![("data", component("u8", 65, 8, vec![]))]))]),
    );
    f.open(
        "past-end",
        F::PastEnd,
        Rule::OutOfBounds,
        "a component running into the manifest",
        file(&[0; 8], vec![("t", object(&[64], "dense", vec![("data", component("u8", 64, 64, vec![]))]))]),
    );
    let two = vec![
        ("a", object(&[16], "dense", vec![("data", component("u8", 64, 16, vec![]))])),
        ("b", object(&[8], "dense", vec![("data", component("u8", 64, 8, vec![]))])),
    ];
    f.open("overlap", F::Overlap, Rule::Overlap, "two components sharing their first 8 bytes", file(&[0; 16], two));
    f.open(
        "size-mismatch",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "3 f32 elements in 8 bytes",
        dense("f32", &[3], &[0; 8], vec![]),
    );
    f.open("unknown-dtype", F::BadField, Rule::UnknownDType, "dtype f8", dense("f8", &[8], &[0; 8], vec![]));
    let z = vec![("encoding", t("zstd"))];
    f.open(
        "zstd-without-length",
        F::BadField,
        Rule::MissingField,
        "a zstd component without uncompressed_length",
        dense("u8", &[8], &raw_frame(&[0; 8]), z),
    );
    f.open(
        "shape-overflow",
        F::Overflow,
        Rule::ShapeOverflow,
        "shape [2^64-1, 2]",
        dense("u8", &[u64::MAX, 2], &[0; 8], vec![]),
    );

    f.verify(
        "checksum-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a CRC-32C of other bytes",
        dense("u8", &[8], &[1; 8], vec![("digest", t("crc32c:0x00000000"))]),
    );
    let z = vec![("encoding", t("zstd")), ("uncompressed_length", C::U(9))];
    f.verify(
        "zstd-short",
        F::BadCompressedData,
        Rule::DecompressedSizeMismatch,
        "a zstd frame of 8 bytes declaring 9",
        dense("u8", &[9], &raw_frame(&[0; 8]), z),
    );
    let quant = object(&[8], "quantized_group", vec![("data", component("u8", 64, 8, vec![]))]);
    f.verify(
        "unknown-format",
        F::BadField,
        Rule::UnknownLayout,
        "format quantized_group, which zTensor 1 never defined",
        file(&[0; 8], vec![("q", quant)]),
    );
    Ok(f)
}
