//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod h5py;

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
            if info.dtype() == tensorfile::DType::Bool { b & 1 } else { b }
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
    tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap()
}

pub fn options(compression: Compression, checksum: ChecksumKind, byte_order: ByteOrder) -> WriteOptions {
    WriteOptions { compression, checksum, byte_order, ..WriteOptions::default() }
}

/// The 13 zTensor dtypes.
pub const ZT_DTYPES: [tensorfile::DType; 13] = {
    use tensorfile::DType::*;
    [Float64, Float32, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt64, UInt32, UInt16, UInt8, Bool]
};

/// The committed fixtures (`tests/fixtures/`).
pub fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every record `X.expected.json` in `dir` (in its subfolders too when `recurse`), with the
/// path of its fixture `X`, sorted by path. Strict, so that a test cannot pass on fixtures it
/// never saw: a folder that cannot be read, a record that is not a JSON object, a record whose
/// `file` is not its fixture's name or whose fixture is missing, and a fixture without a
/// record all panic, naming the file.
pub fn records_in(dir: &std::path::Path, recurse: bool) -> Vec<(std::path::PathBuf, serde_json::Value)> {
    fn walk(dir: &std::path::Path, recurse: bool, out: &mut Vec<(std::path::PathBuf, serde_json::Value)>) {
        let entries = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: fixtures folder unreadable ({e}): run scripts/fixtures", dir.display()));
        let mut paths: Vec<std::path::PathBuf> =
            entries.map(|e| e.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path()).collect();
        paths.sort();
        for p in paths {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_else(|| panic!("{}: name", p.display()));
            if p.is_dir() {
                if recurse {
                    walk(&p, recurse, out);
                }
            } else if let Some(fixture) = name.strip_suffix(".expected.json") {
                let text = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: unreadable record: {e}", p.display()));
                let record: serde_json::Value =
                    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: malformed record: {e}", p.display()));
                assert!(record.is_object(), "{}: the record is not a JSON object", p.display());
                assert_eq!(record["file"].as_str(), Some(fixture), "{}: `file` names another fixture", p.display());
                let fixture = p.with_file_name(fixture);
                assert!(fixture.is_file(), "{}: its fixture {} is missing", p.display(), fixture.display());
                out.push((fixture, record));
            } else {
                let record = p.with_file_name(format!("{name}.expected.json"));
                assert!(record.is_file(), "{}: a fixture without its record {}", p.display(), record.display());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, recurse, &mut out);
    out
}

/// `record[key]` as an array, or a panic naming the record's file.
pub fn array<'a>(record: &'a serde_json::Value, key: &str, what: &str) -> &'a Vec<serde_json::Value> {
    record[key].as_array().unwrap_or_else(|| panic!("{what}: record field {key:?} missing or not an array"))
}

/// `record[key]` as text, or a panic naming the record's file.
pub fn text<'a>(record: &'a serde_json::Value, key: &str, what: &str) -> &'a str {
    record[key].as_str().unwrap_or_else(|| panic!("{what}: record field {key:?} missing or not text"))
}
