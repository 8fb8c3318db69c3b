//! ONNX models made by onnx.helper, `onnx.save_model` with external data and
//! `torch.onnx.export` (`tests/fixtures/onnx`, from `scripts/fixturegen/onnx_files.py`), each
//! with the record `onnx.load` + `numpy_helper.to_array` make: we read every tensor with the
//! dtype, shape and bytes they report (packed 4- and 2-bit elements as ONNX packs them), list
//! as unreadable exactly those the record names, and show the IR version and metadata.

use crate::common;

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::{Format, Rule, TensorFile};

fn sha256(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

fn onnx_dir() -> PathBuf {
    common::fixtures_dir().join("onnx")
}

/// Every model with its record: those of the folder, and the one saved with external data
/// (whose folder also holds its data file, which has no record).
fn records() -> Vec<(PathBuf, Value)> {
    let mut out = common::records_in(&onnx_dir(), false);
    let external = onnx_dir().join("external/model.onnx");
    let record = std::fs::read(external.with_file_name("model.onnx.expected.json")).expect("run scripts/fixtures");
    out.push((external, serde_json::from_slice(&record).unwrap()));
    // storage, subgraphs, torch_mlp and external.
    assert_eq!(out.len(), 4, "fixtures missing: run scripts/fixtures");
    out
}

fn check_tensor(file: &TensorFile, t: &Value, what: &str) {
    let name = common::text(t, "name", what);
    let i = file.index_of(name).unwrap_or_else(|| panic!("{what}: no tensor {name:?}"));
    let info = file.entries()[i].info();
    assert_eq!(info.dtype().name(), common::text(t, "dtype", what), "{what}: dtype of {name}");
    let shape: Vec<u64> = common::array(t, "shape", what).iter().map(|d| d.as_u64().unwrap()).collect();
    assert_eq!(info.shape(), shape, "{what}: shape of {name}");
    let data = file.read_verified(i).unwrap_or_else(|e| panic!("{what}: {e}"));
    match common::text(t, "layout", what) {
        "dense" => assert_eq!(sha256(data.as_dense().unwrap()), common::text(t, "sha256", what), "{what}: {name}"),
        "sparse_coo" => {
            let s = data.to_sparse().unwrap();
            assert_eq!(s.nnz(), t["nnz"].as_u64().unwrap(), "{what}: nnz of {name}");
            assert_eq!(sha256(s.values()), common::text(t, "values_sha256", what), "{what}: values of {name}");
            let flat: Vec<u64> = common::array(t, "indices", what)
                .iter()
                .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()))
                .collect();
            assert_eq!(s.indices(), flat, "{what}: indices of {name}");
        }
        other => panic!("{what}: layout {other}"),
    }
}

#[test]
fn every_model_reads_as_numpy_helper_recorded() {
    for (path, record) in records() {
        let what = path.display().to_string();
        let file = TensorFile::open(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(file.format(), Format::Onnx, "{what}");
        let tensors = common::array(&record, "tensors", &what);
        assert_eq!(file.entries().len(), tensors.len(), "{what}: tensor count");
        for t in tensors {
            check_tensor(&file, t, &what);
        }
        let unreadable: Vec<&str> = file.unreadable().iter().map(|u| u.name()).collect();
        let expected: Vec<&str> =
            common::array(&record, "unreadable", &what).iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(unreadable, expected, "{what}: unreadable");
        for u in file.unreadable() {
            // Strings are no dtype of ours; packed elements that end inside a byte (ONNX pads
            // it) make no tensor of ours.
            let rule = match u.dtype() {
                "int4" | "uint4" | "int2" | "uint2" => Rule::SizeMismatch,
                _ => Rule::UnknownDType,
            };
            assert_eq!(u.error().rule(), Some(rule), "{what}: {} ({})", u.name(), u.error());
        }
        let summary = file.summary();
        assert_eq!(summary.version, record["ir_version"].as_u64().unwrap().to_string(), "{what}");
        for (k, v) in record["metadata"].as_object().unwrap() {
            let found =
                summary.metadata.iter().find(|(mk, _)| mk == k).and_then(|(_, mv)| mv.as_text().map(String::from));
            assert_eq!(found.as_deref(), v.as_str(), "{what}: metadata {k}");
        }
    }
}

#[test]
fn raw_data_reads_as_a_slice_of_the_map() {
    let file = TensorFile::open(onnx_dir().join("storage.onnx")).unwrap();
    let data = file.read("raw_f32").unwrap();
    let bytes = data.as_dense().unwrap();
    assert!(bytes.is_mapped(), "raw_data copied");
    let entry = file.entry("raw_f32").unwrap();
    assert_eq!(bytes.offset_in_owner(), entry.storage().offset());
    let whole = std::fs::read(onnx_dir().join("storage.onnx")).unwrap();
    let at = entry.storage().offset() as usize;
    assert_eq!(&whole[at..at + 48], &bytes[..]);
    // External data is a slice of the data file's map.
    let ext = TensorFile::open(onnx_dir().join("external/model.onnx")).unwrap();
    assert!(ext.read("w").unwrap().as_dense().unwrap().is_mapped());
}

#[test]
fn info_shows_the_graph_its_producer_and_operators() {
    let file = TensorFile::open(onnx_dir().join("subgraphs.onnx")).unwrap();
    let s = file.summary();
    let detail = |k: &str| s.details.iter().find(|(dk, _)| dk == k).map(|(_, v)| v.to_json()).unwrap();
    assert_eq!(detail("opsets"), "ai.onnx 21");
    assert_eq!(detail("producer"), "fixturegen");
    assert_eq!(detail("graphs"), 4);
    let structure = s.structure.unwrap().json;
    assert_eq!(structure["operators"]["Identity"], 3);
    assert_eq!(structure["operators"]["Loop"], 1);
    assert_eq!(structure["inputs"][1]["name"], "trip");
    assert_eq!(structure["outputs"][0]["shape"], serde_json::json!(["3"]));
    let torch = TensorFile::open(onnx_dir().join("torch_mlp.onnx")).unwrap().summary();
    assert!(torch.details.iter().any(|(k, v)| k == "producer" && v.as_text().unwrap().starts_with("pytorch")));
}

#[test]
fn a_model_from_memory_lists_its_external_tensors_as_unreadable() {
    let bytes = std::fs::read(onnx_dir().join("external/model.onnx")).unwrap();
    let file = tensorfile::OpenOptions::new().open_bytes(tensorfile::source::Bytes::from_vec(bytes)).unwrap();
    // `small` is inline; `w` and `b` are in weights.bin, which a model in memory cannot find.
    assert_eq!(file.entries().len(), 1);
    let names: Vec<&str> = file.unreadable().iter().map(|u| u.name()).collect();
    assert_eq!(names, ["w", "b"]);
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn no_other_format_s_file_and_no_text_is_taken_for_a_model() {
    let root = crate::common::fixtures_dir();
    let mut files = Vec::new();
    files_under(&root, &mut files);
    files_under(&root.join("../conformance"), &mut files);
    let mut models = 0;
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let head = &bytes[..bytes.len().min(64)];
        let is_model = path.extension().is_some_and(|e| e == "onnx");
        if is_model {
            models += 1;
        }
        // The conformance corpus has broken models too: only the other files are asked.
        if !is_model {
            assert!(!tensorfile::formats::onnx::looks_like(head), "{} taken for an ONNX model", path.display());
        }
    }
    assert!(models >= 4, "no ONNX fixtures seen");
}

#[test]
fn converting_into_a_format_with_no_writer_says_so_without_offering_to_skip() {
    let src = TensorFile::open(onnx_dir().join("storage.onnx")).unwrap();
    for format in [Format::Onnx, Format::Hdf5] {
        for skip in [false, true] {
            let err = tensorfile::convert::plan(&src, format, skip, None).expect_err("planned");
            assert!(matches!(err.kind(), tensorfile::ErrorKind::Unsupported(_)), "{format}: {err}");
            assert!(err.to_string().contains("does not write"), "{format}: {err}");
            assert_eq!(err.hint(), None, "{format}: {err}");
        }
    }
}
