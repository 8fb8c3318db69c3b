//! zTensor 2 objects breaking a rule of their layout (spec §5.1 and the profiles' metadata
//! rules): refused at open.

use super::{Part, f32s, m, one, u32s, u64s};
use crate::build::cbor::{C, t};
use crate::case::{Family as F, Folder};
use tensorfile::Rule;

pub(super) fn dense_objects(f: &mut Folder) {
    f.open(
        "dense-size",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "3 f32 elements in 8 bytes",
        super::dense("f32", &[3], vec![0; 8], vec![]),
    );
    let fp4 = vec![("type", t("f4_e2m1"))];
    f.open(
        "dense-fp4-size",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "5 fp4 elements in 4 bytes (3 hold them)",
        super::dense("u8", &[5], vec![0; 4], fp4),
    );
    let z = vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", C::U(7))];
    f.open(
        "dense-decoded-length",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "8 u8 elements decoding to 7 bytes",
        super::dense("u8", &[8], vec![0; 20], z),
    );
    let extra: Vec<Part<'_>> = vec![("data", "u8", vec![1; 8], vec![]), ("extra", "u8", vec![1; 8], vec![])];
    f.open(
        "dense-extra-part",
        F::BadField,
        Rule::BadField,
        "a dense object with a second part",
        one("t", &[8], "dense", extra, None),
    );
    let other: Vec<Part<'_>> = vec![("weights", "u8", vec![1; 8], vec![])];
    f.open(
        "dense-no-data",
        F::BadField,
        Rule::BadField,
        "a dense object whose part is not named data",
        one("t", &[8], "dense", other, None),
    );
}

pub(super) fn csr_parts(indptr: Vec<u8>, indices: (&'static str, Vec<u8>), values: usize) -> Vec<Part<'static>> {
    vec![
        ("indptr", indices.0, indptr, vec![]),
        ("indices", indices.0, indices.1, vec![]),
        ("values", "f32", vec![0; 4 * values], vec![]),
    ]
}

pub(super) fn sparse(f: &mut Folder) {
    let csr = |parts: Vec<Part<'_>>, shape: &[u64]| one("s", shape, "zt.sparse_csr/1", parts, None);
    let good = || csr_parts(u64s(&[0, 2, 3]), ("u64", u64s(&[0, 2, 1])), 3);
    f.open("csr-rank-1", F::BadSparse, Rule::BadSparse, "a CSR object of rank 1", csr(good(), &[6]));
    f.open(
        "csr-missing-part",
        F::BadSparse,
        Rule::BadSparse,
        "a CSR object without values",
        csr(good()[..2].to_vec(), &[2, 3]),
    );
    let signed = csr_parts(u64s(&[0, 2, 3]), ("i64", u64s(&[0, 2, 1])), 3);
    f.open("csr-signed-indices", F::BadSparse, Rule::BadSparse, "i64 indices", csr(signed, &[2, 3]));
    let mut mixed = good();
    mixed[0] = ("indptr", "u32", u32s(&[0, 2, 3]), vec![]);
    f.open("csr-indptr-dtype", F::BadSparse, Rule::BadSparse, "u32 indptr with u64 indices", csr(mixed, &[2, 3]));
    let short = csr_parts(u64s(&[0, 3]), ("u64", u64s(&[0, 2, 1])), 3);
    f.open("csr-indptr-count", F::BadSparse, Rule::BadSparse, "2 row pointers for 2 rows", csr(short, &[2, 3]));
    let values = csr_parts(u64s(&[0, 2, 3]), ("u64", u64s(&[0, 2, 1])), 2);
    f.open("csr-values-size", F::BadSparse, Rule::BadSparse, "2 values for 3 indices", csr(values, &[2, 3]));

    let coo = |coords: Vec<u8>, shape: &[u64], values: usize, dtype: &'static str| {
        let parts: Vec<Part<'_>> =
            vec![("coords", dtype, coords, vec![]), ("values", "f32", vec![0; 4 * values], vec![])];
        one("s", shape, "zt.sparse_coo/1", parts, None)
    };
    f.open("coo-rank-0", F::BadSparse, Rule::BadSparse, "a COO scalar", coo(u64s(&[]), &[], 0, "u64"));
    f.open(
        "coo-coords-rows",
        F::BadSparse,
        Rule::BadSparse,
        "3 coordinates for rank 2",
        coo(u64s(&[0, 1, 2]), &[3, 4], 1, "u64"),
    );
    f.open(
        "coo-values-size",
        F::BadSparse,
        Rule::BadSparse,
        "3 values for 2 coordinates",
        coo(u64s(&[0, 1, 2, 3]), &[3, 4], 3, "u64"),
    );
    f.open(
        "coo-coords-float",
        F::BadSparse,
        Rule::BadSparse,
        "f32 coordinates",
        coo(f32s(&[0.0, 1.0]), &[3, 4], 1, "f32"),
    );
}

pub(super) fn quantized(f: &mut Folder) {
    let gguf = |shape: &[u64], epb: u64, bytes: usize, dtype: &'static str| {
        let attrs = m(vec![("elems_per_block", C::U(epb)), ("block_bytes", C::U(34))]);
        one("q", shape, "gguf.q8_0/1", vec![("data", dtype, vec![0; bytes], vec![])], Some(attrs))
    };
    f.open("gguf-size", F::BadField, Rule::BadQuantization, "2 Q8_0 blocks in 67 bytes", gguf(&[64], 32, 67, "u8"));
    f.open("gguf-dtype", F::BadField, Rule::BadQuantization, "ggml blocks as i8", gguf(&[64], 32, 68, "i8"));
    f.open(
        "gguf-row",
        F::BadField,
        Rule::BadQuantization,
        "blocks of 32 across rows of 48",
        gguf(&[2, 48], 32, 102, "u8"),
    );
    f.open("gguf-block-zero", F::BadField, Rule::BadQuantization, "elems_per_block 0", gguf(&[64], 0, 0, "u8"));
    let attrs = m(vec![("elems_per_block", C::U(32))]);
    let parts: Vec<Part<'_>> = vec![("data", "u8", vec![0; 68], vec![])];
    f.open(
        "gguf-no-block-bytes",
        F::BadField,
        Rule::MissingField,
        "no block_bytes",
        one("q", &[64], "gguf.q8_0/1", parts, Some(attrs)),
    );

    // 64 x 2 codes of 4 bits in u32 words, groups of 32 along axis 0: 16 words, 4 scales.
    let group = |bits: u64, word: &str, per_word: u64, scale_form: &str, zero: C, parts: Vec<Part<'_>>| {
        let attrs = m(vec![
            ("bits", C::U(bits)),
            ("group_size", C::U(32)),
            ("axis", C::U(0)),
            ("packing", m(vec![("word", t(word)), ("order", t("lsb_first")), ("per_word", C::U(per_word))])),
            ("scale_form", t(scale_form)),
            ("zero_point", zero),
        ]);
        one("q", &[64, 2], "zt.quant_group/1", parts, Some(attrs))
    };
    let implied = || m(vec![("form", t("implied")), ("value", C::U(8))]);
    let parts = |data: usize, scales: usize| -> Vec<Part<'static>> {
        vec![("data", "u32", vec![0; data], vec![]), ("scales", "f32", vec![0; scales], vec![])]
    };
    f.valid(
        "quant-group-bias8",
        F::Valid,
        "zt.quant_group/1 at the bias-8 int4 point",
        group(4, "u32", 8, "f32_factors", implied(), parts(64, 16)),
    );
    f.open(
        "group-bits-7",
        F::BadField,
        Rule::BadQuantization,
        "7-bit codes",
        group(7, "u32", 4, "f32_factors", implied(), parts(64, 16)),
    );
    f.open(
        "group-per-word",
        F::BadField,
        Rule::BadQuantization,
        "per_word 4 for 4-bit codes in u32",
        group(4, "u32", 4, "f32_factors", implied(), parts(64, 16)),
    );
    f.open(
        "group-word",
        F::BadField,
        Rule::BadQuantization,
        "packing.word u16 over u32 data",
        group(4, "u16", 4, "f32_factors", implied(), parts(64, 16)),
    );
    f.open(
        "group-data-size",
        F::BadField,
        Rule::BadQuantization,
        "60 bytes of codes where 64 hold them",
        group(4, "u32", 8, "f32_factors", implied(), parts(60, 16)),
    );
    f.open(
        "group-scales-size",
        F::BadField,
        Rule::BadQuantization,
        "3 scales for 4 groups",
        group(4, "u32", 8, "f32_factors", implied(), parts(64, 12)),
    );
    f.open(
        "group-e8m0-of-f32",
        F::BadField,
        Rule::BadQuantization,
        "e8m0_exponent scales stored as f32",
        group(4, "u32", 8, "e8m0_exponent", implied(), parts(64, 16)),
    );
    let none_with_value = m(vec![("form", t("none")), ("value", C::U(8))]);
    f.open(
        "group-zero-point",
        F::BadField,
        Rule::BadQuantization,
        "zero point none with a value",
        group(4, "u32", 8, "f32_factors", none_with_value, parts(64, 16)),
    );
    let tensor = m(vec![("form", t("tensor")), ("packing", t("plain"))]);
    f.open(
        "group-no-zeros",
        F::BadField,
        Rule::BadQuantization,
        "zero points in a tensor, and no zeros part",
        group(4, "u32", 8, "f32_factors", tensor, parts(64, 16)),
    );

    let mx = |shape: &[u64], block: u64, data: (&'static str, Option<&str>, usize), scales: (Option<&str>, usize)| {
        let typed = |l: Option<&str>| l.map(|l| vec![("type", t(l))]).unwrap_or_default();
        let parts: Vec<Part<'_>> = vec![
            ("data", data.0, vec![0; data.2], typed(data.1)),
            ("scales", "u8", vec![127; scales.1], typed(scales.0)),
        ];
        let attrs = m(vec![("block_size", C::U(block)), ("scale_form", t("e8m0_exponent"))]);
        one("q", shape, "zt.mx/1", parts, Some(attrs))
    };
    let e8m0 = Some("f8_e8m0");
    f.valid("mx-int8", F::Valid, "zt.mx/1 with i8 elements", mx(&[2, 64], 32, ("i8", None, 128), (e8m0, 4)));
    f.open(
        "mx-scales-plain",
        F::BadField,
        Rule::BadQuantization,
        "scales without type f8_e8m0",
        mx(&[2, 64], 32, ("i8", None, 128), (None, 4)),
    );
    f.open(
        "mx-element",
        F::BadField,
        Rule::BadQuantization,
        "plain u8 elements",
        mx(&[2, 64], 32, ("u8", None, 128), (e8m0, 4)),
    );
    f.open(
        "mx-block-1",
        F::BadField,
        Rule::BadQuantization,
        "a block of one element",
        mx(&[2, 64], 1, ("i8", None, 128), (e8m0, 128)),
    );
    f.open(
        "mx-block-row",
        F::BadField,
        Rule::BadQuantization,
        "blocks of 32 across rows of 48",
        mx(&[2, 48], 32, ("i8", None, 96), (e8m0, 3)),
    );
    f.open(
        "mx-data-size",
        F::BadField,
        Rule::BadQuantization,
        "63 bytes of fp4 where 64 hold them",
        mx(&[2, 64], 32, ("u8", Some("f4_e2m1"), 63), (e8m0, 4)),
    );
    f.open(
        "mx-scales-size",
        F::BadField,
        Rule::BadQuantization,
        "3 scales for 4 blocks",
        mx(&[2, 64], 32, ("i8", None, 128), (e8m0, 3)),
    );
}
