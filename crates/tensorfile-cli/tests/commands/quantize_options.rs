//! `convert --quantize`'s options on every path: each one takes effect or is refused (exit 2,
//! naming the flag) on a GGUF model into a `.gguf` (llama-quantize's file), on any other input
//! and into zTensor 2; `--tensor-type-file` and `--dry-run`.

use crate::common::*;

use std::path::{Path, PathBuf};

use tensorfile::{DType, TensorFile, WriteOptions};

fn quantize_fixture(name: &str) -> PathBuf {
    fixtures().join("gguf-quantize").join(name)
}

fn recorded_sha256(run: &str) -> String {
    let path = fixtures().join("gguf-quantize").join("runs").join(format!("{run}.json"));
    let run = json_of(&std::fs::read_to_string(path).unwrap());
    run["output"]["sha256"].as_str().unwrap().to_string()
}

/// A safetensors file of float32 tensors: two matrices of whole Q4_K rows, one whose rows are
/// not (48 values), a vector.
fn safetensors_input(dir: &Path) -> PathBuf {
    let values = |n: usize| -> Vec<f32> { (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect() };
    let path = dir.join("in.safetensors");
    let tensors = [
        dense("blk.0.attn_v.weight", DType::Float32, &[4, 256], f32s(&values(1024))),
        dense("blk.0.ffn_up.weight", DType::Float32, &[2, 512], f32s(&values(1024))),
        dense("blk.0.odd.weight", DType::Float32, &[2, 48], f32s(&values(96))),
        dense("blk.0.norm.weight", DType::Float32, &[256], f32s(&values(256))),
    ];
    write(&path, &tensors, &WriteOptions::default());
    path
}

fn types_of(path: &Path) -> Vec<(String, String)> {
    let f = TensorFile::open(path).unwrap();
    f.entries()
        .iter()
        .map(|e| {
            let t = match e.info().layout().quant() {
                Some(q) => q.describe(),
                None => e.info().dtype().name().to_string(),
            };
            (e.info().name().to_string(), t)
        })
        .collect()
}

fn refused(args: &[Arg<'_>], flag: &str) {
    let o = tensorfile(args);
    assert_eq!(code(&o), 2, "{flag}: stdout {} stderr {}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains(flag), "{flag} not named: {}", stderr(&o));
}

#[test]
fn options_that_need_llama_cpp_names_are_refused_on_any_other_input() {
    let dir = tempfile::tempdir().unwrap();
    let src = safetensors_input(dir.path());
    let out = dir.path().join("out.gguf");
    let zt = dir.path().join("out.zt");
    let cases: [(&[&str], &str); 6] = [
        (&["--output-tensor-type", "q8_0"], "--output-tensor-type"),
        (&["--token-embedding-type", "q8_0"], "--token-embedding-type"),
        (&["--leave-output-tensor"], "--leave-output-tensor"),
        (&["--override-kv", "general.name=str:x"], "--override-kv"),
        (&["--keep-split"], "--keep-split"),
        (&["--prune-layers", "0"], "--prune-layers"),
    ];
    for (options, flag) in cases {
        let mut args: Vec<Arg<'_>> = vec![&"convert", &src, &out, &"--quantize", &"Q8_0"];
        args.extend(options.iter().map(|o| o as Arg<'_>));
        refused(&args, flag);
        let mut args: Vec<Arg<'_>> = vec![&"convert", &src, &zt, &"--zt-version", &"2", &"--quantize", &"Q8_0"];
        args.extend(options.iter().map(|o| o as Arg<'_>));
        refused(&args, flag);
    }
    // A GGUF model into zTensor 2 is quantized to one type too.
    let tiny = quantize_fixture("tiny.gguf");
    refused(
        &[&"convert", &tiny, &zt, &"--zt-version", &"2", &"--quantize", &"Q8_0", &"--leave-output-tensor"],
        "--leave-output-tensor",
    );
    assert!(!out.exists() && !zt.exists());
}

#[test]
fn the_one_type_options_take_effect_on_any_other_input() {
    let dir = tempfile::tempdir().unwrap();
    let src = safetensors_input(dir.path());
    let plain = dir.path().join("plain.gguf");
    ok(&[&"convert", &src, &plain, &"--quantize", &"Q4_K"]);
    let types = types_of(&plain);
    let want = [
        ("blk.0.attn_v.weight", "ggml.q4_k"),
        ("blk.0.ffn_up.weight", "ggml.q4_k"),
        ("blk.0.odd.weight", "float16"),
        ("blk.0.norm.weight", "float32"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    assert_eq!(types, want);
    // --pure: what the one-type path does anyway.
    let pure = dir.path().join("pure.gguf");
    ok(&[&"convert", &src, &pure, &"--quantize", &"Q4_K", &"--pure"]);
    assert_eq!(std::fs::read(&pure).unwrap(), std::fs::read(&plain).unwrap());
    // --tensor-type and --tensor-type-file: by name, the first regex that finds it.
    let typed = dir.path().join("typed.gguf");
    ok(&[&"convert", &src, &typed, &"--quantize", &"Q4_K", &"--tensor-type", &"ATTN_V=q8_0"]);
    let types = types_of(&typed);
    assert!(types.iter().any(|(n, q)| n == "blk.0.attn_v.weight" && q == "ggml.q8_0"), "{types:?}");
    assert!(types.iter().any(|(n, q)| n == "blk.0.ffn_up.weight" && q == "ggml.q4_k"), "{types:?}");
    let file = dir.path().join("types.txt");
    std::fs::write(&file, "  attn_v=q8_0\n\n").unwrap();
    let from_file = dir.path().join("from-file.gguf");
    ok(&[&"convert", &src, &from_file, &"--quantize", &"Q4_K", &"--tensor-type-file", &file]);
    assert_eq!(std::fs::read(&from_file).unwrap(), std::fs::read(&typed).unwrap());
    // --include/--exclude pick what is quantized; every tensor is written.
    let picked = dir.path().join("picked.gguf");
    ok(&[&"convert", &src, &picked, &"--quantize", &"Q4_K", &"--exclude", &"*ffn*"]);
    let types = types_of(&picked);
    assert_eq!(types.len(), 4);
    assert!(types.iter().any(|(n, q)| n == "blk.0.ffn_up.weight" && q == "float32"), "{types:?}");
    // --include-weights/--exclude-weights without an importance matrix: refused.
    refused(&[&"convert", &src, &picked, &"--quantize", &"Q4_K", &"--exclude-weights", &"attn"], "--imatrix");
}

#[test]
fn options_that_would_change_llama_quantizes_file_are_refused_and_q4_k_is_its_mixture_whatever_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = quantize_fixture("tiny.gguf");
    let out = dir.path().join("out.gguf");
    let cases: [(&[&str], &str); 4] = [
        (&["--dtype", "float16"], "--dtype"),
        (&["--split-max-tensors", "4"], "--split-max-tensors"),
        (&["--max-shard-size", "100KB"], "--max-shard-size"),
        (&["--rename", "blk=layer"], "--rename"),
    ];
    for (options, flag) in cases {
        let mut args: Vec<Arg<'_>> = vec![&"convert", &tiny, &out, &"--quantize", &"Q4_K"];
        args.extend(options.iter().map(|o| o as Arg<'_>));
        refused(&args, flag);
    }
    ok(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K"]);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), recorded_sha256("tiny-Q4_K_M"));
}

#[test]
fn a_tensor_type_file_is_read_as_llama_quantize_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = quantize_fixture("tiny.gguf");
    let file = dir.path().join("types.txt");
    // The recorded run's four --tensor-type arguments, as words of a file.
    std::fs::write(&file, "ATTN_V=q8_0 blk\\.1\\.ffn_(up|gate)=iq4_nl\n\tffn_down=q5_0\r\nattn_q=Q4_K\n").unwrap();
    let out = dir.path().join("out.gguf");
    ok(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K_M", &"--tensor-type-file", &file]);
    assert_eq!(sha256(&std::fs::read(&out).unwrap()), recorded_sha256("tiny-Q4_K_M-tensor-types"));
    std::fs::write(&file, "attn_v=q9_0\n").unwrap();
    let o = tensorfile(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K_M", &"--tensor-type-file", &file]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("types.txt"), "{}", stderr(&o));
}

#[test]
fn a_dry_run_gives_the_sizes_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = quantize_fixture("tiny.gguf");
    let out = dir.path().join("out.gguf");
    let text = ok(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K_M", &"--dry-run"]);
    assert!(text.contains("dry run: nothing written") && text.contains("token_embd.weight"), "{text}");
    let sizes = json_of(&ok(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K_M", &"--dry-run", &"--json"]));
    assert!(!out.exists());
    assert_eq!(sizes["path"], "llama-quantize");
    let done = json_of(&ok(&[&"convert", &tiny, &out, &"--quantize", &"Q4_K_M", &"--json"]));
    assert_eq!(sizes["bytes_out"], done["bytes"]);
    let tensors = sizes["tensors"].as_array().unwrap();
    assert_eq!(tensors.len() as u64, done["tensors"].as_u64().unwrap());
    let sum: u64 = tensors.iter().map(|t| t["bytes_out"].as_u64().unwrap()).sum();
    assert_eq!(sum, sizes["bytes_out"].as_u64().unwrap());
    // The one-type path too.
    let src = safetensors_input(dir.path());
    let zt = dir.path().join("out.zt");
    let sizes =
        json_of(&ok(&[&"convert", &src, &zt, &"--zt-version", &"2", &"--quantize", &"Q8_0", &"--dry-run", &"--json"]));
    assert!(!zt.exists());
    assert_eq!(sizes["path"], "one-type");
    let attn = sizes["tensors"].as_array().unwrap().iter().find(|t| t["name"] == "blk.0.attn_v.weight").unwrap();
    assert_eq!(
        (attn["to"].as_str(), attn["bytes_in"].as_u64(), attn["bytes_out"].as_u64()),
        (Some("Q8_0"), Some(4096), Some(1088))
    );
}

#[test]
fn an_importance_matrix_and_its_picked_entries_take_effect_on_the_one_type_path() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = quantize_fixture("tiny.gguf");
    let imatrix = quantize_fixture("imatrix-tiny.gguf");
    let made = |name: &str, options: &[&str]| -> Vec<u8> {
        let out = dir.path().join(name);
        let mut args: Vec<Arg<'_>> = vec![&"convert", &tiny, &out, &"--zt-version", &"2", &"--quantize", &"Q4_K"];
        args.extend(options.iter().map(|o| o as Arg<'_>));
        ok(&args);
        std::fs::read(&out).unwrap()
    };
    let plain = made("plain.zt", &[]);
    let imatrix = imatrix.display().to_string();
    let weighted = made("weighted.zt", &["--imatrix", &imatrix]);
    assert_ne!(weighted, plain, "the importance matrix changed nothing");
    // Every entry excluded: as without the matrix; some included: between the two.
    assert_eq!(made("none.zt", &["--imatrix", &imatrix, "--exclude-weights", "blk"]), plain);
    let some = made("some.zt", &["--imatrix", &imatrix, "--include-weights", "attn_v"]);
    assert!(some != plain && some != weighted);
}

#[test]
fn a_mixture_preset_made_pure_is_its_type_on_the_one_type_path() {
    let dir = tempfile::tempdir().unwrap();
    let src = safetensors_input(dir.path());
    let out = dir.path().join("out.gguf");
    let o = tensorfile(&[&"convert", &src, &out, &"--quantize", &"Q4_K_M"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    ok(&[&"convert", &src, &out, &"--quantize", &"Q4_K_M", &"--pure"]);
    let typed = dir.path().join("typed.gguf");
    ok(&[&"convert", &src, &typed, &"--quantize", &"Q4_K"]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&typed).unwrap());
}
