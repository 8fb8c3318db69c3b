use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::*;
use crate::formats::pytorch::pt::{PtReader, StorageSource};
use crate::formats::{Format, FormatReader};
use crate::model::{TensorData, TensorInfo};
use crate::source::{Bytes, SPECULATIVE_READ, Source};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pytorch");
    let mut files = Vec::new();
    for dir in ["", "torch28", "zip", "hostile"] {
        for f in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = f.unwrap().path();
            if matches!(p.extension().and_then(|e| e.to_str()), Some("pt" | "pt2")) {
                files.push(p);
            }
        }
    }
    files.sort();
    assert_eq!(files.len(), 27, "`.pt` and `.pt2` fixtures committed: {files:?}");
    files
}

/// Which storage tensor `i` of `r` reads, and how many bytes reading it fetches from a
/// counted source: its storage record's compressed bytes, or nothing when its file was
/// read whole at open (a legacy `torch.save` file, a deflated nested one).
fn pt_storage(r: &PtReader, i: usize, key: &str) -> (String, u64) {
    match &r.tensors()[i].storage {
        StorageSource::Record(e) if r.archive().is_some_and(|a| a.region().source().is_remote()) => {
            (format!("{key}/{}", e.name), e.compressed_size)
        }
        _ => (String::new(), 0),
    }
}

fn storage_of(r: &dyn FormatReader, i: usize) -> (String, u64) {
    if let Some(pt2) = r.as_any().downcast_ref::<Pt2Reader>() {
        match &pt2.tensors()[i].source {
            TensorSource::Record { record, .. } => (record.name.clone(), record.compressed_size),
            TensorSource::Pickled { nested, index, .. } => {
                let (name, reader) = &pt2.nested()[*nested];
                pt_storage(reader, *index, name)
            }
        }
    } else {
        let pt = r.as_any().downcast_ref::<PtReader>().unwrap();
        pt_storage(pt, i, "")
    }
}

/// Nested `torch.save` files read in place (each costs a tail read of its own).
fn in_place(r: &dyn FormatReader) -> u64 {
    r.as_any().downcast_ref::<Pt2Reader>().map_or(0, |p| {
        p.nested().iter().filter(|(_, n)| n.archive().is_some_and(|a| a.region().source().is_remote())).count() as u64
    })
}

#[test]
fn fixtures_read_by_range_fetch_their_index_at_open_and_a_storage_per_tensor() {
    for path in fixtures() {
        let bytes = Bytes::read_file(&path).unwrap();
        let len = bytes.len() as u64;
        let Ok(format) = Format::detect(&bytes) else { continue };
        let what = path.display();
        let local = format.open(bytes.clone());
        let src = Source::counted_exact(bytes.clone());
        let counted = format.open(src.clone());
        let (local, counted) = match (local, counted) {
            (Ok(l), Ok(c)) => (l, c),
            (Err(l), Err(c)) => {
                assert_eq!(l.rule(), c.rule(), "{what}");
                continue;
            }
            (l, c) => panic!("{what}: local {:?}, counted {:?}", l.err(), c.err()),
        };
        let opened = src.bytes_fetched();
        assert_eq!(format!("{:?}", local.entries()), format!("{:?}", counted.entries()), "{what}");
        assert_eq!(format!("{:?}", local.unreadable()), format!("{:?}", counted.unreadable()), "{what}");

        let mut storages = HashSet::new();
        let mut storage_total = 0;
        for i in 0..local.entries().len() {
            let (key, want) = storage_of(counted.as_ref(), i);
            if want > 0 && storages.insert(key) {
                storage_total += want;
            }
            let before = src.bytes_fetched();
            let got = counted.read(i, true).unwrap();
            assert_eq!(src.bytes_fetched() - before, want, "{what}: tensor {i}");
            let expected = local.read(i, true).unwrap();
            assert_eq!(got.as_dense().unwrap(), expected.as_dense().unwrap(), "{what}: tensor {i}");
        }
        // Opening fetched the end of the archive (of each archive read in place), and
        // what is not a storage (directory, local headers, records) at most once more.
        let bound = (1 + in_place(counted.as_ref())) * (SPECULATIVE_READ + 14) + (len - storage_total);
        assert!(opened <= bound, "{what}: {opened} fetched at open, bound {bound}");
        if len > 1 << 20 {
            // mobilenet_v2.pt2: its model definition (466 KiB of JSON) and weights config
            // are most of what is fetched; aoti_cpu.pt2: its shared library is not.
            assert!(opened * 2 < len, "{what}: {opened} of {len} fetched at open");
        }
        eprintln!("{what}: {len} bytes, {opened} at open, storages {storage_total}");
        assert_eq!(format!("{:?}", local.summary()), format!("{:?}", counted.summary()), "{what}");
    }
}

/// A `torch.save` file of one large tensor and a few small ones, as PtWriter writes it.
fn big_pt() -> Vec<u8> {
    use crate::formats::{WriteOptions, write_to_vec};
    use crate::model::DType;
    let big: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 253) as u8).collect();
    let tensors = vec![
        (TensorInfo::dense("small", DType::Float32, vec![4]), TensorData::dense(Bytes::from_vec(vec![1; 16]))),
        (TensorInfo::dense("big", DType::Float32, vec![1 << 20]), TensorData::dense(Bytes::from_vec(big))),
        (TensorInfo::dense("last", DType::Int64, vec![2]), TensorData::dense(Bytes::from_vec(vec![2; 16]))),
    ];
    write_to_vec(Format::Pt, &tensors, &WriteOptions::default()).unwrap()
}

/// Open `bytes` as `format` from a counted source: what opening fetched, and check that
/// reading each tensor fetches exactly its storage and gives what a local read gives.
fn open_and_read_all(bytes: &[u8], format: Format) -> u64 {
    let bytes = Bytes::from_vec(bytes.to_vec());
    let src = Source::counted_exact(bytes.clone());
    let counted = format.open(src.clone()).unwrap();
    let opened = src.bytes_fetched();
    let local = format.open(bytes).unwrap();
    assert_eq!(counted.entries().len(), 3);
    for i in 0..3 {
        let before = src.bytes_fetched();
        let got = counted.read(i, true).unwrap();
        assert_eq!(src.bytes_fetched() - before, storage_of(counted.as_ref(), i).1);
        assert_eq!(got.as_dense().unwrap(), local.read(i, true).unwrap().as_dense().unwrap());
    }
    let big = counted.entries().iter().position(|e| e.info().name().ends_with("big")).unwrap();
    let before = src.bytes_fetched();
    counted.read(big, false).unwrap();
    assert_eq!(src.bytes_fetched() - before, 4 << 20);
    opened
}

#[test]
fn a_large_torch_save_file_opens_without_its_storages() {
    let pt = big_pt();
    let opened = open_and_read_all(&pt, Format::Pt);
    eprintln!("torch.save file of {} bytes: {opened} fetched at open", pt.len());
    assert!(opened < SPECULATIVE_READ + 2048, "{opened} of {}", pt.len());
}

#[test]
fn a_torch_save_file_inside_an_archive_is_read_in_place() {
    // The torch 2.8 layout: the weights are a `torch.save` file stored in the archive.
    let mut w = crate::zip::ZipWriter::new(Vec::new(), "archive");
    w.add("archive_format", b"pt2").unwrap();
    w.add("models/model.json", b"{}").unwrap();
    w.add("data/weights/model.pt", &big_pt()).unwrap();
    w.add("byteorder", b"little").unwrap();
    let pt2 = w.finish().unwrap();
    let opened = open_and_read_all(&pt2, Format::Pt2);
    // Two tail reads (the archive's, the nested file's), headers and small records.
    eprintln!("torch 2.8 archive of {} bytes: {opened} fetched at open", pt2.len());
    assert!(opened < 2 * SPECULATIVE_READ + 4096, "{opened} of {}", pt2.len());
}
