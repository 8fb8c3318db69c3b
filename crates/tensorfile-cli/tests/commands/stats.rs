//! `tensorfile stats` and `verify --finite`, on the statistics fixtures (numpy's records in
//! tests/fixtures/stats/records.json), a sharded checkpoint and GGUF's quantized tensors.

use std::path::PathBuf;

use crate::common::*;
use serde_json::Value as Json;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(path)
}

/// numpy's record of tensor `name` of the special values' file.
fn record(name: &str) -> Json {
    let records = json_of(&std::fs::read_to_string(fixture("stats/records.json")).expect("run scripts/fixtures"));
    let file = records["files"].as_array().unwrap().iter().find(|f| f["file"] == "stats/special.safetensors").unwrap();
    file["tensors"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone()
}

const FIELDS: [&str; 17] = [
    "name",
    "dtype",
    "shape",
    "numel",
    "dequantized",
    "summarised",
    "min",
    "max",
    "mean",
    "std",
    "absmax",
    "zeros",
    "nan",
    "posinf",
    "neginf",
    "hist",
    // Not summarised: the reason instead of the numbers.
    "reason",
];

#[test]
fn json_has_the_documented_fields_and_numpys_numbers() {
    let special = fixture("stats/special.safetensors");
    let out = json_of(&ok(&[&"stats", &special, &"--json", &"--hist", &"10"]));
    let tensors = out["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 11);
    for t in tensors {
        let keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, FIELDS[..16].to_vec(), "{t}");
        let want = record(t["name"].as_str().unwrap());
        for key in ["numel", "min", "max", "absmax", "zeros", "nan", "posinf", "neginf", "hist"] {
            assert_eq!(t[key], want[key], "{}: {key}", t["name"]);
        }
        for key in ["mean", "std"] {
            if let (Some(g), Some(w)) = (t[key].as_f64(), want[key].as_f64()) {
                assert!((g - w).abs() <= 1e-9 * w.abs() + 1e-15 * want["absmax"].as_f64().unwrap(), "{key}: {g} {w}");
            } else {
                assert_eq!(t[key], want[key], "{}: {key}", t["name"]);
            }
        }
    }
    let complex = json_of(&ok(&[&"stats", &fixture("safetensors/dtypes.safetensors"), &"complex64", &"--json"]));
    let c = &complex["tensors"][0];
    assert_eq!(
        (c["summarised"].as_bool(), c["reason"].as_str()),
        (Some(false), Some("complex64 elements are complex numbers"))
    );
    let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, [&FIELDS[..6], &FIELDS[16..]].concat());
}

#[test]
fn the_table_names_selected_tensors_in_order_with_special_counts() {
    let special = fixture("stats/special.safetensors");
    let text = ok(&[&"stats", &special, &"constant", &"specials_f32"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "DTYPE", "NUMEL", "MIN", "MAX", "MEAN", "STD", "ABSMAX", "ZEROS", "NAN", "POSINF", "NEGINF"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["constant", "float32", "5", "7", "7", "7", "0", "7", "0", "0", "0", "0"]
    );
    let f32s: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!((f32s[0], f32s[2], f32s[8], f32s[9], f32s[10], f32s[11]), ("specials_f32", "12", "2", "2", "1", "1"));
    assert_eq!(f32s[3], "-3.402823e38");
    // No NaN or infinity anywhere: no columns for them.
    let finite = ok(&[&"stats", &special, &"constant"]);
    assert!(!finite.contains("NAN"), "{finite}");
}

#[test]
fn hist_prints_numpys_bins() {
    let text = ok(&[&"stats", &fixture("stats/special.safetensors"), &"large_f32", &"--hist", &"10"]);
    let want = record("large_f32");
    let counts: Vec<String> = want["hist"]["counts"].as_array().unwrap().iter().map(|c| c.to_string()).collect();
    let rows: Vec<&str> = text.lines().skip_while(|l| !l.trim_start().starts_with("FROM")).skip(1).collect();
    let got: Vec<String> = rows.iter().map(|r| r.split_whitespace().last().unwrap().to_string()).collect();
    assert_eq!(got, counts, "{text}");
    assert!(rows[9].contains(']') && rows[0].contains(')'), "{text}");
}

#[test]
fn an_unknown_name_is_an_error_naming_it() {
    let o = tensorfile(&[&"stats", &fixture("stats/special.safetensors"), &"constant", &"no.such.tensor"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("\"no.such.tensor\""), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

#[test]
fn sharded_and_quantized_files_are_summarised() {
    let sharded = json_of(&ok(&[&"stats", &fixture("sharded/mobilenet"), &"--json"]));
    let listed = json_of(&ok(&[&"ls", &fixture("sharded/mobilenet"), &"--json"]));
    assert_eq!(sharded["tensors"].as_array().unwrap().len(), listed.as_array().unwrap().len());
    assert!(sharded["tensors"].as_array().unwrap().iter().all(|t| t["summarised"] == true));
    let gguf = json_of(&ok(&[&"stats", &fixture("gguf/blocks.gguf"), &"q4_k", &"q8_1", &"--json"]));
    assert_eq!(
        (gguf["tensors"][0]["dequantized"].as_bool(), gguf["tensors"][0]["summarised"].as_bool()),
        (Some(true), Some(true))
    );
    // A quantization without a reference dequantization is passed over, with the reason.
    assert_eq!(gguf["tensors"][1]["summarised"], false);
    assert!(gguf["tensors"][1]["reason"].as_str().unwrap().contains("Q8_1"));
}

#[test]
fn verify_finite_names_each_tensor_with_nan_or_infinities_and_fails() {
    let special = fixture("stats/special.safetensors");
    let o = tensorfile(&[&"verify", &"--finite", &special]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let text = stdout(&o);
    assert!(text.contains("tensor \"specials_f32\": not finite: 2 NaN, 1 +inf, 1 -inf"), "{text}");
    assert!(text.contains("tensor \"all_nan\": not finite: 3 NaN, 0 +inf, 0 -inf"), "{text}");
    assert!(!text.contains("\"constant\""), "{text}");
    let o = tensorfile(&[&"verify", &"--finite", &special, &"--json"]);
    assert_eq!(code(&o), 1);
    let report = json_of(&stdout(&o));
    assert_eq!(report["ok"], false);
    let names: Vec<&str> =
        report["nonfinite"].as_array().unwrap().iter().map(|t| t["tensor"].as_str().unwrap()).collect();
    // In the file's order (as `ls` lists it).
    let listed = json_of(&ok(&[&"ls", &special, &"--json"]));
    let mut want = vec!["specials_f32", "specials_bf16", "specials_f16", "large_bf16", "all_nan"];
    let position = |n: &str| listed.as_array().unwrap().iter().position(|e| e["name"] == n);
    want.sort_by_key(|n| position(n));
    assert_eq!(names, want);
    let large = report["nonfinite"].as_array().unwrap().iter().find(|t| t["tensor"] == "large_bf16").unwrap();
    assert_eq!(large, &serde_json::json!({"tensor": "large_bf16", "nan": 1, "posinf": 1, "neginf": 0}));
    // Without --finite the values are not looked at.
    assert!(ok(&[&"verify", &special]).starts_with("OK "));
    let sharded = ok(&[&"verify", &"--finite", &fixture("sharded/mobilenet")]);
    assert!(sharded.contains("every value finite"), "{sharded}");
    let clean = json_of(&ok(&[&"verify", &"--finite", &fixture("sharded/mobilenet"), &"--json"]));
    assert_eq!((clean["ok"].as_bool(), clean["nonfinite"].as_array().map(Vec::len)), (Some(true), Some(0)));
}
