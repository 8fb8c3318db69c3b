//! `.zt` cases about the file's structure and its CBOR index: truncation, placement of blobs,
//! malformed CBOR, entries with missing or wrong fields.

use tensorfile::Rule;

use super::{Blobs, C, entry, file, index, nested, one, t, two_tensors, u8_entry, with, without};
use crate::case::{Family as F, Folder};

/// Magic, index length and placement of blobs.
pub(super) fn structure(f: &mut Folder) {
    let (data, es) = two_tensors();
    let good = file(&data, &index(es));
    let trunc = Rule::Truncated;
    f.open("truncated-in-magic", F::Truncation, trunc, "4 bytes: cut inside the magic number", b"ZTEN".to_vec());
    f.open("truncated-after-magic", F::Truncation, trunc, "the magic number and nothing else", b"ZTEN0001".to_vec());
    let mut b = b"ZTEN0001".to_vec();
    b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0]);
    f.open("truncated-in-index-length", F::Truncation, trunc, "cut inside the 8-byte index length", b);
    let mut b = b"ZTEN0001".to_vec();
    b.extend_from_slice(&0u64.to_le_bytes());
    f.open("no-index", F::Truncation, trunc, "magic and a zero index length: no room for the index's array", b);
    let idx = index(vec![u8_entry("a", 64, 4)]);
    let mut cut = file(&[0; 64], &idx[..idx.len() - 1]);
    f.open(
        "truncated-index",
        F::Truncation,
        trunc,
        "the index's last byte (the map's break) cut, its length adjusted",
        cut.clone(),
    );
    cut = file(&[0; 64], &idx[..6]);
    f.open("truncated-index-in-name", F::Truncation, trunc, "the index cut inside the first text string", cut);
    let mut b = Blobs::default();
    b.add(&[0xab; 64]);
    let whole = file(&b.data, &index(vec![u8_entry("a", 64, 64)]));
    f.open(
        "truncated-in-blob",
        F::Truncation,
        Rule::HeaderTooLarge,
        "a file cut inside its blob: the last 8 bytes, read as the index length, are blob bytes",
        whole[..100].to_vec(),
    );

    let mut b = good.clone();
    b[7] = b'2';
    f.open("bad-magic", F::BadMagic, Rule::BadMagic, "ZTEN0002", b);
    let n = good.len();
    let mut b = good.clone();
    b[n - 8..].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    f.open("index-length-past-end", F::PastEnd, Rule::HeaderTooLarge, "index length 2^64-4", b);
    let mut b = good.clone();
    b[n - 8..].copy_from_slice(&(n as u64 - 15).to_le_bytes());
    f.open(
        "index-length-one-past",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "index length one byte more than lies between the magic and the length",
        b,
    );

    let oob = Rule::OutOfBounds;
    f.open(
        "offset-past-end",
        F::PastEnd,
        oob,
        "a blob offset beyond the index",
        one(&[0; 4], u8_entry("a", 1 << 20, 4)),
    );
    f.open(
        "size-past-end",
        F::PastEnd,
        oob,
        "a blob of 400 bytes where 64 lie before the index",
        one(&[0; 4], entry("a", 64, 400, "uint8", &[400], "raw")),
    );
    f.open(
        "offset-plus-size-overflows",
        F::Overflow,
        oob,
        "offset 64 + size 2^64-33 overflows",
        one(&[0; 4], entry("a", 64, u64::MAX - 32, "uint8", &[1], "raw")),
    );
    f.open(
        "offset-overflows",
        F::Overflow,
        oob,
        "offset 2^64-64 (aligned) + size 4 overflows",
        one(&[0; 4], u8_entry("a", u64::MAX - 63, 4)),
    );
    f.open(
        "blob-over-magic",
        F::Overlap,
        oob,
        "a blob at offset 0, over the magic number",
        one(&[0; 4], u8_entry("a", 0, 4)),
    );
    f.open("blob-over-index", F::Overlap, oob, "a blob running into the index", one(&[0; 64], u8_entry("a", 64, 72)));
    let two = file(&[0; 128], &index(vec![u8_entry("a", 64, 100), u8_entry("b", 128, 64)]));
    f.open("overlapping-blobs", F::Overlap, Rule::Overlap, "bytes 64..164 and 128..192", two);
    let two = file(&[0; 128], &index(vec![u8_entry("a", 64, 64), u8_entry("b", 64, 64)]));
    f.open("same-blob-twice", F::Overlap, Rule::Overlap, "two entries on the same 64 bytes", two);
    f.open(
        "unaligned-offset",
        F::Misaligned,
        Rule::Misaligned,
        "a blob at offset 68",
        one(&[0; 8], u8_entry("a", 68, 4)),
    );
    let dup = file(&[0; 128], &index(vec![u8_entry("a", 64, 4), u8_entry("a", 128, 4)]));
    f.open("duplicate-names", F::DuplicateName, Rule::DuplicateName, "two entries named \"a\"", dup);
}

/// The index as CBOR: malformed items, nesting, bad text.
pub(super) fn cbor(f: &mut Folder) {
    let raw = |index: &[u8]| file(&[], index);
    let bad = Rule::BadCbor;
    f.open(
        "cbor-reserved-additional-info",
        F::MalformedCbor,
        bad,
        "initial byte 0x1c (additional information 28 is reserved)",
        raw(&[0x1c]),
    );
    f.open("cbor-stray-break", F::MalformedCbor, bad, "a break (0xff) where an entry should be", raw(&[0x81, 0xff]));
    f.open(
        "cbor-indefinite-integer",
        F::MalformedCbor,
        bad,
        "an integer with indefinite length (0x1f)",
        raw(&[0x81, 0x1f]),
    );
    let mut b = index(vec![u8_entry("a", 64, 4)]);
    b.push(0x00);
    f.open("cbor-trailing-bytes", F::MalformedCbor, bad, "a byte after the index's array", file(&[0; 64], &b));
    let chunked = with(u8_entry("a", 64, 4), "note", C::Raw(vec![0x7f, 0x41, b'x', 0xff]));
    f.open(
        "cbor-chunk-of-another-type",
        F::MalformedCbor,
        bad,
        "an indefinite text string with a byte-string chunk",
        one(&[0; 4], chunked),
    );
    let simple = with(u8_entry("a", 64, 4), "note", C::Raw(vec![0xf8, 0x10]));
    f.open(
        "cbor-simple-value-two-bytes",
        F::MalformedCbor,
        bad,
        "simple value 16 in the two-byte form",
        one(&[0; 4], simple),
    );
    f.open(
        "cbor-array-count-past-end",
        F::MalformedCbor,
        Rule::Truncated,
        "an array claiming 2^32 items in 0 bytes",
        raw(&[0x9b, 0, 0, 0, 1, 0, 0, 0, 0]),
    );
    let long = with(u8_entry("a", 64, 4), "note", C::Raw(vec![0x7b, 0, 0, 1, 0, 0, 0, 0, 0]));
    f.open(
        "cbor-string-length-past-end",
        F::MalformedCbor,
        Rule::Truncated,
        "a text string of 2^40 bytes",
        one(&[0; 4], long),
    );
    let map = with(u8_entry("a", 64, 4), "note", C::Raw(vec![0xbb, 0, 0, 0, 1, 0, 0, 0, 0]));
    f.open(
        "cbor-map-count-past-end",
        F::MalformedCbor,
        Rule::Truncated,
        "a map claiming 2^32 pairs",
        one(&[0; 4], map),
    );

    f.open("deep-index", F::DeepNesting, Rule::TooDeep, "the index: 5000 arrays nested", raw(&vec![0x81; 5000]));
    let deep = with(u8_entry("a", 64, 4), "nested", nested(100));
    f.open(
        "deep-custom-field",
        F::DeepNesting,
        Rule::TooDeep,
        "a custom field of 100 nested arrays",
        one(&[0; 4], deep),
    );
    let maps = (0..100).fold(C::U(0), |inner, _| C::IndefMap(vec![(t("k"), inner)]));
    f.open(
        "deep-maps",
        F::DeepNesting,
        Rule::TooDeep,
        "a custom field of 100 nested indefinite maps",
        one(&[0; 4], with(u8_entry("a", 64, 4), "nested", maps)),
    );
    let tags = C::Raw([vec![0xc6; 100], vec![0x00]].concat());
    f.open(
        "deep-tags",
        F::DeepNesting,
        Rule::TooDeep,
        "a custom field of 100 nested tags",
        one(&[0; 4], with(u8_entry("a", 64, 4), "nested", tags)),
    );

    let utf = Rule::BadUtf8;
    let e = with(u8_entry("a", 64, 4), "name", C::TextBytes(vec![b'w', 0xff]));
    f.open("bad-utf8-name", F::BadUtf8, utf, "a name with the byte 0xff", one(&[0; 4], e));
    let e = with(u8_entry("a", 64, 4), "name", C::TextBytes(vec![0xc0, 0x80]));
    f.open("overlong-utf8-name", F::BadUtf8, utf, "a name with an overlong encoding of NUL (c0 80)", one(&[0; 4], e));
    let e = with(u8_entry("a", 64, 4), "name", C::TextBytes(vec![0xed, 0xa0, 0x80]));
    f.open(
        "surrogate-utf8-name",
        F::BadUtf8,
        utf,
        "a name with an encoded UTF-16 surrogate (ed a0 80)",
        one(&[0; 4], e),
    );
    let mut e = u8_entry("a", 64, 4);
    e.push((C::TextBytes(vec![0xfe, b'k']), t("v")));
    f.open("bad-utf8-key", F::BadUtf8, utf, "a custom key with the byte 0xfe", one(&[0; 4], e));
}

/// Entries whose fields are missing or wrong.
pub(super) fn entries(f: &mut Folder) {
    let raw = |index: &[u8]| file(&[], index);
    let bf = Rule::BadField;
    f.open("index-not-an-array", F::BadField, bf, "the index is a map", raw(&[0xa0]));
    f.open("entry-not-a-map", F::BadField, bf, "an entry that is an integer", raw(&[0x81, 0x01]));
    let mut e = u8_entry("a", 64, 4);
    e.push((C::U(7), t("v")));
    f.open("key-not-text", F::BadField, bf, "an entry with the integer key 7", one(&[0; 4], e));
    f.open(
        "name-not-text",
        F::BadField,
        bf,
        "name is an integer",
        one(&[0; 4], with(u8_entry("a", 64, 4), "name", C::U(5))),
    );
    f.open(
        "negative-offset",
        F::BadField,
        bf,
        "offset -64",
        one(&[0; 4], with(u8_entry("a", 64, 4), "offset", C::Neg(63))),
    );
    f.open(
        "offset-not-an-integer",
        F::BadField,
        bf,
        "offset is a text string",
        one(&[0; 4], with(u8_entry("a", 64, 4), "offset", t("64"))),
    );
    let mut e = u8_entry("a", 64, 4);
    e.push((t("size"), C::U(4)));
    f.open("duplicate-key", F::BadField, bf, "an entry with the key size twice", one(&[0; 4], e));
    let mf = Rule::MissingField;
    f.open(
        "missing-name",
        F::BadField,
        mf,
        "an entry without a name",
        one(&[0; 4], without(u8_entry("a", 64, 4), "name")),
    );
    f.open(
        "missing-offset",
        F::BadField,
        mf,
        "an entry without an offset",
        one(&[0; 4], without(u8_entry("a", 64, 4), "offset")),
    );
    f.open(
        "missing-size",
        F::BadField,
        mf,
        "an entry without a size",
        one(&[0; 4], without(u8_entry("a", 64, 4), "size")),
    );

    let e = |field: &str, v: C| one(&[0; 4], with(u8_entry("x", 64, 4), field, v));
    f.verify(
        "missing-dtype",
        F::BadField,
        mf,
        "an entry without a dtype",
        one(&[0; 4], without(u8_entry("x", 64, 4), "dtype")),
    );
    f.verify(
        "missing-shape",
        F::BadField,
        mf,
        "an entry without a shape",
        one(&[0; 4], without(u8_entry("x", 64, 4), "shape")),
    );
    f.verify(
        "missing-encoding",
        F::BadField,
        mf,
        "an entry without an encoding",
        one(&[0; 4], without(u8_entry("x", 64, 4), "encoding")),
    );
    f.verify("unknown-dtype", F::BadField, Rule::UnknownDType, "dtype float128", e("dtype", t("float128")));
    f.verify("unknown-encoding", F::BadField, Rule::UnknownEncoding, "encoding lz4", e("encoding", t("lz4")));
    f.verify("unknown-layout", F::BadField, Rule::UnknownLayout, "layout blocked", e("layout", t("blocked")));
    f.verify(
        "unknown-byte-order",
        F::BadField,
        Rule::UnknownByteOrder,
        "data_endianness middle",
        e("data_endianness", t("middle")),
    );
    f.verify("shape-not-an-array", F::BadField, bf, "shape is an integer", e("shape", C::U(4)));
    f.verify("negative-dimension", F::BadField, bf, "shape [-1]", e("shape", C::Array(vec![C::Neg(0)])));
    f.verify("rank-over-limit", F::BadField, bf, "65 dimensions of 1", e("shape", C::Array(vec![C::U(1); 65])));
    f.verify(
        "shape-product-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "shape [2^40, 2^40]: more than 2^64 elements",
        e("shape", C::Array(vec![C::U(1 << 40), C::U(1 << 40)])),
    );
    let e8 = entry("x", 64, 8, "float64", &[1 << 62], "raw");
    f.verify(
        "byte-size-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "float64 shape [2^62]: 2^65 bytes",
        one(&[0; 8], e8),
    );
    let e3 = entry("x", 64, 8, "float32", &[3], "raw");
    f.verify(
        "size-mismatch",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "size 8 for float32 [3] (12 bytes)",
        one(&[0; 12], e3),
    );
}
