//! zTensor 2 files that must read: every storage and logical type, attributes of every CBOR
//! kind, shared blobs, encoded parts, digests, every registered layout, a data shard, an
//! appended generation, and a file made by pip `ztensor` 2.1.2 (`tests/zt2.rs` reads all of
//! its fixtures).

use super::{
    File, Fixtures, checked_frame, dense, f32s, float, m, manifest, object, one, part, seekable, seekable_of, u32s,
    u64s, uints, xxh3,
};
use crate::build::cbor::{C, t};
use crate::case::{Family as F, Folder};

pub(super) fn cases(f: &mut Folder, fx: &Fixtures) -> Result<(), String> {
    f.valid("minimal", F::Valid, "one u8 tensor of 8 bytes at 4096", dense("u8", &[8], vec![1; 8], vec![]));
    f.valid("no-objects", F::Valid, "a manifest with no objects", File::new().finish(&manifest(vec![])));
    let mut shard = super::MAGIC.to_vec();
    shard.extend_from_slice(&super::footer(0, 0, 0, 2));
    f.valid("data-shard", F::Valid, "48 bytes: no manifest (footer fields 0), a data shard", shard);
    f.valid("scalar", F::Valid, "shape [] (one element)", dense("f32", &[], f32s(&[1.5]), vec![]));
    f.valid("zero-size", F::Valid, "shape [0, 4]: a blob of 0 bytes", dense("f32", &[0, 4], vec![], vec![]));

    let mut file = File::new();
    let storage = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8"];
    let widths = [8usize, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1];
    let mut objects = Vec::new();
    for (i, (name, width)) in storage.iter().zip(widths).enumerate() {
        let blob = file.blob(&(0..3 * width).map(|b| (b * 7 + i) as u8).collect::<Vec<u8>>());
        objects.push((*name, object(&[3], "dense", vec![("data", part(name, blob, vec![]))], None)));
    }
    let logical: [(&str, &str, &[u64], Vec<u8>); 9] = [
        ("bool", "u8", &[4], vec![0, 1, 1, 0]),
        ("f8_e4m3fn", "u8", &[2], vec![0x38, 0xb8]),
        ("f8_e5m2", "u8", &[2], vec![0x3c, 0xbc]),
        ("f8_e4m3fnuz", "u8", &[1], vec![0x40]),
        ("f8_e5m2fnuz", "u8", &[1], vec![0x40]),
        ("f8_e8m0", "u8", &[3], vec![126, 127, 128]),
        ("f4_e2m1", "u8", &[2, 2], vec![0x21, 0x43]),
        ("complex64", "f32", &[1], f32s(&[1.0, -1.0])),
        ("complex128", "f64", &[1], vec![0; 16]),
    ];
    for (name, dtype, shape, bytes) in logical {
        let blob = file.blob(&bytes);
        objects.push((name, object(shape, "dense", vec![("data", part(dtype, blob, vec![("type", t(name))]))], None)));
    }
    f.valid(
        "every-type",
        F::Valid,
        "the 12 storage types and the 9 registered logical types",
        file.finish(&manifest(objects)),
    );

    let attrs = m(vec![
        ("uint", C::U(u64::MAX)),
        ("nint", C::Neg(u64::MAX)),
        ("half", float(1.5)),
        ("single", float(100000.0)),
        ("double", float(0.1)),
        ("nan", float(f64::NAN)),
        ("infinity", float(f64::NEG_INFINITY)),
        ("negative-zero", float(-0.0)),
        ("text", t("ünïcødé")),
        ("bytes", C::Raw(vec![0x43, 0, 1, 2])),
        ("flags", C::Array(vec![C::Raw(vec![0xf4]), C::Raw(vec![0xf5]), C::Raw(vec![0xf6])])),
        ("nested", m(vec![("deeper", m(vec![("list", uints(&[1, 2]))]))])),
    ]);
    let mut file = File::new();
    let blob = file.blob(&[1, 2, 3, 4]);
    let object_attrs = m(vec![("role", t("bias")), ("scale", float(0.25))]);
    let doc = m(vec![
        ("attributes", attrs),
        (
            "objects",
            m(vec![("t", object(&[4], "dense", vec![("data", part("u8", blob, vec![]))], Some(object_attrs)))]),
        ),
        ("x-unknown-field", m(vec![("ignored", C::U(1))])),
    ]);
    f.valid(
        "attributes",
        F::Valid,
        "file and object attributes of every CBOR kind the spec permits; an unknown root field (ignored)",
        file.finish(&doc),
    );

    let mut file = File::new();
    let blob = file.blob(&[7; 8]);
    let d = |more: Vec<(&str, C)>| object(&[8], "dense", vec![("data", part("u8", blob.clone(), more))], None);
    let doc = manifest(vec![("embed", d(vec![])), ("lm_head", d(vec![("digest", t(&xxh3(&[7; 8])))]))]);
    f.valid("shared-blob", F::Valid, "two objects referencing one blob (identical references)", file.finish(&doc));

    let data = f32s(&(0..3000).map(|i| i as f32).collect::<Vec<_>>());
    let sha = format!("sha256:{}", super::super::zt::hex(&super::super::zt::sha256(&data)));
    let z = vec![
        ("encoding", t("zt.zstd-seekable/1")),
        ("decoded_length", C::U(data.len() as u64)),
        ("digest", t(&xxh3(&data))),
    ];
    f.valid(
        "zstd-seekable",
        F::Valid,
        "a part encoded zt.zstd-seekable/1 in three frames (the last shorter), with an xxh3 digest of the decoded bytes",
        dense("f32", &[3000], seekable_of(&data, 4096), z),
    );
    let empty = vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", C::U(0))];
    f.valid(
        "zstd-seekable-empty",
        F::Valid,
        "an encoded part of no bytes: no frames",
        dense("f32", &[0], seekable(&[]), empty),
    );
    let frame = (checked_frame(&[5; 6]), 6);
    let one_frame = vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", C::U(6))];
    f.valid("zstd-seekable-one-frame", F::Valid, "one frame", dense("u8", &[6], seekable(&[frame]), one_frame));
    f.valid("sha256", F::Valid, "a sha256 digest that matches", dense("f32", &[3000], data, vec![("digest", t(&sha))]));

    let coo =
        vec![("coords", "u32", u32s(&[0, 2, 2, 1, 0, 3]), vec![]), ("values", "f32", f32s(&[1.0, -2.0, 4.0]), vec![])];
    f.valid(
        "sparse-coo",
        F::Valid,
        "zt.sparse_coo/1, u32 coordinates",
        one("s", &[3, 4], "zt.sparse_coo/1", coo, None),
    );
    let csr = vec![
        ("indptr", "u64", u64s(&[0, 1, 1, 3]), vec![]),
        ("indices", "u64", u64s(&[1, 0, 3]), vec![]),
        ("values", "u8", vec![1, 0, 1], vec![("type", t("bool"))]),
    ];
    f.valid(
        "sparse-csr",
        F::Valid,
        "zt.sparse_csr/1, u64 indices, bool values",
        one("s", &[3, 4], "zt.sparse_csr/1", csr, None),
    );

    let gguf = m(vec![("elems_per_block", C::U(32)), ("block_bytes", C::U(34))]);
    let parts = vec![("data", "u8", vec![0; 2 * 34], vec![])];
    f.valid(
        "gguf-q8_0",
        F::Valid,
        "gguf.q8_0/1: two blocks kept verbatim",
        one("q", &[64], "gguf.q8_0/1", parts, Some(gguf)),
    );
    let awq = m(vec![
        ("bits", C::U(4)),
        ("group_size", C::U(32)),
        ("axis", C::U(0)),
        ("packing", m(vec![("word", t("u32")), ("order", t("lsb_first")), ("per_word", C::U(8))])),
        ("scale_form", t("f16_factors")),
        ("zero_point", m(vec![("form", t("tensor")), ("packing", t("same_as_data"))])),
    ]);
    // 64 x 8 codes: 2 groups along axis 0, 8 lanes.
    let parts = vec![
        ("data", "u32", vec![0x11; 64 * 8 / 8 * 4], vec![]),
        ("scales", "f16", vec![0; 16 * 2], vec![]),
        ("zeros", "u32", vec![0x88; 16 / 8 * 4], vec![]),
    ];
    f.valid(
        "quant-group-awq",
        F::Valid,
        "zt.quant_group/1 at the AWQ point (packed zero points, f16 scales)",
        one("q", &[64, 8], "zt.quant_group/1", parts, Some(awq)),
    );
    let mx = m(vec![("block_size", C::U(32)), ("scale_form", t("e8m0_exponent"))]);
    let parts = vec![
        ("data", "u8", vec![0x21; 64], vec![("type", t("f4_e2m1"))]),
        ("scales", "u8", vec![127; 4], vec![("type", t("f8_e8m0"))]),
    ];
    f.valid("mx-fp4", F::Valid, "zt.mx/1 with f4_e2m1 elements", one("q", &[2, 64], "zt.mx/1", parts, Some(mx)));

    let mut first = File::new();
    let a = first.blob(&[1, 2, 3, 4]);
    let d = |blob: C, n: u64| object(&[n], "dense", vec![("data", part("u8", blob, vec![]))], None);
    let mut appended = File { bytes: first.finish(&manifest(vec![("a", d(a.clone(), 4))])) };
    let b = appended.blob(&[5, 6]);
    f.valid(
        "appended",
        F::Valid,
        "a file amended by appending (spec §2.5): its first manifest and footer left unreferenced inside",
        appended.finish(&manifest(vec![("a", d(a, 4)), ("b", d(b, 2))])),
    );
    let mut reserved = dense("u8", &[8], vec![1; 8], vec![]);
    let n = reserved.len();
    reserved[n - 12] = 1;
    f.valid("reserved-footer-field", F::Valid, "the footer's reserved field not 0 (readers ignore it)", reserved);

    let what = "a GGUF converted by ztensor.convert: ggml blocks, file attributes (fixture made by pip ztensor 2.1.2)";
    f.valid("ztensor-gguf", F::Valid, what, fx.read("zt2/gguf.zt")?);
    Ok(())
}
