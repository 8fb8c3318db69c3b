//! Compatibility with the zTensor 0.1 reference crate, both ways: what it writes we read
//! exactly, and for dense tensors we write the very bytes it writes.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::io::Cursor;
use tensorfile::formats::Compression;
use tensorfile::model::{ByteOrder, ChecksumKind, MetaValue, TensorData, TensorInfo};
use tensorfile::{DType, Format};
use ztensor::{ChecksumAlgorithm, DataEndianness, Encoding, Layout, ZTensorWriter};

fn reference_dtype(d: DType) -> ztensor::DType {
    use ztensor::DType as R;
    match d {
        DType::Float64 => R::Float64,
        DType::Float32 => R::Float32,
        DType::Float16 => R::Float16,
        DType::BFloat16 => R::BFloat16,
        DType::Int64 => R::Int64,
        DType::Int32 => R::Int32,
        DType::Int16 => R::Int16,
        DType::Int8 => R::Int8,
        DType::UInt64 => R::Uint64,
        DType::UInt32 => R::Uint32,
        DType::UInt16 => R::Uint16,
        DType::UInt8 => R::Uint8,
        DType::Bool => R::Bool,
        other => panic!("{other} is not a zTensor dtype"),
    }
}

fn custom_fields() -> Vec<(String, MetaValue)> {
    vec![
        ("author".into(), "tensorfile tests".into()),
        ("bytes".into(), MetaValue::Bytes(vec![0, 1, 255])),
        ("list".into(), MetaValue::Array(vec![MetaValue::Int(1), MetaValue::Int(-2), MetaValue::Float(0.5)])),
        ("scale".into(), MetaValue::Float(0.1)),
        ("step".into(), MetaValue::Int(1234567)),
    ]
}

fn to_cbor(v: &MetaValue) -> serde_cbor::Value {
    use serde_cbor::Value as C;
    match v {
        MetaValue::Text(s) => C::Text(s.clone()),
        MetaValue::Bytes(b) => C::Bytes(b.clone()),
        MetaValue::Int(i) => C::Integer(*i),
        MetaValue::Float(f) => C::Float(*f),
        MetaValue::Array(a) => C::Array(a.iter().map(to_cbor).collect()),
        other => panic!("no test mapping for {other:?}"),
    }
}

/// The test tensors: every dtype, a scalar, zero-size tensors between others, custom fields.
fn tensors() -> Vec<(TensorInfo, TensorData)> {
    let mut v = Vec::new();
    for (i, d) in ZT_DTYPES.iter().enumerate() {
        let shape = if i % 3 == 0 { vec![] } else { vec![2, i as u64 + 1] };
        let mut info = TensorInfo::dense(format!("layer.{i}/{d}"), *d, shape);
        if i == 1 {
            info = info.with_extra(custom_fields());
        }
        v.push(dense(info, i as u64));
        if i == 4 {
            v.push(dense(TensorInfo::dense("zero.size", *d, vec![0, 3]), 0));
        }
    }
    v
}

fn write_reference(
    tensors: &[(TensorInfo, TensorData)],
    encoding: Encoding,
    checksum: ChecksumAlgorithm,
    order: DataEndianness,
) -> Vec<u8> {
    let mut buf = Cursor::new(Vec::new());
    let mut w = ZTensorWriter::new(&mut buf).unwrap();
    for (info, data) in tensors {
        let custom: BTreeMap<String, serde_cbor::Value> =
            info.extra().iter().map(|(k, v)| (k.clone(), to_cbor(v))).collect();
        w.add_tensor(
            info.name(),
            info.shape().to_vec(),
            reference_dtype(info.dtype()),
            Layout::Dense,
            encoding.clone(),
            data.as_dense().unwrap().to_vec(),
            Some(order.clone()),
            checksum,
            (!custom.is_empty()).then_some(custom),
        )
        .unwrap();
    }
    w.finalize().unwrap();
    buf.into_inner()
}

#[test]
fn raw_files_are_byte_identical_to_the_reference() {
    let tensors = tensors();
    for (checksum, ours_checksum) in
        [(ChecksumAlgorithm::None, ChecksumKind::None), (ChecksumAlgorithm::Crc32c, ChecksumKind::Crc32c)]
    {
        for (order, ours_order) in [(DataEndianness::Little, ByteOrder::Little), (DataEndianness::Big, ByteOrder::Big)]
        {
            let reference = write_reference(&tensors, Encoding::Raw, checksum, order);
            let ours = write(Format::Zt, &tensors, &options(Compression::None, ours_checksum, ours_order));
            assert_eq!(ours, reference, "{ours_checksum:?} {ours_order:?}");
        }
    }
}

#[test]
fn empty_file_is_the_reference_17_bytes() {
    let ours = write(Format::Zt, &[], &Default::default());
    assert_eq!(ours, write_reference(&[], Encoding::Raw, ChecksumAlgorithm::None, DataEndianness::Little));
    assert_eq!(ours, b"ZTEN0001\x80\x01\0\0\0\0\0\0\0");
    assert!(open(ours).entries().is_empty());
}

#[test]
fn we_read_what_the_reference_writes() {
    let tensors = tensors();
    for encoding in [Encoding::Raw, Encoding::Zstd] {
        for checksum in [ChecksumAlgorithm::None, ChecksumAlgorithm::Crc32c] {
            for order in [DataEndianness::Little, DataEndianness::Big] {
                let file = open(write_reference(&tensors, encoding.clone(), checksum, order.clone()));
                assert!(file.verify().is_empty(), "{:?}", file.verify());
                assert!(file.unreadable().is_empty());
                for (info, data) in &tensors {
                    let e = file.entry(info.name()).unwrap();
                    assert_eq!((e.info().dtype(), e.info().shape()), (info.dtype(), info.shape()));
                    assert_eq!(e.info().extra(), info.extra(), "custom fields of {}", info.name());
                    assert_eq!(file.read(info.name()).unwrap().as_dense().unwrap(), data.as_dense().unwrap());
                }
            }
        }
    }
}
