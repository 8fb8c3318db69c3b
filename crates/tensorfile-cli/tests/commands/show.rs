//! `tensorfile show` (values printed as numpy prints them, `--slice`, `--json`) and the
//! parameter counts `info` adds.

use std::path::PathBuf;

use serde_json::json;

use crate::common::*;

fn fixture(path: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(path)
}

/// numpy's text for a tensor and slice of tests/fixtures/show/records.json.
fn numpy_text(file: &str, name: &str, slice: Option<&str>) -> String {
    let records = json_of(&std::fs::read_to_string(fixture("show/records.json")).unwrap());
    let found = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == file && r["name"] == name && r["slice"].as_str() == slice);
    found.unwrap_or_else(|| panic!("no record of {file} {name} {slice:?}"))["text"].as_str().unwrap().to_string()
}

#[test]
fn show_prints_as_numpy_prints() {
    let values = fixture("show/values.safetensors");
    let out = ok(&[&"show", &values, &"f32.large", &"--slice", &"0:4,:8"]);
    assert_eq!(out, numpy_text("show/values.safetensors", "f32.large", Some("0:4,:8")) + "\n");
    let out = ok(&[&"show", &values, &"f16.every"]);
    assert_eq!(out, numpy_text("show/values.safetensors", "f16.every", None) + "\n");
    assert!(out.contains("..."), "{out}");
    let out = ok(&[&"show", &fixture("safetensors/dtypes.safetensors"), &"bfloat16", &"--slice", &"-1"]);
    assert_eq!(out, numpy_text("safetensors/dtypes.safetensors", "bfloat16", Some("-1")) + "\n");
}

#[test]
fn show_json_holds_every_value() {
    let values = fixture("show/values.safetensors");
    let j = json_of(&ok(&[&"show", &values, &"f64.specials", &"--json"]));
    assert_eq!(j["name"], "f64.specials");
    assert_eq!(j["dtype"], "float64");
    assert_eq!(j["shape"], json!([6]));
    assert_eq!(j["slice"], json!(null));
    assert_eq!(j["values"], json!(["nan", "inf", "-inf", -0.0, 0.0, 1.25]));
    // Every value of a selection numpy would summarise; float32 values as float32 digits.
    let j = json_of(&ok(&[&"show", &values, &"f32.large", &"--slice", &"1:40:2,-3:", &"--json"]));
    assert_eq!(j["slice"], "1:40:2,-3:");
    assert_eq!(j["selected_shape"], json!([20, 3]));
    let rows = j["values"].as_array().unwrap();
    assert_eq!(rows.len(), 20);
    assert_eq!(
        rows[0],
        json!([97.0 / 7.0f32 as f64, 98.0 / 7.0, 99.0 / 7.0].map(|v| (v as f32).to_string().parse::<f64>().unwrap()))
    );
    let j = json_of(&ok(&[&"show", &values, &"i64.big", &"--json"]));
    assert_eq!(j["values"], json!([i64::MAX, i64::MIN, (1i64 << 53) + 1, 0, -5]));
    let j = json_of(&ok(&[&"show", &values, &"c64.values", &"--slice", &"0", &"--json"]));
    assert_eq!(j["values"], json!([1.0, 2.0]));
    assert_eq!(j["selected_shape"], json!([]));
}

#[test]
fn show_slice_errors_name_the_axis_and_the_bound() {
    let values = fixture("show/values.safetensors");
    let o = tensorfile(&[&"show", &values, &"f32.large", &"--slice", &"0,50"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("axis 1") && e.contains("index 50") && e.contains("size 50") && e.contains("f32.large"), "{e}");
    let o = tensorfile(&[&"show", &values, &"f32.large", &"--slice", &"0,0,0"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("3 axes"), "{}", stderr(&o));
    let o = tensorfile(&[&"show", &values, &"f32.large", &"--slice", &"0,x"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("axis 1"), "{}", stderr(&o));
    let o = tensorfile(&[&"show", &values, &"f32.large", &"--slice", &"::0"]);
    assert_eq!(code(&o), 2);
    let o = tensorfile(&[&"show", &values, &"no.such.tensor"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("no.such.tensor"), "{}", stderr(&o));
}

#[test]
fn show_dequantizes_and_says_so() {
    let gguf = fixture("gguf/blocks.gguf");
    let o = tensorfile(&[&"show", &gguf, &"q8_0", &"--slice", &"0,:4"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("dequantized"), "{}", stderr(&o));
    let j = json_of(&ok(&[&"show", &gguf, &"q8_0", &"--json"]));
    assert_eq!(j["dequantized"], true);
    assert_eq!(j["printed_as"], "float32");
    assert_eq!(j["values"].as_array().unwrap().len(), 2);
    assert_eq!(j["values"][0].as_array().unwrap().len(), 64);
}

#[test]
fn info_counts_parameters_and_sizes_at_other_widths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    write(&path, &sample_tensors(), &tensorfile::WriteOptions::default());
    let j = json_of(&ok(&[&"info", &path, &"--json"]));
    let p = &j["parameters"];
    assert_eq!(p["total"], 6 + 3 + 2 + 4 + 1 + 1);
    assert_eq!(
        p["by_dtype"],
        json!({"float32": 6, "bfloat16": 3, "int64": 2, "bool": 4, "float16": 1, "float64": 1, "int32": 0})
    );
    // 11 floating elements at each width (at int4 each tensor rounded up to a byte: 3 + 2 + 1 + 1);
    // int64 (16 bytes) and bool (4) as they are.
    assert_eq!(
        p["size_at"],
        json!({"float32": 44 + 20, "float16": 22 + 20, "float8": 11 + 20, "int4": 3 + 2 + 1 + 1 + 20})
    );
    let text = ok(&[&"info", &path]);
    assert!(text.contains("parameters           17 (bfloat16 3, bool 4, float16 1, float32 6"), "{text}");
    assert!(text.contains("at float16/bfloat16  42 bytes"), "{text}");

    // A fixture: the counts are the sums over its tensors as `ls` lists them.
    let file = fixture("safetensors/dtypes.safetensors");
    let rows = json_of(&ok(&[&"ls", &file, &"--json"]));
    let mut by = serde_json::Map::new();
    let mut total = 0u64;
    for r in rows.as_array().unwrap() {
        let n: u64 = r["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).product();
        total += n;
        let d = r["dtype"].as_str().unwrap().to_string();
        let sum = by.get(&d).and_then(|v| v.as_u64()).unwrap_or(0) + n;
        by.insert(d, json!(sum));
    }
    let j = json_of(&ok(&[&"info", &file, &"--json"]));
    assert_eq!(j["parameters"]["total"], total);
    assert_eq!(j["parameters"]["by_dtype"], serde_json::Value::Object(by));
    let text = ok(&[&"info", &file]);
    let line = text.lines().find(|l| l.starts_with("parameters")).unwrap();
    assert!(line.contains(&format!("{total} (")), "{line}");
}
