//! The converter's other options, byte for byte: `--model-name`, `--metadata`, its output cut
//! into parts (`--split-max-tensors`, `--split-max-size`, `--no-tensor-first-split`) and the
//! ternary outtypes, as `tests/fixtures/hf-gguf/options.expected.json` records
//! `convert_hf_to_gguf.py` writing them (made by `scripts/fixturegen/hf_gguf_options.py`):
//! every file of every run, named as the converter names it.

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::convert::parse_size;
use tensorfile::llama::{CheckpointOptions, OutType, OutputSplit, convert_checkpoint};

use crate::common;

fn folder(name: &str) -> PathBuf {
    let fixtures = common::fixtures_dir();
    let ternary = fixtures.join("hf-gguf-ternary").join(name);
    if ternary.is_dir() { ternary } else { fixtures.join("hf-gguf").join(name) }
}

/// The converter's arguments of a run, as the library's options.
fn options(args: &[&str]) -> CheckpointOptions {
    let mut options = CheckpointOptions::default();
    let mut split = OutputSplit::default();
    let mut rest = args;
    while let Some((flag, tail)) = rest.split_first() {
        let mut value = || {
            let (v, after) = tail.split_first().expect("a value after the flag");
            rest = after;
            *v
        };
        match *flag {
            "--model-name" => options.model_name = Some(value().to_string()),
            "--metadata" => options.metadata = Some(common::fixtures_dir().join("hf-gguf").join(value())),
            "--split-max-tensors" => split.max_tensors = Some(value().parse().unwrap()),
            "--split-max-size" => split.max_size = Some(parse_size(value()).unwrap()),
            "--outtype" => options.outtype = OutType::from_name(value()).unwrap(),
            "--no-tensor-first-split" => {
                split.no_tensor_first_split = true;
                rest = tail;
            }
            other => panic!("an argument {other:?}: teach this test its option"),
        }
    }
    options.split = split;
    options
}

#[test]
fn the_converters_other_options_give_its_bytes() {
    let text = std::fs::read(common::fixtures_dir().join("hf-gguf/options.expected.json")).unwrap();
    let record: Value = serde_json::from_slice(&text).unwrap();
    let runs = record["runs"].as_array().unwrap();
    let mut failures = Vec::new();
    let mut parts_checked = 0;
    for run in runs {
        let args: Vec<&str> = run["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let name = run["folder"].as_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let done = match convert_checkpoint(&folder(name), &tmp.path().join("out.gguf"), &options(&args), &mut |_| {}) {
            Ok(done) => done,
            Err(e) => {
                failures.push(format!("{name} {args:?}: {e}"));
                continue;
            }
        };
        let want: Vec<(&str, &str)> = run["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap(), f["sha256"].as_str().unwrap()))
            .collect();
        let mut listed: Vec<String> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        listed.sort();
        let names: Vec<&str> = want.iter().map(|w| w.0).collect();
        if listed != names {
            failures.push(format!("{name} {args:?}: files {listed:?}, the converter's {names:?}"));
            continue;
        }
        let reported: Vec<String> =
            done.files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(reported, names, "{name} {args:?}: the files reported, in order");
        for (file, digest) in want {
            let bytes = std::fs::read(tmp.path().join(file)).unwrap();
            if hex::encode(Sha256::digest(&bytes)) != digest {
                failures.push(format!("{name} {args:?}: {file} ({} bytes) is not the converter's", bytes.len()));
            }
            parts_checked += 1;
        }
    }
    assert_eq!(runs.len(), 12, "runs of the record");
    assert_eq!(parts_checked, 26, "files of the record");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_new_split_replaces_the_parts_of_an_earlier_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("model.gguf");
    let src = folder("TinyLlama-SPM-bf16");
    let first = convert_checkpoint(&src, &out, &options(&["--split-max-tensors", "8"]), &mut |_| {}).unwrap();
    assert_eq!(first.files.len(), 3);
    let second = convert_checkpoint(&src, &out, &options(&["--split-max-tensors", "11"]), &mut |_| {}).unwrap();
    assert_eq!(second.files.len(), 2);
    assert_eq!(second.removed, first.files, "the three parts of the earlier write");
    let mut left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().path()).collect();
    left.sort();
    assert_eq!(left, second.files);
}

#[test]
fn a_vocabulary_alone_is_not_split() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("vocab.gguf");
    let mut opts = options(&["--split-max-tensors", "2"]);
    opts.vocab_only = true;
    let err = convert_checkpoint(&folder("TinyLlama-SPM-bf16"), &out, &opts, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("one file"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn converting_and_quantizing_writes_no_converted_file_on_the_way() {
    let text = std::fs::read(common::fixtures_dir().join("hf-gguf/quantize.expected.json")).unwrap();
    let record: Value = serde_json::from_slice(&text).unwrap();
    let run = record["runs"].as_array().unwrap().iter().find(|r| r["preset"] == "Q4_K_M").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.gguf");
    let target = tensorfile::llama::QuantizeTarget::parse("Q4_K_M").unwrap();
    let request = tensorfile::llama::QuantizeRequest::new(target);
    let options = CheckpointOptions::default();
    // Whenever a tensor is done, the folder holds the output being written and nothing else.
    let mut most = 0;
    let mut calls = 0;
    let mut watch = |_: tensorfile::convert::Progress<'_>| {
        most = most.max(std::fs::read_dir(tmp.path()).unwrap().count());
        calls += 1;
    };
    let src = folder("TinyLlama-SPM-bf16");
    let (converted, quantized) =
        tensorfile::llama::convert_and_quantize(&src, &out, &options, &request, &mut watch).unwrap();
    assert_eq!(calls, 21, "one progress call a tensor: the conversion and the quantization are one pass");
    assert_eq!(most, 1, "only the staged output beside it");
    assert_eq!(hex::encode(Sha256::digest(std::fs::read(&out).unwrap())), run["sha256"].as_str().unwrap());
    assert_eq!(converted.tensors.len(), 21);
    assert!(converted.files.is_empty(), "no converted file");
    assert_eq!(quantized.files, [out]);
}

/// llama-quantize's options as the shells give them (`--keep-split` aside: the converter's
/// split asks for it), into a request.
fn quantize_request(args: &[&str], preset: &str) -> tensorfile::llama::QuantizeRequest {
    let mut options = tensorfile::llama::QuantizeOptions::new(preset);
    let mut rest = args;
    while let Some((flag, tail)) = rest.split_first() {
        rest = tail;
        let mut value = || {
            let (v, after) = rest.split_first().expect("a value after the flag");
            rest = after;
            v.to_string()
        };
        match *flag {
            "--keep-split" => options.keep_split = true,
            "--pure" => options.pure = true,
            "--leave-output-tensor" => options.leave_output_tensor = true,
            "--tensor-type" => options.tensor_types.push(value()),
            "--output-tensor-type" => options.output_tensor_type = Some(value()),
            "--token-embedding-type" => options.token_embedding_type = Some(value()),
            other => panic!("a llama-quantize option {other:?}: teach this test its option"),
        }
    }
    options.request(&[], &[]).unwrap()
}

#[test]
fn the_converter_then_llama_quantize_with_its_options_and_splits_in_one_pass() {
    let text = std::fs::read(common::fixtures_dir().join("hf-gguf/options.expected.json")).unwrap();
    let record: Value = serde_json::from_slice(&text).unwrap();
    let runs = record["quantize_runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "runs of the record");
    let mut failures = Vec::new();
    for run in runs {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
        };
        let (args, quantize_args) = (strings(&run["args"]), strings(&run["quantize_args"]));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let quantize_args: Vec<&str> = quantize_args.iter().map(String::as_str).collect();
        let (name, preset) = (run["folder"].as_str().unwrap(), run["preset"].as_str().unwrap());
        let tmp = tempfile::tempdir().unwrap();
        let request = quantize_request(&quantize_args, preset);
        let out = tmp.path().join("out.gguf");
        let done = tensorfile::llama::convert_and_quantize(&folder(name), &out, &options(&args), &request, &mut |_| {});
        let label = format!("{name} {args:?} then {quantize_args:?} {preset}");
        let (_, quantized) = match done {
            Ok(done) => done,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        let want: Vec<(&str, &str)> = run["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap(), f["sha256"].as_str().unwrap()))
            .collect();
        let written: Vec<String> =
            quantized.files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        if written != want.iter().map(|w| w.0).collect::<Vec<_>>() {
            failures.push(format!("{label}: files {written:?}, llama-quantize's {want:?}"));
            continue;
        }
        for (file, digest) in want {
            let bytes = std::fs::read(tmp.path().join(file)).unwrap();
            if hex::encode(Sha256::digest(&bytes)) != digest {
                failures.push(format!("{label}: {file} ({} bytes) is not llama-quantize's", bytes.len()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
