//! `.zt` cases about tensor data: checksums, zstd blobs (bombs among them), sparse blobs.

use tensorfile::Rule;

use super::{coo_blob, csr_blob, entry, hex, one, pattern, sha256, sparse as sparse_entry, t, u8_entry, with, without};
use crate::build::zstd::{raw_frame, rle_frame};
use crate::case::{Family as F, Folder};

/// Checksums and compressed blobs.
pub(super) fn checksums_and_zstd(f: &mut Folder) {
    let blob = pattern(32, 5);
    let c = |s: &str| with(u8_entry("c", 64, 32), "checksum", t(s));
    f.verify(
        "bad-checksum-string",
        F::Checksum,
        Rule::BadChecksum,
        "checksum crc32c:0xNOPE",
        one(&blob, c("crc32c:0xNOPE")),
    );
    f.verify(
        "unknown-checksum-algorithm",
        F::Checksum,
        Rule::BadChecksum,
        "checksum xxh3:0123: cannot be verified",
        one(&blob, c("xxh3:0123")),
    );
    let mut flipped = blob.clone();
    flipped[5] ^= 0x40;
    let crc = format!("crc32c:0x{:08X}", crc32c::crc32c(&blob));
    f.verify(
        "crc32c-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "one bit of the blob flipped after its CRC-32C",
        one(&flipped, c(&crc)),
    );
    let sha = format!("sha256:{}", hex(&sha256(&blob)));
    f.verify(
        "sha256-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "one bit of the blob flipped after its SHA-256",
        one(&flipped, c(&sha)),
    );

    let z = |blob: &[u8], n: u64| one(blob, entry("z", 64, blob.len() as u64, "uint8", &[n], "zstd"));
    let dsm = Rule::DecompressedSizeMismatch;
    f.verify(
        "zstd-bomb",
        F::ZstdBomb,
        dsm,
        "uint8 [2^42] declared, its one frame produces 64 bytes",
        z(&rle_frame(0, 64, Some(64)), 1 << 42),
    );
    f.verify(
        "zstd-bomb-unsized",
        F::ZstdBomb,
        dsm,
        "uint8 [2^40] declared, one unsized frame of one RLE block (at most 128 KiB)",
        z(&rle_frame(0, 1 << 17, None), 1 << 40),
    );
    f.verify(
        "zstd-frame-claims-a-terabyte",
        F::ZstdBomb,
        dsm,
        "uint8 [2^40] declared, a frame header claiming 2^40 bytes over one RLE block of one byte",
        z(&rle_frame(7, 1, Some(1 << 40)), 1 << 40),
    );
    f.verify(
        "zstd-lying-frame-size",
        F::ZstdBomb,
        Rule::BadCompressedData,
        "a frame stating 1000 bytes whose one RLE block produces 10",
        z(&rle_frame(9, 10, Some(1000)), 1000),
    );
    f.verify(
        "zstd-short",
        F::SizeMismatch,
        dsm,
        "11 bytes declared, the frame produces 10",
        z(&raw_frame(&[1; 10]), 11),
    );
    f.verify("zstd-long", F::SizeMismatch, dsm, "9 bytes declared, the frame produces 10", z(&raw_frame(&[1; 10]), 9));
    f.verify(
        "zstd-unsized-long",
        F::SizeMismatch,
        dsm,
        "1000 bytes declared, an unsized frame produces 1001",
        z(&rle_frame(2, 1001, None), 1000),
    );
    f.verify(
        "zstd-garbage",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "a blob that is not zstd",
        z(b"definitely not zstd", 4),
    );
    let mut broken = raw_frame(&[1; 10]);
    broken[6] |= 0x06; // the block header's type bits: 3, reserved
    f.verify(
        "zstd-reserved-block-type",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "a block of the reserved type 3",
        z(&broken, 10),
    );
}

pub(super) fn sparse(f: &mut Folder) {
    let bs = Rule::BadSparse;
    let coo = coo_blob(&[0, 2, 3, 1, 0, 3]);
    f.verify(
        "sparse-coo-index-out-of-range",
        F::BadSparse,
        bs,
        "COO row index 3 in a 3x4 matrix",
        one(&coo, sparse_entry("s", 64, coo.len() as u64, "coo", 3, &[3, 4])),
    );
    let csr = csr_blob(&[0, 2, 1, 3], &[1, 0, 3]);
    f.verify(
        "sparse-csr-indptr-decreasing",
        F::BadSparse,
        bs,
        "CSR indptr [0, 2, 1, 3]",
        one(&csr, sparse_entry("s", 64, csr.len() as u64, "csr", 3, &[3, 4])),
    );
    let csr = csr_blob(&[0, 1, 1, 2], &[1, 0, 3]);
    f.verify(
        "sparse-csr-indptr-end",
        F::BadSparse,
        bs,
        "CSR indptr ending at 2 with nnz 3",
        one(&csr, sparse_entry("s", 64, csr.len() as u64, "csr", 3, &[3, 4])),
    );
    let csr = csr_blob(&[0, 1, 1, 3], &[1, 0, 4]);
    f.verify(
        "sparse-csr-column-out-of-range",
        F::BadSparse,
        bs,
        "CSR column 4 in a 3x4 matrix",
        one(&csr, sparse_entry("s", 64, csr.len() as u64, "csr", 3, &[3, 4])),
    );
    let csr = csr_blob(&[0, 1, 1, 3], &[1, 0, 3]);
    f.verify(
        "sparse-csr-rank-3",
        F::BadSparse,
        bs,
        "a CSR tensor of rank 3",
        one(&csr, sparse_entry("s", 64, csr.len() as u64, "csr", 3, &[3, 4, 1])),
    );
    let coo = coo_blob(&[0, 2, 2, 1, 0, 3]);
    f.verify(
        "sparse-size-mismatch",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "a COO blob of 60 bytes declared with nnz 4",
        one(&coo, sparse_entry("s", 64, coo.len() as u64, "coo", 4, &[3, 4])),
    );
    f.verify(
        "sparse-nnz-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "nnz 2^62: its index bytes overflow",
        one(&coo, sparse_entry("s", 64, coo.len() as u64, "coo", 1 << 62, &[3, 4])),
    );
    f.verify(
        "sparse-missing-nnz",
        F::BadField,
        Rule::MissingField,
        "layout sparse without nnz",
        one(&coo, without(sparse_entry("s", 64, coo.len() as u64, "coo", 3, &[3, 4]), "nnz")),
    );
    f.verify(
        "sparse-unknown-format",
        F::BadField,
        Rule::UnknownLayout,
        "sparse_format bsr",
        one(&coo, sparse_entry("s", 64, coo.len() as u64, "bsr", 3, &[3, 4])),
    );
    let rec = pattern(41, 1);
    f.verify(
        "reference-sparsecoo-size",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "a sparsecoo blob of 41 bytes: not whole 20-byte records",
        one(&rec, with(entry("s", 64, 41, "float32", &[3, 4], "raw"), "layout", t("sparsecoo"))),
    );
}
