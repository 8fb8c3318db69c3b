//! The `tensorfile` binary on sharded checkpoints: the committed huggingface_hub set
//! (`tests/fixtures/sharded/mobilenet`) listed, described and verified through its index and
//! its folder; `convert --max-shard-size` writing shards and their index.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value as Json;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sharded/mobilenet")
}

fn index() -> PathBuf {
    fixture().join("model.safetensors.index.json")
}

fn record() -> Json {
    let path = fixture().join("model.safetensors.index.json.expected.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let record: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: malformed: {e}", path.display()));
    assert_eq!(record["tensors"].as_array().map(Vec::len), Some(314), "{}: MobileNetV2's 314 tensors", path.display());
    record
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Name, dtype and shape of every entry `ls --json` lists, sorted by name.
fn listed_by_name(path: &Path) -> Vec<(String, String, String)> {
    let rows = json_of(&ok(&[&"ls", &"--json", &path]));
    let row =
        |r: &Json| (r["name"].as_str().unwrap().into(), r["dtype"].as_str().unwrap().into(), r["shape"].to_string());
    let mut rows: Vec<_> = rows.as_array().unwrap().iter().map(row).collect();
    rows.sort();
    rows
}

#[test]
fn ls_info_and_verify_read_a_set_by_its_index_and_by_its_folder() {
    let record = record();
    let tensors = record["tensors"].as_array().unwrap();
    for path in [index(), fixture()] {
        let rows = json_of(&ok(&[&"ls", &"--json", &path]));
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), tensors.len());
        for (row, t) in rows.iter().zip(tensors) {
            assert_eq!(row["name"], t["name"]);
            assert_eq!(row["dtype"], t["dtype"]);
            assert_eq!(row["shape"], t["shape"]);
            let shard = PathBuf::from(row["shard"].as_str().unwrap());
            assert_eq!(shard.file_name().unwrap().to_str(), t["shard"].as_str(), "{}", t["name"]);
        }
        let table = ok(&[&"ls", &path]);
        assert!(table.lines().next().unwrap().contains("SHARD"), "{table}");
        assert!(table.contains("model-00003-of-00004.safetensors"), "{table}");

        let info = json_of(&ok(&[&"info", &"--json", &path]));
        assert_eq!(info["format"], "safetensors");
        assert_eq!(info["tensors"], tensors.len());
        assert_eq!(info["details"]["shards"], record["shards"].as_array().unwrap().len());
        if path == index() {
            assert_eq!(info["metadata"]["total_size"], record["metadata"]["total_size"]);
        }
        assert_eq!(info["metadata"]["format"], "pt", "the shards' own metadata");
        assert_eq!(info["data_bytes"], record["metadata"]["total_size"]);

        let verified = ok(&[&"verify", &"--deep", &path]);
        assert!(verified.starts_with("OK ") && verified.contains("314 tensors"), "{verified}");
    }
    // One file of the set alone: no shard column.
    let one = fixture().join("model-00001-of-00004.safetensors");
    assert!(json_of(&ok(&[&"ls", &"--json", &one]))[0].get("shard").is_none());
    assert!(!ok(&[&"ls", &one]).contains("SHARD"));
}

#[test]
fn convert_writes_shards_and_their_index_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.safetensors");
    let report = json_of(&ok(&[&"convert", &"--json", &index(), &out, &"--max-shard-size", &"300KB"]));
    let files: Vec<&str> = report["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(files.len(), 6, "{report}");
    assert!(files[0].ends_with("model-00001-of-00006.safetensors"), "{files:?}");
    assert!(report["index"].as_str().unwrap().ends_with("model.safetensors.index.json"));
    assert_eq!(report["tensors"], 314);
    for f in &files {
        let rows = json_of(&ok(&[&"ls", &"--json", f]));
        let rows = rows.as_array().unwrap();
        let bytes: u64 = rows.iter().map(|r| r["nbytes"].as_u64().unwrap()).sum();
        assert!(bytes <= 300_000 || rows.len() == 1, "{f}: {bytes} bytes in {} tensors", rows.len());
    }
    let written = dir.path().join("model.safetensors.index.json");
    assert_eq!(listed_by_name(&written), listed_by_name(&index()));
    let same = ok(&[&"diff", &index(), &written]);
    assert!(same.contains("identical"), "{same}");

    // Text report; then to .zt shards, in GiB units: everything fits one file, no index.
    std::fs::create_dir(dir.path().join("z")).unwrap();
    let text = ok(&[&"convert", &written, &dir.path().join("z/model.zt"), &"--max-shard-size", &"400kb"]);
    assert!(text.contains("model.zt.index.json (zt): 4 shards, 314 tensors"), "{text}");
    let one = ok(&[&"convert", &dir.path().join("z"), &dir.path().join("one.zt"), &"--max-shard-size", &"1.5GiB"]);
    assert!(one.contains("one.zt (zt): one shard (no index), 314 tensors"), "{one}");
    assert!(ok(&[&"diff", &dir.path().join("one.zt"), &index()]).contains("identical"));

    // Another sharded write to the same name replaces the earlier shards, with a warning.
    let o = tensorfile(&[&"convert", &index(), &out, &"--max-shard-size", &"1MB"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("warning: removed").count(), 6, "{}", stderr(&o));
    let left: Vec<String> = names_in(dir.path()).into_iter().filter(|n| n.starts_with("model")).collect();
    assert_eq!(
        left,
        ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"]
    );
}

#[test]
fn bad_sizes_are_usage_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.safetensors");
    for size in ["0", "5XB", "lots", "1.2.3GB"] {
        let o = tensorfile(&[&"convert", &index(), &out, &"--max-shard-size", &size]);
        assert_eq!(o.status.code(), Some(2), "{size}: {}", stderr(&o));
        assert!(stderr(&o).contains("size"), "{}", stderr(&o));
    }
    assert!(names_in(dir.path()).is_empty());
}

#[test]
fn verify_of_a_set_names_the_broken_shard() {
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixture()).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    // Cut the last shard short: the set no longer opens, and the error names that shard.
    let last = dir.path().join("model-00004-of-00004.safetensors");
    let bytes = std::fs::read(&last).unwrap();
    std::fs::write(&last, &bytes[..bytes.len() - 4]).unwrap();
    let o = tensorfile(&[&"verify", &dir.path().join("model.safetensors.index.json")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("model-00004-of-00004.safetensors"), "{}", stderr(&o));
}
