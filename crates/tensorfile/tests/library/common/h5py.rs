//! Checks against records h5py made (the HDF5 fixtures, and the weights of `.keras` files):
//! a dataset's dtype, shape and bytes, and an attribute's value.

use serde_json::Value;
use tensorfile::TensorFile;

/// Whether `got` is h5py's `want`: numbers compared as numbers (an f32 attribute prints
/// exactly in JSON either way).
pub fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (a, b) => a == b,
    }
}

/// An attribute of `object` ('' for the root) as the file gives it: the root's in the file's
/// metadata, a dataset's among its entry's fields, a group's in the metadata under its path.
pub fn attribute(file: &TensorFile, object: &str, key: &str) -> Option<Value> {
    let summary = file.summary();
    if object.is_empty() {
        summary.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.to_json())
    } else if let Some(entry) = file.entry(object) {
        entry.info().extra().iter().find(|(k, _)| k == key).map(|(_, v)| v.to_json())
    } else {
        let full = format!("{object}/{key}");
        summary.metadata.iter().find(|(k, _)| *k == full).map(|(_, v)| v.to_json())
    }
}

/// Dataset `d` of an h5py record (`name`, `dtype`, `shape`, `sha256`) reads from `file` with
/// that dtype, shape and those bytes.
pub fn assert_dataset(file: &TensorFile, d: &Value, what: &str) {
    let name = super::text(d, "name", what);
    let entry = file.entry(name).unwrap_or_else(|| panic!("{what}: {name} not readable"));
    assert_eq!(entry.info().dtype().name(), super::text(d, "dtype", what), "{what}: {name}");
    let shape: Vec<u64> = super::array(d, "shape", what).iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(entry.info().shape(), shape, "{what}: {name}");
    let data = file.read_verified(file.index_of(name).unwrap()).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(data.as_dense().unwrap()));
    assert_eq!(digest, super::text(d, "sha256", what), "{what}: bytes of {name}");
}

/// Every attribute of the record's `attributes` (`{object: {key: value}}`) has h5py's value.
pub fn assert_attributes(file: &TensorFile, record: &Value, what: &str) {
    for (object, attrs) in record["attributes"].as_object().unwrap() {
        for (key, want) in attrs.as_object().unwrap() {
            let got = attribute(file, object, key);
            let got = got.unwrap_or_else(|| panic!("{what}: no attribute {key:?} of {object:?}"));
            assert!(same(&got, want), "{what}: attribute {key} of {object:?}: {got} != {want}");
        }
    }
}
