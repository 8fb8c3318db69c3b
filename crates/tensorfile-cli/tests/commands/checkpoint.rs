//! `convert MODEL_DIR OUT.gguf`: a Hugging Face checkpoint written as llama.cpp's
//! `convert_hf_to_gguf.py` writes it (the records of `tests/fixtures/hf-gguf/`), `--dtype`'s
//! short spellings as the converter's `--outtype`, `--outtype` itself (q8_0 and the ternary
//! types too), the output split as the converter splits it, `--quantize` as the converter
//! followed by llama-quantize, and what has no equivalent yet refused naming its flag.

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
    assert_eq!(report["architecture"], "llama");
    assert_eq!(report["outtype"], "bf16");
    assert!(report["seconds"].as_f64().is_some_and(|s| s > 0.0));
    assert_eq!(report["types"][0], serde_json::json!({"name": "output.weight", "type": "BF16"}));
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
    let cases = [
        (
            &["--no-tensor-first-split", "--split-max-tensors", "8", "--quantize", "Q4_K_M"][..],
            "--no-tensor-first-split",
        ),
        (&["--rename", "a=b"][..], "--rename"),
    ];
    for (args, flag) in cases {
        let mut all: Vec<Arg<'_>> = vec![&"convert", &model, &out];
        all.extend(args.iter().map(|a| a as Arg<'_>));
        let o = tensorfile(&all);
        assert_eq!(code(&o), 2, "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{flag} not named: {}", stderr(&o));
        assert!(!out.exists(), "{flag}: nothing written");
    }
    for bad in [
        &[&"--dtype" as Arg<'_>, &"float8_e4m3fn"][..],
        &[&"--outtype", &"q4_0"],
        &[&"--outtype", &"f16", &"--dtype", &"bf16"],
    ] {
        let mut all: Vec<Arg<'_>> = vec![&"convert", &model, &out];
        all.extend_from_slice(bad);
        let o = tensorfile(&all);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(!out.exists());
    }
}

#[test]
fn the_converters_outtypes_and_splits_have_their_equivalents() {
    let tmp = tempfile::tempdir().unwrap();
    let model = fixtures().join("hf-gguf/TinyLlama-SPM-bf16");
    let out = tmp.path().join("out.gguf");
    ok(&[&"convert", &model, &out, &"--outtype", &"q8_0"]);
    let want = recorded("hf-gguf.expected.json", |r| {
        r["folder"] == "TinyLlama-SPM-bf16" && r["args"] == serde_json::json!(["--outtype", "q8_0"])
    });
    assert_eq!(sha256_of(&out), want, "--outtype q8_0");
    let ternary = fixtures().join("hf-gguf-ternary/Ternary-SPM-bf16");
    ok(&[&"convert", &ternary, &out, &"--outtype", &"TQ2_0"]);
    assert_eq!(sha256_of(&out), recorded("options.expected.json", |r| r["args"][1] == "tq2_0"));
    std::fs::remove_file(&out).unwrap();
    // The converter's --split-max-size 20K and --split-max-tensors 8 --no-tensor-first-split.
    let record = json_of(&std::fs::read_to_string(fixtures().join("hf-gguf/options.expected.json")).unwrap());
    let files_of = |args: serde_json::Value| {
        let run = record["runs"].as_array().unwrap().iter().find(|r| r["args"] == args).unwrap().clone();
        run["files"].as_array().unwrap().clone()
    };
    let cases: [(&[&str], serde_json::Value); 2] = [
        (&["--max-shard-size", "20K"], serde_json::json!(["--split-max-size", "20K"])),
        (
            &["--split-max-tensors", "8", "--no-tensor-first-split"],
            serde_json::json!(["--split-max-tensors", "8", "--no-tensor-first-split"]),
        ),
    ];
    for (args, converter) in cases {
        let mut all: Vec<Arg<'_>> = vec![&"convert", &model, &out, &"--json"];
        all.extend(args.iter().map(|a| a as Arg<'_>));
        let report = json_of(&ok(&all));
        let want = files_of(converter);
        let reported: Vec<String> =
            report["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();
        assert_eq!(reported.len(), want.len(), "{args:?}: {report}");
        for (path, file) in reported.iter().zip(&want) {
            assert!(path.ends_with(file["name"].as_str().unwrap()), "{args:?}: {path}");
            assert_eq!(sha256_of(std::path::Path::new(path)), file["sha256"].as_str().unwrap(), "{args:?}: {path}");
        }
    }
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

#[test]
fn fp8_weights_stay_q8_0_as_the_converters_fp8_as_q8_keeps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = "DeepSeekV3-FP8-GPT2Tok-BPE-tied";
    let model = fixtures().join("hf-gguf").join(folder);
    let out = tmp.path().join("out.gguf");
    for (args, converter) in
        [(&[][..], serde_json::json!([])), (&["--fp8-as-q8"][..], serde_json::json!(["--fp8-as-q8"]))]
    {
        let mut all: Vec<Arg<'_>> = vec![&"convert", &model, &out];
        all.extend(args.iter().map(|a| a as Arg<'_>));
        ok(&all);
        let want = recorded("hf-gguf.expected.json", |r| r["folder"] == folder && r["args"] == converter);
        assert_eq!(sha256_of(&out), want, "{args:?}");
    }
    // Only for a checkpoint.
    let o = tensorfile(&[
        &"convert",
        &fixtures().join("safetensors/dtypes.safetensors"),
        &tmp.path().join("x.gguf"),
        &"--fp8-as-q8",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}
