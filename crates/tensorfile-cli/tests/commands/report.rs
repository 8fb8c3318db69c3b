//! `tensorfile report`: the page written where asked (or beside the current folder's name of
//! the file), its document the library's, `--json`, `--no-stats`, `--compare`, sharded
//! checkpoints, and errors naming the file.

use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value as Json;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(path)
}

/// The document embedded in a written page.
fn document(page: &Path) -> Json {
    let html = std::fs::read_to_string(page).unwrap();
    let marker = "id=\"report-data\">";
    let start = html.find(marker).unwrap() + marker.len();
    let end = start + html[start..].find("</script>").unwrap();
    json_of(&html[start..end])
}

#[test]
fn a_page_is_written_with_every_tensor_and_its_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let text = ok(&[&"report", &fixture("safetensors/dtypes.safetensors"), &"-o", &page]);
    assert!(text.starts_with("wrote ") && text.contains("tensors"), "{text}");
    let doc = document(&page);
    let listed = json_of(&ok(&[&"ls", &fixture("safetensors/dtypes.safetensors"), &"--json"]));
    let rows = doc["tensors"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), listed.as_array().unwrap().len());
    let stats = json_of(&ok(&[&"stats", &fixture("safetensors/dtypes.safetensors"), &"--hist", &"32", &"--json"]));
    for (got, want) in doc["tensors"]["stats"].as_array().unwrap().iter().zip(stats["tensors"].as_array().unwrap()) {
        match want["summarised"].as_bool().unwrap() {
            true => {
                for k in ["numel", "min", "max", "mean", "std", "zeros", "nan", "hist"] {
                    assert_eq!(got[k], want[k], "{} {k}", want["name"]);
                }
            }
            false => assert_eq!(got["error"], want["reason"]),
        }
    }
    assert!(doc["compare"].is_null());
}

#[test]
fn json_no_stats_default_output_and_sharded_input() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tensorfile"))
        .args(["report", "--no-stats", "--json"])
        .arg(fixture("sharded/mobilenet"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = json_of(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(said["output"], "mobilenet.html");
    let page = dir.path().join("mobilenet.html");
    assert_eq!(said["bytes"], std::fs::metadata(&page).unwrap().len());
    let doc = document(&page);
    assert!(doc["tensors"].get("stats").is_none());
    let listed = json_of(&ok(&[&"ls", &fixture("sharded/mobilenet"), &"--json"]));
    assert_eq!(said["tensors"], listed.as_array().unwrap().len());
    let columns = doc["tensors"]["columns"].as_array().unwrap();
    assert!(columns.iter().any(|c| c == "file"), "a set of files names each tensor's file: {columns:?}");
    let titles: Vec<&str> = doc["sections"].as_array().unwrap().iter().filter_map(|s| s["title"].as_str()).collect();
    assert!(titles.contains(&"Where the bytes go: by file"), "{titles:?}");
}

#[test]
fn compare_adds_the_differences_and_the_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("c.html");
    let (a, b) = (fixture("diff/bf16.a.safetensors"), fixture("diff/bf16.b.safetensors"));
    ok(&[&"report", &a, &"--compare", &b, &"--atol", &"0.01", &"--no-stats", &"-o", &page]);
    let compare = document(&page)["compare"].clone();
    // A tolerance is refused as diff refuses it.
    let refused = tensorfile(&[&"report", &a, &"--compare", &b, &"--atol=-1", &"-o", &page]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("not a finite number of at least 0"), "{}", stderr(&refused));
    assert_eq!(compare["atol"], 0.01);
    let diff = json_of(&stdout(&tensorfile(&[&"diff", &a, &b, &"--atol", &"0.01", &"--json"])));
    let changed: Vec<&Json> = compare["rows"].as_array().unwrap().iter().filter(|r| r[1] == "changed").collect();
    assert_eq!(changed.len(), diff["changed"].as_array().unwrap().len());
    for (row, want) in changed.iter().zip(diff["changed"].as_array().unwrap()) {
        assert_eq!(row[0], want["name"]);
        assert_eq!(row[4], want["metrics"]["max_abs_diff"]);
        assert_eq!(row[8], want["metrics"]["over_tolerance"]);
    }
}

#[test]
fn a_file_that_does_not_open_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.safetensors");
    std::fs::write(&bad, b"<html><title>404 Not Found</title></html>").unwrap();
    let page = dir.path().join("bad.html");
    let o = tensorfile(&[&"report", &bad, &"-o", &page]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("bad.safetensors"), "{}", stderr(&o));
    assert!(!page.exists());
}
