//! Files built here read as the spec says, and every rule refuses with its `Rule`.

pub(in crate::formats::ztensor) mod build;
mod rules;
mod shards;

use build::{Dense, File, V, dense_file, m, manifest, object, part, t, uints};

use crate::TensorFile;
use crate::error::Rule;
use crate::formats::Format;
use crate::model::quant::{GgmlType, Quant, ZeroPoint};
use crate::model::{Checksum, DType, Layout, MetaValue, SparseFormat};
use crate::source::Bytes;

fn open(bytes: Vec<u8>) -> TensorFile {
    crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn dense_objects_of_every_type_read_zero_copy() {
    let storage: Vec<(&str, DType, u64)> = vec![
        ("f64", DType::Float64, 8),
        ("f32", DType::Float32, 4),
        ("f16", DType::Float16, 2),
        ("bf16", DType::BFloat16, 2),
        ("i64", DType::Int64, 8),
        ("i32", DType::Int32, 4),
        ("i16", DType::Int16, 2),
        ("i8", DType::Int8, 1),
        ("u64", DType::UInt64, 8),
        ("u32", DType::UInt32, 4),
        ("u16", DType::UInt16, 2),
        ("u8", DType::UInt8, 1),
    ];
    let data: Vec<Vec<u8>> = storage.iter().map(|(_, _, w)| (0..6 * w).map(|i| i as u8).collect()).collect();
    let objects: Vec<_> =
        storage.iter().zip(&data).map(|((name, _, _), d)| (*name, *name, None, &[2u64, 3][..], d.as_slice())).collect();
    let bytes = dense_file(&objects);
    assert_eq!(Format::detect(&bytes).unwrap(), Format::Zt2);
    let whole = Bytes::from_vec(bytes);
    let file = crate::file::OpenOptions::new().open_bytes(whole.clone()).unwrap();
    for ((name, dtype, _), d) in storage.iter().zip(&data) {
        let e = file.entry(name).unwrap();
        assert_eq!((e.info().dtype(), e.info().shape()), (*dtype, &[2, 3][..]));
        let read = file.read(name).unwrap();
        assert_eq!(read.as_dense().unwrap().as_ref(), d.as_slice());
        assert!(read.as_dense().unwrap().shares_owner(&whole), "{name} is a slice of the file");
    }
    assert_eq!(file.summary().version, "2");
    // Recognised by its magic; a `.zt` output still means zTensor v0.1.
    assert_eq!(Format::from_path(std::path::Path::new("out.zt")).unwrap(), Format::Zt);
}

#[test]
fn logical_types_scalars_and_empty_tensors() {
    let objects: Vec<Dense<'_>> = vec![
        ("bool", "u8", Some("bool"), &[4], &[0, 1, 1, 0]),
        ("e4m3", "u8", Some("f8_e4m3fn"), &[2], &[0x38, 0xb8]),
        ("e5m2", "u8", Some("f8_e5m2"), &[2], &[1, 2]),
        ("e4m3fnuz", "u8", Some("f8_e4m3fnuz"), &[1], &[1]),
        ("e5m2fnuz", "u8", Some("f8_e5m2fnuz"), &[1], &[1]),
        ("e8m0", "u8", Some("f8_e8m0"), &[3], &[127, 128, 255]),
        ("f4", "u8", Some("f4_e2m1"), &[2, 2], &[0x21, 0x43]),
        ("c64", "f32", Some("complex64"), &[1], &[0; 8]),
        ("c128", "f64", Some("complex128"), &[1], &[0; 16]),
        ("scalar", "f32", None, &[], &[0, 0, 0x80, 0x3f]),
        ("empty", "f32", None, &[0, 4], &[]),
    ];
    let file = open(dense_file(&objects));
    let dtypes = [
        DType::Bool,
        DType::Float8E4M3Fn,
        DType::Float8E5M2,
        DType::Float8E4M3Fnuz,
        DType::Float8E5M2Fnuz,
        DType::Float8E8M0Fnu,
        DType::Float4E2M1Fn,
        DType::Complex64,
        DType::Complex128,
        DType::Float32,
        DType::Float32,
    ];
    for ((name, _, _, shape, data), dtype) in objects.iter().zip(dtypes) {
        let e = file.entry(name).unwrap_or_else(|| panic!("{name} unreadable: {:?}", file.unreadable()));
        assert_eq!((e.info().dtype(), e.info().shape()), (dtype, *shape), "{name}");
        assert_eq!(file.read_verified(file.index_of(name).unwrap()).unwrap().as_dense().unwrap().as_ref(), *data);
    }
    assert!(file.verify().is_empty());
}

#[test]
fn an_odd_count_of_fp4_elements_is_unreadable_not_refused() {
    let file = open(dense_file(&[("f4", "u8", Some("f4_e2m1"), &[5], &[0, 0, 0]), ("ok", "u8", None, &[1], &[1])]));
    assert_eq!(file.unreadable()[0].name(), "f4");
    assert!(file.entry("ok").is_some());
}

#[test]
fn attributes_are_file_metadata_and_tensor_fields() {
    let mut f = File::default();
    let blob = f.blob(&f32s(&[1.0, 2.0]));
    let attrs = m(vec![
        ("int", V::U(7)),
        ("neg", V::N(41)),
        ("float", V::F(1.25)),
        ("text", t("x")),
        ("bytes", V::B(vec![0, 1])),
        ("list", V::A(vec![V::Null, V::Bool(true)])),
        ("map", m(vec![("k", V::F(0.1))])),
    ]);
    let object_attrs = m(vec![("role", t("bias"))]);
    let doc = m(vec![
        ("attributes", attrs),
        (
            "objects",
            m(vec![("w", object(&[2], "dense", vec![("data", part("f32", blob, vec![]))], Some(object_attrs)))]),
        ),
        ("future_field", V::U(1)),
    ]);
    let file = open(f.finish(&doc));
    let meta = file.summary().metadata;
    let get = |k: &str| meta.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(get("int"), MetaValue::Int(7));
    assert_eq!(get("neg"), MetaValue::Int(-42));
    assert_eq!(get("float"), MetaValue::Float(1.25));
    assert_eq!(get("bytes"), MetaValue::Bytes(vec![0, 1]));
    assert_eq!(get("list"), MetaValue::Array(vec![MetaValue::Null, MetaValue::Bool(true)]));
    assert_eq!(get("map"), MetaValue::Map(vec![("k".into(), MetaValue::Float(0.1))]));
    assert_eq!(file.entry("w").unwrap().info().extra(), [("role".to_string(), MetaValue::Text("bias".into()))]);
}

#[test]
fn encoded_parts_decode_and_digests_verify_over_decoded_bytes() {
    let data = f32s(&(0..3000).map(|i| i as f32).collect::<Vec<_>>());
    let xxh3 = format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(&data));
    let sha = format!("{}", Checksum::compute(crate::model::ChecksumKind::Sha256, &data).unwrap());
    let mut f = File::default();
    let packed = f.blob(&super::seekable::encode(&data, 4096));
    let raw = f.blob(&data);
    let fields = |digest: &str| vec![("digest", t(digest))];
    let mut zfields = fields(&xxh3);
    zfields.push(("encoding", t("zt.zstd-seekable/1")));
    zfields.push(("decoded_length", V::U(data.len() as u64)));
    let doc = manifest(vec![
        ("z", object(&[3000], "dense", vec![("data", part("f32", packed, zfields))], None)),
        ("r", object(&[3000], "dense", vec![("data", part("f32", raw.clone(), fields(&sha)))], None)),
        (
            "bad",
            object(&[3000], "dense", vec![("data", part("f32", raw.clone(), fields("xxh3:0000000000000000")))], None),
        ),
        ("other", object(&[3000], "dense", vec![("data", part("f32", raw, fields("blake3:00")))], None)),
    ]);
    let file = open(f.finish(&doc));
    let z = file.index_of("z").unwrap();
    assert_eq!(file.read_verified(z).unwrap().as_dense().unwrap().as_ref(), data.as_slice());
    assert_eq!(file.entries()[z].storage().checksum().unwrap().to_string(), xxh3);
    assert!(file.read_verified(file.index_of("r").unwrap()).is_ok());
    let bad = file.index_of("bad").unwrap();
    assert!(file.read_index(bad).is_ok(), "digests are checked only when verifying");
    assert_eq!(file.read_verified(bad).unwrap_err().rule(), Some(Rule::ChecksumMismatch));
    assert_eq!(file.read_verified(file.index_of("other").unwrap()).unwrap_err().rule(), Some(Rule::BadChecksum));
    let v = file.verify_with(crate::file::Depth::Checksums);
    let rules: Vec<_> = v.problems.iter().map(|p| (p.tensor().unwrap().to_string(), p.rule())).collect();
    assert_eq!(rules, [("bad".into(), Some(Rule::ChecksumMismatch)), ("other".into(), Some(Rule::BadChecksum))]);
    assert_eq!(v.checksums, 2);
}

#[test]
fn sparse_objects_read_with_u64_indices_and_their_data_rules() {
    let coo = |coords: &[u32]| {
        let mut f = File::default();
        let c: Vec<u8> = coords.iter().flat_map(|c| c.to_le_bytes()).collect();
        let (cb, vb) = (f.blob(&c), f.blob(&f32s(&[1.0, 2.0, 3.0])));
        let parts = vec![("coords", part("u32", cb, vec![])), ("values", part("f32", vb, vec![]))];
        open(f.finish(&manifest(vec![("s", object(&[3, 4], "zt.sparse_coo/1", parts, None))])))
    };
    let file = coo(&[0, 1, 2, 3, 0, 1]);
    let e = file.entry("s").unwrap();
    assert_eq!(*e.info().layout(), Layout::Sparse { format: SparseFormat::Coo, nnz: 3 });
    let s = file.read("s").unwrap().to_sparse().unwrap();
    assert_eq!(s.indices(), [0, 1, 2, 3, 0, 1]);
    assert_eq!(s.values().as_ref(), f32s(&[1.0, 2.0, 3.0]).as_slice());
    assert_eq!(coo(&[0, 1, 0, 3, 0, 3]).read("s").unwrap_err().rule(), Some(Rule::BadSparse), "twice at (0, 3)");
    assert_eq!(coo(&[0, 1, 3, 3, 0, 1]).read("s").unwrap_err().rule(), Some(Rule::BadSparse), "row 3 of 3");

    let csr = |indptr: &[u64], cols: &[u64]| {
        let mut f = File::default();
        let u64s = |v: &[u64]| v.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<u8>>();
        let (p, i, v) = (f.blob(&u64s(indptr)), f.blob(&u64s(cols)), f.blob(&f32s(&[1.0, 2.0, 3.0])));
        let parts = vec![
            ("indptr", part("u64", p, vec![])),
            ("indices", part("u64", i, vec![])),
            ("values", part("f32", v, vec![])),
        ];
        open(f.finish(&manifest(vec![("c", object(&[2, 3], "zt.sparse_csr/1", parts, None))])))
    };
    let s = csr(&[0, 2, 3], &[0, 2, 1]).read("c").unwrap().to_sparse().unwrap();
    assert_eq!((s.indptr(), s.indices()), (&[0, 2, 3][..], &[0, 2, 1][..]));
    for (indptr, cols, why) in [
        (&[1, 2, 3][..], &[0, 2, 1][..], "indptr from 1"),
        (&[0, 2, 3], &[2, 0, 1], "a row's columns decrease"),
        (&[0, 2, 3], &[0, 0, 1], "a column twice in a row"),
        (&[0, 2, 3], &[0, 5, 1], "column 5 of 3"),
        (&[0, 3, 2], &[0, 1, 2], "indptr decreases"),
    ] {
        assert_eq!(csr(indptr, cols).read("c").unwrap_err().rule(), Some(Rule::BadSparse), "{why}");
    }
}

/// A quantized object's file.
fn quantized(shape: &[u64], layout: &str, parts: &[(&str, &str, Option<&str>, Vec<u8>)], attrs: V) -> TensorFile {
    let mut f = File::default();
    let mut listed = Vec::new();
    for (name, dtype, logical, bytes) in parts {
        let blob = f.blob(bytes);
        listed.push((*name, part(dtype, blob, logical.map(|l| vec![("type", t(l))]).unwrap_or_default())));
    }
    open(f.finish(&manifest(vec![("q", object(shape, layout, listed, Some(attrs)))])))
}

#[test]
fn quantized_objects_read_as_their_quant() {
    let attrs = m(vec![("elems_per_block", V::U(32)), ("block_bytes", V::U(34)), ("note", t("kept"))]);
    let file = quantized(&[2, 64], "gguf.q8_0/1", &[("data", "u8", None, vec![5; 4 * 34])], attrs);
    let e = file.entry("q").unwrap();
    assert_eq!(*e.info().layout(), Layout::Quantized(Quant::Ggml(GgmlType::Q8_0)));
    assert_eq!((e.info().dtype(), e.info().extra().len()), (DType::Float32, 1));
    let d = file.read("q").unwrap();
    assert_eq!(d.part(crate::model::quant::BLOCKS).unwrap().len(), 4 * 34);

    let awq = m(vec![
        ("bits", V::U(4)),
        ("group_size", V::U(128)),
        ("axis", V::U(0)),
        ("packing", m(vec![("word", t("u32")), ("order", t("lsb_first")), ("per_word", V::U(8))])),
        ("scale_form", t("f16_factors")),
        ("zero_point", m(vec![("form", t("tensor")), ("packing", t("same_as_data"))])),
    ]);
    // 256 x 8 codes: 2 groups along axis 0, 8 lanes.
    let parts = [
        ("data", "u32", None, vec![1; 256 * 8 / 8 * 4]),
        ("scales", "f16", None, vec![2; 16 * 2]),
        ("zeros", "u32", None, vec![3; 16 / 8 * 4]),
    ];
    let file = quantized(&[256, 8], "zt.quant_group/1", &parts, awq);
    let Some(Quant::Group(g)) = file.entry("q").unwrap().info().layout().quant().cloned() else { panic!() };
    assert_eq!((g.bits, g.group_size, g.word, g.scale_dtype), (4, 128, DType::UInt32, DType::Float16));
    assert_eq!(g.zero_point, ZeroPoint::Stored { packed: true, dtype: DType::UInt32 });
    let d = file.read("q").unwrap();
    let names: Vec<&str> = d.parts().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["data", "scales", "zeros"]);

    let mx = m(vec![("block_size", V::U(32)), ("scale_form", t("e8m0_exponent"))]);
    let parts = [("data", "u8", Some("f4_e2m1"), vec![0x11; 64]), ("scales", "u8", Some("f8_e8m0"), vec![127; 4])];
    let file = quantized(&[2, 64], "zt.mx/1", &parts, mx);
    let Some(Quant::Mx(q)) = file.entry("q").unwrap().info().layout().quant().cloned() else { panic!() };
    assert_eq!((q.element.name(), q.block_size, q.axis), ("f4_e2m1", 32, 1));
}

#[test]
fn what_this_library_does_not_know_is_unreadable_and_the_rest_reads() {
    let mut f = File::default();
    let blob = f.blob(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let p = |more: Vec<(&str, V)>| part("u8", blob.clone(), more);
    let doc = manifest(vec![
        ("layout", object(&[8], "x.custom/1", vec![("data", p(vec![]))], None)),
        ("ltype", object(&[999], "dense", vec![("data", p(vec![("type", t("x.future/1"))]))], None)),
        (
            "encoding",
            object(&[8], "dense", vec![("data", p(vec![("encoding", t("x.z/1")), ("decoded_length", V::U(8))]))], None),
        ),
        ("gguf", object(&[32], "gguf.q9_9/1", vec![("data", p(vec![]))], None)),
        ("fine", object(&[8], "dense", vec![("data", p(vec![]))], None)),
    ]);
    let file = open(f.finish(&doc));
    let rules: Vec<(&str, Option<Rule>)> = file.unreadable().iter().map(|u| (u.name(), u.error().rule())).collect();
    assert_eq!(
        rules,
        [
            ("gguf", Some(Rule::UnknownLayout)),
            ("ltype", Some(Rule::UnknownDType)),
            ("layout", Some(Rule::UnknownLayout)),
            ("encoding", Some(Rule::UnknownEncoding)),
        ]
    );
    assert_eq!(file.read("fine").unwrap().as_dense().unwrap().as_ref(), &[1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn bool_bytes_other_than_0_and_1_are_refused_when_read() {
    let file = open(dense_file(&[("b", "u8", Some("bool"), &[3], &[0, 1, 2])]));
    assert_eq!(file.read("b").unwrap_err().rule(), Some(Rule::BadValue));
}

#[test]
fn data_shards_open_empty() {
    let mut bytes = super::MAGIC.to_vec();
    bytes.extend_from_slice(&super::footer::encode(None));
    let file = open(bytes);
    assert!(file.entries().is_empty() && file.unreadable().is_empty());
    assert_eq!(file.summary().details[0], ("data_shard".to_string(), MetaValue::Bool(true)));
}

#[test]
fn appended_generations_are_counted() {
    let first = dense_file(&[("a", "u8", None, &[4], &[1, 2, 3, 4])]);
    let mut f = File { bytes: first.clone() };
    let a = uints(&[4096, 4]);
    let b = f.blob(&[5, 6]);
    let dense = |blob: V, n: u64| object(&[n], "dense", vec![("data", part("u8", blob, vec![]))], None);
    let bytes = f.finish(&manifest(vec![("a", dense(a, 4)), ("b", dense(b, 2))]));
    let file = open(bytes);
    assert_eq!(file.entries().len(), 2);
    let details = file.summary().details;
    assert!(details.contains(&("earlier_generations".to_string(), MetaValue::Int(1))), "{details:?}");
    assert!(!open(first).summary().details.iter().any(|(k, _)| k == "earlier_generations"));
}
