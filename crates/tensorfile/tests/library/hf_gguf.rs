//! Hugging Face checkpoints converted to GGUF byte for byte as llama.cpp's
//! `convert_hf_to_gguf.py` converts them: every run `tests/fixtures/hf-gguf/hf-gguf.expected.json`
//! records (made by `scripts/fixturegen/hf_gguf.py` with the converter of the
//! llama-cpp-python 0.3.36 sdist) is made again here and must have the converter's sha256. A
//! file that differs is explained key by key and tensor by tensor.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::TensorFile;
use tensorfile::llama::{CheckpointOptions, OutType, convert_checkpoint};

use crate::common;

fn dir() -> PathBuf {
    common::fixtures_dir().join("hf-gguf")
}

fn record() -> Value {
    let text = std::fs::read(dir().join("hf-gguf.expected.json")).expect("hf-gguf.expected.json: run scripts/fixtures");
    serde_json::from_slice(&text).expect("malformed hf-gguf.expected.json")
}

/// The converter's options of a run (the runs of `hf_gguf_more.rs` too).
pub(crate) fn options(args: &[Value]) -> CheckpointOptions {
    let args: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
    let outtype = match args.as_slice() {
        [] | ["--vocab-only"] | ["--fp8-as-q8"] => OutType::Auto,
        ["--outtype", "f32"] => OutType::F32,
        ["--outtype", "f16"] => OutType::F16,
        ["--outtype", "bf16"] => OutType::BF16,
        ["--outtype", "q8_0"] => OutType::Q8_0,
        other => panic!("a run of arguments {other:?}: teach this test its options"),
    };
    CheckpointOptions {
        outtype,
        vocab_only: args == ["--vocab-only"],
        fp8_as_q8: args == ["--fp8-as-q8"],
        tokenizers: Some(&tensorfile_tokenizers::HF_TOKENIZERS),
        ..CheckpointOptions::default()
    }
}

/// Where `ours` parts from the converter's file the record describes (the runs of
/// `hf_gguf_more.rs` too).
pub(crate) fn differences(ours: &Path, expected: &Value) -> Vec<String> {
    let file = TensorFile::open(ours).expect("our output opens");
    let bytes = std::fs::read(ours).unwrap();
    let mut out = Vec::new();
    let kv = expected["kv"].as_array().unwrap();
    let ours_kv = file.summary().metadata;
    let names: Vec<&str> = kv.iter().map(|k| k["name"].as_str().unwrap()).collect();
    let our_names: Vec<&str> = ours_kv.iter().map(|(k, _)| k.as_str()).collect();
    if names != our_names {
        out.push(format!("keys:\n  converter {names:?}\n  ours      {our_names:?}"));
    }
    for (want, (key, value)) in kv.iter().zip(&ours_kv) {
        let shown = value.to_json();
        if let Some(v) = want.get("value").filter(|v| !v.is_null()) {
            if *v != shown && v.as_f64().zip(shown.as_f64()).is_none_or(|(a, b)| a != b) {
                out.push(format!("{key}: converter {v}, ours {shown}"));
            }
        }
    }
    let data_offset = expected["data_offset"].as_u64().unwrap();
    for (i, want) in expected["tensors"].as_array().unwrap().iter().enumerate() {
        let Some(entry) = file.entries().get(i) else {
            out.push(format!("tensor {i} ({}) missing", want["name"]));
            continue;
        };
        let name = entry.info().name();
        if name != want["name"].as_str().unwrap() {
            out.push(format!("tensor {i}: converter {}, ours {name}", want["name"]));
            continue;
        }
        let (at, n) = (entry.storage().offset() as usize, want["n_bytes"].as_u64().unwrap() as usize);
        let digest = bytes.get(at..at + n).map(|b| hex::encode(Sha256::digest(b)));
        if digest.as_deref() != want["sha256"].as_str()
            || entry.storage().offset() - data_offset != want["offset"].as_u64().unwrap()
        {
            out.push(format!("tensor {name}: data or offset differs (ours at {at}, {} bytes)", entry.storage().len()));
        }
    }
    out
}

/// Recorded runs of architectures not converted yet (folder prefix, Hugging Face class): each
/// must be refused naming its class. Converting one is taking it off this list.
const NOT_YET: [(&str, &str); 0] = [];

#[test]
fn checkpoints_convert_to_the_converters_bytes() {
    let record = record();
    let runs = record["runs"].as_array().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut made = 0;
    let mut not_yet = 0;
    let mut failures = Vec::new();
    for run in runs {
        let options = options(run["args"].as_array().unwrap());
        let folder = run["folder"].as_str().unwrap();
        let out = tmp.path().join(format!("{made}.gguf"));
        let done = convert_checkpoint(&dir().join(folder), &out, &options, &mut |_| {});
        made += 1;
        if let Some(class) = NOT_YET.iter().find(|c| folder.starts_with(c.0)).map(|c| c.1) {
            // Recorded for the work to come: refused today, naming the class, nothing written.
            let refused = done.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(refused.contains(class) && refused.contains("not converted yet"), "{folder}: {refused}");
            assert!(!out.exists(), "{folder}: a refused conversion writes nothing");
            not_yet += 1;
            continue;
        }
        if let Err(e) = done {
            failures.push(format!("{folder} {:?}: {e}", run["args"]));
            continue;
        }
        let bytes = std::fs::read(&out).unwrap();
        if hex::encode(Sha256::digest(&bytes)) != run["sha256"].as_str().unwrap() {
            let why = differences(&out, &run["gguf"]);
            failures.push(format!(
                "{folder} {:?}: {} bytes, not the converter's\n{}",
                run["args"],
                bytes.len(),
                why.join("\n")
            ));
        }
    }
    assert_eq!(made, 31, "runs of the record made here");
    assert_eq!(not_yet, NOT_YET.len(), "runs of architectures not converted yet");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_committed_output_is_the_recorded_one() {
    let record = record();
    let run = &record["runs"][0];
    let committed = std::fs::read(dir().join(run["committed"].as_str().unwrap())).unwrap();
    assert_eq!(hex::encode(Sha256::digest(&committed)), run["sha256"].as_str().unwrap());
}

#[test]
fn a_folder_without_config_or_weights_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.gguf");
    let err = convert_checkpoint(tmp.path(), &out, &CheckpointOptions::default(), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("config.json"), "{err}");
    std::fs::write(tmp.path().join("config.json"), r#"{"architectures": ["Phi3ForCausalLM"]}"#).unwrap();
    let err = convert_checkpoint(tmp.path(), &out, &CheckpointOptions::default(), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("weights") || err.to_string().contains("Phi3ForCausalLM"), "{err}");
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_checkpoint_converts_and_quantizes_in_one_job_as_the_converter_then_llama_quantize() {
    let text = std::fs::read(dir().join("quantize.expected.json")).expect("quantize.expected.json");
    let record: Value = serde_json::from_slice(&text).unwrap();
    let runs = record["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5, "llama-quantize runs recorded");
    for run in runs {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out.gguf");
        let preset = run["preset"].as_str().unwrap();
        let mut job = tensorfile::ConvertJob::new([dir().join(run["folder"].as_str().unwrap())], &out);
        job.quantize =
            Some(tensorfile::llama::QuantizeRequest::new(tensorfile::llama::QuantizeTarget::parse(preset).unwrap()));
        let done = job.run(&mut |_| {}).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            run["sha256"].as_str().unwrap(),
            "{preset}: not llama-quantize's bytes"
        );
        assert!(!done.report.quantized.is_empty(), "{preset}: the report names what was quantized");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(
            left,
            [std::ffi::OsString::from("out.gguf")],
            "{preset}: the converted file staged beside it is removed"
        );
    }
}
