//! The GGUF unit on files it writes and on files built field by field here.

use super::header::WRITTEN_VERSION;
use super::*;
use crate::error::Rule;
use crate::formats::{Format, FormatReader, WriteOptions, write_to_vec};
use crate::model::quant::BLOCKS;
use crate::model::{ByteOrder, DType, MetaValue, Number, TensorData, TypedArray};
use crate::source::{Bytes, Source};

fn open(bytes: Vec<u8>) -> crate::Result<GgufReader> {
    GgufReader::open(Source::local(Bytes::from_vec(bytes)))
}

fn dense(name: &str, dtype: DType, shape: Vec<u64>, bytes: Vec<u8>) -> (TensorInfo, TensorData) {
    (TensorInfo::dense(name, dtype, shape), TensorData::dense(Bytes::from_vec(bytes)))
}

fn blocks(name: &str, t: GgmlType, shape: Vec<u64>, bytes: Vec<u8>) -> (TensorInfo, TensorData) {
    let info = TensorInfo::dense(name, DType::Float32, shape).with_layout(Layout::Quantized(Quant::Ggml(t))).unwrap();
    (info, TensorData::quantized(Quant::Ggml(t), vec![(BLOCKS, Bytes::from_vec(bytes))]))
}

fn with_metadata(metadata: Vec<(&str, MetaValue)>) -> WriteOptions {
    WriteOptions { metadata: metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), ..Default::default() }
}

#[test]
fn what_is_written_reads_back_with_types_shapes_and_bytes() {
    let metadata = vec![
        ("general.architecture", MetaValue::Text("llama".into())),
        ("a.u8", MetaValue::Number(Number::U8(7))),
        ("a.f32", MetaValue::Number(Number::F32(0.25))),
        ("a.empty", MetaValue::TypedArray(TypedArray::I16(Vec::new()))),
        (
            "a.nested",
            MetaValue::TypedArray(TypedArray::Array(vec![TypedArray::Bool(vec![true]), TypedArray::U64(vec![9])])),
        ),
        ("a.flag", MetaValue::Bool(false)),
    ];
    let q = blocks("q", GgmlType::Q8_0, vec![2, 32], (0..68).collect());
    let f = dense("f", DType::Float16, vec![3], vec![1, 2, 3, 4, 5, 6]);
    let s = dense("s", DType::Int64, vec![], 9i64.to_le_bytes().to_vec());
    let bytes =
        write_to_vec(Format::Gguf, &[q.clone(), f.clone(), s.clone()], &with_metadata(metadata.clone())).unwrap();
    assert_eq!(&bytes[..8], &[b'G', b'G', b'U', b'F', WRITTEN_VERSION as u8, 0, 0, 0]);
    let r = open(bytes).unwrap();
    let summary = r.summary();
    let want: Vec<(String, MetaValue)> = metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    assert_eq!(summary.metadata, want);
    assert_eq!((r.version(), r.byte_order(), r.alignment(), r.data_offset() % 32), (3, ByteOrder::Little, 32, 0));
    for (i, (info, data)) in [q, f, s].into_iter().enumerate() {
        assert_eq!(r.entries()[i].info(), &info);
        assert_eq!(r.read(i, true).unwrap(), data);
        assert_eq!(r.entries()[i].storage().offset() % 32, 0);
    }
    assert!(r.check().is_empty());
}

#[test]
fn untyped_values_are_written_with_the_nearest_type() {
    let metadata = vec![
        ("int", MetaValue::Int(-5)),
        ("big", MetaValue::Int(i128::from(u64::MAX))),
        ("float", MetaValue::Float(1.5)),
        ("ints", MetaValue::Array(vec![MetaValue::Int(1), MetaValue::Int(2)])),
        ("mixed", MetaValue::Array(vec![MetaValue::Int(1), MetaValue::Text("x".into())])),
        ("null", MetaValue::Null),
        ("bytes", MetaValue::Bytes(vec![1, 2])),
    ];
    let bytes = write_to_vec(Format::Gguf, &[], &with_metadata(metadata)).unwrap();
    let got = open(bytes).unwrap().summary().metadata;
    let want = [
        MetaValue::Number(Number::I64(-5)),
        MetaValue::Number(Number::U64(u64::MAX)),
        MetaValue::Number(Number::F64(1.5)),
        MetaValue::TypedArray(TypedArray::I64(vec![1, 2])),
        MetaValue::Text(r#"[1,"x"]"#.into()),
        MetaValue::Text("null".into()),
        MetaValue::TypedArray(TypedArray::U8(vec![1, 2])),
    ];
    assert_eq!(got.into_iter().map(|(_, v)| v).collect::<Vec<_>>(), want);
}

#[test]
fn the_alignment_in_the_metadata_is_honoured_and_written_as_u32() {
    let t = dense("t", DType::Float32, vec![3], vec![0; 12]);
    let u = dense("u", DType::Int8, vec![1], vec![7]);
    let options = with_metadata(vec![(ALIGNMENT_KEY, MetaValue::Text("128".into()))]);
    let r = open(write_to_vec(Format::Gguf, &[t, u], &options).unwrap()).unwrap();
    assert_eq!(r.alignment(), 128);
    assert_eq!(r.summary().metadata[0].1, MetaValue::Number(Number::U32(128)));
    assert_eq!(r.entries()[1].storage().offset() - r.entries()[0].storage().offset(), 128);
    for bad in [MetaValue::Int(48), MetaValue::Int(0), MetaValue::Text("x".into())] {
        let options = with_metadata(vec![(ALIGNMENT_KEY, bad.clone())]);
        assert!(write_to_vec(Format::Gguf, &[], &options).is_err(), "{bad:?}");
    }
}

#[test]
fn what_ggml_cannot_load_is_not_written() {
    let cases = [
        dense("deep", DType::Float32, vec![1; 5], vec![0; 4]),
        dense(&"n".repeat(64), DType::Float32, vec![1], vec![0; 4]),
        dense("u8", DType::UInt8, vec![1], vec![0]),
        (TensorInfo::blob("b", 1), TensorData::dense(Bytes::from_vec(vec![0]))),
    ];
    for (info, data) in cases {
        let err = write_to_vec(Format::Gguf, &[(info.clone(), data)], &WriteOptions::default()).unwrap_err();
        assert!(matches!(err.kind(), crate::ErrorKind::Unsupported(_)), "{}: {err}", info.name());
    }
    let twice = with_metadata(vec![("k", MetaValue::Int(1)), ("k", MetaValue::Int(2))]);
    assert!(write_to_vec(Format::Gguf, &[], &twice).is_err());
}

/// A little-endian file of `kvs` (already encoded) and `infos` (name, ne, type, offset), its
/// data region `data` after padding to 32.
fn built(kv_count: u64, kvs: &[u8], infos: &[(&str, &[u64], u32, u64)], data: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&(infos.len() as u64).to_le_bytes());
    b.extend_from_slice(&kv_count.to_le_bytes());
    b.extend_from_slice(kvs);
    for (name, ne, t, offset) in infos {
        metadata::string(&mut b, name);
        b.extend_from_slice(&(ne.len() as u32).to_le_bytes());
        ne.iter().for_each(|d| b.extend_from_slice(&d.to_le_bytes()));
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&offset.to_le_bytes());
    }
    b.resize(b.len().next_multiple_of(32), 0);
    b.extend_from_slice(data);
    b
}

fn rule(r: crate::Result<GgufReader>) -> Option<Rule> {
    r.err().and_then(|e| e.rule())
}

#[test]
fn placement_is_checked() {
    let f32s = |ne: &'static [u64], offset| ("t", ne, 0u32, offset);
    assert!(open(built(0, &[], &[f32s(&[4], 0)], &[0; 16])).is_ok());
    assert_eq!(rule(open(built(0, &[], &[f32s(&[4], 4)], &[0; 48]))), Some(Rule::Misaligned));
    assert_eq!(rule(open(built(0, &[], &[f32s(&[5], 0)], &[0; 16]))), Some(Rule::OutOfBounds));
    assert_eq!(rule(open(built(0, &[], &[f32s(&[1], u64::MAX - 31)], &[0; 4]))), Some(Rule::OutOfBounds));
    let two = [("a", &[16u64][..], 0u32, 0u64), ("b", &[1][..], 0, 32)];
    assert_eq!(rule(open(built(0, &[], &two, &[0; 64]))), Some(Rule::Overlap));
    let twins = [("a", &[1u64][..], 0u32, 0u64), ("a", &[1][..], 0, 32)];
    assert_eq!(rule(open(built(0, &[], &twins, &[0; 64]))), Some(Rule::DuplicateName));
}

#[test]
fn entries_that_cannot_be_read_are_listed_and_the_rest_reads() {
    let infos = [("odd", &[3u64][..], 77u32, 0u64), ("q", &[16][..], 2, 0), ("ok", &[2][..], 0, 32)];
    let r = open(built(0, &[], &infos, &[0; 40])).unwrap();
    let unreadable: Vec<_> = r.unreadable().iter().map(|u| (u.name(), u.error().rule())).collect();
    assert_eq!(unreadable, [("odd", Some(Rule::UnknownDType)), ("q", Some(Rule::BadQuantization))]);
    assert_eq!(r.entries().len(), 1);
    assert_eq!(r.read(0, true).unwrap().len(), 8);
}

#[test]
fn ggml_load_rules_are_verify_problems() {
    // Tensors out of order: each is placed well, but not where ggml lays them.
    let infos = [("a", &[1u64][..], 0u32, 32u64), ("b", &[1][..], 0, 0)];
    let r = open(built(0, &[], &infos, &[0; 36])).unwrap();
    let rules: Vec<_> = r.check().iter().map(|e| e.rule()).collect();
    assert_eq!(rules, [Some(Rule::NotTiled)]);
    let deep = [("d", &[1u64, 1, 1, 1, 1][..], 0u32, 0u64)];
    let rules: Vec<_> = open(built(0, &[], &deep, &[0; 4])).unwrap().check().iter().map(|e| e.rule()).collect();
    assert_eq!(rules, [Some(Rule::BadField)]);
}

#[test]
fn metadata_is_bounded() {
    let kv = |vtype: u32, payload: &[u8]| {
        let mut b = Vec::new();
        metadata::string(&mut b, "k");
        b.extend_from_slice(&vtype.to_le_bytes());
        b.extend_from_slice(payload);
        b
    };
    assert_eq!(rule(open(built(1, &kv(13, &[0; 4]), &[], &[]))), Some(Rule::BadMetadata));
    assert_eq!(rule(open(built(1_000_000, &kv(4, &[0; 4]), &[], &[]))), Some(Rule::Truncated));
    let mut long = 9u32.to_le_bytes().to_vec();
    long.extend_from_slice(&8u32.to_le_bytes());
    long.extend_from_slice(&(u64::MAX / 4).to_le_bytes());
    assert_eq!(rule(open(built(1, &kv(9, &long[..]), &[], &[]))), Some(Rule::Truncated));
    let mut deep = Vec::new();
    for _ in 0..100 {
        deep.extend_from_slice(&9u32.to_le_bytes());
        deep.extend_from_slice(&1u64.to_le_bytes());
    }
    deep.extend_from_slice(&0u32.to_le_bytes());
    deep.extend_from_slice(&0u64.to_le_bytes());
    assert_eq!(rule(open(built(1, &kv(9, &deep), &[], &[]))), Some(Rule::TooDeep));
    let align = |a: u32| {
        open(built(
            1,
            &{
                let mut b = Vec::new();
                metadata::string(&mut b, ALIGNMENT_KEY);
                b.extend_from_slice(&4u32.to_le_bytes());
                b.extend_from_slice(&a.to_le_bytes());
                b
            },
            &[],
            &[],
        ))
    };
    assert_eq!(rule(align(48)), Some(Rule::BadMetadata));
    assert_eq!(rule(align(0)), Some(Rule::BadMetadata));
    assert_eq!(align(64).unwrap().alignment(), 64);
}

#[test]
fn a_big_endian_file_reads_as_little_endian_values() {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_be_bytes());
    b.extend_from_slice(&1u64.to_be_bytes());
    b.extend_from_slice(&1u64.to_be_bytes());
    metadata_be(&mut b, "n", 5, &(-3i32).to_be_bytes());
    b.extend_from_slice(&1u64.to_be_bytes());
    b.push(b't');
    b.extend_from_slice(&1u32.to_be_bytes());
    b.extend_from_slice(&2u64.to_be_bytes());
    b.extend_from_slice(&1u32.to_be_bytes());
    b.extend_from_slice(&0u64.to_be_bytes());
    b.resize(b.len().next_multiple_of(32), 0);
    b.extend_from_slice(&[0x3c, 0x00, 0xc0, 0x00]);
    let r = open(b).unwrap();
    assert_eq!(r.byte_order(), ByteOrder::Big);
    assert_eq!(r.summary().metadata, [("n".to_string(), MetaValue::Number(Number::I32(-3)))]);
    assert_eq!(r.read(0, true).unwrap().as_dense().unwrap().to_vec(), [0x00, 0x3c, 0x00, 0xc0]);
}

fn metadata_be(b: &mut Vec<u8>, key: &str, vtype: u32, value: &[u8]) {
    b.extend_from_slice(&(key.len() as u64).to_be_bytes());
    b.extend_from_slice(key.as_bytes());
    b.extend_from_slice(&vtype.to_be_bytes());
    b.extend_from_slice(value);
}

#[test]
fn a_remote_file_reads_its_index_from_a_growing_prefix() {
    let tokens = MetaValue::TypedArray(TypedArray::Text((0..20_000).map(|i| format!("token {i}")).collect()));
    let t = dense("t", DType::Float32, vec![1], vec![0; 4]);
    let bytes = write_to_vec(Format::Gguf, &[t], &with_metadata(vec![("tokens", tokens.clone())])).unwrap();
    let len = bytes.len() as u64;
    let src = Source::counted_exact(Bytes::from_vec(bytes));
    let r = GgufReader::open(src.clone()).unwrap();
    assert_eq!(r.summary().metadata[0].1, tokens);
    // 64 KiB, then twice that, then the whole index (under 300 KB): never the whole file twice.
    assert!(src.bytes_fetched() < 3 * len, "{} bytes fetched of {len}", src.bytes_fetched());
}
