//! The `tensorfile` binary on split GGUF models (`tests/fixtures/gguf-split`, made by llama.cpp's
//! `llama-gguf-split`): `ls`, `info`, `verify`, `diff` and `report` of any part read the whole
//! model; `convert IN OUT.gguf --split-max-tensors N | --max-shard-size SIZE
//! [--no-tensor-first-split]` writes the parts the tool wrote, and `convert PART OUT.gguf` the
//! file its `--merge` wrote, byte for byte (the record's sha256).

use std::path::PathBuf;

use crate::common::*;
use serde_json::Value as Json;

fn fixture(name: &str) -> PathBuf {
    fixtures().join("gguf-split").join(name)
}

fn record() -> Json {
    let path = fixture("splits.expected.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fixtures", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: malformed: {e}", path.display()))
}

/// The record of the run that wrote the parts named `prefix`.
fn run_of(prefix: &str) -> Json {
    record()["splits"].as_array().unwrap().iter().find(|s| s["output"] == prefix).unwrap().clone()
}

/// `llama-gguf-split --split` arguments as ours: its `1M` is our `1MB`.
fn our_args(args: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--split-max-tensors" => out.extend([arg, args.next().unwrap()]),
            "--split-max-size" => out.extend(["--max-shard-size".into(), format!("{}B", args.next().unwrap())]),
            "--no-tensor-first-split" => out.push(arg),
            other => panic!("no option for {other}"),
        }
    }
    out
}

fn check_parts(run: &Json, files: &[PathBuf]) {
    let parts = run["parts"].as_array().unwrap();
    assert_eq!(files.len(), parts.len(), "{}", run["output"]);
    for (path, want) in files.iter().zip(parts) {
        assert_eq!(path.file_name().unwrap().to_str(), want["file"].as_str());
        assert_eq!(sha256(&std::fs::read(path).unwrap()), want["sha256"].as_str().unwrap(), "{}", path.display());
    }
}

#[test]
fn split_and_merge_are_byte_identical_to_llama_gguf_split() {
    let dir = tempfile::tempdir().unwrap();
    let record = record();
    for (run, merge) in record["splits"].as_array().unwrap().iter().zip(record["merges"].as_array().unwrap()) {
        let prefix = run["output"].as_str().unwrap();
        let out = dir.path().join(prefix);
        std::fs::create_dir(&out).unwrap();
        let dest = out.join(format!("{prefix}.gguf"));
        let input = fixture(run["input"].as_str().unwrap());
        let args = our_args(&run["args"]);
        let mut command: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"convert", &"--json", &input, &dest];
        command.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        let done = json_of(&ok(&command));
        assert_eq!(done["index"], Json::Null, "{prefix}");
        let files: Vec<PathBuf> =
            done["files"].as_array().unwrap().iter().map(|f| PathBuf::from(f.as_str().unwrap())).collect();
        check_parts(run, &files);
        assert_eq!(names_in(&out).len(), files.len(), "{prefix}: nothing else written");
        // Merged from the last part (any part reads as the model), as --merge wrote it.
        let merged = dir.path().join(format!("{prefix}.merged.gguf"));
        ok(&[&"convert", files.last().unwrap(), &merged]);
        assert_eq!(sha256(&std::fs::read(&merged).unwrap()), merge["sha256"].as_str().unwrap(), "{prefix}: merged");
    }
}

#[test]
fn the_text_report_names_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.gguf");
    let text = ok(&[&"convert", &fixture("model.gguf"), &dest, &"--split-max-tensors", &"3"]);
    assert!(text.contains("model-00001-of-00004.gguf") && text.contains("4 parts (no index)"), "{text}");
    let run = run_of("model");
    let files: Vec<PathBuf> = (1..=4).map(|k| dir.path().join(format!("model-{k:05}-of-00004.gguf"))).collect();
    check_parts(&run, &files);
}

#[test]
fn ls_info_and_verify_read_the_whole_model_from_any_part() {
    let run = run_of("model");
    let parts: Vec<PathBuf> =
        run["parts"].as_array().unwrap().iter().map(|p| fixture(p["file"].as_str().unwrap())).collect();
    let model = json_of(&ok(&[&"ls", &"--json", &fixture("model.gguf")]));
    let names = |rows: &Json| rows.as_array().unwrap().iter().map(|r| r["name"].clone()).collect::<Vec<_>>();
    for part in &parts {
        let rows = json_of(&ok(&[&"ls", &"--json", part]));
        assert_eq!(names(&rows), names(&model), "{}", part.display());
        let shard = |i: usize| PathBuf::from(rows[i]["shard"].as_str().unwrap());
        assert_eq!(shard(0).file_name(), parts[0].file_name());
        assert_eq!(shard(10).file_name(), parts[3].file_name());
        let info = json_of(&ok(&[&"info", &"--json", part]));
        assert_eq!(info["format"], "gguf");
        assert_eq!(info["tensors"], 11);
        assert_eq!(info["details"]["shards"], 4);
        assert_eq!(info["metadata"]["general.architecture"], "llama");
        assert_eq!(info["metadata"]["split.count"], 4);
        let verified = ok(&[&"verify", &"--deep", part]);
        assert!(verified.starts_with("OK ") && verified.contains("11 tensors"), "{verified}");
    }
}

#[test]
fn a_missing_part_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_of("model");
    for p in run["parts"].as_array().unwrap().iter().take(3) {
        let name = p["file"].as_str().unwrap();
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    let o = tensorfile(&[&"ls", &dir.path().join("model-00001-of-00004.gguf")]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("model-00004-of-00004.gguf") && err.contains("missing-file"), "{err}");
}

#[test]
fn split_options_go_with_gguf_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("model.gguf");
    let o = tensorfile(&[&"convert", &input, &dir.path().join("x.safetensors"), &"--split-max-tensors", &"2"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = tensorfile(&[&"convert", &input, &dir.path().join("x.gguf"), &"--no-tensor-first-split"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let both = [
        &"convert" as &dyn AsRef<std::ffi::OsStr>,
        &input,
        &dir.path().join("x.gguf"),
        &"--split-max-tensors",
        &"2",
        &"--max-shard-size",
        &"1MB",
    ];
    assert_eq!(code(&tensorfile(&both)), 2);
    assert!(names_in(dir.path()).is_empty());
}

/// A folder of parts: every part is one of the folder's files, read once.
#[test]
fn a_folder_of_parts_reads_each_part_once() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_of("model");
    for p in run["parts"].as_array().unwrap() {
        let name = p["file"].as_str().unwrap();
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    let rows = json_of(&ok(&[&"ls", &"--json", &dir.path()]));
    assert_eq!(rows.as_array().unwrap().len(), 11);
}

#[test]
fn diff_and_report_read_a_part_as_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let part = fixture("model-00003-of-00004.gguf");
    let merged = dir.path().join("merged.gguf");
    ok(&[&"convert", &part, &merged]);
    // The merged file holds what every part holds: no difference.
    let same = ok(&[&"diff", &part, &merged]);
    assert!(same.contains("identical") && !same.contains("changed"), "{same}");
    // gguf-py's file states (1, 16) and a 0-d scalar; the parts, ggml's (16,) and (1,).
    let o = tensorfile(&[&"diff", &part, &fixture("model.gguf")]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("output_norm.weight: shape [16] -> [1, 16]"), "{}", stdout(&o));
    let page = dir.path().join("report.html");
    let text = ok(&[&"report", &part, &"-o", &page]);
    assert!(text.contains("11 tensors") && page.is_file(), "{text}");
}
