//! h5py's files with one structure of a dataset broken: each read fails with its exact rule.

use std::path::PathBuf;

use crate::error::{Result, Rule};
use crate::formats::hdf5::checksum;
use crate::formats::hdf5::io::H5Io;
use crate::formats::hdf5::object_header::{self, kind};
use crate::source::{Bytes, Source};

use super::Dataset;
use super::layout::{self, ChunkIndex, Storage};

/// The bytes of a fixture and the header address of one of its datasets.
fn fixture(file: &str, dataset: &str) -> (Vec<u8>, u64) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hdf5/datasets");
    let bytes = std::fs::read(dir.join(file)).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{file}.expected.json"))).unwrap()).unwrap();
    let entry = record["datasets"].as_array().unwrap().iter().find(|d| d["name"] == dataset).unwrap();
    (bytes, entry["header_address"].as_u64().unwrap())
}

fn io(bytes: &[u8]) -> H5Io {
    H5Io::new(Source::local(Bytes::from_vec(bytes.to_vec())), 8, 8, 0).unwrap()
}

/// Opens and reads the dataset whose header is at `header`.
fn read(bytes: &[u8], header: u64) -> Result<Bytes> {
    let io = io(bytes);
    let messages = object_header::messages(&io, header)?;
    Dataset::from_messages(&io, &messages)?.read(&io)
}

fn rule(bytes: &[u8], header: u64) -> Option<Rule> {
    read(bytes, header).err().and_then(|e| e.rule())
}

/// The chunk index of the dataset at `header`.
fn index(bytes: &[u8], header: u64) -> ChunkIndex {
    let io = io(bytes);
    let messages = object_header::messages(&io, header).unwrap();
    let m = messages.iter().find(|m| m.kind == kind::LAYOUT).unwrap();
    let rank = usize::from(messages.iter().find(|m| m.kind == kind::DATASPACE).unwrap().body[1]);
    match layout::parse(&m.body, rank, 8, 8).unwrap() {
        Storage::Chunked(k) => k.index,
        _ => panic!("not chunked"),
    }
}

/// Where the body of the first message of `kind` of the header at `header` is in the file.
fn message_at(bytes: &[u8], header: u64, kind: u16) -> u64 {
    let io = io(bytes);
    let messages = object_header::messages(&io, header).unwrap();
    messages.iter().find(|m| m.kind == kind).unwrap().body.offset_in_owner()
}

/// Where the checksum of the first block of the v2 object header at `header` is.
fn checksum_end(bytes: &[u8], header: u64) -> usize {
    let h = header as usize;
    (h + 8..bytes.len() - 4)
        .find(|&end| checksum::lookup3(&bytes[h..end]).to_le_bytes() == bytes[end..end + 4])
        .unwrap()
}

/// The header's checksum (at `end`) computed again after a change.
fn reseal(bytes: &mut [u8], header: u64, end: usize) {
    let sum = checksum::lookup3(&bytes[header as usize..end]);
    bytes[end..end + 4].copy_from_slice(&sum.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: u64, v: u64) {
    bytes[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
}

fn get_u64(bytes: &[u8], at: u64) -> u64 {
    u64::from_le_bytes(bytes[at as usize..at as usize + 8].try_into().unwrap())
}

/// In a B-tree v1 chunk node of rank-2 chunks: where the first child address is.
fn first_child(node: u64) -> u64 {
    node + 24 + 8 + 3 * 8
}

#[test]
fn btree1_chunk_past_the_end() {
    let (mut b, h) = fixture("chunked_earliest.h5", "plain");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    let len = b.len() as u64;
    put_u64(&mut b, first_child(node), len + 16);
    assert_eq!(rule(&b, h), Some(Rule::OutOfBounds));
}

#[test]
fn btree1_node_loops_to_itself() {
    let (mut b, h) = fixture("chunked_earliest.h5", "many_chunks");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    assert_eq!(b[node as usize + 5], 1, "a root of level 1");
    put_u64(&mut b, first_child(node), node);
    assert_eq!(rule(&b, h), Some(Rule::Overlap));
}

#[test]
fn btree1_bad_signature_and_misaligned_chunk() {
    let (b, h) = fixture("chunked_earliest.h5", "plain");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    let mut bad = b.clone();
    bad[node as usize] = b'X';
    assert_eq!(rule(&bad, h), Some(Rule::BadMagic));
    // The first key's first offset: 1, not a multiple of the chunk's 4 rows.
    let mut bad = b.clone();
    put_u64(&mut bad, node + 24 + 8, 1);
    assert_eq!(rule(&bad, h), Some(Rule::Misaligned));
}

#[test]
fn fletcher32_mismatch() {
    let (mut b, h) = fixture("chunked_earliest.h5", "fletcher32");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    let chunk = get_u64(&b, first_child(node));
    b[chunk as usize + 5] ^= 0x40;
    assert_eq!(rule(&b, h), Some(Rule::ChecksumMismatch));
}

#[test]
fn deflate_chunk_corrupt_or_cut() {
    let (b, h) = fixture("chunked_earliest.h5", "gzip");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    let chunk = get_u64(&b, first_child(node));
    let mut bad = b.clone();
    for k in 2..12 {
        bad[chunk as usize + k] ^= 0x5a;
    }
    assert_eq!(rule(&bad, h), Some(Rule::BadCompressedData));
    // The stored size cut to 10 bytes: the stream ends early.
    let mut bad = b.clone();
    bad[node as usize + 24..node as usize + 28].copy_from_slice(&10u32.to_le_bytes());
    assert_eq!(rule(&bad, h), Some(Rule::BadCompressedData));
}

#[test]
fn unfiltered_chunk_of_the_wrong_size() {
    let (mut b, h) = fixture("chunked_earliest.h5", "plain");
    let ChunkIndex::BTreeV1(node) = index(&b, h) else { panic!() };
    b[node as usize + 24..node as usize + 28].copy_from_slice(&12u32.to_le_bytes());
    assert_eq!(rule(&b, h), Some(Rule::SizeMismatch));
}

#[test]
fn array_and_btree2_checksums() {
    for dataset in ["index_fixed", "index_extensible", "index_btree2", "index_fixed_paged"] {
        let (b, h) = fixture("chunked_latest.h5", dataset);
        let addr = match index(&b, h) {
            ChunkIndex::FixedArray(a) | ChunkIndex::ExtensibleArray(a) | ChunkIndex::BTreeV2(a) => a,
            other => panic!("{dataset}: {other:?}"),
        };
        let mut bad = b.clone();
        bad[addr as usize + 7] ^= 1;
        assert_eq!(rule(&bad, h), Some(Rule::ChecksumMismatch), "{dataset}");
        let mut bad = b.clone();
        bad[addr as usize] = b'Z';
        assert_eq!(rule(&bad, h), Some(Rule::ChecksumMismatch), "{dataset}");
    }
}

#[test]
fn single_chunk_past_the_end_and_unknown_filter() {
    let (mut b, h) = fixture("chunked_latest.h5", "index_single");
    assert!(matches!(index(&b, h), ChunkIndex::Single { .. }));
    assert!(read(&b, h).is_ok());
    // The layout message: version, class, flags, rank 3, width 1, dims 6 8 4, type 1, address.
    let at = message_at(&b, h, kind::LAYOUT) + 9;
    let sum_at = checksum_end(&b, h);
    let len = b.len() as u64;
    put_u64(&mut b, at, len - 8);
    reseal(&mut b, h, sum_at);
    assert_eq!(rule(&b, h), Some(Rule::OutOfBounds));
    let (b, h) = fixture("chunked_latest.h5", "refused_lzf");
    let io = io(&b);
    let messages = object_header::messages(&io, h).unwrap();
    let e = Dataset::from_messages(&io, &messages).err().unwrap();
    assert_eq!(e.rule(), Some(Rule::UnknownEncoding));
    assert!(e.to_string().contains("32000"), "{e}");
}

#[test]
fn unwritten_dataset_too_large_for_its_file() {
    let (mut b, h) = fixture("chunked_earliest.h5", "unwritten_chunked");
    assert_eq!(&*read(&b, h).unwrap(), &[9; 36]);
    // Dataspace version 1: version, rank, flags, five reserved bytes, then dims (and max dims
    // with flag 1).
    let at = message_at(&b, h, kind::DATASPACE);
    assert_eq!(b[at as usize], 1);
    let rank = u64::from(b[at as usize + 1]);
    let with_max = b[at as usize + 2] & 1 != 0;
    for k in 0..rank * if with_max { 2 } else { 1 } {
        put_u64(&mut b, at + 8 + 8 * k, 1 << 20);
    }
    assert_eq!(rule(&b, h), Some(Rule::ExpansionTooLarge));
    assert!(with_max, "h5py stores maximum dimensions");
    for k in 0..rank {
        put_u64(&mut b, at + 8 + 8 * k, 1 << 40);
    }
    assert_eq!(rule(&b, h), Some(Rule::BadField), "dims above their maximum");
}

#[test]
fn contiguous_size_disagrees_with_the_shape() {
    let (mut b, h) = fixture("dtypes_earliest.h5", "f4_le");
    // Layout version 3 or 4, class 1: address, then size.
    let at = message_at(&b, h, kind::LAYOUT);
    assert_eq!(b[at as usize + 1], 1);
    put_u64(&mut b, at + 10, 61);
    assert_eq!(rule(&b, h), Some(Rule::SizeMismatch));
}

/// Bytes flipped at random (a fixed seed) in h5py's files: every dataset either reads or
/// fails with an error, never a panic.
#[test]
fn random_corruption_never_panics() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for file in ["chunked_earliest.h5", "chunked_latest.h5", "dtypes_latest.h5"] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hdf5/datasets");
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{file}.expected.json"))).unwrap()).unwrap();
        let original = std::fs::read(dir.join(file)).unwrap();
        for d in record["datasets"].as_array().unwrap() {
            let h = d["header_address"].as_u64().unwrap();
            for _ in 0..40 {
                let mut b = original.clone();
                // Flips near the header (its messages) or anywhere (indexes, chunks).
                for _ in 0..1 + next() % 4 {
                    let at = if next() % 2 == 0 { h + next() % 256 } else { next() % b.len() as u64 } as usize;
                    if let Some(byte) = b.get_mut(at) {
                        *byte ^= 1 << (next() % 8);
                    }
                }
                let _ = read(&b, h);
            }
        }
    }
}

#[test]
fn data_in_external_files_is_refused() {
    let (b, h) = fixture("dtypes_earliest.h5", "f4_le");
    let io = io(&b);
    let mut messages = object_header::messages(&io, h).unwrap();
    assert!(Dataset::from_messages(&io, &messages).is_ok());
    let body = Bytes::from_vec(vec![1, 0, 0, 0, 0, 0, 0, 0]);
    messages.push(object_header::Message { kind: super::EXTERNAL_FILES, flags: 0, body });
    let e = Dataset::from_messages(&io, &messages).err().unwrap();
    assert!(e.to_string().contains("external files"), "{e}");
}

/// The fixtures cover every chunk index: each dataset has the one its name says.
#[test]
fn fixtures_cover_every_chunk_index() {
    let kinds = [
        ("index_single", "single"),
        ("index_single_gzip", "single"),
        ("index_implicit", "implicit"),
        ("index_implicit_max", "implicit"),
        ("index_fixed", "fixed"),
        ("index_fixed_max", "fixed"),
        ("index_fixed_paged_gzip", "fixed"),
        ("index_extensible", "extensible"),
        ("index_extensible_dim1", "extensible"),
        ("index_extensible_many_gzip", "extensible"),
        ("index_btree2", "btree2"),
        ("index_btree2_many_gzip", "btree2"),
    ];
    for (dataset, want) in kinds {
        let (b, h) = fixture("chunked_latest.h5", dataset);
        let got = match index(&b, h) {
            ChunkIndex::Single { .. } => "single",
            ChunkIndex::Implicit(_) => "implicit",
            ChunkIndex::FixedArray(_) => "fixed",
            ChunkIndex::ExtensibleArray(_) => "extensible",
            ChunkIndex::BTreeV2(_) => "btree2",
            ChunkIndex::BTreeV1(_) => "btree1",
        };
        assert_eq!(got, want, "{dataset}");
    }
    let (b, h) = fixture("chunked_earliest.h5", "many_chunks");
    assert!(matches!(index(&b, h), ChunkIndex::BTreeV1(_)));
}
