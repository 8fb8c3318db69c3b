//! Writing zTensor 2: every file is taken apart here from the spec alone (footer, manifest,
//! blobs) and checked against canonical form (§6.3): 64 KiB placement in (object, part) name
//! order from 64 KiB on, the manifest last and the footer right after it, zero padding, an
//! XXH3 digest on every part that matches its bytes, equal parts stored once. The same
//! tensors give the same bytes whatever order they are handed over in. Byte-for-byte
//! agreement with pip `ztensor` 2.1.2 is checked by `tests/zt2_canonical.rs` (its files,
//! committed) and `tests/interop/test_zt2.py` (its `convert`).

use crate::zt2_common;

use std::path::Path;

use serde_cbor::Value;
use tensorfile::convert::{ConvertOptions, convert_file};
use tensorfile::formats::{Compression, WriteOption, WriteOptions, WriteRequest, write_to_vec};
use tensorfile::model::quant::{BitOrder, GgmlType, GroupQuant, MxElement, MxQuant, Quant, ScaleForm, ZeroPoint};
use tensorfile::model::{Kind, MetaValue, SparseData, SparseFormat};
use tensorfile::source::Bytes;
use tensorfile::{DType, Format, Layout, TensorData, TensorFile, TensorInfo};
use zt2_common::{Zt2File, text, uint};

fn bytes(v: Vec<u8>) -> Bytes {
    Bytes::from_vec(v)
}

/// Deterministic bytes, different for each seed.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn dense(name: &str, dtype: DType, shape: &[u64], data: Vec<u8>) -> (TensorInfo, TensorData) {
    (TensorInfo::dense(name, dtype, shape.to_vec()), TensorData::dense(bytes(data)))
}

fn quantized(name: &str, shape: &[u64], q: Quant, parts: Vec<(&'static str, Vec<u8>)>) -> (TensorInfo, TensorData) {
    let info =
        TensorInfo::new(name, Kind::Tensor, DType::Float32, shape.to_vec(), Layout::Quantized(q.clone())).unwrap();
    (info, TensorData::quantized(q, parts.into_iter().map(|(n, b)| (n, bytes(b))).collect()))
}

/// Write `tensors` in the order zTensor 2 stores them (as `convert` does).
fn write(tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) -> Zt2File {
    let infos: Vec<TensorInfo> = tensors.iter().map(|(i, _)| i.clone()).collect();
    let ordered: Vec<_> = Format::Zt2.write_order(&infos).into_iter().map(|k| tensors[k].clone()).collect();
    let file = Zt2File::parse(write_to_vec(Format::Zt2, &ordered, options).unwrap());
    file.check_canonical();
    file
}

fn refused(info: TensorInfo) -> String {
    let err = Format::Zt2.check_supported(&info).unwrap_err();
    err.detail()
}

#[test]
fn a_file_without_tensors_is_the_magic_a_manifest_at_64k_and_the_footer() {
    let file = write(&[], &WriteOptions::default());
    let manifest = [&[0xa1, 0x67][..], b"objects", &[0xa0]].concat();
    assert_eq!(file.bytes.len(), 65536 + manifest.len() + 40);
    assert_eq!(&file.bytes[..8], b"\x89ZT2\r\n\x1a\n");
    assert!(file.bytes[8..65536].iter().all(|&b| b == 0));
    assert_eq!(&file.bytes[65536..65536 + manifest.len()], &manifest[..]);
    assert_eq!(file.manifest_at, 65536);
}

#[test]
fn dense_tensors_are_stored_with_their_zt2_types() {
    // (dtype, shape, storage dtype, logical type)
    let cases: &[(DType, &[u64], &str, Option<&str>)] = &[
        (DType::Float32, &[2, 3], "f32", None),
        (DType::Float64, &[2], "f64", None),
        (DType::Float16, &[4], "f16", None),
        (DType::BFloat16, &[4], "bf16", None),
        (DType::Int8, &[3], "i8", None),
        (DType::Int16, &[3], "i16", None),
        (DType::Int32, &[3], "i32", None),
        (DType::Int64, &[3], "i64", None),
        (DType::UInt8, &[3], "u8", None),
        (DType::UInt16, &[3], "u16", None),
        (DType::UInt32, &[3], "u32", None),
        (DType::UInt64, &[3], "u64", None),
        (DType::Bool, &[5], "u8", Some("bool")),
        (DType::Complex64, &[2], "f32", Some("complex64")),
        (DType::Complex128, &[2], "f64", Some("complex128")),
        (DType::Float8E4M3Fn, &[3], "u8", Some("f8_e4m3fn")),
        (DType::Float8E5M2, &[3], "u8", Some("f8_e5m2")),
        (DType::Float8E4M3Fnuz, &[3], "u8", Some("f8_e4m3fnuz")),
        (DType::Float8E5M2Fnuz, &[3], "u8", Some("f8_e5m2fnuz")),
        (DType::Float8E8M0Fnu, &[3], "u8", Some("f8_e8m0")),
        (DType::Float4E2M1Fn, &[2, 4], "u8", Some("f4_e2m1")),
        (DType::Float32, &[], "f32", None),
        (DType::Float32, &[0, 5], "f32", None),
    ];
    let tensors: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(k, &(dtype, shape, _, _))| {
            let info = TensorInfo::dense(format!("t{k:02}.{}", dtype.name()), dtype, shape.to_vec());
            let n = info.nbytes().unwrap() as usize;
            let data = if dtype == DType::Bool { (0..n).map(|i| (i % 2) as u8).collect() } else { pattern(k as u8, n) };
            (info, TensorData::dense(bytes(data)))
        })
        .collect();
    let file = write(&tensors, &WriteOptions::default());
    assert_eq!(file.objects().len(), cases.len());
    for ((info, data), &(_, shape, storage, logical)) in tensors.iter().zip(cases) {
        let object = file.object(info.name());
        assert_eq!(object.layout, "dense");
        assert_eq!(object.shape, shape);
        assert_eq!(object.attributes, None, "{}", info.name());
        assert_eq!(object.parts.len(), 1);
        let part = &object.parts["data"];
        assert_eq!((part.dtype.as_str(), part.logical.as_deref()), (storage, logical), "{}", info.name());
        assert_eq!(file.blob(part), &data.as_dense().unwrap()[..]);
    }
}

#[test]
fn the_same_tensors_give_the_same_bytes_in_any_order() {
    let tensors = vec![
        dense("b.weight", DType::Float32, &[4, 4], pattern(1, 64)),
        dense("a.bias", DType::Float32, &[4], pattern(2, 16)),
        dense("Z", DType::Int64, &[2], pattern(3, 16)),
        dense("caf\u{e9}", DType::UInt8, &[70000], pattern(4, 70000)),
        dense("a", DType::BFloat16, &[3], pattern(5, 6)),
    ];
    let options = WriteOptions { metadata: vec![("k".into(), MetaValue::Text("v".into()))], ..WriteOptions::default() };
    let once = write(&tensors, &options);
    let mut reversed = tensors.clone();
    reversed.reverse();
    assert_eq!(write(&reversed, &options).bytes, once.bytes);
    // Names sort bytewise: upper case first, then "a" before "a.bias", non-ASCII last.
    let order: Vec<String> = once.blob_order().into_iter().map(|(o, _)| o).collect();
    assert_eq!(order, ["Z", "a", "a.bias", "b.weight", "caf\u{e9}"]);
    // 70000 bytes take two 64 KiB steps: the manifest comes after them.
    let big = &once.object("caf\u{e9}").parts["data"];
    assert_eq!(once.manifest_at, (big.offset + 70000).next_multiple_of(65536));
}

#[test]
fn parts_with_equal_bytes_share_one_blob() {
    let same = pattern(9, 100);
    let tensors = vec![
        dense("embed", DType::Float32, &[25], same.clone()),
        dense("head", DType::Float32, &[25], same.clone()),
        dense("other", DType::Float32, &[25], pattern(10, 100)),
        dense("as_bytes", DType::UInt8, &[100], same.clone()),
        dense("empty_a", DType::Float32, &[0], vec![]),
        dense("empty_b", DType::Int8, &[0, 3], vec![]),
    ];
    let file = write(&tensors, &WriteOptions::default());
    let blob = |name: &str| {
        let p = &file.object(name).parts["data"];
        (p.offset, p.length)
    };
    assert_eq!(blob("embed"), blob("head"));
    assert_eq!(blob("embed"), blob("as_bytes"));
    assert_ne!(blob("embed"), blob("other"));
    assert_eq!(blob("empty_a"), blob("empty_b"));
    // Three distinct blobs with bytes (as_bytes first by name), the empty one between.
    assert_eq!(blob("as_bytes").0, 65536);
    assert_eq!(blob("other").0, 2 * 65536);
    assert_eq!(blob("empty_a"), (2 * 65536, 0));
}

#[test]
fn sparse_tensors_are_the_sparse_profiles() {
    let coo = SparseData::new(SparseFormat::Coo, 3, vec![], vec![0, 1, 2, 2, 0, 1], bytes(pattern(1, 12))).unwrap();
    let coo_info = TensorInfo::new(
        "coo",
        Kind::Tensor,
        DType::Float32,
        vec![3, 3],
        Layout::Sparse { format: SparseFormat::Coo, nnz: 3 },
    )
    .unwrap();
    let csr = SparseData::new(SparseFormat::Csr, 3, vec![0, 2, 2, 3], vec![0, 3, 1], bytes(vec![1, 0, 1])).unwrap();
    let csr_info = TensorInfo::new(
        "csr",
        Kind::Tensor,
        DType::Bool,
        vec![3, 4],
        Layout::Sparse { format: SparseFormat::Csr, nnz: 3 },
    )
    .unwrap();
    let tensors = vec![(coo_info.clone(), TensorData::sparse(coo)), (csr_info.clone(), TensorData::sparse(csr))];
    let file = write(&tensors, &WriteOptions::default());
    let u64s = |v: &[u64]| v.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>();

    let coo = file.object("coo");
    assert_eq!(
        (coo.layout.as_str(), coo.shape.as_slice(), coo.attributes.as_ref()),
        ("zt.sparse_coo/1", &[3, 3][..], None)
    );
    assert_eq!(coo.parts.keys().collect::<Vec<_>>(), ["coords", "values"]);
    let coords = &coo.parts["coords"];
    assert_eq!((coords.dtype.as_str(), coords.logical.as_deref()), ("u64", None));
    // Structure of arrays: every row index, then every column index.
    assert_eq!(file.blob(coords), u64s(&[0, 1, 2, 2, 0, 1]));
    assert_eq!(file.blob(&coo.parts["values"]), pattern(1, 12));
    assert_eq!(coo.parts["values"].dtype, "f32");

    let csr = file.object("csr");
    assert_eq!(csr.layout, "zt.sparse_csr/1");
    assert_eq!(csr.parts.keys().collect::<Vec<_>>(), ["indices", "indptr", "values"]);
    assert_eq!(file.blob(&csr.parts["indptr"]), u64s(&[0, 2, 2, 3]));
    assert_eq!(file.blob(&csr.parts["indices"]), u64s(&[0, 3, 1]));
    let values = &csr.parts["values"];
    assert_eq!((values.dtype.as_str(), values.logical.as_deref()), ("u8", Some("bool")));

    // What the profiles' data rules forbid is refused, not written.
    let repeated = SparseData::new(SparseFormat::Coo, 2, vec![], vec![1, 1, 2, 2], bytes(pattern(1, 8))).unwrap();
    let info = coo_info.clone().with_layout(Layout::Sparse { format: SparseFormat::Coo, nnz: 2 }).unwrap();
    let err = write_to_vec(Format::Zt2, &[(info, TensorData::sparse(repeated))], &WriteOptions::default()).unwrap_err();
    assert_eq!(err.tensor(), Some("coo"));
    assert!(err.detail().contains("distinct coordinates"), "{}", err.detail());
    let unsorted =
        SparseData::new(SparseFormat::Csr, 3, vec![0, 2, 2, 3], vec![3, 0, 1], bytes(vec![1, 0, 1])).unwrap();
    let err =
        write_to_vec(Format::Zt2, &[(csr_info, TensorData::sparse(unsorted))], &WriteOptions::default()).unwrap_err();
    assert!(err.detail().contains("increasing within each row"), "{}", err.detail());
}

#[test]
fn ggml_blocks_are_the_gguf_profiles_verbatim() {
    let q4 = quantized("q4", &[2, 64], Quant::Ggml(GgmlType::Q4_0), vec![("blocks", pattern(3, 4 * 18))]);
    let q6 = quantized("q6", &[256], Quant::Ggml(GgmlType::Q6_K), vec![("blocks", pattern(4, 210))]);
    let mx = quantized("mxfp4", &[32], Quant::Ggml(GgmlType::MXFP4), vec![("blocks", pattern(5, 17))]);
    let file = write(&[q4.clone(), q6, mx], &WriteOptions::default());
    for (name, layout, per, size) in
        [("q4", "gguf.q4_0/1", 32, 18), ("q6", "gguf.q6_k/1", 256, 210), ("mxfp4", "gguf.mxfp4/1", 32, 17)]
    {
        let o = file.object(name);
        assert_eq!(o.layout, layout);
        assert_eq!(o.attributes, Some(map(&[("elems_per_block", uint(per)), ("block_bytes", uint(size))])));
        assert_eq!(o.parts.keys().collect::<Vec<_>>(), ["data"]);
        assert_eq!((o.parts["data"].dtype.as_str(), o.parts["data"].logical.as_deref()), ("u8", None));
    }
    assert_eq!(file.object("q4").shape, [2, 64]);
    assert_eq!(file.blob(&file.object("q4").parts["data"]), pattern(3, 72));
    // Types the gguf profiles do not register are refused.
    for t in [GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::NVFP4] {
        let info =
            TensorInfo::new("t", Kind::Tensor, DType::Float32, vec![256], Layout::Quantized(Quant::Ggml(t))).unwrap();
        assert!(refused(info).contains("gguf"), "{t:?}");
    }
}

fn map(pairs: &[(&str, Value)]) -> Value {
    Value::Map(pairs.iter().map(|(k, v)| (text(k), v.clone())).collect())
}

#[test]
fn group_quantization_states_every_parameter() {
    let awq = GroupQuant {
        bits: 4,
        group_size: 8,
        axis: 1,
        word: DType::UInt32,
        order: BitOrder::LsbFirst,
        scale_form: ScaleForm::F16Factors,
        scale_dtype: DType::Float16,
        zero_point: ZeroPoint::Stored { packed: true, dtype: DType::UInt32 },
    };
    // shape [4, 16]: 64 codes in 8 words; 2 groups x 4 lanes = 8 scales; 8 zeros in 1 word.
    let t = quantized(
        "awq",
        &[4, 16],
        Quant::Group(awq.clone()),
        vec![("data", pattern(1, 32)), ("scales", pattern(2, 16)), ("zeros", pattern(3, 4))],
    );
    let bias8 = GroupQuant {
        bits: 8,
        group_size: 0,
        axis: 0,
        word: DType::Int8,
        order: BitOrder::MsbFirst,
        scale_form: ScaleForm::E8m0Exponent,
        scale_dtype: DType::Float8E8M0Fnu,
        zero_point: ZeroPoint::Implied(-8),
    };
    let u = quantized("bias8", &[2, 3], Quant::Group(bias8), vec![("data", pattern(4, 6)), ("scales", pattern(5, 6))]);
    let plain = GroupQuant {
        scale_form: ScaleForm::F32Factors,
        scale_dtype: DType::Float32,
        zero_point: ZeroPoint::Stored { packed: false, dtype: DType::Float16 },
        ..awq.clone()
    };
    let p = quantized(
        "mlx",
        &[4, 16],
        Quant::Group(plain),
        vec![("data", pattern(6, 32)), ("scales", pattern(7, 32)), ("zeros", pattern(8, 16))],
    );
    let file = write(&[t, u, p], &WriteOptions::default());

    let awq = file.object("awq");
    assert_eq!(awq.layout, "zt.quant_group/1");
    assert_eq!(
        awq.attributes,
        Some(map(&[
            ("bits", uint(4)),
            ("group_size", uint(8)),
            ("axis", uint(1)),
            ("packing", map(&[("word", text("u32")), ("order", text("lsb_first")), ("per_word", uint(8))])),
            ("scale_form", text("f16_factors")),
            ("zero_point", map(&[("form", text("tensor")), ("packing", text("same_as_data"))])),
        ]))
    );
    let types = |name: &str| -> Vec<(String, String, Option<String>)> {
        file.object(name).parts.iter().map(|(n, p)| (n.clone(), p.dtype.clone(), p.logical.clone())).collect()
    };
    let ty = |n: &str, d: &str, l: Option<&str>| (n.to_string(), d.to_string(), l.map(str::to_string));
    assert_eq!(types("awq"), [ty("data", "u32", None), ty("scales", "f16", None), ty("zeros", "u32", None)]);
    assert_eq!(file.blob(&awq.parts["zeros"]), pattern(3, 4));

    let bias8 = file.object("bias8");
    let attrs = bias8.attributes.clone().unwrap();
    assert_eq!(
        zt2_common::get(&attrs, "zero_point"),
        &map(&[("form", text("implied")), ("value", Value::Integer(-8))])
    );
    assert_eq!(zt2_common::get(&attrs, "scale_form"), &text("e8m0_exponent"));
    assert_eq!(
        zt2_common::get(&attrs, "packing"),
        &map(&[("word", text("u8")), ("order", text("msb_first")), ("per_word", uint(1))])
    );
    assert_eq!(types("bias8"), [ty("data", "i8", None), ty("scales", "u8", Some("f8_e8m0"))]);

    let mlx = file.object("mlx").attributes.clone().unwrap();
    assert_eq!(zt2_common::get(&mlx, "zero_point"), &map(&[("form", text("tensor")), ("packing", text("plain"))]));
    assert_eq!(types("mlx"), [ty("data", "u32", None), ty("scales", "f32", None), ty("zeros", "f16", None)]);

    // Packed zero points that do not fill whole words have no zTensor 2 form.
    let odd = GroupQuant { group_size: 16, ..awq_like() };
    let info = TensorInfo::new("odd", Kind::Tensor, DType::Float32, vec![4, 16], Layout::Quantized(Quant::Group(odd)))
        .unwrap();
    assert!(refused(info).contains("zero points"));
}

fn awq_like() -> GroupQuant {
    GroupQuant {
        bits: 4,
        group_size: 8,
        axis: 1,
        word: DType::UInt32,
        order: BitOrder::LsbFirst,
        scale_form: ScaleForm::F16Factors,
        scale_dtype: DType::Float16,
        zero_point: ZeroPoint::Stored { packed: true, dtype: DType::UInt32 },
    }
}

#[test]
fn mx_tensors_keep_data_and_scales_apart() {
    let f4 = MxQuant { element: MxElement::F4E2M1, block_size: 32, axis: 1 };
    let i8 = MxQuant { element: MxElement::Int8, block_size: 32, axis: 0 };
    let a = quantized("mxfp4", &[2, 64], Quant::Mx(f4), vec![("data", pattern(1, 64)), ("scales", pattern(2, 4))]);
    let b = quantized("mxint8", &[64, 1], Quant::Mx(i8), vec![("data", pattern(3, 64)), ("scales", pattern(4, 2))]);
    let file = write(&[a, b], &WriteOptions::default());
    let o = file.object("mxfp4");
    assert_eq!(o.layout, "zt.mx/1");
    // The axis is the default, the last dimension: not stated.
    assert_eq!(o.attributes, Some(map(&[("block_size", uint(32)), ("scale_form", text("e8m0_exponent"))])));
    assert_eq!((o.parts["data"].dtype.as_str(), o.parts["data"].logical.as_deref()), ("u8", Some("f4_e2m1")));
    assert_eq!((o.parts["scales"].dtype.as_str(), o.parts["scales"].logical.as_deref()), ("u8", Some("f8_e8m0")));
    assert_eq!(file.blob(&o.parts["scales"]), pattern(2, 4));
    let o = file.object("mxint8");
    assert_eq!((o.parts["data"].dtype.as_str(), o.parts["data"].logical.as_deref()), ("i8", None));
    assert_eq!(zt2_common::get(o.attributes.as_ref().unwrap(), "axis"), &uint(0));
}

#[test]
fn metadata_and_fields_become_attributes_with_their_types() {
    let metadata = vec![
        ("int".to_string(), MetaValue::Int(-3)),
        ("big".to_string(), MetaValue::Int(u64::MAX.into())),
        ("float".to_string(), MetaValue::Float(0.5)),
        ("text".to_string(), MetaValue::Text("t\u{e9}xt".into())),
        ("bool".to_string(), MetaValue::Bool(true)),
        ("null".to_string(), MetaValue::Null),
        ("bytes".to_string(), MetaValue::Bytes(vec![0, 255])),
        ("array".to_string(), MetaValue::Array(vec![MetaValue::Int(1), MetaValue::Text("x".into())])),
        ("map".to_string(), MetaValue::Map(vec![(MetaValue::Text("k".into()), MetaValue::Float(1e300))])),
        ("tagged".to_string(), MetaValue::Tagged(32, Box::new(MetaValue::Text("u".into())))),
    ];
    let fields = vec![("unit".to_string(), MetaValue::Text("m".into())), ("scale".to_string(), MetaValue::Int(2))];
    let (info, data) = dense("w", DType::Float32, &[1], pattern(0, 4));
    let tensors = [(info.with_extra(fields), data)];
    let file = write(&tensors, &WriteOptions { metadata, ..WriteOptions::default() });
    let root = file.root_attributes().unwrap();
    let get = |k| zt2_common::get(&root, k).clone();
    assert_eq!(get("int"), Value::Integer(-3));
    assert_eq!(get("big"), Value::Integer(u64::MAX.into()));
    assert_eq!(get("float"), Value::Float(0.5));
    assert_eq!(get("text"), text("t\u{e9}xt"));
    assert_eq!(get("bool"), Value::Bool(true));
    assert_eq!(get("null"), Value::Null);
    assert_eq!(get("bytes"), Value::Bytes(vec![0, 255]));
    assert_eq!(get("array"), Value::Array(vec![Value::Integer(1), text("x")]));
    assert_eq!(get("map"), map(&[("k", Value::Float(1e300))]));
    // A tag has no place in a manifest: kept as its JSON rendering.
    assert_eq!(get("tagged"), map(&[("tag", uint(32)), ("value", text("u"))]));
    assert_eq!(file.object("w").attributes, Some(map(&[("unit", text("m")), ("scale", uint(2))])));
}

#[test]
fn what_zt2_cannot_hold_is_refused_with_the_reason() {
    for d in [DType::Complex32, DType::Float6E2M3Fn, DType::QInt8, DType::Bits16, DType::Float4E2M1FnX2] {
        assert!(!Format::Zt2.caps().holds_dtype(d), "{d}");
        assert!(refused(TensorInfo::dense("t", d, vec![2])).contains(d.name()), "{d}");
    }
    assert!(refused(TensorInfo::blob("b", 3)).contains("blob"));
    assert!(refused(TensorInfo::dense("cafe\u{301}", DType::Float32, vec![1])).contains("Normalization Form C"));
    assert!(refused(TensorInfo::dense("a\0b", DType::Float32, vec![1])).contains("U+0000"));
    assert!(refused(TensorInfo::dense("", DType::Float32, vec![1])).contains("empty"));
    let fields = vec![("block_bytes".to_string(), MetaValue::Int(1))];
    let q4 =
        TensorInfo::new("q", Kind::Tensor, DType::Float32, vec![32], Layout::Quantized(Quant::Ggml(GgmlType::Q4_0)))
            .unwrap();
    assert!(refused(q4.clone().with_extra(fields)).contains("block_bytes"));
    // The same fact as a field (a file read from zTensor 2) is no conflict.
    assert!(Format::Zt2.check_supported(&q4.with_extra(vec![("block_bytes".into(), MetaValue::Int(18))])).is_ok());

    let two =
        |byte| write_to_vec(Format::Zt2, &[dense("m", DType::Bool, &[2], vec![1, byte])], &WriteOptions::default());
    assert!(two(1).is_ok());
    assert_eq!(two(2).unwrap_err().tensor(), Some("m"));
    let twice = [dense("x", DType::UInt8, &[1], vec![1]), dense("x", DType::UInt8, &[1], vec![2])];
    assert!(write_to_vec(Format::Zt2, &twice, &WriteOptions::default()).is_err());
    let bad_key = WriteOptions { metadata: vec![("".into(), MetaValue::Int(1))], ..WriteOptions::default() };
    assert!(write_to_vec(Format::Zt2, &[], &bad_key).is_err());
}

#[test]
fn zt_outputs_are_v0_1_unless_version_2_is_asked_for() {
    let out = Path::new("model.zt");
    assert_eq!(Format::from_path(out).unwrap(), Format::Zt);
    assert_eq!(Format::for_output(out, Some("2")).unwrap(), Format::Zt2);
    assert_eq!(Format::from_name("zt2"), Some(Format::Zt2));
    assert_eq!(Format::Zt2.extension(), "zt");

    let src = TensorFile::open(zt2_common::fixture("safetensors/names.safetensors")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let v2 = dir.path().join("v2.zt");
    let options = ConvertOptions { format: Some(Format::Zt2), ..ConvertOptions::default() };
    let report = convert_file(&src, &v2, &options, &mut |_| {}).unwrap();
    assert_eq!(report.format, Format::Zt2);
    let file = Zt2File::parse(std::fs::read(&v2).unwrap());
    file.check_canonical();
    assert_eq!(file.objects().len(), src.entries().len());
    for entry in src.entries() {
        let part = &file.object(entry.info().name()).parts["data"];
        assert_eq!(file.blob(part), &src.read(entry.info().name()).unwrap().as_dense().unwrap()[..]);
    }
    let v01 = dir.path().join("v01.zt");
    convert_file(&src, &v01, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert!(std::fs::read(&v01).unwrap().starts_with(b"ZTEN0001"));
}

#[test]
fn compression_and_checksums_are_not_options_of_zt2() {
    let caps = Format::Zt2.caps();
    assert!(caps.file_metadata() && caps.typed_metadata() && caps.tensor_fields());
    assert!(!caps.compression());
    let zstd = WriteRequest { compression: Some(Compression::Zstd(3)), ..WriteRequest::default() };
    let ignored: Vec<WriteOption> = zstd.ignored_by(Format::Zt2).into_iter().map(|i| i.option).collect();
    assert_eq!(ignored, [WriteOption::Compression]);
    // Written raw whatever is asked: canonical form has no encodings.
    let options = WriteOptions { compression: Compression::Zstd(3), ..WriteOptions::default() };
    let file = write(&[dense("z", DType::Float32, &[1024], vec![0; 4096])], &options);
    assert_eq!(file.object("z").parts["data"].length, 4096);
}
