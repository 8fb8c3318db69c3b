//! `convert MODEL_DIR OUT.gguf`: a Hugging Face checkpoint written as llama.cpp's
//! `convert_hf_to_gguf.py` writes it (the records of `tests/fixtures/hf-gguf/`), `--dtype`'s
//! short spellings as the converter's `--outtype`, `--quantize` as the converter followed by
//! llama-quantize, and what has no equivalent yet refused naming its flag.

use crate::common::*;

fn recorded(file: &str, pick: impl Fn(&serde_json::Value) -> bool) -> String {
    let record = json_of(&std::fs::read_to_string(fixtures().join("hf-gguf").join(file)).unwrap());
    let run = record["runs"].as_array().unwrap().iter().find(|r| pick(r)).expect("a recorded run");
    run["sha256"].as_str().unwrap().to_string()
}

fn sha256_of(path: &std::path::Path) -> String {
    sha256(&std::fs::read(path).unwrap())
}

#[test]
fn a_checkpoint_folder_converts_as_the_converter_converts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let model = fixtures().join("hf-gguf/TinyLlama-SPM-bf16");
    let out = tmp.path().join("out.gguf");
    let report = json_of(&ok(&[&"convert", &model, &out, &"--json"]));
    assert_eq!(report["tensors"], 21);
    let default = recorded("hf-gguf.expected.json", |r| {
        r["folder"] == "TinyLlama-SPM-bf16" && r["args"] == serde_json::json!([])
    });
    assert_eq!(sha256_of(&out), default);
    for (short, outtype) in [("f16", "f16"), ("f32", "f32")] {
        ok(&[&"convert", &model, &out, &"--dtype", &short]);
        let want = recorded("hf-gguf.expected.json", |r| {
            r["folder"] == "TinyLlama-SPM-bf16" && r["args"] == serde_json::json!(["--outtype", outtype])
        });
        assert_eq!(sha256_of(&out), want, "--dtype {short}");
    }
    ok(&[&"convert", &model, &out, &"--quantize", &"Q4_K_M"]);
    assert_eq!(sha256_of(&out), recorded("quantize.expected.json", |r| r["preset"] == "Q4_K_M"));
}

#[test]
fn a_bpe_vocabulary_is_converted_through_the_tokenizers_library() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = "Llama-GPT2Tok-BPE-bf16-tied";
    let out = tmp.path().join("out.gguf");
    ok(&[&"convert", &fixtures().join("hf-gguf").join(folder), &out]);
    let want = recorded("hf-gguf.expected.json", |r| r["folder"] == folder && r["args"] == serde_json::json!([]));
    assert_eq!(sha256_of(&out), want);
}

#[test]
fn what_a_checkpoint_conversion_cannot_do_yet_is_refused_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let model = fixtures().join("hf-gguf/TinyLlama-SPM-bf16");
    let out = tmp.path().join("out.gguf");
    for (args, flag) in [(&["--max-shard-size", "1MB"][..], "--max-shard-size"), (&["--rename", "a=b"][..], "--rename")]
    {
        let mut all: Vec<Arg<'_>> = vec![&"convert", &model, &out];
        all.extend(args.iter().map(|a| a as Arg<'_>));
        let o = tensorfile(&all);
        assert_eq!(code(&o), 2, "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{flag} not named: {}", stderr(&o));
        assert!(!out.exists(), "{flag}: nothing written");
    }
    let o = tensorfile(&[&"convert", &model, &out, &"--dtype", &"float8_e4m3fn"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn the_converters_metadata_options_have_their_equivalents() {
    let tmp = tempfile::tempdir().unwrap();
    let hf = fixtures().join("hf-gguf");
    let model = hf.join("TinyLlama-SPM-bf16");
    let out = tmp.path().join("out.gguf");
    ok(&[&"convert", &model, &out, &"--model-name", &"My Tiny Model"]);
    assert_eq!(sha256_of(&out), recorded("options.expected.json", |r| r["args"][0] == "--model-name"));
    ok(&[&"convert", &model, &out, &"--metadata-file", &hf.join("metadata-override.json")]);
    assert_eq!(sha256_of(&out), recorded("options.expected.json", |r| r["args"][0] == "--metadata"));
    ok(&[&"convert", &model, &out, &"--vocab-only"]);
    let vocab = recorded("hf-gguf.expected.json", |r| {
        r["folder"] == "TinyLlama-SPM-bf16" && r["args"] == serde_json::json!(["--vocab-only"])
    });
    assert_eq!(sha256_of(&out), vocab);
    // Only for a checkpoint.
    let o = tensorfile(&[
        &"convert",
        &fixtures().join("safetensors/dtypes.safetensors"),
        &tmp.path().join("x.gguf"),
        &"--model-name",
        &"x",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}
