//! Every dataset of the h5py fixtures (tests/fixtures/hdf5/datasets/), found at the object
//! header address h5py reports, read and compared with what h5py reads.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::formats::hdf5::io::H5Io;
use crate::formats::hdf5::object_header;
use crate::source::{Bytes, Source};

use super::Dataset;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hdf5/datasets")
}

/// The file (h5py writes 8-byte offsets and lengths, no user block) and its record.
fn open(name: &str) -> (H5Io, serde_json::Value) {
    let path = fixtures().join(name);
    let bytes = Bytes::read_file(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89HDF\r\n\x1a\n");
    let io = H5Io::new(Source::local(bytes), 8, 8, 0).unwrap();
    let record = std::fs::read_to_string(fixtures().join(format!("{name}.expected.json"))).unwrap();
    (io, serde_json::from_str(&record).unwrap())
}

fn check_file(name: &str) -> usize {
    let (io, record) = open(name);
    let mut checked = 0;
    for d in record["datasets"].as_array().unwrap() {
        let ds_name = d["name"].as_str().unwrap();
        let messages = object_header::messages(&io, d["header_address"].as_u64().unwrap()).unwrap();
        let shape: Vec<u64> = d["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let dataset = Dataset::from_messages(&io, &messages);
        if d.get("refused").is_some() {
            let err = dataset.err().unwrap_or_else(|| panic!("{name}: {ds_name} should be refused"));
            assert!(err.rule().is_some(), "{name}: {ds_name}: {err}");
            let (_, described) = super::describe(&io, &messages);
            assert_eq!(described, shape, "{name}: {ds_name}");
            continue;
        }
        let dataset = dataset.unwrap_or_else(|e| panic!("{name}: {ds_name}: {e}"));
        assert_eq!(dataset.shape(), shape, "{name}: {ds_name}");
        assert_eq!(dataset.dtype().name(), d["dtype"].as_str().unwrap(), "{name}: {ds_name}");
        let bytes = dataset.read(&io).unwrap_or_else(|e| panic!("{name}: {ds_name}: {e}"));
        let digest = hex::encode(Sha256::digest(&bytes[..]));
        assert_eq!(digest, d["sha256"].as_str().unwrap(), "{name}: {ds_name}");
        if let Some((addr, len)) = dataset.contiguous_range() {
            assert_eq!(d["layout"], "contiguous", "{name}: {ds_name}");
            assert_eq!(&io.read(addr, len).unwrap()[..], &bytes[..]);
        }
        checked += 1;
    }
    checked
}

#[test]
fn dtypes_earliest() {
    assert!(check_file("dtypes_earliest.h5") > 30);
}

#[test]
fn dtypes_latest() {
    assert!(check_file("dtypes_latest.h5") > 30);
}

#[test]
fn chunked_earliest() {
    assert!(check_file("chunked_earliest.h5") > 10);
}

#[test]
fn chunked_latest() {
    assert!(check_file("chunked_latest.h5") > 25);
}
