//! `TensorFile::read_rows`: rows of the first dimension, read alone where the storage allows
//! (raw little-endian: a slice of the map, or of a remote file only that range), else decoded
//! and sliced; bounds checked, sparse refused.

use crate::common;

use std::path::{Path, PathBuf};

use common::{dense, options, write};
use tensorfile::formats::{Compression, Format};
use tensorfile::model::{ByteOrder, ChecksumKind, TensorInfo};
use tensorfile::source::{Bytes, Source};
use tensorfile::{DType, ErrorKind, TensorFile};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A `.zt` of a 10 x 3 float32 tensor and a 7 x 2 uint8 one, written with `compression` and
/// `byte_order`; and the rows of the float32 one as written.
fn zt(compression: Compression, byte_order: ByteOrder) -> (Vec<u8>, Vec<u8>) {
    let tensors = vec![
        dense(TensorInfo::dense("w", DType::Float32, vec![10, 3]), 1),
        dense(TensorInfo::dense("b", DType::UInt8, vec![7, 2]), 2),
    ];
    let bytes = write(Format::Zt, &tensors, &options(compression, ChecksumKind::Crc32c, byte_order));
    (bytes, tensors[0].1.as_dense().unwrap().to_vec())
}

fn check_rows(file: &TensorFile, expected: &[u8]) {
    let w = file.index_of("w").unwrap();
    assert_eq!(file.read_rows(w, 0..10).unwrap().as_ref(), expected);
    assert_eq!(file.read_rows(w, 2..5).unwrap().as_ref(), &expected[2 * 12..5 * 12]);
    assert_eq!(file.read_rows(w, 9..10).unwrap().as_ref(), &expected[9 * 12..]);
    assert!(file.read_rows(w, 4..4).unwrap().is_empty());
}

#[test]
fn raw_rows_are_a_slice_of_the_map() {
    let (bytes, expected) = zt(Compression::None, ByteOrder::Little);
    let file = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(bytes.clone())).unwrap();
    check_rows(&file, &expected);
    // No copy: the rows lie where the entry's stored bytes do.
    let w = file.index_of("w").unwrap();
    let offset = file.entries()[w].storage().offset();
    let rows = file.read_rows(w, 2..5).unwrap();
    assert_eq!(rows.offset_in_owner(), offset + 24);
}

#[test]
fn raw_rows_of_a_remote_file_fetch_only_their_range() {
    let (bytes, expected) = zt(Compression::None, ByteOrder::Little);
    let src = Source::counted_exact(Bytes::from_vec(bytes));
    let file = tensorfile::OpenOptions::new().open_source(src.clone()).unwrap();
    let before = src.bytes_fetched();
    let w = file.index_of("w").unwrap();
    assert_eq!(file.read_rows(w, 2..5).unwrap().as_ref(), &expected[24..60]);
    assert_eq!(src.bytes_fetched() - before, 36);
    check_rows(&file, &expected);
}

#[test]
fn compressed_and_big_endian_rows_are_decoded_then_sliced() {
    for (compression, order) in [(Compression::Zstd(3), ByteOrder::Little), (Compression::None, ByteOrder::Big)] {
        let (bytes, expected) = zt(compression, order);
        let file = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap();
        let w = file.index_of("w").unwrap();
        let stored = &file.entries()[w].storage();
        assert!(stored.encoding().name() == "zstd" || stored.byte_order() == ByteOrder::Big);
        check_rows(&file, &expected);
        // Single bytes read the same in either byte order.
        let b = file.index_of("b").unwrap();
        let whole = file.read_index(b).unwrap().as_dense().unwrap().to_vec();
        assert_eq!(file.read_rows(b, 3..6).unwrap().as_ref(), &whole[6..12]);
    }
}

#[test]
fn rows_out_of_range_are_usage_errors() {
    let (bytes, _) = zt(Compression::None, ByteOrder::Little);
    let file = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap();
    let w = file.index_of("w").unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    for rows in [0..11, 10..11, 5..4, u64::MAX - 1..u64::MAX] {
        let err = file.read_rows(w, rows.clone()).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{rows:?}: {err}");
        assert_eq!(err.tensor(), Some("w"));
    }
    assert!(file.read_rows(file.entries().len(), 0..1).is_err());
}

#[test]
fn sparse_tensors_are_refused() {
    for name in ["sparse_coo.zt", "sparse_csr.zt"] {
        let file = TensorFile::open(fixtures().join("zt/rust").join(name)).unwrap();
        let i = file.entries().iter().position(|e| e.info().layout().is_sparse()).expect("a sparse entry");
        let err = file.read_rows(i, 0..1).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Unsupported(_)), "{err}");
        assert!(err.to_string().contains("sparse"), "{err}");
    }
}

/// Every dense tensor of every committed fixture, read from the map and through a counted
/// (remote-like) source: its rows read alone equal the same rows of the whole tensor,
/// whatever the format stores.
#[test]
fn rows_of_every_fixture_equal_slices_of_the_whole() {
    let mut stack = vec![fixtures()];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        for item in std::fs::read_dir(&dir).unwrap() {
            let path = item.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(local) = TensorFile::open(&path) else { continue };
            let relative = path.strip_prefix(fixtures()).unwrap().to_string_lossy().replace('\\', "/");
            let remote = tensorfile::OpenOptions::new()
                .open_source(Source::counted(Bytes::from_vec(std::fs::read(&path).unwrap())));
            let mut files = vec![];
            if !local.is_set() {
                files.push(remote.unwrap());
            }
            files.push(local);
            for file in &files {
                for (i, e) in file.entries().iter().enumerate() {
                    let Some(&n) = e.info().shape().first() else { continue };
                    if !e.info().layout().reads_dense() || n == 0 || e.info().dtype().size().is_none() {
                        continue;
                    }
                    let Ok(whole) = file.read_index(i) else { continue };
                    let whole = whole.as_dense().unwrap();
                    let row = whole.len() as u64 / n;
                    let (a, b) = (n / 3, n - n / 3);
                    let rows = file.read_rows(i, a..b).unwrap_or_else(|e| panic!("{relative}: {e}"));
                    assert_eq!(rows.as_ref(), &whole[(a * row) as usize..(b * row) as usize], "{relative}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 200, "{checked} tensors checked");
}
