//! GGUF: magic, version, counts, typed key/values, tensor infos, then the data region aligned
//! to `general.alignment`. Files are built here field by field (either byte order); the four
//! fixtures made by gguf-py are copied as valid cases.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

/// Value types.
const U8: u32 = 0;
const I8: u32 = 1;
const U16: u32 = 2;
const I16: u32 = 3;
pub(super) const U32: u32 = 4;
const I32: u32 = 5;
const F32: u32 = 6;
const BOOL: u32 = 7;
pub(super) const STRING: u32 = 8;
pub(super) const ARRAY: u32 = 9;
const U64: u32 = 10;
const I64: u32 = 11;
const F64: u32 = 12;

/// ggml types used here.
pub(super) const GGML_F32: u32 = 0;
pub(super) const GGML_F16: u32 = 1;
const GGML_Q4_0: u32 = 2;
const GGML_F64: u32 = 28;
const GGML_Q4_K: u32 = 12;

/// A file's fields in one byte order.
#[derive(Clone, Copy)]
pub(super) struct G {
    big: bool,
}

pub(super) const LE: G = G { big: false };
const BE: G = G { big: true };

/// A tensor info: name, `ne` (fastest first), ggml type, offset in the data region.
pub(super) struct Info<'a> {
    name: &'a [u8],
    ne: &'a [u64],
    ggml: u32,
    offset: u64,
}

pub(super) fn info<'a>(name: &'a str, ne: &'a [u64], ggml: u32, offset: u64) -> Info<'a> {
    Info { name: name.as_bytes(), ne, ggml, offset }
}

impl G {
    fn u16(self, v: u16) -> Vec<u8> {
        if self.big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() }
    }

    pub(super) fn u32(self, v: u32) -> Vec<u8> {
        if self.big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() }
    }

    pub(super) fn u64(self, v: u64) -> Vec<u8> {
        if self.big { v.to_be_bytes().to_vec() } else { v.to_le_bytes().to_vec() }
    }

    /// A string: u64 length, bytes (not necessarily UTF-8).
    pub(super) fn s(self, b: &[u8]) -> Vec<u8> {
        [self.u64(b.len() as u64), b.to_vec()].concat()
    }

    /// A key/value whose value (after its type) is `payload`.
    pub(super) fn kv(self, key: &[u8], vtype: u32, payload: &[u8]) -> Vec<u8> {
        [self.s(key), self.u32(vtype), payload.to_vec()].concat()
    }

    /// An array payload: element type, count, elements.
    pub(super) fn array(self, element: u32, count: u64, items: &[u8]) -> Vec<u8> {
        [self.u32(element), self.u64(count), items.to_vec()].concat()
    }

    fn info(self, i: &Info<'_>) -> Vec<u8> {
        let mut b = self.s(i.name);
        b.extend(self.u32(i.ne.len() as u32));
        i.ne.iter().for_each(|&d| b.extend(self.u64(d)));
        b.extend(self.u32(i.ggml));
        b.extend(self.u64(i.offset));
        b
    }

    /// A whole file: header (`version`, the counts given), `kvs`, the infos, padding to
    /// `align`, `data`.
    fn file_with(
        self,
        version: u32,
        counts: (u64, u64),
        kvs: &[u8],
        infos: &[Info<'_>],
        align: usize,
        data: &[u8],
    ) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(self.u32(version));
        b.extend(self.u64(counts.0));
        b.extend(self.u64(counts.1));
        b.extend_from_slice(kvs);
        infos.iter().for_each(|i| b.extend(self.info(i)));
        b.resize(b.len().next_multiple_of(align), 0);
        b.extend_from_slice(data);
        b
    }

    /// A version 3 file of `kv_count` key/values and `infos`, aligned to 32.
    pub(super) fn file(self, kv_count: u64, kvs: &[u8], infos: &[Info<'_>], data: &[u8]) -> Vec<u8> {
        self.file_with(3, (infos.len() as u64, kv_count), kvs, infos, 32, data)
    }
}

/// `n` deterministic bytes.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed)).collect()
}

/// `data` padded to 32 bytes, then `next`.
fn then(mut data: Vec<u8>, next: &[u8]) -> Vec<u8> {
    data.resize(data.len().next_multiple_of(32), 0);
    data.extend_from_slice(next);
    data
}

/// The key/values of a small model: architecture, a u32, an array of strings.
fn model_kvs(g: G) -> Vec<u8> {
    [
        g.kv(b"general.architecture", STRING, &g.s(b"llama")),
        g.kv(b"llama.block_count", U32, &g.u32(2)),
        g.kv(
            b"tokenizer.ggml.tokens",
            ARRAY,
            &g.array(STRING, 3, &[g.s(b"<s>"), g.s(b"a"), g.s("ü".as_bytes())].concat()),
        ),
    ]
    .concat()
}

/// A key of every value type, an empty array and arrays of arrays.
fn every_type(g: G) -> (u64, Vec<u8>) {
    let kvs = [
        g.kv(b"u8", U8, &[200]),
        g.kv(b"i8", I8, &[0x80]),
        g.kv(b"u16", U16, &g.u16(65535)),
        g.kv(b"i16", I16, &g.u16(0x8000)),
        g.kv(b"u32", U32, &g.u32(u32::MAX)),
        g.kv(b"i32", I32, &g.u32(0x8000_0000)),
        g.kv(b"f32", F32, &g.u32(0.5f32.to_bits())),
        g.kv(b"bool", BOOL, &[1]),
        g.kv("strïng".as_bytes(), STRING, &g.s("välue 🦀".as_bytes())),
        g.kv(b"u64", U64, &g.u64(u64::MAX)),
        g.kv(b"i64", I64, &g.u64(1 << 63)),
        g.kv(b"f64", F64, &g.u64((-2.5f64).to_bits())),
        g.kv(b"empty", ARRAY, &g.array(F32, 0, &[])),
        g.kv(b"bools", ARRAY, &g.array(BOOL, 3, &[0, 1, 0])),
        g.kv(
            b"nested",
            ARRAY,
            &g.array(ARRAY, 2, &[g.array(I32, 1, &g.u32(7)), g.array(STRING, 1, &g.s(b"x"))].concat()),
        ),
    ];
    (kvs.len() as u64, kvs.concat())
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("gguf", Format::Gguf, "gguf");
    valid(&mut f, fx)?;
    header(&mut f);
    metadata(&mut f);
    tensors(&mut f);
    Ok(f)
}

fn valid(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    let t = [info("w", &[4, 2], GGML_F32, 0)];
    let data = pattern(32, 1);
    f.valid(
        "small-model",
        F::Valid,
        "a llama-like file: 3 keys, one F32 [2, 4] tensor",
        LE.file(3, &model_kvs(LE), &t, &data),
    );
    f.valid(
        "version-2",
        F::Valid,
        "the same as GGUF version 2 (the layout of version 3)",
        LE.file_with(2, (1, 3), &model_kvs(LE), &t, 32, &data),
    );
    let (n, kvs) = every_type(LE);
    f.valid(
        "every-value-type",
        F::Valid,
        "a key of each of the 13 value types, an empty array, an array of arrays",
        LE.file(n, &kvs, &[], &[]),
    );
    let (n, kvs) = every_type(BE);
    let t16 = [info("h", &[3], GGML_F16, 0), info("d", &[1], GGML_F64, 32)];
    f.valid(
        "big-endian",
        F::Valid,
        "a big-endian file (version bytes 00 00 00 03): every value type, an F16 and an F64 tensor",
        BE.file(n, &kvs, &t16, &then(pattern(6, 2), &pattern(8, 3))),
    );
    let q = [info("q4_0", &[32, 2], GGML_Q4_0, 0), info("q4_k", &[256], GGML_Q4_K, 64)];
    f.valid(
        "blocks",
        F::Valid,
        "Q4_0 [2, 32] (2 blocks of 18 bytes) and Q4_K [256] (1 block of 144)",
        LE.file(0, &[], &q, &then(pattern(36, 4), &pattern(144, 5))),
    );
    let align = LE.kv(b"general.alignment", U32, &LE.u32(64));
    let two = [info("a", &[3], GGML_F32, 0), info("b", &[1], GGML_F32, 64)];
    f.valid(
        "alignment-64",
        F::Valid,
        "general.alignment 64: the data region and the second tensor at multiples of 64",
        LE.file_with(3, (2, 1), &align, &two, 64, &[pattern(12, 6), vec![0; 52], pattern(4, 7)].concat()),
    );
    f.valid("no-tensors", F::Valid, "keys and no tensors (no data region)", LE.file(3, &model_kvs(LE), &[], &[]));
    let odd =
        [info("scalar", &[], GGML_F32, 0), info("empty", &[0, 3], GGML_F32, 32), info("after", &[1], GGML_F32, 32)];
    f.valid(
        "scalar-and-empty",
        F::Valid,
        "a 0-d tensor, a zero-size one, and one after it at the same offset",
        LE.file(0, &[], &odd, &then(pattern(4, 8), &pattern(4, 9))),
    );
    for (stem, path, what) in [
        (
            "gguf-py-metadata",
            "gguf/metadata.gguf",
            "every value type, long arrays, every plain type (fixture made by gguf-py)",
        ),
        ("gguf-py-blocks", "gguf/blocks.gguf", "every ggml block type (fixture made by gguf-py)"),
        ("gguf-py-big-endian", "gguf/big_endian.gguf", "a big-endian file (fixture made by gguf-py)"),
        ("gguf-py-alignment", "gguf/alignment.gguf", "general.alignment 64 (fixture made by gguf-py)"),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }
    Ok(())
}

fn header(f: &mut Folder) {
    let w = [info("w", &[4, 2], GGML_F32, 0)];
    let good = LE.file(3, &model_kvs(LE), &w, &pattern(32, 1));
    let infos_end = 24 + model_kvs(LE).len() + LE.info(&w[0]).len();
    let mut magic = good.clone();
    magic[..4].copy_from_slice(b"GGML");
    f.open("bad-magic", F::BadMagic, Rule::BadMagic, "the magic GGML", magic);
    for (version, what) in
        [(1u32, "version 1 (32-bit counts, read by no current tool)"), (4, "version 4"), (0, "version 0")]
    {
        let mut b = good.clone();
        b[4..8].copy_from_slice(&version.to_le_bytes());
        f.open(&format!("version-{version}"), F::BadField, Rule::BadField, what, b);
    }
    let tr = Rule::Truncated;
    f.open("truncated-in-magic", F::Truncation, tr, "3 bytes: GGU", b"GGU".to_vec());
    f.open("truncated-in-counts", F::Truncation, tr, "cut inside the key/value count", good[..20].to_vec());
    f.open("truncated-in-key", F::Truncation, tr, "cut inside the first key", good[..40].to_vec());
    f.open("truncated-in-infos", F::Truncation, tr, "cut inside the tensor info", good[..infos_end - 20].to_vec());
    f.open(
        "truncated-in-data",
        F::Truncation,
        Rule::OutOfBounds,
        "cut inside the tensor's data",
        good[..good.len() - 5].to_vec(),
    );
    let mut many = good.clone();
    many[16..24].copy_from_slice(&1_000_000u64.to_le_bytes());
    f.open("kv-count-past-end", F::PastEnd, tr, "a million key/values in a file of 256 bytes", many);
    let mut many = good.clone();
    many[8..16].copy_from_slice(&100_000u64.to_le_bytes());
    f.open("tensor-count-past-end", F::PastEnd, tr, "100,000 tensor infos in a file of 256 bytes", many);
    let mut many = good;
    many[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    f.open(
        "tensor-count-over-limit",
        F::BadField,
        Rule::TooManyEntries,
        "2^40 tensors (the limit is 10,000,000)",
        many,
    );
}

fn metadata(f: &mut Folder) {
    let one = |kv: Vec<u8>| LE.file(1, &kv, &[], &[]);
    let tr = Rule::Truncated;
    let mut key = LE.u64(1 << 62);
    key.extend_from_slice(b"k");
    f.open("key-length-past-end", F::PastEnd, tr, "a key length of 2^62", LE.file(1, &key, &[], &[]));
    let mut key = LE.u64(u64::MAX);
    key.extend_from_slice(b"k");
    f.open("key-length-huge", F::Overflow, tr, "a key length of 2^64-1", LE.file(1, &key, &[], &[]));
    let mut value = LE.u64(1000);
    value.extend_from_slice(b"short");
    f.open(
        "string-past-end",
        F::PastEnd,
        tr,
        "a string value of 1000 bytes, 5 present",
        one(LE.kv(b"s", STRING, &value)),
    );
    f.open(
        "array-count-past-end",
        F::PastEnd,
        tr,
        "an array of 2^30 u32, none present",
        one(LE.kv(b"a", ARRAY, &LE.array(U32, 1 << 30, &[]))),
    );
    f.open(
        "array-count-overflows",
        F::Overflow,
        tr,
        "an array of 2^62 u64: 2^65 bytes",
        one(LE.kv(b"a", ARRAY, &LE.array(U64, 1 << 62, &[]))),
    );
    f.open(
        "array-of-strings-past-end",
        F::PastEnd,
        tr,
        "an array of 2^40 strings",
        one(LE.kv(b"a", ARRAY, &LE.array(STRING, 1 << 40, &[]))),
    );
    let bm = Rule::BadMetadata;
    f.open("unknown-value-type", F::BadField, bm, "value type 13", one(LE.kv(b"k", 13, &LE.u32(0))));
    f.open(
        "unknown-element-type",
        F::BadField,
        bm,
        "an array of value type 99",
        one(LE.kv(b"k", ARRAY, &LE.array(99, 1, &[0; 8]))),
    );
    let mut deep = Vec::new();
    for _ in 0..100 {
        deep.extend(LE.u32(ARRAY));
        deep.extend(LE.u64(1));
    }
    deep.extend(LE.array(U8, 0, &[]));
    f.open("deep-arrays", F::DeepNesting, Rule::TooDeep, "arrays of arrays 101 deep", one(LE.kv(b"k", ARRAY, &deep)));
    let utf = Rule::BadUtf8;
    f.open("bad-utf8-key", F::BadUtf8, utf, "a key with the bytes ff fe", one(LE.kv(b"k\xff\xfe", U8, &[1])));
    f.open(
        "overlong-utf8-value",
        F::BadUtf8,
        utf,
        "a string value with an overlong NUL (c0 80)",
        one(LE.kv(b"k", STRING, &LE.s(b"a\xc0\x80"))),
    );
    f.open(
        "surrogate-in-array",
        F::BadUtf8,
        utf,
        "an array string with an encoded surrogate (ed a0 80)",
        one(LE.kv(b"k", ARRAY, &LE.array(STRING, 1, &LE.s(b"\xed\xa0\x80")))),
    );
    let twice = [LE.kv(b"k", U8, &[1]), LE.kv(b"k", U8, &[2])].concat();
    f.open("duplicate-key", F::DuplicateName, Rule::DuplicateName, "the key k twice", LE.file(2, &twice, &[], &[]));
    let t = [info("w", &[4], GGML_F32, 0)];
    let align =
        |payload: Vec<u8>, vtype| LE.file(1, &LE.kv(b"general.alignment", vtype, &payload), &t, &pattern(16, 1));
    f.open("alignment-not-power-of-two", F::BadField, bm, "general.alignment 48", align(LE.u32(48), U32));
    f.open("alignment-zero", F::BadField, bm, "general.alignment 0", align(LE.u32(0), U32));
    f.open(
        "alignment-not-u32",
        F::BadField,
        bm,
        "general.alignment 64 as a u64 (ggml requires a u32)",
        align(LE.u64(64), U64),
    );
}

fn tensors(f: &mut Folder) {
    let f32s = |name, ne, offset| info(name, ne, GGML_F32, offset);
    let one = |i: Info<'_>, data: &[u8]| LE.file(0, &[], &[i], data);
    f.open(
        "misaligned-offset",
        F::Misaligned,
        Rule::Misaligned,
        "a tensor at data offset 4 (alignment 32)",
        one(f32s("w", &[2], 4), &pattern(40, 1)),
    );
    let oob = Rule::OutOfBounds;
    f.open(
        "offset-past-end",
        F::PastEnd,
        oob,
        "a tensor at data offset 4096 in a file of 72 bytes",
        one(f32s("w", &[1], 4096), &pattern(8, 1)),
    );
    f.open(
        "size-past-end",
        F::PastEnd,
        oob,
        "F32 [100] with 16 data bytes",
        one(f32s("w", &[100], 0), &pattern(16, 1)),
    );
    f.open(
        "offset-overflows",
        F::Overflow,
        oob,
        "data offset 2^64-32: start + offset overflows",
        one(f32s("w", &[1], u64::MAX - 31), &pattern(4, 1)),
    );
    let two = [f32s("a", &[16], 0), f32s("b", &[4], 32)];
    f.open("overlapping", F::Overlap, Rule::Overlap, "a at 0..64, b at 32..48", LE.file(0, &[], &two, &pattern(64, 1)));
    let twins = [f32s("w", &[1], 0), f32s("w", &[1], 32)];
    f.open(
        "duplicate-tensor-name",
        F::DuplicateName,
        Rule::DuplicateName,
        "two tensors named w",
        LE.file(0, &[], &twins, &then(pattern(4, 1), &pattern(4, 2))),
    );
    f.open(
        "bad-utf8-name",
        F::BadUtf8,
        Rule::BadUtf8,
        "a tensor name with the byte ff",
        one(Info { name: b"w\xff", ne: &[1], ggml: GGML_F32, offset: 0 }, &pattern(4, 1)),
    );
    f.open(
        "rank-over-limit",
        F::BadField,
        Rule::BadField,
        "65 dimensions",
        one(f32s("w", &[1; 65], 0), &pattern(4, 1)),
    );
    f.open("rank-past-end", F::PastEnd, Rule::Truncated, "60 dimensions declared, 6 present", {
        let mut b = LE.file_with(3, (1, 0), &[], &[], 1, &[]);
        b.extend(LE.s(b"w"));
        b.extend(LE.u32(60));
        b.extend(LE.u64(1));
        b.extend([0; 40]);
        b
    });

    f.verify(
        "unknown-ggml-type",
        F::BadField,
        Rule::UnknownDType,
        "ggml type 77 (listed unreadable)",
        one(info("w", &[4], 77, 0), &pattern(16, 1)),
    );
    f.verify(
        "shape-product-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "F32 ne [2^32, 2^32]",
        one(f32s("w", &[1 << 32, 1 << 32], 0), &pattern(4, 1)),
    );
    f.verify(
        "byte-size-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "F64 ne [2^62]: 2^65 bytes",
        one(info("w", &[1 << 62], GGML_F64, 0), &pattern(8, 1)),
    );
    f.verify(
        "row-not-whole-blocks",
        F::SizeMismatch,
        Rule::BadQuantization,
        "Q4_0 ne [16, 2]: rows of 16 do not fill 32-element blocks",
        one(info("q", &[16, 2], GGML_Q4_0, 0), &pattern(18, 1)),
    );
    let out_of_order = [f32s("a", &[1], 32), f32s("b", &[1], 0)];
    f.verify(
        "out-of-order",
        F::NotTiled,
        Rule::NotTiled,
        "tensors stored in another order than their infos (ggml lays them out in order)",
        LE.file(0, &[], &out_of_order, &then(pattern(4, 1), &pattern(4, 2))),
    );
    let gap = [f32s("a", &[1], 0), f32s("b", &[1], 64)];
    f.verify(
        "gap",
        F::NotTiled,
        Rule::NotTiled,
        "32 unused bytes between two tensors",
        LE.file(0, &[], &gap, &[pattern(4, 1), vec![0; 60], pattern(4, 2)].concat()),
    );
    f.verify(
        "rank-5",
        F::BadField,
        Rule::BadField,
        "5 dimensions (ggml reads at most 4)",
        one(f32s("w", &[1; 5], 0), &pattern(4, 1)),
    );
    let long = "n".repeat(64);
    f.verify(
        "name-64-bytes",
        F::BadField,
        Rule::BadField,
        "a name of 64 bytes (ggml reads at most 63)",
        one(f32s(&long, &[1], 0), &pattern(4, 1)),
    );
}
