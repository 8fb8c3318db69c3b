//! `update` of ONNX models: new weights from a safetensors file replace initializers in the
//! model (`raw_data`) or in its external data file; every other byte stays as it was.

use std::path::{Path, PathBuf};

use tensorfile::formats::{WriteOptions, write_to_vec};
use tensorfile::model::{DType, TensorData, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{Format, TensorFile};
use tensorfile::{UpdateOptions, update};

fn fixture(name: &str) -> PathBuf {
    crate::common::fixtures_dir().join("onnx").join(name)
}

/// A safetensors file of float32 tensors `(name, shape, values)`, in `dir`.
fn weights(dir: &Path, tensors: &[(&str, Vec<u64>, Vec<f32>)]) -> TensorFile {
    let data: Vec<(TensorInfo, TensorData)> = tensors
        .iter()
        .map(|(n, shape, v)| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            (TensorInfo::dense(*n, DType::Float32, shape.clone()), TensorData::dense(Bytes::from_vec(bytes)))
        })
        .collect();
    let path = dir.join("new.safetensors");
    std::fs::write(&path, write_to_vec(Format::Safetensors, &data, &WriteOptions::default()).unwrap()).unwrap();
    TensorFile::open(&path).unwrap()
}

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn an_inline_initializer_is_replaced_and_every_other_byte_kept() {
    let dir = tempfile::tempdir().unwrap();
    let model = TensorFile::open(fixture("storage.onnx")).unwrap();
    let new: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    let w = weights(dir.path(), &[("raw_f32", vec![3, 4], new.clone())]);
    let dest = dir.path().join("out.onnx");
    let report = update(&model, &w, &dest, &UpdateOptions::default()).unwrap();
    assert_eq!(report.replaced, ["raw_f32"]);
    let out = TensorFile::open(&dest).unwrap();
    assert_eq!(&out.read("raw_f32").unwrap().as_dense().unwrap()[..], &le(&new)[..]);
    let (old, got) = (std::fs::read(fixture("storage.onnx")).unwrap(), std::fs::read(&dest).unwrap());
    assert_eq!(old.len(), got.len());
    let at = model.entry("raw_f32").unwrap().storage().offset() as usize;
    assert_eq!(old[..at], got[..at]);
    assert_eq!(old[at + 48..], got[at + 48..]);
}

#[test]
fn an_external_initializer_is_replaced_in_a_new_data_file_beside_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for f in ["model.onnx", "weights.bin"] {
        std::fs::copy(fixture("external").join(f), src.join(f)).unwrap();
    }
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let model = TensorFile::open(src.join("model.onnx")).unwrap();
    let new: Vec<f32> = (0..128).map(|i| -(i as f32)).collect();
    let w = weights(dir.path(), &[("w", vec![8, 16], new.clone())]);
    let dest = out_dir.join("model.onnx");
    update(&model, &w, &dest, &UpdateOptions::default()).unwrap();
    let out = TensorFile::open(&dest).unwrap();
    assert_eq!(&out.read("w").unwrap().as_dense().unwrap()[..], &le(&new)[..]);
    assert_eq!(out.read("b").unwrap().as_dense().unwrap()[..], model.read("b").unwrap().as_dense().unwrap()[..]);
    // The model itself is unchanged (its weights stay external); the source data file too.
    assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(src.join("model.onnx")).unwrap());
    assert_eq!(
        std::fs::read(src.join("weights.bin")).unwrap(),
        std::fs::read(fixture("external/weights.bin")).unwrap()
    );
    // In place: the model's own data file is rewritten (atomically, by rename).
    drop(out);
    let again: Vec<f32> = (0..16).map(|i| i as f32 + 0.25).collect();
    let w = weights(dir.path(), &[("b", vec![16], again.clone())]);
    update(&model, &w, &src.join("model.onnx"), &UpdateOptions::default()).unwrap();
    let reread = TensorFile::open(src.join("model.onnx")).unwrap();
    assert_eq!(&reread.read("b").unwrap().as_dense().unwrap()[..], &le(&again)[..]);
    assert_eq!(reread.read("w").unwrap().as_dense().unwrap()[..], model.read("w").unwrap().as_dense().unwrap()[..]);
}

#[test]
fn a_mismatch_or_a_typed_field_is_an_error_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let model = TensorFile::open(fixture("storage.onnx")).unwrap();
    let dest = dir.path().join("out.onnx");
    let w = weights(dir.path(), &[("raw_f32", vec![4, 3], vec![0.0; 12])]);
    let err = update(&model, &w, &dest, &UpdateOptions::default()).unwrap_err();
    assert_eq!(err.tensor(), Some("raw_f32"));
    assert!(err.to_string().contains("[4, 3]"), "{err}");
    let w = weights(dir.path(), &[("typed_f32", vec![2, 3], vec![0.0; 6])]);
    let err = update(&model, &w, &dest, &UpdateOptions::default()).unwrap_err();
    assert_eq!(err.tensor(), Some("typed_f32"));
    assert!(err.to_string().contains("typed fields"), "{err}");
    assert!(!dest.exists(), "a failed update left a file");
}
