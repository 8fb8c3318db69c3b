//! Named data read by range: what opening and reading fetch from a source served as if
//! remote ([`Source::counted`]), and that it reads the same as the local map.

use std::path::{Path, PathBuf};

use super::PtdReader;
use crate::formats::FormatReader;
use crate::source::{Bytes, SPECULATIVE_READ, Source};

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/executorch");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures missing: run scripts/fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptd"))
        .collect();
    out.sort();
    assert_eq!(out.len(), 2, "`.ptd` fixtures committed in tests/fixtures/executorch (run scripts/fixtures)");
    out
}

#[test]
fn named_data_opens_with_its_flatbuffer_only_and_reads_each_entry_by_its_bytes() {
    for path in files() {
        let what = path.file_name().unwrap().to_string_lossy().into_owned();
        let map = Bytes::map_file(&path).unwrap();
        let local = PtdReader::open(map.clone()).unwrap();
        let src = Source::counted_exact(map.clone());
        let remote = PtdReader::open(src.clone()).unwrap();
        let h = remote.header();
        let flatbuffer = h.flatbuffer_offset + h.flatbuffer_size;
        let at_open = src.bytes_fetched();
        assert_eq!(at_open, SPECULATIVE_READ.min(map.len() as u64).max(flatbuffer), "{what}");
        eprintln!("{what}: {} bytes, flatbuffer {flatbuffer}, {at_open} fetched at open", map.len());
        assert_eq!(remote.summary().details, local.summary().details, "{what}");
        assert_eq!(remote.entries(), local.entries(), "{what}");
        assert_eq!(src.bytes_fetched(), at_open, "{what}");
        for (i, e) in local.entries().iter().enumerate() {
            let ours = local.read(i, true).unwrap();
            let ours = ours.as_dense().unwrap();
            if !matches!(e.info().layout(), crate::model::Layout::DimOrder(_)) {
                assert!(ours.is_mapped() && ours.shares_owner(&map), "{what}: {} copied", e.info().name());
            }
            let before = src.bytes_fetched();
            let theirs = remote.read(i, true).unwrap();
            assert_eq!(theirs.as_dense().unwrap(), ours, "{what}: {}", e.info().name());
            assert_eq!(src.bytes_fetched() - before, e.storage().len(), "{what}: {}", e.info().name());
        }
    }
}

#[test]
fn cut_named_data_fails_alike_local_and_by_range() {
    for path in files() {
        let map = Bytes::map_file(&path).unwrap();
        let len = map.len() as u64;
        let h = PtdReader::open(map.clone()).unwrap().header();
        let fb = h.flatbuffer_offset + h.flatbuffer_size;
        for cut in [0, 4, 8, 12, 16, 40, 47, 48, 100, fb - 1, fb, fb + 1, len / 2, len - 1, len] {
            let bytes = map.slice(0, cut.min(len)).unwrap();
            let local = PtdReader::open(bytes.clone()).map(|r| r.entries().len());
            let remote = PtdReader::open(Source::counted_exact(bytes)).map(|r| r.entries().len());
            match (local, remote) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!((a.rule(), a.detail()), (b.rule(), b.detail()), "{path:?} cut at {cut}"),
                (a, b) => panic!("{path:?} cut at {cut}: local {:?}, by range {:?}", a.err(), b.err()),
            }
        }
    }
}
