//! zTensor 2 files refused at open for the container (spec §2), the manifest's deterministic
//! CBOR (§3.1), its schema and names (§3.2-3.5, §7.1) and the blob rules (§2.4): every rule
//! of the validation summary (§3.6) but the layouts'.

use super::{File, dense, footer, m, manifest, object, part, uints};
use crate::build::cbor::{C, encode, t};
use crate::case::{Family as F, Folder};
use tensorfile::Rule;

fn patched(mut bytes: Vec<u8>, at: usize, with: &[u8]) -> Vec<u8> {
    bytes[at..at + with.len()].copy_from_slice(with);
    bytes
}

fn minimal() -> Vec<u8> {
    dense("u8", &[8], vec![1; 8], vec![])
}

pub(super) fn frame(f: &mut Folder) {
    let good = minimal();
    let n = good.len();
    f.open(
        "file-too-small",
        F::Truncation,
        Rule::Truncated,
        "47 bytes: less than a magic and a footer",
        good[..47].to_vec(),
    );
    f.open(
        "header-magic",
        F::BadMagic,
        Rule::BadMagic,
        "the first byte of the magic changed",
        patched(good.clone(), 1, b"X"),
    );
    f.open(
        "footer-magic",
        F::BadMagic,
        Rule::BadMagic,
        "the footer's magic changed",
        patched(good.clone(), n - 1, &[0]),
    );
    f.open(
        "footer-not-at-the-end",
        F::BadMagic,
        Rule::BadMagic,
        "a byte after the footer (a crashed append): the footer is not at the end",
        [good.clone(), vec![0]].concat(),
    );
    f.open(
        "version-3",
        F::BadField,
        Rule::BadField,
        "footer version 3",
        patched(good.clone(), n - 16, &3u32.to_le_bytes()),
    );
    f.open(
        "manifest-too-large",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a manifest length of 2 GiB, past the 1 GiB cap",
        patched(good.clone(), n - 32, &(2u64 << 30).to_le_bytes()),
    );
    f.open(
        "manifest-past-end",
        F::PastEnd,
        Rule::OutOfBounds,
        "the manifest offset 1 MiB in a file of 8 KiB",
        patched(good.clone(), n - 40, &(1u64 << 20).to_le_bytes()),
    );
    f.open(
        "manifest-overflow",
        F::Overflow,
        Rule::OutOfBounds,
        "a manifest offset whose sum with the length overflows",
        patched(good.clone(), n - 40, &(u64::MAX - 4095).to_le_bytes()),
    );
    f.open(
        "manifest-misaligned",
        F::Misaligned,
        Rule::Misaligned,
        "the manifest blob at 4100",
        patched(good.clone(), n - 40, &4100u64.to_le_bytes()),
    );
    f.open(
        "manifest-at-zero",
        F::Misaligned,
        Rule::Misaligned,
        "the manifest blob at 0, over the magic",
        patched(good.clone(), n - 40, &0u64.to_le_bytes()),
    );
    // The manifest blob is at 8192, after the tensor's blob at 4096.
    f.open(
        "manifest-hash",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a manifest byte changed after its XXH3-64 was written",
        patched(good.clone(), 8192 + 3, b"X"),
    );
    let mut shard = super::MAGIC.to_vec();
    shard.extend_from_slice(&footer(4096, 0, 0, 2));
    f.open("data-shard-with-offset", F::BadField, Rule::OutOfBounds, "no manifest (length 0) yet an offset", shard);
}

pub(super) fn cbor(f: &mut Folder) {
    let raw = |cbor: &[u8]| File::new().finish_raw(cbor);
    let cases: [(&str, F, Rule, &str, Vec<u8>); 14] = [
        ("cbor-trailing-bytes", F::MalformedCbor, Rule::BadCbor, "a byte after the manifest's map", vec![0xa0, 0x00]),
        ("cbor-tag", F::MalformedCbor, Rule::BadCbor, "a tag (the manifest has none)", vec![0xc0, 0x00]),
        ("cbor-indefinite-map", F::MalformedCbor, Rule::BadCbor, "an indefinite-length map", vec![0xbf, 0xff]),
        ("cbor-non-shortest", F::MalformedCbor, Rule::BadCbor, "0 in a two-byte head", vec![0xb8, 0x00]),
        (
            "cbor-unsorted-keys",
            F::MalformedCbor,
            Rule::BadCbor,
            "map keys out of bytewise order",
            vec![0xa2, 0x61, b'b', 0, 0x61, b'a', 0],
        ),
        (
            "cbor-longer-key-first",
            F::MalformedCbor,
            Rule::BadCbor,
            "a longer key before a shorter one (its head sorts after)",
            vec![0xa2, 0x62, b'a', b'a', 0, 0x61, b'b', 0],
        ),
        (
            "cbor-duplicate-key",
            F::DuplicateName,
            Rule::DuplicateName,
            "one key twice",
            vec![0xa2, 0x61, b'a', 0, 0x61, b'a', 1],
        ),
        (
            "cbor-float-too-wide",
            F::MalformedCbor,
            Rule::BadCbor,
            "1.5 as a four-byte float",
            vec![0xfa, 0x3f, 0xc0, 0, 0],
        ),
        ("cbor-nan-payload", F::MalformedCbor, Rule::BadCbor, "a NaN other than f9 7e00", vec![0xf9, 0x7e, 0x01]),
        ("cbor-undefined", F::MalformedCbor, Rule::BadCbor, "the simple value undefined", vec![0xf7]),
        (
            "cbor-bad-utf8",
            F::BadUtf8,
            Rule::BadUtf8,
            "a text key that is not UTF-8",
            vec![0xa1, 0x62, 0xff, 0xfe, 0x00],
        ),
        (
            "cbor-count-past-end",
            F::PastEnd,
            Rule::Truncated,
            "a map of 2^32 pairs in 5 bytes",
            vec![0xba, 0xff, 0xff, 0xff, 0xff],
        ),
        ("cbor-depth", F::DeepNesting, Rule::TooDeep, "arrays nested 40 deep", [vec![0x81; 40], vec![0]].concat()),
        ("cbor-cut-short", F::Truncation, Rule::Truncated, "a text of 5 bytes with 1 left", vec![0x65, b'a']),
    ];
    for (stem, family, rule, what, bytes) in cases {
        f.open(stem, family, rule, what, raw(&bytes));
    }
    let attrs = |v: C| raw(&encode(&m(vec![("attributes", m(vec![("k", v)])), ("objects", m(vec![]))])));
    let nested = |depth: usize| (0..depth).fold(C::U(0), |inner, _| C::Array(vec![inner]));
    f.valid("cbor-depth-32", F::DeepNesting, "an attribute nested to depth 32 from the root", attrs(nested(30)));
    f.open(
        "cbor-depth-33",
        F::DeepNesting,
        Rule::TooDeep,
        "an attribute nested to depth 33 from the root",
        attrs(nested(31)),
    );
    f.open(
        "attribute-tag",
        F::MalformedCbor,
        Rule::BadCbor,
        "a tag in an attribute value",
        attrs(C::Raw(vec![0xc1, 0x00])),
    );
}

pub(super) fn schema(f: &mut Folder) {
    let raw = |v: C| File::new().finish(&v);
    let empty_blob = || object(&[0], "dense", vec![("data", part("u8", uints(&[4096, 0]), vec![]))], None);
    let cases: Vec<(&str, F, Rule, &str, Vec<u8>)> = vec![
        ("no-objects", F::BadField, Rule::MissingField, "a manifest without objects", raw(m(vec![]))),
        ("manifest-not-a-map", F::BadField, Rule::BadField, "a manifest that is an array", raw(C::Array(vec![]))),
        ("objects-not-a-map", F::BadField, Rule::BadField, "objects: 1", raw(m(vec![("objects", C::U(1))]))),
        (
            "attributes-not-a-map",
            F::BadField,
            Rule::BadMetadata,
            "file attributes: 7",
            raw(m(vec![("attributes", C::U(7)), ("objects", m(vec![]))])),
        ),
        (
            "attribute-key-not-text",
            F::BadField,
            Rule::BadMetadata,
            "an attribute keyed by 1",
            raw(m(vec![("attributes", super::map(vec![(C::U(1), C::U(0))])), ("objects", m(vec![]))])),
        ),
        (
            "attribute-key-empty",
            F::BadField,
            Rule::BadField,
            "an attribute keyed by the empty string",
            raw(m(vec![("attributes", m(vec![("", C::U(0))])), ("objects", m(vec![]))])),
        ),
        (
            "object-attributes-not-a-map",
            F::BadField,
            Rule::BadMetadata,
            "object attributes: 1",
            raw(manifest(vec![(
                "t",
                object(&[0], "dense", vec![("data", part("u8", uints(&[4096, 0]), vec![]))], Some(C::U(1))),
            )])),
        ),
        (
            "name-empty",
            F::BadField,
            Rule::BadField,
            "an object named by the empty string",
            raw(manifest(vec![("", empty_blob())])),
        ),
        (
            "name-nul",
            F::BadField,
            Rule::BadField,
            "an object name holding NUL",
            raw(manifest(vec![("a\0b", empty_blob())])),
        ),
        (
            "name-too-long",
            F::BadField,
            Rule::BadField,
            "an object name of 1025 bytes",
            raw(manifest(vec![(&"n".repeat(1025), empty_blob())])),
        ),
        (
            "no-parts",
            F::BadField,
            Rule::MissingField,
            "an object with an empty parts map",
            raw(manifest(vec![("t", object(&[0], "dense", vec![], None))])),
        ),
        (
            "no-shape",
            F::BadField,
            Rule::MissingField,
            "an object without a shape",
            raw(manifest(vec![("t", m(vec![("layout", t("dense")), ("parts", m(vec![]))]))])),
        ),
        ("rank-65", F::BadField, Rule::BadField, "a shape of 65 dimensions", dense("u8", &[1; 65], vec![1], vec![])),
        (
            "shape-overflow",
            F::Overflow,
            Rule::ShapeOverflow,
            "shape [2^64-1, 2]",
            dense("u8", &[u64::MAX, 2], vec![1; 8], vec![]),
        ),
        (
            "unknown-dtype",
            F::BadField,
            Rule::UnknownDType,
            "dtype f4 (not a storage type)",
            dense("f4", &[8], vec![1; 8], vec![]),
        ),
        (
            "dtype-bool",
            F::BadField,
            Rule::UnknownDType,
            "dtype bool (a logical type over u8)",
            dense("bool", &[8], vec![1; 8], vec![]),
        ),
        (
            "type-over-wrong-dtype",
            F::BadField,
            Rule::BadField,
            "logical type bool over f32",
            dense("f32", &[2], vec![1; 8], vec![("type", t("bool"))]),
        ),
        (
            "encoding-without-decoded-length",
            F::BadField,
            Rule::MissingField,
            "an encoding and no decoded_length",
            dense("u8", &[8], vec![1; 8], vec![("encoding", t("x.z/1"))]),
        ),
        (
            "decoded-length-without-encoding",
            F::BadField,
            Rule::BadField,
            "decoded_length on a raw part",
            dense("u8", &[8], vec![1; 8], vec![("decoded_length", C::U(8))]),
        ),
        (
            "digest-uppercase",
            F::Checksum,
            Rule::BadChecksum,
            "a digest in uppercase hex",
            dense("u8", &[8], vec![1; 8], vec![("digest", t("xxh3:00FF00FF00FF00FF"))]),
        ),
        (
            "digest-without-algorithm",
            F::Checksum,
            Rule::BadChecksum,
            "a digest without its algorithm",
            dense("u8", &[8], vec![1; 8], vec![("digest", t("0011223344556677"))]),
        ),
    ];
    for (stem, family, rule, what, bytes) in cases {
        f.open(stem, family, rule, what, bytes);
    }
    let blob = |b: C| {
        raw(manifest(vec![(
            "t",
            object(&[8], "dense", vec![("data", m(vec![("dtype", t("u8")), ("blob", b)]))], None),
        )]))
    };
    f.open("blob-one-element", F::BadField, Rule::BadField, "blob [4096]", blob(uints(&[4096])));
    f.open("blob-three-elements", F::BadField, Rule::BadField, "blob [0, 4096, 8]", blob(uints(&[0, 4096, 8])));
    super::shards::cases(f);
}

pub(super) fn blobs(f: &mut Folder) {
    let at = |offset: u64, len: u64| {
        let mut file = File::new();
        file.blob(&vec![0xab; 3 * 4096]);
        file.finish(&manifest(vec![(
            "t",
            object(&[len], "dense", vec![("data", part("u8", uints(&[offset, len]), vec![]))], None),
        )]))
    };
    f.open("blob-misaligned", F::Misaligned, Rule::Misaligned, "a blob at 4100", at(4100, 8));
    f.open("blob-at-zero", F::Misaligned, Rule::Misaligned, "a blob at 0, over the magic", at(0, 8));
    f.open("blob-past-end", F::PastEnd, Rule::OutOfBounds, "a blob of 2^40 bytes", at(4096, 1 << 40));
    f.open("blob-into-footer", F::PastEnd, Rule::OutOfBounds, "a blob running into the footer", at(16384, 4096));
    f.open("blob-overflow", F::Overflow, Rule::OutOfBounds, "offset + length past 2^64", at(u64::MAX - 4095, 8192));
    f.open("blob-over-manifest", F::Overlap, Rule::Overlap, "a blob overlapping the manifest blob", at(16384, 10));
    let two = |a: [u64; 2], b: [u64; 2]| {
        let mut file = File::new();
        file.blob(&vec![0xab; 3 * 4096]);
        let d = |blob: [u64; 2]| object(&[blob[1]], "dense", vec![("data", part("u8", uints(&blob), vec![]))], None);
        file.finish(&manifest(vec![("a", d(a)), ("b", d(b))]))
    };
    f.open(
        "blob-partial-overlap",
        F::Overlap,
        Rule::Overlap,
        "blobs [4096, 8192] and [8192, 8]",
        two([4096, 8192], [8192, 8]),
    );
    f.open(
        "blob-prefix",
        F::Overlap,
        Rule::Overlap,
        "blobs [4096, 8] and [4096, 4]: a prefix overlaps",
        two([4096, 8], [4096, 4]),
    );
    f.valid(
        "blob-empty-shares-offset",
        F::Overlap,
        "an empty blob at another blob's offset",
        two([4096, 0], [4096, 8]),
    );
    f.valid("blob-adjacent", F::Overlap, "blobs that touch without overlapping", two([4096, 4096], [8192, 8]));
}
