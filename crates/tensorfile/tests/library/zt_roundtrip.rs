//! Every zTensor dtype x encoding x byte order x checksum, written by us and read back by us
//! and by the reference crate (`ztensor =0.1.0`).

use crate::common;

use common::*;
use std::io::Cursor;
use tensorfile::Format;
use tensorfile::formats::Compression;
use tensorfile::model::{ByteOrder, ChecksumKind, Encoding, TensorData, TensorInfo};

const COMPRESSIONS: [Compression; 3] = [Compression::None, Compression::Zstd(3), Compression::Zstd(19)];
const CHECKSUMS: [ChecksumKind; 3] = [ChecksumKind::None, ChecksumKind::Crc32c, ChecksumKind::Sha256];
const ORDERS: [ByteOrder; 2] = [ByteOrder::Little, ByteOrder::Big];

fn tensors() -> Vec<(TensorInfo, TensorData)> {
    let mut v = Vec::new();
    for (i, d) in ZT_DTYPES.iter().enumerate() {
        v.push(dense(TensorInfo::dense(format!("t.{d}"), *d, vec![3, 5]), i as u64));
        v.push(dense(TensorInfo::dense(format!("scalar.{d}"), *d, vec![]), 100 + i as u64));
        v.push(dense(TensorInfo::dense(format!("empty.{d}"), *d, vec![2, 0]), 0));
    }
    v
}

#[test]
fn every_dtype_encoding_order_checksum_round_trips() {
    let tensors = tensors();
    for compression in COMPRESSIONS {
        for checksum in CHECKSUMS {
            for order in ORDERS {
                let opts = options(compression, checksum, order);
                let bytes = write(Format::Zt, &tensors, &opts);
                let file = open(bytes.clone());
                assert!(file.verify().is_empty(), "{compression:?} {checksum:?} {order:?}: {:?}", file.verify());
                assert_eq!(file.entries().len(), tensors.len());
                for ((info, data), entry) in tensors.iter().zip(file.entries()) {
                    assert_eq!(entry.info().name(), info.name());
                    assert_eq!(entry.info().dtype(), info.dtype());
                    assert_eq!(entry.info().shape(), info.shape());
                    assert_eq!(entry.storage().offset() % 64, 0);
                    let got = file.read(info.name()).unwrap();
                    assert_eq!(
                        got.as_dense().unwrap(),
                        data.as_dense().unwrap(),
                        "{} {compression:?} {order:?}",
                        info.name()
                    );
                    let expect_encoding = if compression == Compression::None { Encoding::Raw } else { Encoding::Zstd };
                    assert_eq!(entry.storage().encoding(), expect_encoding);
                    assert_eq!(entry.storage().checksum().map(|c| c.kind()).unwrap_or(ChecksumKind::None), checksum);
                }
                read_with_reference(&bytes, &tensors);
            }
        }
    }
}

/// The reference reads our file to the same bytes (it warns about sha256 and skips it).
fn read_with_reference(bytes: &[u8], tensors: &[(TensorInfo, TensorData)]) {
    let mut reader = ztensor::ZTensorReader::new(Cursor::new(bytes)).unwrap();
    let metas = reader.list_tensors().clone();
    assert_eq!(metas.len(), tensors.len());
    for ((info, data), meta) in tensors.iter().zip(&metas) {
        assert_eq!(meta.name, info.name());
        assert_eq!(meta.dtype.to_string_key(), info.dtype().name());
        assert_eq!(meta.shape, info.shape());
        let got = reader.read_raw_tensor_data(meta).unwrap();
        assert_eq!(&got[..], &data.as_dense().unwrap()[..], "reference reading {}", info.name());
    }
}

#[test]
fn raw_little_endian_reads_are_zero_copy_from_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.zt");
    let tensors = tensors();
    std::fs::write(
        &path,
        write(Format::Zt, &tensors, &options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Little)),
    )
    .unwrap();
    let file = tensorfile::TensorFile::open(&path).unwrap();
    let data = file.read("t.float32").unwrap();
    assert!(data.as_dense().unwrap().is_mapped());
    // Big-endian and compressed data are decoded into owned buffers.
    std::fs::write(&path, write(Format::Zt, &tensors, &options(Compression::None, ChecksumKind::None, ByteOrder::Big)))
        .unwrap();
    let file = tensorfile::TensorFile::open(&path).unwrap();
    assert!(!file.read("t.float32").unwrap().as_dense().unwrap().is_mapped());
    assert!(file.read("t.uint8").unwrap().as_dense().unwrap().is_mapped(), "single-byte data needs no swap");
}

#[test]
fn large_tensors_compress_in_parallel_frames_the_reference_reads() {
    let info = TensorInfo::dense("big", tensorfile::DType::Float32, vec![3 << 20]);
    let mut bytes = Vec::with_capacity(12 << 20);
    for i in 0..(3u32 << 20) {
        bytes.extend_from_slice(&((i % 1000) as f32 * 0.5).to_le_bytes());
    }
    let t = vec![(info, TensorData::dense(bytes.clone().into()))];
    let out = write(Format::Zt, &t, &options(Compression::Zstd(3), ChecksumKind::Crc32c, ByteOrder::Little));
    assert!(out.len() < bytes.len() / 4);
    assert_eq!(open(out.clone()).read("big").unwrap().as_dense().unwrap().to_vec(), bytes);
    read_with_reference(&out, &t);
}

/// Compressed tensors are compressed on the thread pool while earlier ones are written: the
/// file must come out the same, in plan order, from any pool, including a one-thread pool
/// driving the writer from inside itself (where blocking on a job would deadlock).
#[test]
fn pipelined_compression_is_deterministic_and_ordered() {
    use tensorfile::DType;
    use tensorfile::formats::WriteOptions;
    let mut tensors = Vec::new();
    for i in 0..300u64 {
        let info = TensorInfo::dense(format!("small.{i}"), DType::Float32, vec![(i % 37) + 1, 16]);
        tensors.push(common::dense(info, i));
    }
    for i in 0..3u64 {
        // Larger than two zstd chunks: split into frames, compressed in parallel themselves.
        let info = TensorInfo::dense(format!("large.{i}"), DType::UInt8, vec![9 << 20]);
        tensors.push(common::dense(info, 1000 + i));
    }
    let options = WriteOptions { compression: Compression::Zstd(1), ..WriteOptions::default() };
    let default_pool = common::write(Format::Zt, &tensors, &options);
    assert!(default_pool == common::write(Format::Zt, &tensors, &options), "the same file every time");
    // A one-thread pool splits no tensor into frames, so its file differs; it must not hang,
    // and must read back the same.
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let inside_pool = one_thread.install(|| common::write(Format::Zt, &tensors, &options));
    let again = common::open(inside_pool);
    for (i, (_, data)) in tensors.iter().enumerate() {
        assert!(again.read_verified(i).unwrap().as_dense().unwrap() == data.as_dense().unwrap());
    }
    let file = common::open(default_pool);
    for (i, (info, data)) in tensors.iter().enumerate() {
        assert_eq!(file.entries()[i].info().name(), info.name());
        assert_eq!(file.read_verified(i).unwrap().as_dense().unwrap(), data.as_dense().unwrap(), "{}", info.name());
    }
}
