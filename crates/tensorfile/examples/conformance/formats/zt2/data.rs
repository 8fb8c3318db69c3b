//! zTensor 2 files that open but whose data breaks a rule (digests, bool bytes, the sparse
//! profiles' data rules, zstd-seekable streams), or whose objects this library cannot
//! interpret: refused at verify.

use super::layouts::csr_parts;
use super::{Part, checked_frame, dense, f32s, m, one, seekable, seekable_of, u32s, u64s, xxh3};
use crate::build::cbor::{C, t};
use crate::case::{Family as F, Folder};
use tensorfile::Rule;

pub(super) fn cases(f: &mut Folder) {
    let digest = |d: &str| vec![("digest", t(d))];
    f.verify(
        "digest-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "an xxh3 digest of other bytes",
        dense("u8", &[8], vec![1; 8], digest(&xxh3(&[2; 8]))),
    );
    f.verify(
        "digest-unknown",
        F::Checksum,
        Rule::BadChecksum,
        "a digest of an algorithm this library lacks (blake3)",
        dense("u8", &[8], vec![1; 8], digest("blake3:00")),
    );
    f.verify(
        "bool-byte-2",
        F::BadField,
        Rule::BadValue,
        "a bool byte 2",
        dense("u8", &[3], vec![0, 1, 2], vec![("type", t("bool"))]),
    );

    let csr = |indptr: &[u64], cols: &[u64]| {
        one("s", &[2, 3], "zt.sparse_csr/1", csr_parts(u64s(indptr), ("u64", u64s(cols)), cols.len()), None)
    };
    f.verify(
        "csr-indptr-from-1",
        F::BadSparse,
        Rule::BadSparse,
        "row pointers starting at 1",
        csr(&[1, 2, 3], &[0, 2, 1]),
    );
    f.verify("csr-column-past-end", F::BadSparse, Rule::BadSparse, "column 5 of 3", csr(&[0, 2, 3], &[0, 5, 1]));
    f.verify(
        "csr-row-unsorted",
        F::BadSparse,
        Rule::BadSparse,
        "a row's columns decreasing",
        csr(&[0, 2, 3], &[2, 0, 1]),
    );
    f.verify(
        "csr-indptr-decreasing",
        F::BadSparse,
        Rule::BadSparse,
        "row pointers decreasing",
        csr(&[0, 3, 2], &[0, 1, 2]),
    );
    let coo = |coords: &[u32]| {
        let parts: Vec<Part<'_>> =
            vec![("coords", "u32", u32s(coords), vec![]), ("values", "f32", f32s(&[1.0, 2.0]), vec![])];
        one("s", &[3, 4], "zt.sparse_coo/1", parts, None)
    };
    f.verify("coo-duplicate", F::BadSparse, Rule::BadSparse, "two values at (1, 2)", coo(&[1, 1, 2, 2]));
    f.verify("coo-past-end", F::BadSparse, Rule::BadSparse, "a coordinate 3 in a dimension of 3", coo(&[3, 0, 0, 1]));

    let z = |stream: Vec<u8>, decoded: u64| {
        let fields = vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", C::U(decoded))];
        dense("u8", &[decoded], stream, fields)
    };
    let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let no_checksum = crate::build::zstd::raw_frame(&data[..1000]);
    f.verify(
        "zstd-seekable-no-checksum",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "a frame without a content checksum",
        z(seekable(&[(no_checksum, 1000)]), 1000),
    );
    let (a, b) = (checked_frame(&data[..2000]), checked_frame(&data[2000..3000]));
    let unequal = seekable(&[(b.clone(), 1000), (a.clone(), 2000), (b.clone(), 1000)]);
    f.verify(
        "zstd-seekable-unequal-frames",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "frames before the last of unequal sizes",
        z(unequal, 4000),
    );
    f.verify(
        "zstd-seekable-short",
        F::BadCompressedData,
        Rule::DecompressedSizeMismatch,
        "frames holding 5000 bytes for a decoded_length of 5001",
        z(seekable_of(&data, 2000), 5001),
    );
    let mut corrupt = seekable_of(&data, 2000);
    corrupt[20] ^= 0xff;
    f.verify(
        "zstd-seekable-corrupt",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "a frame whose bytes fail its checksum",
        z(corrupt, 5000),
    );
    // Frames of one RLE block (128 KiB at most) that the table says hold 16 MiB each.
    let mut bomb = crate::build::zstd::rle_frame(0, 1000, None);
    bomb[4] |= 0x04;
    bomb.extend_from_slice(&0u32.to_le_bytes());
    let claims = seekable(&[(bomb.clone(), 16 << 20), (bomb, 16 << 20)]);
    f.verify(
        "zstd-seekable-bomb",
        F::ZstdBomb,
        Rule::DecompressedSizeMismatch,
        "two frames of one RLE block each, listed as 16 MiB: refused before anything is allocated",
        z(claims, 32 << 20),
    );
    let lying = seekable(&[(checked_frame(&data[..100]), 1 << 24)]);
    f.verify(
        "zstd-seekable-lying-table",
        F::ZstdBomb,
        Rule::DecompressedSizeMismatch,
        "a 100-byte frame the seek table says holds 16 MiB",
        z(lying, 1 << 24),
    );

    let unreadable =
        |layout: &str, more: Vec<(&str, C)>| one("t", &[8], layout, vec![("data", "u8", vec![1; 8], more)], None);
    f.verify(
        "unknown-layout",
        F::BadField,
        Rule::UnknownLayout,
        "a layout of another namespace (x.custom/1): readable only structurally",
        unreadable("x.custom/1", vec![]),
    );
    f.verify(
        "unknown-type",
        F::BadField,
        Rule::UnknownDType,
        "a logical type this library lacks (x.future/1)",
        unreadable("dense", vec![("type", t("x.future/1"))]),
    );
    let enc = vec![("encoding", t("x.z/1")), ("decoded_length", C::U(8))];
    f.verify(
        "unknown-encoding",
        F::BadField,
        Rule::UnknownEncoding,
        "an encoding this library lacks (x.z/1)",
        unreadable("dense", enc),
    );
    let table = m(vec![("elems_per_block", C::U(32)), ("block_bytes", C::U(36))]);
    let parts: Vec<Part<'_>> = vec![("data", "u8", vec![0; 72], vec![])];
    f.verify(
        "gguf-not-ggml",
        F::BadField,
        Rule::BadQuantization,
        "gguf.q8_0/1 with blocks of 36 bytes: sound, but not ggml's Q8_0",
        one("q", &[64], "gguf.q8_0/1", parts, Some(table)),
    );
}
