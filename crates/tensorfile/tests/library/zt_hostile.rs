//! Hostile `.zt` files: each is refused (or its bad entry reported) with the exact rule it
//! breaks, never a panic, a hang or a wrong tensor.

use crate::common;

use common::*;
use serde_cbor::Value as C;
use std::collections::BTreeMap;
use tensorfile::formats::Format;
use tensorfile::model::TensorInfo;
use tensorfile::source::Bytes;
use tensorfile::{DType, Rule};

fn entry(name: &str, offset: u64, size: u64, dtype: &str, shape: &[u64], encoding: &str) -> BTreeMap<C, C> {
    let mut m = BTreeMap::new();
    m.insert(C::Text("name".into()), C::Text(name.into()));
    m.insert(C::Text("offset".into()), C::Integer(offset.into()));
    m.insert(C::Text("size".into()), C::Integer(size.into()));
    m.insert(C::Text("dtype".into()), C::Text(dtype.into()));
    m.insert(C::Text("shape".into()), C::Array(shape.iter().map(|&d| C::Integer(d.into())).collect()));
    m.insert(C::Text("encoding".into()), C::Text(encoding.into()));
    m
}

fn set(mut m: BTreeMap<C, C>, key: &str, v: C) -> BTreeMap<C, C> {
    m.insert(C::Text(key.into()), v);
    m
}

/// A file with `data` placed at offset 64 and the given index (any CBOR bytes).
fn file_with_index_bytes(data: &[u8], index: &[u8]) -> Vec<u8> {
    let mut f = b"ZTEN0001".to_vec();
    f.resize(64, 0);
    f.extend_from_slice(data);
    f.extend_from_slice(index);
    f.extend_from_slice(&(index.len() as u64).to_le_bytes());
    f
}

fn file_with(data: &[u8], entries: Vec<BTreeMap<C, C>>) -> Vec<u8> {
    let index = serde_cbor::to_vec(&C::Array(entries.into_iter().map(C::Map).collect())).unwrap();
    file_with_index_bytes(data, &index)
}

fn open_err(bytes: Vec<u8>) -> Rule {
    match tensorfile::OpenOptions::new().format(Format::Zt).open_bytes(Bytes::from_vec(bytes)) {
        Ok(_) => panic!("hostile file was accepted"),
        Err(e) => e.rule().unwrap_or_else(|| panic!("no rule in {e}")),
    }
}

/// The file opens, and the single entry is reported unreadable for `rule`.
fn unreadable_rule(bytes: Vec<u8>) -> Rule {
    let f = open(bytes);
    assert!(f.entries().is_empty(), "entry should be unreadable");
    let problems = f.verify();
    assert_eq!(problems.len(), 1);
    f.unreadable()[0].error().rule().unwrap()
}

fn valid_file() -> Vec<u8> {
    let t = vec![
        dense(TensorInfo::dense("a", DType::Float32, vec![4, 4]), 1),
        dense(TensorInfo::dense("b", DType::Int64, vec![3]), 2),
    ];
    write(Format::Zt, &t, &Default::default())
}

#[test]
fn truncation_at_every_length_is_an_error() {
    let good = valid_file();
    for len in 0..good.len() {
        let r = tensorfile::OpenOptions::new().format(Format::Zt).open_bytes(Bytes::from_vec(good[..len].to_vec()));
        assert!(r.is_err(), "truncated to {len} bytes was accepted");
        if len < 16 {
            assert_eq!(r.err().unwrap().rule(), Some(Rule::Truncated), "len {len}");
        }
    }
}

#[test]
fn bad_magic() {
    let mut f = valid_file();
    f[0] = b'X';
    assert_eq!(open_err(f), Rule::BadMagic);
}

#[test]
fn sixteen_byte_file_without_index_is_refused() {
    // The reference accepts this; the spec's empty file is 17 bytes with an empty array.
    let mut f = b"ZTEN0001".to_vec();
    f.extend_from_slice(&0u64.to_le_bytes());
    assert_eq!(open_err(f), Rule::Truncated);
}

#[test]
fn index_length_past_the_file() {
    let mut f = valid_file();
    let n = f.len();
    f[n - 8..].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    assert_eq!(open_err(f), Rule::HeaderTooLarge);
}

#[test]
fn garbage_index() {
    assert_eq!(open_err(file_with_index_bytes(&[], &[0x1c, 0x00])), Rule::BadCbor);
    assert_eq!(open_err(file_with_index_bytes(&[], &[0xa0])), Rule::BadField, "a map, not an array");
    assert_eq!(open_err(file_with_index_bytes(&[], &[0x81, 0x01])), Rule::BadField, "an entry that is not a map");
    assert_eq!(open_err(file_with_index_bytes(&[], &vec![0x81; 5000])), Rule::TooDeep);
    assert_eq!(
        open_err(file_with_index_bytes(&[], &[0x9b, 0, 0, 0, 1, 0, 0, 0, 0])),
        Rule::Truncated,
        "array count beyond the bytes"
    );
}

#[test]
fn missing_structural_fields() {
    let mut m = entry("a", 64, 4, "float32", &[1], "raw");
    m.remove(&C::Text("offset".into()));
    assert_eq!(open_err(file_with(&[0; 4], vec![m])), Rule::MissingField);
    let m = set(entry("a", 64, 4, "float32", &[1], "raw"), "name", C::Integer(5));
    assert_eq!(open_err(file_with(&[0; 4], vec![m])), Rule::BadField);
    let m = set(entry("a", 64, 4, "float32", &[1], "raw"), "offset", C::Integer(-64));
    assert_eq!(open_err(file_with(&[0; 4], vec![m])), Rule::BadField);
}

#[test]
fn misaligned_offset() {
    assert_eq!(open_err(file_with(&[0; 8], vec![entry("a", 68, 4, "float32", &[1], "raw")])), Rule::Misaligned);
}

#[test]
fn blob_past_the_index_or_overflowing() {
    assert_eq!(open_err(file_with(&[0; 4], vec![entry("a", 64, 400, "uint8", &[400], "raw")])), Rule::OutOfBounds);
    assert_eq!(
        open_err(file_with(&[0; 4], vec![entry("a", 64, u64::MAX - 32, "uint8", &[1], "raw")])),
        Rule::OutOfBounds
    );
    assert_eq!(
        open_err(file_with(&[0; 4], vec![entry("a", u64::MAX - 63, 4, "uint8", &[4], "raw")])),
        Rule::OutOfBounds
    );
    assert_eq!(
        open_err(file_with(&[0; 4], vec![entry("a", 0, 4, "uint8", &[4], "raw")])),
        Rule::OutOfBounds,
        "inside the magic"
    );
}

#[test]
fn overlapping_blobs() {
    let f = file_with(
        &[0; 128],
        vec![entry("a", 64, 100, "uint8", &[100], "raw"), entry("b", 128, 64, "uint8", &[64], "raw")],
    );
    assert_eq!(open_err(f), Rule::Overlap);
}

#[test]
fn duplicate_names() {
    let f =
        file_with(&[0; 128], vec![entry("a", 64, 4, "uint8", &[4], "raw"), entry("a", 128, 4, "uint8", &[4], "raw")]);
    assert_eq!(open_err(f), Rule::DuplicateName);
}

#[test]
fn shape_overflow_is_reported_for_that_tensor() {
    let f = file_with(&[0; 8], vec![entry("a", 64, 8, "float64", &[1 << 40, 1 << 40], "raw")]);
    assert_eq!(unreadable_rule(f), Rule::ShapeOverflow);
}

#[test]
fn raw_size_that_disagrees_with_the_shape() {
    let f = file_with(&[0; 8], vec![entry("a", 64, 8, "float32", &[3], "raw")]);
    assert_eq!(unreadable_rule(f), Rule::SizeMismatch);
}

#[test]
fn unknown_dtype_encoding_layout_or_order_spare_the_other_tensors() {
    let good = entry("good", 128, 4, "uint8", &[4], "raw");
    for (bad, rule) in [
        (entry("x", 64, 4, "float128", &[1], "raw"), Rule::UnknownDType),
        (entry("x", 64, 4, "uint8", &[4], "lz4"), Rule::UnknownEncoding),
        (set(entry("x", 64, 4, "uint8", &[4], "raw"), "layout", C::Text("blocked".into())), Rule::UnknownLayout),
        (
            set(entry("x", 64, 4, "int32", &[1], "raw"), "data_endianness", C::Text("middle".into())),
            Rule::UnknownByteOrder,
        ),
        (set(entry("x", 64, 4, "uint8", &[4], "raw"), "checksum", C::Text("crc32c:0xNOPE".into())), Rule::BadChecksum),
    ] {
        let f = open(file_with(&[7; 128], vec![bad, good.clone()]));
        assert_eq!(f.entries().len(), 1);
        assert_eq!(&*f.read("good").unwrap().as_dense().unwrap().to_vec(), &[7, 7, 7, 7]);
        assert_eq!(f.unreadable()[0].name(), "x");
        assert_eq!(f.unreadable()[0].error().rule(), Some(rule));
    }
}

#[test]
fn checksum_mismatch_is_caught_on_verified_reads() {
    let t = vec![dense(TensorInfo::dense("a", DType::Float32, vec![16]), 3)];
    for kind in [tensorfile::model::ChecksumKind::Crc32c, tensorfile::model::ChecksumKind::Sha256] {
        let opts = options(Default::default(), kind, Default::default());
        let mut f = write(Format::Zt, &t, &opts);
        f[64 + 5] ^= 0x40;
        let file = open(f);
        assert!(file.read_index(0).is_ok(), "unverified reads do not check");
        assert_eq!(file.read_verified(0).unwrap_err().rule(), Some(Rule::ChecksumMismatch));
        let problems = file.verify();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].tensor(), Some("a"));
    }
}

#[test]
fn zstd_bomb_is_refused_without_allocating_its_claim() {
    let blob = zstd::bulk::compress(&vec![0u8; 1 << 16], 3).unwrap();
    // 2^42 bytes claimed from a few dozen compressed bytes.
    let f = file_with(&blob, vec![entry("bomb", 64, blob.len() as u64, "uint8", &[1 << 42], "zstd")]);
    let file = open(f);
    assert_eq!(file.read("bomb").unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
}

#[test]
fn zstd_garbage_and_short_output() {
    let f = open(file_with(b"definitely not zstd", vec![entry("g", 64, 19, "uint8", &[4], "zstd")]));
    assert_eq!(f.read("g").unwrap_err().rule(), Some(Rule::BadCompressedData));
    let blob = zstd::bulk::compress(&[1u8; 10], 3).unwrap();
    let f = open(file_with(&blob, vec![entry("s", 64, blob.len() as u64, "uint8", &[11], "zstd")]));
    assert_eq!(f.read("s").unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
}

#[test]
fn names_with_nul_and_unicode_are_just_names() {
    let t = vec![
        dense(TensorInfo::dense("nul\0inside", DType::UInt8, vec![2]), 1),
        dense(TensorInfo::dense("ünïcødé/ŵ.0", DType::UInt8, vec![2]), 2),
    ];
    let f = open(write(Format::Zt, &t, &Default::default()));
    assert!(f.entry("nul\0inside").is_some());
    assert!(f.entry("ünïcødé/ŵ.0").is_some());
}

#[test]
fn definite_length_maps_are_read_too() {
    // serde_cbor writes BTreeMaps as definite maps; the reference writes indefinite ones.
    let f = open(file_with(&[9; 4], vec![entry("a", 64, 4, "uint8", &[4], "raw")]));
    assert_eq!(f.read("a").unwrap().as_dense().unwrap().to_vec(), [9; 4]);
}

#[test]
fn unknown_keys_are_kept_and_unknown_checksum_algorithms_cannot_be_verified() {
    let m = set(entry("a", 64, 4, "uint8", &[4], "raw"), "checksum", C::Text("xxh3:0123".into()));
    let m = set(m, "origin", C::Text("elsewhere".into()));
    let f = open(file_with(&[1; 4], vec![m]));
    let e = f.entry("a").unwrap();
    assert_eq!(e.info().extra(), vec![("origin".to_string(), "elsewhere".into())]);
    assert!(f.read("a").is_ok());
    assert_eq!(f.read_verified(0).unwrap_err().rule(), Some(Rule::BadChecksum));
}
