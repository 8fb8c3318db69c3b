//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tensorfile::TensorFile;
use tensorfile::formats::{Compression, Format, WriteOptions};
use tensorfile::model::{ByteOrder, ChecksumKind, TensorData, TensorInfo};
use tensorfile::source::Bytes;

/// Deterministic bytes for a tensor (bool elements stay 0/1).
pub fn sample_bytes(info: &TensorInfo, seed: u64) -> Vec<u8> {
    let n = info.nbytes().unwrap() as usize;
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = (state >> 33) as u8;
            if info.dtype == tensorfile::DType::Bool { b & 1 } else { b }
        })
        .collect()
}

/// Write `tensors` as `format` into memory.
pub fn write(format: Format, tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) -> Vec<u8> {
    try_write(format, tensors, options).unwrap()
}

pub fn try_write(
    format: Format,
    tensors: &[(TensorInfo, TensorData)],
    options: &WriteOptions,
) -> tensorfile::Result<Vec<u8>> {
    tensorfile::formats::write_to_vec(format, tensors, options)
}

pub fn dense(info: TensorInfo, seed: u64) -> (TensorInfo, TensorData) {
    let bytes = sample_bytes(&info, seed);
    (info, TensorData::dense(Bytes::from_vec(bytes)))
}

pub fn open(bytes: Vec<u8>) -> TensorFile {
    TensorFile::from_bytes(Bytes::from_vec(bytes)).unwrap()
}

pub fn options(compression: Compression, checksum: ChecksumKind, byte_order: ByteOrder) -> WriteOptions {
    WriteOptions { compression, checksum, byte_order, ..WriteOptions::default() }
}

/// The 13 zTensor dtypes.
pub const ZT_DTYPES: [tensorfile::DType; 13] = {
    use tensorfile::DType::*;
    [Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt64, UInt32, UInt16, UInt8, Bool]
};
