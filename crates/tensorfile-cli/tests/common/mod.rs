//! Running the `tensorfile` binary from the CLI tests.
#![allow(dead_code)] // each test file uses its own part

use std::ffi::OsStr;
use std::process::{Command, Output};

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use tensorfile::io::Bytes;
use tensorfile::{DType, Format, TensorData, TensorInfo, WriteOptions};

pub type Arg<'a> = &'a dyn AsRef<OsStr>;

pub fn tensorfile(args: &[Arg<'_>]) -> Output {
    let args = args.iter().map(|a| a.as_ref());
    Command::new(env!("CARGO_BIN_EXE_tensorfile")).args(args).output().expect("the binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

/// Run and expect exit 0, returning stdout.
pub fn ok(args: &[Arg<'_>]) -> String {
    let o = tensorfile(args);
    assert_eq!(code(&o), 0, "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    stdout(&o)
}

pub fn json_of(text: &str) -> Json {
    serde_json::from_str(text).expect("valid JSON")
}

// --- files for the tests -------------------------------------------------------------------

pub fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn dense(name: &str, dtype: DType, shape: &[u64], bytes: Vec<u8>) -> (TensorInfo, TensorData) {
    (TensorInfo::dense(name, dtype, shape.to_vec()), TensorData::dense(Bytes::from_vec(bytes)))
}

pub fn write(path: &Path, tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) {
    let format = Format::from_path(path).unwrap();
    std::fs::write(path, tensorfile::formats::write_to_vec(format, tensors, options).unwrap()).unwrap();
}

/// A safetensors file written by hand, so it can hold any header (unknown dtypes...).
pub fn raw_safetensors(path: &Path, header: &str, data: &[u8]) {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// bfloat16 bytes of `v` (truncated from float32).
pub fn bf16s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes()).collect()
}

/// A mix of dtypes and shapes, a scalar and an empty tensor among them.
pub fn sample_tensors() -> Vec<(TensorInfo, TensorData)> {
    vec![
        dense("layers.0/weight", DType::Float32, &[2, 3], f32s(&[1.0, -2.5, 3.25, f32::NAN, -0.0, 1e-30])),
        dense("norm", DType::BFloat16, &[3], bf16s(&[1.0, 0.5, -4.0])),
        dense("ids", DType::Int64, &[2], [7i64, -9].iter().flat_map(|v| v.to_le_bytes()).collect()),
        dense("mask", DType::Bool, &[4], vec![1, 0, 0, 1]),
        dense("half", DType::Float16, &[1], vec![0x00, 0x3c]),
        dense("scale", DType::Float64, &[], 0.125f64.to_le_bytes().to_vec()),
        dense("empty", DType::Int32, &[0, 3], vec![]),
    ]
}

/// Parse an `.npy` file: (header dict text, data bytes); checks magic and 64-byte alignment.
pub fn read_npy(path: &Path) -> (String, Vec<u8>) {
    let file = std::fs::read(path).unwrap();
    assert_eq!(&file[..8], b"\x93NUMPY\x01\x00", "{}", path.display());
    let len = u16::from_le_bytes([file[8], file[9]]) as usize;
    let start = 10 + len;
    assert_eq!(start % 64, 0, "data of {} is not 64-byte aligned", path.display());
    let header = std::str::from_utf8(&file[10..start]).unwrap();
    assert!(header.ends_with('\n'));
    (header.trim_end().to_string(), file[start..].to_vec())
}

pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

pub fn et_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/executorch").join(name)
}

/// The repository's fixtures folder.
pub fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// The SHA-256 of `bytes`, as lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    use tensorfile::model::{Checksum, ChecksumKind};
    match Checksum::compute(ChecksumKind::Sha256, bytes) {
        Some(Checksum::Sha256(d)) => d.iter().map(|b| format!("{b:02x}")).collect(),
        other => panic!("no sha256: {other:?}"),
    }
}
