//! Every rule of the spec's validation summary (§3.6) and of the profiles' metadata rules
//! refuses the file with its `Rule`.

use super::build::{File, PartSpec, V, encode, m, manifest, object, part, t, uints};
use crate::error::Rule;
use crate::source::Bytes;

fn refused(bytes: Vec<u8>) -> Option<Rule> {
    match crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)) {
        Ok(_) => None,
        Err(e) => e.rule(),
    }
}

/// A file of one object `name` with parts `(part name, dtype, bytes, more fields)`.
fn one(name: &str, shape: &[u64], layout: &str, parts: Vec<PartSpec<'_>>, attrs: Option<V>) -> Vec<u8> {
    let mut f = File::default();
    let mut listed = Vec::new();
    for (pname, dtype, bytes, more) in parts {
        let blob = f.blob(&bytes);
        listed.push((pname, part(dtype, blob, more)));
    }
    f.finish(&manifest(vec![(name, object(shape, layout, listed, attrs))]))
}

fn dense(dtype: &str, shape: &[u64], bytes: Vec<u8>) -> Vec<u8> {
    one("t", shape, "dense", vec![("data", dtype, bytes, vec![])], None)
}

#[test]
fn the_container() {
    let good = dense("u8", &[8], vec![1; 8]);
    let n = good.len();
    assert_eq!(refused(good.clone()), None);
    assert_eq!(refused(good[..40].to_vec()), Some(Rule::Truncated));
    let patch = |at: usize, with: &[u8]| {
        let mut b = good.clone();
        b[at..at + with.len()].copy_from_slice(with);
        refused(b)
    };
    assert_eq!(patch(n - 8, b"ZTEN1000"), Some(Rule::BadMagic));
    assert_eq!(patch(n - 16, &3u32.to_le_bytes()), Some(Rule::BadField));
    assert_eq!(patch(n - 40, &(1u64 << 20).to_le_bytes()), Some(Rule::OutOfBounds));
    assert_eq!(patch(n - 40, &4100u64.to_le_bytes()), Some(Rule::Misaligned));
    assert_eq!(patch(n - 32, &(2u64 << 30).to_le_bytes()), Some(Rule::HeaderTooLarge));
    assert_eq!(patch(n - 24, &1u64.to_le_bytes()), Some(Rule::ChecksumMismatch));
    assert_eq!(patch(8192, &[0xa0]), Some(Rule::ChecksumMismatch), "a manifest changed after its hash");
    let mut appended = good.clone();
    appended.push(0);
    assert_eq!(refused(appended), Some(Rule::BadMagic), "a footer not at the end");
}

#[test]
fn the_manifest_cbor() {
    let raw = |cbor: &[u8]| refused(File::default().finish_raw(cbor));
    assert_eq!(raw(&encode(&manifest(vec![]))), None);
    assert_eq!(raw(&[0xa0, 0x00]), Some(Rule::BadCbor));
    assert_eq!(raw(&[0xc0, 0x00]), Some(Rule::BadCbor));
    assert_eq!(raw(&[0xbf, 0xff]), Some(Rule::BadCbor));
    assert_eq!(raw(&[0xb8, 0x00]), Some(Rule::BadCbor));
    assert_eq!(raw(&[0xa2, 0x61, b'b', 0, 0x61, b'a', 0]), Some(Rule::BadCbor));
    assert_eq!(raw(&[0xa2, 0x61, b'a', 0, 0x61, b'a', 0]), Some(Rule::DuplicateName));
    let mut deep = vec![0x81; 40];
    deep.push(0);
    assert_eq!(raw(&deep), Some(Rule::TooDeep));
    let attrs = |v: V| raw(&encode(&m(vec![("attributes", m(vec![("k", v)])), ("objects", m(vec![]))])));
    assert_eq!(attrs(V::Raw(vec![0xc1, 0x00])), Some(Rule::BadCbor), "a tag in an attribute");
    assert_eq!(attrs(V::Raw(vec![0xf7])), Some(Rule::BadCbor), "undefined");
    assert_eq!(attrs(V::Raw(vec![0xfa, 0x3f, 0xc0, 0, 0])), Some(Rule::BadCbor), "a wide float");
    assert_eq!(attrs(V::Raw(vec![0xf9, 0x7e, 0x01])), Some(Rule::BadCbor), "a NaN payload");
    let mut nested = V::U(0);
    for _ in 0..31 {
        nested = V::A(vec![nested]);
    }
    assert_eq!(attrs(nested.clone()), Some(Rule::TooDeep), "32 levels below the root's attributes' values");
    assert_eq!(
        attrs(match nested {
            V::A(mut inner) => inner.remove(0),
            other => other,
        }),
        None
    );
}

#[test]
fn the_schema() {
    let raw = |v: V| refused(File::default().finish(&v));
    assert_eq!(raw(m(vec![])), Some(Rule::MissingField));
    assert_eq!(raw(V::A(vec![])), Some(Rule::BadField));
    assert_eq!(raw(m(vec![("objects", V::U(1))])), Some(Rule::BadField));
    assert_eq!(raw(m(vec![("attributes", V::U(7)), ("objects", m(vec![]))])), Some(Rule::BadMetadata));
    let key_not_text = V::M(vec![(V::U(1), V::Null)]);
    assert_eq!(raw(m(vec![("attributes", key_not_text), ("objects", m(vec![]))])), Some(Rule::BadMetadata));
    for name in ["", "a\0b", &"n".repeat(1025)] {
        let attrs = m(vec![("attributes", m(vec![(name, V::Null)])), ("objects", m(vec![]))]);
        assert_eq!(raw(attrs), Some(Rule::BadField), "attribute key {name:?}");
        let d = |shape: &[u64]| object(shape, "dense", vec![("data", part("u8", uints(&[4096, 0]), vec![]))], None);
        assert_eq!(raw(manifest(vec![(name, d(&[0]))])), Some(Rule::BadField), "object name {name:?}");
    }
    assert_eq!(refused(one("t", &[8], "dense", vec![("", "u8", vec![1; 8], vec![])], None)), Some(Rule::BadField));
    assert_eq!(refused(dense("u8", &[1; 65], vec![1])), Some(Rule::BadField), "rank 65");
    assert_eq!(refused(dense("u8", &[u64::MAX, 2], vec![1; 8])), Some(Rule::ShapeOverflow));
    assert_eq!(refused(dense("f4", &[8], vec![1; 8])), Some(Rule::UnknownDType));
    assert_eq!(refused(dense("bool", &[8], vec![1; 8])), Some(Rule::UnknownDType));
    let field = |more: Vec<(&str, V)>| refused(one("t", &[8], "dense", vec![("data", "u8", vec![1; 8], more)], None));
    assert_eq!(field(vec![("encoding", t("x.z/1"))]), Some(Rule::MissingField));
    assert_eq!(field(vec![("decoded_length", V::U(8))]), Some(Rule::BadField));
    assert_eq!(field(vec![("digest", t("xxh3:00FF00FF00FF00FF"))]), Some(Rule::BadChecksum));
    assert_eq!(field(vec![("digest", t("xxh3"))]), Some(Rule::BadChecksum));
    assert_eq!(field(vec![("type", t("bool")), ("digest", t("xxh3:00"))]), None, "a digest of any length");
    assert_eq!(field(vec![("shard", t("base"))]), Some(Rule::ShardMismatch));
    assert_eq!(
        refused(one("t", &[2], "dense", vec![("data", "f32", vec![1; 8], vec![("type", t("bool"))])], None)),
        Some(Rule::BadField)
    );
    let blob = |b: V| {
        raw(manifest(vec![(
            "t",
            object(&[8], "dense", vec![("data", m(vec![("dtype", t("u8")), ("blob", b)]))], None),
        )]))
    };
    assert_eq!(blob(uints(&[4096])), Some(Rule::BadField));
    assert_eq!(blob(uints(&[0, 4096, 8])), Some(Rule::BadField));
    assert_eq!(
        raw(manifest(vec![("t", m(vec![("shape", uints(&[8])), ("layout", t("dense"))]))])),
        Some(Rule::MissingField)
    );
    assert_eq!(raw(manifest(vec![("t", object(&[8], "dense", vec![], None))])), Some(Rule::MissingField), "no parts");
    let obj_attrs = object(&[0], "dense", vec![("data", part("u8", uints(&[4096, 0]), vec![]))], Some(V::U(1)));
    assert_eq!(raw(manifest(vec![("t", obj_attrs)])), Some(Rule::BadMetadata));
}

#[test]
fn shard_tables() {
    let with_table = |name: &str, size: u64, digest: &str| {
        let table = V::M(vec![(t(name), m(vec![("size", V::U(size)), ("digest", t(digest))]))]);
        let d = object(&[8], "dense", vec![("data", part("u8", uints(&[4096, 8]), vec![("shard", t(name))]))], None);
        refused(File::default().finish(&m(vec![("objects", m(vec![("t", d)])), ("shards", table)])))
    };
    // The shard cannot be found (the file is in memory), but the file is sound.
    assert_eq!(with_table("base", 1 << 20, "xxh3:00112233445566aa"), None);
    assert_eq!(with_table("../etc/passwd", 1 << 20, "xxh3:00"), Some(Rule::UnsafePath));
    assert_eq!(with_table("sub/dir", 1 << 20, "xxh3:00"), Some(Rule::UnsafePath));
    assert_eq!(with_table(".hidden", 1 << 20, "xxh3:00"), Some(Rule::UnsafePath));
    assert_eq!(with_table("", 1 << 20, "xxh3:00"), Some(Rule::BadField));
    assert_eq!(with_table("a b", 1 << 20, "xxh3:00"), Some(Rule::BadField));
    assert_eq!(with_table(&"x".repeat(65), 1 << 20, "xxh3:00"), Some(Rule::BadField));
    assert_eq!(with_table("base", 47, "xxh3:00"), Some(Rule::BadField));
    assert_eq!(with_table("base", 4096 + 47, "xxh3:00"), Some(Rule::OutOfBounds), "past the shard's data");
    assert_eq!(with_table("base", 1 << 20, "XXH3:00"), Some(Rule::BadChecksum));
    let key_not_text = V::M(vec![(V::U(1), m(vec![("size", V::U(1 << 20)), ("digest", t("xxh3:00"))]))]);
    assert_eq!(
        refused(File::default().finish(&m(vec![("objects", m(vec![])), ("shards", key_not_text)]))),
        Some(Rule::BadField)
    );
    let no_digest = m(vec![("base", m(vec![("size", V::U(1 << 20))]))]);
    assert_eq!(
        refused(File::default().finish(&m(vec![("objects", m(vec![])), ("shards", no_digest)]))),
        Some(Rule::MissingField)
    );
}

#[test]
fn blobs() {
    let at = |offset: u64, len: u64, file_data: usize| {
        let mut f = File::default();
        f.blob(&vec![0xab; file_data]);
        f.finish(&manifest(vec![(
            "t",
            object(&[len], "dense", vec![("data", part("u8", uints(&[offset, len]), vec![]))], None),
        )]))
    };
    assert_eq!(refused(at(4096, 8, 8)), None);
    assert_eq!(refused(at(4100, 8, 16)), Some(Rule::Misaligned));
    assert_eq!(refused(at(0, 8, 8)), Some(Rule::Misaligned));
    assert_eq!(refused(at(4096, 1 << 40, 8)), Some(Rule::OutOfBounds));
    assert_eq!(refused(at(u64::MAX - 4095, 8192, 8)), Some(Rule::OutOfBounds));
    assert_eq!(refused(at(8192, 10, 8)), Some(Rule::Overlap), "into the manifest blob");
    let two = |a: [u64; 2], b: [u64; 2]| {
        let mut f = File::default();
        f.blob(&vec![0xab; 3 * 4096]);
        let d = |blob: [u64; 2]| object(&[blob[1]], "dense", vec![("data", part("u8", uints(&blob), vec![]))], None);
        refused(f.finish(&manifest(vec![("a", d(a)), ("b", d(b))])))
    };
    assert_eq!(two([4096, 8192], [8192, 8]), Some(Rule::Overlap));
    assert_eq!(two([4096, 8], [4096, 8]), None, "identical blobs are shared");
    assert_eq!(two([4096, 8], [4096, 4]), Some(Rule::Overlap), "a prefix is a partial overlap");
    assert_eq!(two([4096, 0], [4096, 8]), None, "empty blobs overlap nothing");
    assert_eq!(two([8192, 8], [4096, 4096]), None, "adjacent blobs");
}

#[test]
fn layout_rules() {
    let f32x = |n: usize| vec![0u8; 4 * n];
    assert_eq!(refused(dense("f32", &[3], f32x(2))), Some(Rule::SizeMismatch));
    let f4 = |n: usize| one("t", &[5], "dense", vec![("data", "u8", vec![0; n], vec![("type", t("f4_e2m1"))])], None);
    assert_eq!(refused(f4(4)), Some(Rule::SizeMismatch));
    assert_eq!(refused(f4(3)), None);
    let extra = vec![("data", "u8", vec![1; 8], vec![]), ("extra", "u8", vec![1; 8], vec![])];
    assert_eq!(refused(one("t", &[8], "dense", extra, None)), Some(Rule::BadField));
    assert_eq!(refused(one("t", &[8], "dense", vec![("other", "u8", vec![1; 8], vec![])], None)), Some(Rule::BadField));
    let z = |decoded: u64| vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", V::U(decoded))];
    assert_eq!(
        refused(one("t", &[8], "dense", vec![("data", "u8", vec![1; 3], z(7))], None)),
        Some(Rule::SizeMismatch)
    );

    let csr = |parts: Vec<PartSpec<'_>>, shape: &[u64]| refused(one("m", shape, "zt.sparse_csr/1", parts, None));
    let good = || {
        vec![
            ("indices", "u64", vec![0; 24], vec![]),
            ("indptr", "u64", vec![0; 24], vec![]),
            ("values", "f32", f32x(3), vec![]),
        ]
    };
    assert_eq!(csr(good(), &[2, 3]), None);
    assert_eq!(csr(good(), &[6]), Some(Rule::BadSparse), "rank 1");
    assert_eq!(csr(good()[..2].to_vec(), &[2, 3]), Some(Rule::BadSparse), "missing values");
    let mut signed = good();
    (signed[0].1, signed[1].1) = ("i64", "i64");
    assert_eq!(csr(signed, &[2, 3]), Some(Rule::BadSparse));
    let mut mixed = good();
    mixed[1] = ("indptr", "u32", vec![0; 12], vec![]);
    assert_eq!(csr(mixed, &[2, 3]), Some(Rule::BadSparse));
    let mut short_indptr = good();
    short_indptr[1].2 = vec![0; 16];
    assert_eq!(csr(short_indptr, &[2, 3]), Some(Rule::BadSparse));
    let mut short_values = good();
    short_values[2].2 = f32x(2);
    assert_eq!(csr(short_values, &[2, 3]), Some(Rule::BadSparse));

    let coo = |coords: Vec<u8>, shape: &[u64], values: usize| {
        let parts = vec![("coords", "u64", coords, vec![]), ("values", "f32", f32x(values), vec![])];
        refused(one("s", shape, "zt.sparse_coo/1", parts, None))
    };
    assert_eq!(coo(vec![0; 32], &[3, 4], 2), None);
    assert_eq!(coo(vec![0; 24], &[3, 4], 2), Some(Rule::BadSparse), "coords not whole rows");
    assert_eq!(coo(vec![0; 32], &[3, 4], 3), Some(Rule::BadSparse), "values for another nnz");
    assert_eq!(coo(vec![0; 8], &[], 1), Some(Rule::BadSparse), "rank 0");
}

#[test]
fn quantized_profile_rules() {
    let gguf = |shape: &[u64], attrs: Vec<(&str, V)>, bytes: usize, dtype: &str| {
        refused(one("q", shape, "gguf.q8_0/1", vec![("data", dtype, vec![0; bytes], vec![])], Some(m(attrs))))
    };
    let epb = |e: u64, b: u64| vec![("elems_per_block", V::U(e)), ("block_bytes", V::U(b))];
    assert_eq!(gguf(&[64], epb(32, 34), 68, "u8"), None);
    assert_eq!(gguf(&[64], epb(32, 34), 68, "i8"), Some(Rule::BadQuantization));
    assert_eq!(gguf(&[64], epb(32, 34), 67, "u8"), Some(Rule::BadQuantization));
    assert_eq!(gguf(&[2, 48], epb(32, 34), 102, "u8"), Some(Rule::BadQuantization), "blocks across rows");
    assert_eq!(gguf(&[64], epb(0, 34), 0, "u8"), Some(Rule::BadQuantization));
    assert_eq!(gguf(&[64], vec![("elems_per_block", V::U(32))], 68, "u8"), Some(Rule::MissingField));
    // Self-consistent but not ggml's Q8_0: the file is sound, the object unreadable.
    assert_eq!(gguf(&[64], epb(32, 36), 72, "u8"), None);

    let group = |attrs: Vec<(&str, V)>, parts: Vec<PartSpec<'_>>| {
        refused(one("q", &[64, 2], "zt.quant_group/1", parts, Some(m(attrs))))
    };
    let attrs = |bits: u64, word: &str, per_word: u64, zero: V| {
        vec![
            ("bits", V::U(bits)),
            ("group_size", V::U(32)),
            ("axis", V::U(0)),
            ("packing", m(vec![("word", t(word)), ("order", t("lsb_first")), ("per_word", V::U(per_word))])),
            ("scale_form", t("f32_factors")),
            ("zero_point", zero),
        ]
    };
    let implied = || m(vec![("form", t("implied")), ("value", V::U(8))]);
    // 128 codes of 4 bits in u32 words: 16 words; 2 groups x 2 lanes of scales.
    let parts = |data: usize, scales: usize| {
        vec![("data", "u32", vec![0; data], vec![]), ("scales", "f32", vec![0; scales], vec![])]
    };
    assert_eq!(group(attrs(4, "u32", 8, implied()), parts(64, 16)), None);
    assert_eq!(group(attrs(4, "u32", 4, implied()), parts(64, 16)), Some(Rule::BadQuantization), "per_word");
    assert_eq!(group(attrs(7, "u32", 4, implied()), parts(64, 16)), Some(Rule::BadQuantization), "7 bits");
    assert_eq!(group(attrs(3, "u32", 10, implied()), parts(64, 16)), Some(Rule::BadQuantization), "3 bits in 32");
    assert_eq!(group(attrs(4, "u16", 4, implied()), parts(64, 16)), Some(Rule::BadQuantization), "word");
    assert_eq!(group(attrs(4, "u32", 8, implied()), parts(60, 16)), Some(Rule::BadQuantization), "data size");
    assert_eq!(group(attrs(4, "u32", 8, implied()), parts(64, 12)), Some(Rule::BadQuantization), "scales size");
    let none = m(vec![("form", t("none")), ("value", V::U(8))]);
    assert_eq!(group(attrs(4, "u32", 8, none), parts(64, 16)), Some(Rule::BadQuantization), "value without implied");
    let tensor = m(vec![("form", t("tensor")), ("packing", t("plain"))]);
    assert_eq!(group(attrs(4, "u32", 8, tensor.clone()), parts(64, 16)), Some(Rule::BadQuantization), "no zeros");
    let mut with_zeros = parts(64, 16);
    with_zeros.push(("zeros", "u8", vec![0; 4], vec![]));
    assert_eq!(group(attrs(4, "u32", 8, tensor), with_zeros), None);
    let mut bad_axis = attrs(4, "u32", 8, implied());
    bad_axis[2].1 = V::U(2);
    assert_eq!(group(bad_axis, parts(64, 16)), Some(Rule::BadQuantization));
    let mut e8m0 = attrs(4, "u32", 8, implied());
    e8m0[4].1 = t("e8m0_exponent");
    assert_eq!(group(e8m0, parts(64, 16)), Some(Rule::BadQuantization), "e8m0 scales of f32");
    assert_eq!(group(attrs(4, "u32", 8, implied())[1..].to_vec(), parts(64, 16)), Some(Rule::MissingField));

    let mx = |shape: &[u64], block: u64, data: (&str, Option<&str>, usize), scales: usize| {
        let more = |l: Option<&str>| l.map(|l| vec![("type", t(l))]).unwrap_or_default();
        let parts = vec![
            ("data", data.0, vec![0; data.2], more(data.1)),
            ("scales", "u8", vec![127; scales], more(Some("f8_e8m0"))),
        ];
        let attrs = m(vec![("block_size", V::U(block)), ("scale_form", t("e8m0_exponent"))]);
        refused(one("q", shape, "zt.mx/1", parts, Some(attrs)))
    };
    assert_eq!(mx(&[2, 64], 32, ("u8", Some("f4_e2m1"), 64), 4), None);
    assert_eq!(mx(&[2, 64], 32, ("i8", None, 128), 4), None);
    assert_eq!(mx(&[2, 64], 32, ("u8", Some("f8_e5m2"), 128), 4), None);
    assert_eq!(mx(&[2, 64], 32, ("u8", None, 128), 4), Some(Rule::BadQuantization), "plain u8 elements");
    assert_eq!(mx(&[2, 64], 32, ("u8", Some("bool"), 128), 4), Some(Rule::BadQuantization));
    assert_eq!(mx(&[2, 64], 32, ("u8", Some("f4_e2m1"), 63), 4), Some(Rule::BadQuantization));
    assert_eq!(mx(&[2, 64], 32, ("u8", Some("f4_e2m1"), 64), 3), Some(Rule::BadQuantization));
    assert_eq!(mx(&[2, 48], 32, ("u8", Some("f4_e2m1"), 48), 3), Some(Rule::BadQuantization), "blocks across rows");
    assert_eq!(mx(&[2, 64], 1, ("u8", Some("f4_e2m1"), 64), 128), Some(Rule::BadQuantization), "block of 1");
    assert_eq!(mx(&[], 32, ("i8", None, 1), 0), Some(Rule::BadQuantization), "a scalar");
}
