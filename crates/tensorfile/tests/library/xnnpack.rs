//! XNNPACK delegate payloads of programs exported by executorch 1.5.1 (fixtures
//! `tests/fixtures/executorch/xnnpack_*.pte`, made by `scripts/fixturegen/executorch_xnnpack.py`):
//! every constant the payload declares is checked against the record torch made of the
//! exported program's constants (dtype, shape, and for quantized weights the channel axis and
//! the number and key of the scales), and `ls` gives the named-data blobs those types.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use tensorfile::TensorFile;
use tensorfile::formats::executorch::pte::PteReader;
use tensorfile::formats::executorch::xnnpack::{Constant, Graph, Quantization, Scales};

const FIXTURES: [&str; 4] = ["xnnpack_fp32.pte", "xnnpack_qc8.pte", "xnnpack_dq8.pte", "xnnpack_qb4.pte"];

fn fixture(name: &str) -> (PathBuf, Value) {
    let path = common::fixtures_dir().join("executorch").join(name);
    let record = std::fs::read(path.with_file_name(format!("{name}.expected.json"))).unwrap();
    (path, serde_json::from_slice(&record).unwrap())
}

fn graphs(file: &TensorFile) -> Vec<Graph> {
    let pte = file.reader_as::<PteReader>().unwrap();
    pte.xnnpack_graphs().iter().map(|d| d.graph.as_ref().unwrap_or_else(|e| panic!("{e}")).clone()).collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

#[test]
fn every_constant_matches_the_exported_programs_record() {
    let mut checked = 0;
    for name in FIXTURES {
        let (path, record) = fixture(name);
        let file = TensorFile::open(&path).unwrap();
        let graphs = graphs(&file);
        assert_eq!(graphs.len(), record["delegates"].as_array().unwrap().len(), "{name}");
        let constants: Vec<&Constant> = graphs.iter().flat_map(|g| &g.constants).collect();
        let by_key: BTreeMap<&str, &Constant> = constants.iter().map(|c| (c.data.key().unwrap(), *c)).collect();
        let mut matched = 0;
        let mut scale_keys = Vec::new();
        let mut blockwise_scale_keys = Vec::new();
        for r in record["xnnpack"]["constants"].as_array().unwrap() {
            let what = format!("{name}: {}", r["name"]);
            let forms: Vec<&Value> = r["stored"].as_array().unwrap().iter().collect();
            let found: Vec<(&Value, &&Constant)> =
                forms.iter().filter_map(|f| by_key.get(f["key"].as_str().unwrap()).map(|c| (*f, c))).collect();
            assert_eq!(found.len(), 1, "{what}: exactly one stored form is in the payload");
            let (form, c) = found[0];
            assert_eq!(c.dtype.map(|d| d.name()), r["dtype"].as_str(), "{what}");
            assert_eq!(c.shape, u64s(&form["shape"]), "{what}");
            assert_eq!(c.nbytes, Some(c.data.size()), "{what}: size");
            match (&r["quantization"], &c.quantization) {
                (Value::Null, q) => assert!(q.is_none(), "{what}: {q:?}"),
                (q, Some(Quantization::PerChannel { channel_dim, scales })) => {
                    assert_eq!(q["kind"], "per_channel", "{what}");
                    assert_eq!(u64::from(*channel_dim), q["axis"].as_u64().unwrap(), "{what}");
                    assert_eq!(scales.count(), q["scales"].as_u64().unwrap(), "{what}");
                    let Scales::Stored { data, .. } = scales else { panic!("{what}: scales inline") };
                    assert_eq!(data.key(), q["scale_key"].as_str(), "{what}");
                    scale_keys.push(data.key().unwrap().to_string());
                }
                (q, Some(Quantization::Blockwise { channel_dim, group_size, scales })) => {
                    assert_eq!(q["kind"], "blockwise", "{what}");
                    assert_eq!(u64::from(*channel_dim), q["axis"].as_u64().unwrap(), "{what}");
                    assert_eq!(*group_size, q["group_size"].as_u64().unwrap(), "{what}");
                    assert_eq!(scales.count(), q["scales"].as_u64().unwrap(), "{what}");
                    let Scales::Stored { data, dtype, .. } = scales else { panic!("{what}: scales inline") };
                    assert_eq!(dtype.name(), "bfloat16", "{what}");
                    assert_eq!(data.key(), q["scale_key"].as_str(), "{what}");
                    blockwise_scale_keys.push(data.key().unwrap().to_string());
                }
                (q, ours) => panic!("{what}: recorded {q}, decoded {ours:?}"),
            }
            matched += 1;
        }
        // No constant of the payload is left unexplained.
        assert_eq!(matched, constants.len(), "{name}: every payload constant is a recorded one");
        checked += matched;
        // `ls`: the blobs are tensors of those types, the scales float32 vectors.
        for c in &constants {
            let e = file.entry(c.data.key().unwrap()).unwrap();
            if c.datatype.is_4bit() {
                // Kept a blob (no format a program converts to holds uint4); the type in a field.
                assert_eq!(e.info().kind().name(), "blob", "{name}");
                let field = e.info().extra().iter().find(|(k, _)| k == "xnnpack_shape").map(|(_, v)| v.as_text());
                assert_eq!(field, Some(Some("uint4 [8,64]")), "{name}");
                continue;
            }
            assert_eq!(e.info().kind().name(), "tensor", "{name}");
            assert_eq!(Some(e.info().dtype()), c.dtype, "{name}");
            assert_eq!(e.info().shape(), c.shape, "{name}");
        }
        for (keys, dtype) in [(&scale_keys, "float32"), (&blockwise_scale_keys, "bfloat16")] {
            for k in keys {
                assert_eq!(file.entry(k).unwrap().info().dtype().name(), dtype, "{name}: {k}");
            }
        }
        assert!(file.verify().is_empty(), "{name}: {:?}", file.verify());
    }
    assert_eq!(checked, 4 + 4 + 4 + 2, "constants checked");
}

#[test]
fn operator_counts_name_what_ran_in_the_delegate() {
    let (path, _) = fixture("xnnpack_fp32.pte");
    let file = TensorFile::open(&path).unwrap();
    let counts: Vec<BTreeMap<String, u64>> = graphs(&file).iter().map(Graph::operator_counts).collect();
    let all: u64 = counts.iter().flat_map(|c| c.values()).sum();
    assert!(counts.iter().any(|c| c.contains_key("Conv2d")), "{counts:?}");
    assert!(counts.iter().any(|c| c.contains_key("FullyConnected")), "{counts:?}");
    assert!(all >= 2);
}

/// A safetensors file holding `weights` (name, dtype, shape, bytes).
fn weights_file(weights: &[(&str, tensorfile::DType, Vec<u64>, Vec<u8>)]) -> TensorFile {
    use tensorfile::model::TensorData;
    use tensorfile::source::Bytes;
    let tensors: Vec<(tensorfile::TensorInfo, TensorData)> = weights
        .iter()
        .map(|(n, d, s, b)| {
            (tensorfile::TensorInfo::dense(*n, *d, s.clone()), TensorData::dense(Bytes::from_vec(b.clone())))
        })
        .collect();
    let bytes = common::write(tensorfile::Format::Safetensors, &tensors, &Default::default());
    tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap()
}

#[test]
fn update_checks_a_typed_blob_against_the_payloads_dtype_and_shape() {
    use tensorfile::{UpdateOptions, update};
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = fixture("xnnpack_qc8.pte");
    let old = TensorFile::open(&path).unwrap();
    let pte = old.reader_as::<PteReader>().unwrap();
    let weight = pte.xnnpack_graphs()[1].graph.as_ref().unwrap().constants.iter().find(|c| c.shape.len() == 2).unwrap();
    let key = weight.data.key().unwrap().to_string();
    let e = old.entry(&key).unwrap();
    assert_eq!((e.info().dtype().name(), e.info().shape()), ("int8", &[4u64, 8][..]));
    let n = e.nbytes() as usize;
    let dest = dir.path().join("updated.pte");

    // The same bytes as uint8 [32] (what the blob was before it was typed), or int8 of another
    // shape: refused, naming the tensor, nothing written.
    for (dtype, shape) in [(tensorfile::DType::UInt8, vec![32]), (tensorfile::DType::Int8, vec![8, 4])] {
        let weights = weights_file(&[(&key, dtype, shape, vec![1; n])]);
        let err = update(&old, &weights, &dest, &UpdateOptions::default()).unwrap_err();
        assert_eq!(err.tensor(), Some(key.as_str()), "{err}");
        assert!(!dest.exists());
    }
    // int8 [4, 8]: replaced, and the program still decodes with the blob typed.
    let new_bytes: Vec<u8> = (0..n as u8).collect();
    let weights = weights_file(&[(&key, tensorfile::DType::Int8, vec![4, 8], new_bytes.clone())]);
    let report = update(&old, &weights, &dest, &UpdateOptions::default()).unwrap();
    assert_eq!(report.replaced, vec![key.clone()]);
    let new = TensorFile::open(&dest).unwrap();
    assert_eq!(new.read(&key).unwrap().as_dense().unwrap().to_vec(), new_bytes);
    assert_eq!(new.entry(&key).unwrap().info().dtype().name(), "int8");
}

#[test]
fn a_payload_that_does_not_decode_leaves_its_blobs_untyped_and_says_why() {
    let (path, _) = fixture("xnnpack_fp32.pte");
    let mut bytes = std::fs::read(&path).unwrap();
    let at: Vec<usize> = bytes.windows(4).enumerate().filter(|(_, w)| w == b"XN01").map(|(i, _)| i).collect();
    assert_eq!(at.len(), 2, "one flatbuffer identifier per payload");
    bytes[at[0] + 1] = b'Q';
    let file = tensorfile::OpenOptions::new().open_bytes(tensorfile::source::Bytes::from_vec(bytes)).unwrap();
    let pte = file.reader_as::<PteReader>().unwrap();
    let [broken, fine] = pte.xnnpack_graphs() else { panic!("two delegates") };
    let err = broken.graph.as_ref().unwrap_err();
    assert_eq!(err.rule(), Some(tensorfile::Rule::BadMagic), "{err}");
    let fine = fine.graph.as_ref().unwrap();
    let kinds: Vec<(&str, bool)> = file
        .entries()
        .iter()
        .map(|e| (e.info().kind().name(), fine.constants.iter().any(|c| c.data.key() == Some(e.info().name()))))
        .collect();
    // The second payload's two constants typed, the first's two left as blobs.
    assert_eq!(kinds.iter().filter(|(k, _)| *k == "tensor").count(), 2, "{kinds:?}");
    assert!(kinds.iter().all(|(k, typed)| (*k == "tensor") == *typed), "{kinds:?}");
    let problems = file.verify();
    assert!(problems.iter().any(|p| p.to_string().contains("XN01")), "{problems:?}");
}
