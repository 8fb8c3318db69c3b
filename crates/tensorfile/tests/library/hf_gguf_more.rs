//! More Hugging Face checkpoints converted to GGUF byte for byte as llama.cpp's
//! `convert_hf_to_gguf.py` converts them (Phi 3's long-context rope, gpt-oss): every run
//! `tests/fixtures/hf-gguf-more/hf-gguf-more.expected.json` records (made by
//! `scripts/fixturegen/hf_gguf_more.py` with the converter of the llama-cpp-python 0.3.36
//! sdist) is made again here and must have the converter's sha256; a file that differs is
//! explained key by key and tensor by tensor. The runs of folders too large to commit are made
//! too when the folder is where the generator makes it (`$TENSORFILE_HF_GGUF_LARGE`, else
//! `~/.cache/tensorfile/hf-gguf-large`) with the recorded files.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::llama::convert_checkpoint;

use crate::common;
use crate::hf_gguf::{differences, options};

fn dir() -> PathBuf {
    common::fixtures_dir().join("hf-gguf-more")
}

fn record() -> Value {
    let path = dir().join("hf-gguf-more.expected.json");
    let text = std::fs::read(path).expect("hf-gguf-more.expected.json: run scripts/fixtures");
    serde_json::from_slice(&text).expect("malformed hf-gguf-more.expected.json")
}

/// Where the generator makes the folders not committed.
fn large_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TENSORFILE_HF_GGUF_LARGE") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/tensorfile/hf-gguf-large"))
}

/// Make every run of `runs` from the folders in `base`; the failures, explained.
fn make_runs(base: &Path, runs: &[Value]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let options = options(run["args"].as_array().unwrap());
        let folder = run["folder"].as_str().unwrap();
        let out = tmp.path().join(format!("{i}.gguf"));
        if let Err(e) = convert_checkpoint(&base.join(folder), &out, &options, &mut |_| {}) {
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
    failures
}

#[test]
fn more_checkpoints_convert_to_the_converters_bytes() {
    let record = record();
    let runs = record["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5, "runs of the record");
    let failures = make_runs(&dir(), runs);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Whether `base` holds every file `files` records, with its sha256.
fn has_recorded_files(base: &Path, files: &serde_json::Map<String, Value>) -> bool {
    files.iter().all(|(path, want)| {
        std::fs::read(base.join(path))
            .is_ok_and(|b| Some(hex::encode(Sha256::digest(&b)).as_str()) == want["sha256"].as_str())
    })
}

#[test]
fn uncommitted_checkpoints_convert_to_the_converters_bytes_where_they_are_made() {
    let record = record();
    let uncommitted = &record["uncommitted"];
    let runs = uncommitted["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "uncommitted runs of the record");
    let Some(base) = large_dir() else { return };
    if !has_recorded_files(&base, uncommitted["checkpoint_files"].as_object().unwrap()) {
        eprintln!("{}: not the recorded folders (scripts/fixturegen/hf_gguf_more.py makes them)", base.display());
        return;
    }
    let failures = make_runs(&base, runs);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bad_long_context_factors_are_refused_naming_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("Phi3");
    let source = dir().join("Phi3-LongRope-SPM-bf16");
    std::fs::create_dir(&folder).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), folder.join(entry.file_name())).unwrap();
    }
    let config_path = folder.join("config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&config_path).unwrap()).unwrap();
    config["rope_scaling"]["short_factor"] = serde_json::json!([1.0, 1.0]);
    std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
    let out = tmp.path().join("out.gguf");
    let err = convert_checkpoint(&folder, &out, &options(&[]), &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("short_factor") && err.contains("config.json"), "{err}");
    config["rope_scaling"]["short_factor"] = serde_json::json!([1.0, 1.0, 1.0, 1.0]);
    config["rope_scaling"]["type"] = serde_json::json!("dynamic");
    std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
    let err = convert_checkpoint(&folder, &out, &options(&[]), &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("dynamic"), "{err}");
    assert!(!out.exists(), "nothing written");
}
