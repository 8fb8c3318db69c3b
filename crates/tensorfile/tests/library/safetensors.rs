//! safetensors: every dtype round trips, files agree with the `safetensors` crate both ways,
//! and each broken rule is refused with its own error.

use crate::common;

use common::*;
use tensorfile::formats::{Format, WriteOptions};
use tensorfile::model::{Kind, MetaValue, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{DType, Rule, TensorFile};

fn all_dtypes() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| tensorfile::formats::safetensors::dtype_name(*d).is_some()).collect()
}

fn tensors() -> Vec<(TensorInfo, tensorfile::TensorData)> {
    let mut v: Vec<_> = all_dtypes()
        .into_iter()
        .enumerate()
        .map(|(i, d)| dense(TensorInfo::dense(format!("w.{d}"), d, vec![2, 4]), i as u64))
        .collect();
    v.push(dense(TensorInfo::dense("scalar", DType::Float64, vec![]), 7));
    v.push(dense(TensorInfo::dense("empty", DType::Float32, vec![0, 5]), 0));
    v
}

#[test]
fn every_dtype_round_trips_and_the_safetensors_crate_agrees() {
    let t = tensors();
    assert_eq!(all_dtypes().len(), 22);
    let opts = WriteOptions { metadata: vec![("format".into(), "pt".into())], ..Default::default() };
    let bytes = write(Format::Safetensors, &t, &opts);
    let ours = open(bytes.clone());
    assert_eq!(ours.format(), Format::Safetensors);
    assert_eq!(ours.summary().metadata, vec![("format".to_string(), MetaValue::Text("pt".into()))]);
    let theirs = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for (info, data) in &t {
        let mine = ours.read(info.name()).unwrap();
        assert_eq!(mine.as_dense().unwrap(), data.as_dense().unwrap());
        let view = theirs.tensor(info.name()).unwrap();
        assert_eq!(view.data(), &data.as_dense().unwrap()[..]);
        assert_eq!(view.shape().iter().map(|&d| d as u64).collect::<Vec<_>>(), info.shape());
        assert_eq!(format!("{:?}", view.dtype()), tensorfile::formats::safetensors::dtype_name(info.dtype()).unwrap());
    }
}

#[test]
fn we_read_what_the_safetensors_crate_writes() {
    use safetensors::tensor::TensorView;
    let raw: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = vec![
        ("a".into(), safetensors::Dtype::BF16, vec![3, 2], (0..12).collect()),
        ("b".into(), safetensors::Dtype::F8_E4M3, vec![5], (0..5).collect()),
        ("c".into(), safetensors::Dtype::I64, vec![2], (0..16).collect()),
        ("d".into(), safetensors::Dtype::F4, vec![4], vec![0x12, 0x34]),
    ];
    let views: Vec<(String, TensorView<'_>)> =
        raw.iter().map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap())).collect();
    let meta = std::collections::HashMap::from([("k".to_string(), "v".to_string())]);
    let bytes = safetensors::serialize(views, Some(meta)).unwrap();
    let f = open(bytes);
    for (name, _, shape, data) in &raw {
        let e = f.entry(name).unwrap();
        assert_eq!(e.info().shape(), shape.iter().map(|&d| d as u64).collect::<Vec<_>>());
        assert_eq!(f.read(name).unwrap().as_dense().unwrap().to_vec(), *data);
    }
    assert_eq!(f.entry("a").unwrap().info().dtype(), DType::BFloat16);
    assert_eq!(f.entry("d").unwrap().info().dtype(), DType::Float4E2M1Fn);
    // The safetensors crate orders data by descending dtype width; entries come in data order.
    assert_eq!(f.entries()[0].info().name(), "c");
}

#[test]
fn a_plan_in_name_order_is_written_byte_for_byte_as_the_safetensors_crate_writes_it() {
    // Two tensors of every dtype, named so that name order mixes the dtypes, given in name order.
    let mut t: Vec<_> = all_dtypes()
        .into_iter()
        .enumerate()
        .flat_map(|(i, d)| {
            [format!("a.{i:02}"), format!("b.{:02}", 21 - i)]
                .map(|n| dense(TensorInfo::dense(n, d, vec![2, 4]), i as u64))
        })
        .collect();
    t.sort_by(|a, b| a.0.name().cmp(b.0.name()));
    let infos: Vec<TensorInfo> = t.iter().map(|(i, _)| i.clone()).collect();
    let ordered: Vec<_> = Format::Safetensors.write_order(&infos).into_iter().map(|k| t[k].clone()).collect();
    let opts = WriteOptions { metadata: vec![("format".into(), "pt".into())], ..Default::default() };
    let ours = write(Format::Safetensors, &ordered, &opts);

    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = t
        .iter()
        .map(|(info, data)| {
            let name = tensorfile::formats::safetensors::dtype_name(info.dtype()).unwrap();
            let dtype: safetensors::Dtype = serde_json::from_str(&format!("{name:?}")).unwrap();
            let shape = info.shape().iter().map(|&d| d as usize).collect();
            let view = safetensors::tensor::TensorView::new(dtype, shape, data.as_dense().unwrap()).unwrap();
            (info.name().to_string(), view)
        })
        .collect();
    let meta = std::collections::HashMap::from([("format".to_string(), "pt".to_string())]);
    let theirs = safetensors::serialize(views, Some(meta)).unwrap();
    assert_eq!(ours, theirs);
}

#[test]
fn writes_keep_every_tensor_aligned_to_its_element_size() {
    let t = vec![
        dense(TensorInfo::dense("u8", DType::UInt8, vec![3]), 1),
        dense(TensorInfo::dense("f64", DType::Float64, vec![3]), 2),
        dense(TensorInfo::dense("f16", DType::Float16, vec![3]), 3),
    ];
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.zt");
    std::fs::write(&src, write(Format::Zt, &t, &Default::default())).unwrap();
    let dst = dir.path().join("out.safetensors");
    let src = TensorFile::open(&src).unwrap();
    tensorfile::convert::convert_file(&src, &dst, &Default::default(), &mut |_| {}).unwrap();
    let out = TensorFile::open(&dst).unwrap();
    let names: Vec<_> = out.entries().iter().map(|e| e.info().name()).collect();
    assert_eq!(names, ["f64", "f16", "u8"]);
    for e in out.entries() {
        assert_eq!(e.storage().offset() % e.info().dtype().size().unwrap(), 0, "{}", e.info().name());
    }
}

#[test]
fn blobs_are_written_as_uint8_tensors() {
    let t = vec![dense(TensorInfo::blob("opaque", 5), 1)];
    let f = open(write(Format::Safetensors, &t, &Default::default()));
    let e = f.entry("opaque").unwrap();
    assert_eq!((e.info().kind(), e.info().dtype(), e.info().shape().to_vec()), (Kind::Tensor, DType::UInt8, vec![5]));
}

fn file(header: &str, data_len: usize) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header.as_bytes());
    f.resize(f.len() + data_len, 0);
    f
}

fn rule(bytes: Vec<u8>) -> Rule {
    match tensorfile::OpenOptions::new().format(Format::Safetensors).open_bytes(Bytes::from_vec(bytes)) {
        Ok(_) => panic!("hostile file was accepted"),
        Err(e) => e.rule().unwrap_or_else(|| panic!("no rule in {e}")),
    }
}

const T: &str = r#""t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}"#;

#[test]
fn hostile_headers() {
    assert_eq!(rule(vec![1, 2, 3]), Rule::Truncated);
    assert_eq!(rule(u64::MAX.to_le_bytes().to_vec()), Rule::HeaderTooLarge);
    assert_eq!(rule(100_000_001u64.to_le_bytes().to_vec()), Rule::HeaderTooLarge);
    let mut short = 50u64.to_le_bytes().to_vec();
    short.extend_from_slice(b"{}");
    assert_eq!(rule(short), Rule::Truncated);
    let mut not_utf8 = 4u64.to_le_bytes().to_vec();
    not_utf8.extend_from_slice(&[b'{', 0xff, 0xfe, b'}']);
    assert_eq!(rule(not_utf8), Rule::BadUtf8);
    assert_eq!(rule(file("[1,2]", 0)), Rule::BadJson);
    assert_eq!(rule(file("{\"t\": ", 0)), Rule::BadJson);
    assert_eq!(rule(file(&format!("{}{}", "{\"a\":".repeat(200), "1}".repeat(200)), 0)), Rule::TooDeep);
    assert_eq!(rule(file(&format!("{{{T},{T}}}"), 8)), Rule::DuplicateName);
    assert_eq!(rule(file(r#"{"__metadata__":{"k":1}}"#, 0)), Rule::BadMetadata);
    assert_eq!(rule(file(r#"{"__metadata__":[]}"#, 0)), Rule::BadMetadata);
    assert_eq!(rule(file(r#"{"t":{"dtype":"F32","shape":[2]}}"#, 8)), Rule::MissingField);
    assert_eq!(rule(file(r#"{"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#, 8)), Rule::BadField);
    assert_eq!(rule(file(r#"{"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#, 8)), Rule::BadField);
}

#[test]
fn hostile_data_regions() {
    assert_eq!(rule(file(&format!("{{{T}}}"), 4)), Rule::OutOfBounds);
    assert_eq!(rule(file(&format!("{{{T}}}"), 9)), Rule::NotTiled, "trailing byte");
    let hole = r#"{"t":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#;
    assert_eq!(rule(file(hole, 12)), Rule::NotTiled);
    let overlap = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    assert_eq!(rule(file(overlap, 8)), Rule::Overlap);
    let huge = r#"{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}}"#;
    assert_eq!(rule(file(huge, 8)), Rule::OutOfBounds);
}

#[test]
fn bad_tensors_are_reported_one_by_one() {
    let h = r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]},"b":{"dtype":"Q7","shape":[2],"data_offsets":[8,10]},"c":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[10,11]},"d":{"dtype":"U8","shape":[1],"data_offsets":[11,12]}}"#;
    let f =
        tensorfile::OpenOptions::new().format(Format::Safetensors).open_bytes(Bytes::from_vec(file(h, 12))).unwrap();
    let rules: Vec<_> = f.unreadable().iter().map(|u| (u.name(), u.error().rule().unwrap())).collect();
    assert_eq!(rules, [("a", Rule::SizeMismatch), ("b", Rule::UnknownDType), ("c", Rule::ShapeOverflow)]);
    assert_eq!(f.entries().len(), 1);
    assert_eq!(f.verify().len(), 3);
}

#[test]
fn truncation_at_every_length_is_an_error() {
    let good = write(Format::Safetensors, &tensors(), &Default::default());
    for len in 0..good.len() {
        assert!(
            tensorfile::OpenOptions::new()
                .format(Format::Safetensors)
                .open_bytes(Bytes::from_vec(good[..len].to_vec()))
                .is_err(),
            "{len}"
        );
    }
}
