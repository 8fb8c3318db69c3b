//! `tensorfile convert --dtype`: floating tensors of a safetensors fixture cast as torch casts
//! them (the record `tests/fixtures/cast/record.json`, made with torch), the others
//! kept; a dtype that is no cast target is a usage error naming those that are.

use crate::common::*;
use tensorfile::TensorFile;

#[test]
fn convert_casts_floating_tensors_as_torch_does() {
    let record = json_of(&std::fs::read_to_string(fixtures().join("cast/record.json")).unwrap());
    let part = &record["safetensors"];
    let src_path = fixtures().join(part["file"].as_str().unwrap());
    let src = TensorFile::open(&src_path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bf16.safetensors");

    let text = ok(&[&"convert", &src_path, &out, &"--dtype", &"bfloat16"]);
    let rows = part["converted"]["bfloat16"].as_array().unwrap();
    let floats = rows.iter().filter(|r| r["dtype"] == "bfloat16").count();
    // bfloat16 itself is among them, left as it is: float64, float32, float16 and two float8s.
    let cast = floats - 1;
    assert!(cast >= 3 && text.contains(&format!(", {cast} cast to bfloat16")), "{text}");

    let converted = TensorFile::open(&out).unwrap();
    assert_eq!(converted.entries().len(), rows.len());
    for row in rows {
        let name = row["name"].as_str().unwrap();
        let entry = converted.entry(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(entry.info().dtype().name(), row["dtype"], "{name}");
        let got = converted.read(name).unwrap();
        let got = got.as_dense().unwrap();
        assert_eq!(sha256(got), row["sha256"].as_str().unwrap(), "{name}: torch's bytes");
        let before = src.entry(name).unwrap().info().dtype();
        if !before.is_float() {
            // Integers, bool, complex: the source's bytes.
            assert_eq!(entry.info().dtype(), before, "{name}");
            assert_eq!(**got, **src.read(name).unwrap().as_dense().unwrap(), "{name}");
        }
    }

    let report = json_of(&ok(&[&"convert", &src_path, &out, &"--dtype", &"bfloat16", &"--json"]));
    assert_eq!(report["dtype"], "bfloat16");
    assert_eq!(report["cast"].as_array().unwrap().len(), cast, "{report}");
    assert!(report["cast"].as_array().unwrap().iter().all(|n| n != "bfloat16" && n != "int64"), "{report}");
    let report = json_of(&ok(&[&"convert", &src_path, &out, &"--json"]));
    assert_eq!((&report["dtype"], &report["cast"]), (&serde_json::Value::Null, &serde_json::json!([])));
}

#[test]
fn a_dtype_that_is_no_cast_target_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures().join("safetensors/dtypes.safetensors");
    let out = dir.path().join("out.safetensors");
    for bad in ["float64", "int8", "f64"] {
        let o = tensorfile(&[&"convert", &src, &out, &"--dtype", &bad]);
        assert_eq!(code(&o), 2, "{bad}");
        let err = stderr(&o);
        assert!(err.contains(bad) && err.contains("float32, float16, bfloat16, float8_e4m3fn, float8_e5m2"), "{err}");
        assert!(!out.exists());
    }
}
