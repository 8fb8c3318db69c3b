//! Conversion: every tensor carried exactly, unsupported ones named or skipped, and the
//! destination replaced atomically.

use crate::common;

use common::*;
use tensorfile::convert::{ConvertOptions, convert_file};
use tensorfile::formats::Compression;
use tensorfile::model::{ByteOrder, ChecksumKind, TensorInfo};
use tensorfile::{DType, ErrorKind, Format, TensorFile};

fn sample() -> Vec<(TensorInfo, tensorfile::TensorData)> {
    ZT_DTYPES
        .iter()
        .enumerate()
        .map(|(i, d)| dense(TensorInfo::dense(format!("t{i}"), *d, vec![4, 3]), i as u64))
        .collect()
}

fn same_tensors(a: &TensorFile, b: &TensorFile) {
    assert_eq!(a.entries().len(), b.entries().len());
    for e in a.entries() {
        let f = b.entry(e.info().name()).unwrap_or_else(|| panic!("{} missing", e.info().name()));
        assert_eq!((f.info().dtype(), f.info().shape()), (e.info().dtype(), e.info().shape()));
        assert_eq!(
            b.read(e.info().name()).unwrap().as_dense().unwrap(),
            a.read(e.info().name()).unwrap().as_dense().unwrap()
        );
    }
}

#[test]
fn zt_to_safetensors_to_zt_keeps_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let zt = dir.path().join("a.zt");
    let opts = options(Compression::Zstd(5), ChecksumKind::Sha256, ByteOrder::Big);
    std::fs::write(&zt, write(Format::Zt, &sample(), &opts)).unwrap();
    let src = TensorFile::open(&zt).unwrap();
    let st = dir.path().join("b.safetensors");
    let report = convert_file(&src, &st, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((report.format, report.tensors), (Format::Safetensors, 13));
    let mid = TensorFile::open(&st).unwrap();
    same_tensors(&src, &mid);
    let back = dir.path().join("c.zt");
    convert_file(&mid, &back, &ConvertOptions::default(), &mut |_| {}).unwrap();
    same_tensors(&src, &TensorFile::open(&back).unwrap());
}

#[test]
fn unsupported_tensors_are_named_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("c.safetensors");
    let t = vec![
        dense(TensorInfo::dense("fine", DType::Float32, vec![2]), 1),
        dense(TensorInfo::dense("complex", DType::Complex64, vec![2]), 2),
    ];
    std::fs::write(&st, write(Format::Safetensors, &t, &Default::default())).unwrap();
    let src = TensorFile::open(&st).unwrap();
    let out = dir.path().join("out.zt");
    let err = convert_file(&src, &out, &ConvertOptions::default(), &mut |_| {}).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Unsupported(_)));
    assert_eq!(err.tensor(), Some("complex"));
    assert!(!out.exists(), "nothing written on failure");
    let opts = ConvertOptions { skip_unsupported: true, ..Default::default() };
    let report = convert_file(&src, &out, &opts, &mut |_| {}).unwrap();
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].name, "complex");
    assert_eq!(TensorFile::open(&out).unwrap().entries().len(), 1);
}

#[test]
fn a_failed_conversion_leaves_the_old_destination_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let src_path = dir.path().join("src.zt");
    let mut bytes = write(Format::Zt, &sample(), &options(Compression::None, ChecksumKind::Crc32c, ByteOrder::Little));
    // Corrupt the last tensor so the failure comes after earlier tensors were written.
    let last = tensorfile::OpenOptions::new()
        .open_bytes(bytes.clone().into())
        .unwrap()
        .entries()
        .last()
        .unwrap()
        .storage()
        .offset() as usize;
    bytes[last] ^= 1;
    std::fs::write(&src_path, bytes).unwrap();
    let dest = dir.path().join("dest.safetensors");
    std::fs::write(&dest, b"precious old content").unwrap();
    let src = TensorFile::open(&src_path).unwrap();
    let mut seen = 0;
    let err = convert_file(&src, &dest, &ConvertOptions::default(), &mut |_| seen += 1).unwrap_err();
    assert_eq!(err.rule(), Some(tensorfile::Rule::ChecksumMismatch));
    assert!(seen > 0, "the failure happened mid-way");
    assert_eq!(std::fs::read(&dest).unwrap(), b"precious old content");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}");
}

#[test]
fn converting_a_file_onto_itself_is_safe() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("same.zt");
    std::fs::write(&path, write(Format::Zt, &sample(), &Default::default())).unwrap();
    let original = std::fs::read(&path).unwrap();
    let src = TensorFile::open(&path).unwrap();
    let opts = ConvertOptions {
        write: options(Compression::Zstd(3), ChecksumKind::Crc32c, ByteOrder::Little),
        ..Default::default()
    };
    convert_file(&src, &path, &opts, &mut |_| {}).unwrap();
    let reopened = TensorFile::open(&path).unwrap();
    same_tensors(&tensorfile::OpenOptions::new().open_bytes(original.into()).unwrap(), &reopened);
    // The old map still reads the old bytes.
    same_tensors(&src, &reopened);
}

#[test]
fn safetensors_metadata_is_carried_between_safetensors_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.safetensors");
    let w = tensorfile::WriteOptions { metadata: vec![("format".into(), "pt".into())], ..Default::default() };
    std::fs::write(&a, write(Format::Safetensors, &sample()[..2], &w)).unwrap();
    let b = dir.path().join("b.safetensors");
    convert_file(&TensorFile::open(&a).unwrap(), &b, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(TensorFile::open(&b).unwrap().summary().metadata, TensorFile::open(&a).unwrap().summary().metadata);
}

#[cfg(unix)]
#[test]
fn new_files_get_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.zt");
    std::fs::write(&a, write(Format::Zt, &sample(), &Default::default())).unwrap();
    let b = dir.path().join("b.zt");
    convert_file(&TensorFile::open(&a).unwrap(), &b, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(
        std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
        std::fs::metadata(&a).unwrap().permissions().mode() & 0o777
    );
}
