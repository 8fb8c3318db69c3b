//! `tensorfile info`: counts, metadata, and an ExecuTorch program's structure. Run on small files
//! made in a temporary folder and on committed fixtures.

use crate::common::*;
use tensorfile::WriteOptions;

#[test]
fn info_counts_dtypes_and_shows_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let options = WriteOptions { metadata: vec![("format".into(), "pt".into())], ..WriteOptions::default() };
    write(&path, &sample_tensors(), &options);

    let j = json_of(&ok(&[&"info", &path, &"--json"]));
    assert_eq!(j["format"], "safetensors");
    assert_eq!(j["tensors"], 7);
    assert_eq!(j["blobs"], 0);
    assert_eq!(j["unreadable"], 0);
    assert_eq!(j["file_bytes"], std::fs::metadata(&path).unwrap().len());
    assert_eq!(j["data_bytes"], 24 + 6 + 16 + 4 + 2 + 8);
    assert_eq!(j["dtypes"]["float32"], 1);
    assert_eq!(j["dtypes"]["bfloat16"], 1);
    assert_eq!(j["metadata"]["format"], "pt");
    assert!(j["details"]["header_bytes"].is_u64());

    let text = ok(&[&"info", &path]);
    assert!(text.lines().any(|l| l.starts_with("format") && l.ends_with("safetensors")), "{text}");
    assert!(text.contains("metadata:") && text.contains("  format  pt"), "{text}");
}

#[test]
fn info_describes_a_program() {
    let text = ok(&[&"info", &et_fixture("two_methods.pte")]);
    assert!(text.contains("method forward") && text.contains("method encode"), "{text}");
    assert!(text.contains("operators"), "{text}");
    let j = json_of(&ok(&[&"info", &et_fixture("xnnpack.pte"), &"--json"]));
    let m = &j["structure"]["methods"][0];
    assert_eq!(m["delegates"][0]["id"], "XnnpackBackend");
    assert!(m["delegates"][0]["bytes"].as_u64().unwrap() > 0);
    // The operators its decoded XNNPACK payload runs.
    let ops = m["delegates"][0]["operators"].as_object().expect("operators of the payload");
    assert!(ops.contains_key("Conv2d"), "{ops:?}");
    let text = ok(&[&"info", &et_fixture("xnnpack.pte")]);
    assert!(text.contains("runs       FullyConnected"), "{text}");
    assert_eq!(j["format"], "pte");
}

#[test]
fn info_shows_gguf_metadata_with_long_arrays_summarised() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf/metadata.gguf");
    let text = ok(&[&"info", &path]);
    assert!(text.lines().any(|l| l.starts_with("format") && l.ends_with("gguf")), "{text}");
    // The value shown beside `key` under `metadata:`.
    let shown = |key: &str| {
        let line = text.lines().find(|l| l.trim_start().starts_with(&format!("{key} "))).unwrap_or("");
        line.trim_start()[key.len()..].trim().to_string()
    };
    assert_eq!(shown("scalar.u8"), "250", "{text}");
    assert_eq!(shown("array.uint8"), "[0,1,255]", "{text}");
    assert_eq!(shown("tokenizer.ggml.tokens"), r#"[300 × string: "tok0·一", "tok1·丁", "tok2·丂", …]"#, "{text}");
    let j = json_of(&ok(&[&"info", &path, &"--json"]));
    assert_eq!(j["format"], "gguf");
    assert_eq!(j["metadata"]["tokenizer.ggml.tokens"].as_array().unwrap().len(), 300);
    assert_eq!(j["metadata"]["scalar.u64"], u64::MAX);
    assert_eq!(j["metadata"]["scalar.f32"], 0.1);
    assert_eq!(j["metadata"]["array.empty_u32"], serde_json::json!([]));
    assert_eq!(j["details"]["alignment"], 32);
}

#[test]
fn info_counts_quantized_gguf_tensors_by_ggml_type() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf/blocks.gguf");
    let j = json_of(&ok(&[&"info", &path, &"--json"]));
    let dtypes = j["dtypes"].as_object().expect("dtypes");
    // One tensor of each ggml type, named as the `parameters` line names them.
    for ggml in ["ggml.q8_0", "ggml.q4_k", "ggml.q6_k", "ggml.iq2_xxs"] {
        assert_eq!(dtypes.get(ggml), Some(&serde_json::json!(1)), "{ggml} in {dtypes:?}");
    }
    assert!(!dtypes.contains_key("float32"), "quantized tensors counted as float32: {dtypes:?}");
    let counted: u64 = dtypes.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(counted, j["tensors"].as_u64().unwrap());
    let by_dtype = j["parameters"]["by_dtype"].as_object().expect("by_dtype");
    assert_eq!(dtypes.keys().collect::<Vec<_>>(), by_dtype.keys().collect::<Vec<_>>());

    let text = ok(&[&"info", &path]);
    let line = text.lines().find(|l| l.starts_with("dtypes")).unwrap_or_default();
    assert!(line.contains("ggml.q8_0 x1") && !line.contains("float32"), "{line}");
}
