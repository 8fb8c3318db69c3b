//! `tensorfile verify`: checksums, `--deep` decoding, and the CRCs of a torch archive. Run on
//! small files made in a temporary folder.

use crate::common::*;
use tensorfile::io::Bytes;
use tensorfile::model::ChecksumKind;
use tensorfile::{Compression, DType, Format, TensorFile, WriteOptions};

fn zstd_frame(data: &[u8]) -> Vec<u8> {
    tensorfile::formats::write_to_vec(
        Format::Zt,
        &[dense("x", DType::UInt8, &[data.len() as u64], data.to_vec())],
        &WriteOptions { compression: Compression::Zstd(3), checksum: ChecksumKind::None, ..WriteOptions::default() },
    )
    .map(|zt| {
        let f = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(zt.clone())).unwrap();
        let s = &f.entries()[0].storage();
        zt[s.offset() as usize..(s.offset() + s.len()) as usize].to_vec()
    })
    .unwrap()
}

/// A skippable zstd frame of exactly `total` bytes (at least 8).
fn skippable(total: usize) -> Vec<u8> {
    assert!(total >= 8, "room for a skippable frame");
    let mut f = 0x184D_2A50u32.to_le_bytes().to_vec();
    f.extend_from_slice(&((total - 8) as u32).to_le_bytes());
    f.resize(total, 0);
    f
}

fn crc32c(data: &[u8]) -> u32 {
    match tensorfile::model::Checksum::compute(ChecksumKind::Crc32c, data) {
        Some(tensorfile::model::Checksum::Crc32c(c)) => c,
        other => panic!("{other:?}"),
    }
}

/// `bytes` with the one occurrence of `old` replaced by `new` (same length).
fn replace_text(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    assert_eq!(old.len(), new.len());
    let at = bytes.windows(old.len()).position(|w| w == old.as_bytes()).expect("found");
    let mut out = bytes.to_vec();
    out[at..at + old.len()].copy_from_slice(new.as_bytes());
    out
}

#[test]
fn verify_detects_a_flipped_byte_under_a_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crc.zt");
    let options = WriteOptions { checksum: ChecksumKind::Crc32c, ..WriteOptions::default() };
    write(&path, &sample_tensors(), &options);
    assert!(ok(&[&"verify", &path]).contains("7 checksums verified"));

    let file = TensorFile::open(&path).unwrap();
    let offset = file.entry("norm").unwrap().storage().offset() as usize;
    drop(file);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();

    let o = tensorfile(&[&"verify", &path]);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(
        text.contains("tensor \"norm\"") && text.contains("[checksum-mismatch]") && text.contains("crc.zt"),
        "{text}"
    );
    let j = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--json"])));
    assert_eq!(j["ok"], false);
    assert_eq!(j["problems"][0]["tensor"], "norm");
    assert_eq!(j["problems"][0]["rule"], "checksum-mismatch");
}

#[test]
fn verify_deep_decodes_what_checksums_cannot_vouch_for() {
    let dir = tempfile::tempdir().unwrap();
    // A zstd tensor whose checksum is right but whose frame decodes to fewer bytes than
    // its shape needs: only decoding finds it.
    let path = dir.path().join("short.zt");
    let options = WriteOptions { compression: Compression::Zstd(3), ..WriteOptions::default() };
    let values: Vec<f32> = (0..64).map(|i| (i * i) as f32 * 0.37).collect();
    write(&path, &[dense("w", DType::Float32, &[64], f32s(&values))], &options);
    let file = TensorFile::open(&path).unwrap();
    let (offset, len) = (file.entries()[0].storage().offset() as usize, file.entries()[0].storage().len() as usize);
    drop(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let short = zstd_frame(&f32s(&[0.0; 63]));
    assert!(short.len() <= len, "the replacement fits in place");
    // Same length: pad the frame with a zero-length skippable frame.
    let mut blob = short.clone();
    blob.extend_from_slice(&skippable(len - short.len()));
    bytes[offset..offset + len].copy_from_slice(&blob);
    std::fs::write(&path, &bytes).unwrap();
    // Rewrite the checksum over the new stored bytes: index it again through the library.
    let crc = format!("crc32c:0x{:08X}", crc32c(&blob));
    let old = TensorFile::open(&path).unwrap().entries()[0].storage().checksum().unwrap().to_string();
    let patched = replace_text(&bytes, &old, &crc);
    std::fs::write(&path, patched).unwrap();

    let shallow = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--json"])));
    assert_eq!(
        (shallow["ok"].clone(), shallow["checksums"].clone(), shallow["deep"].clone()),
        (true.into(), 1.into(), false.into())
    );
    let o = tensorfile(&[&"verify", &path, &"--deep"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("[decompressed-size-mismatch]"), "{}", stdout(&o));
    let deep = json_of(&stdout(&tensorfile(&[&"verify", &path, &"--deep", &"--json"])));
    assert_eq!(deep["problems"][0]["rule"], "decompressed-size-mismatch");
}

#[test]
fn verify_counts_the_crcs_of_a_torch_archive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.pt");
    write(&path, &sample_tensors()[..3], &WriteOptions::default());
    let j = json_of(&ok(&[&"verify", &path, &"--json"]));
    // data.pkl, byteorder, three storages, version, .format_version, .storage_alignment.
    assert_eq!(j["checksums"], 8);
    assert_eq!(j["ok"], true);
}
