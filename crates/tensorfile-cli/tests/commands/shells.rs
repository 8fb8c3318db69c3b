//! What the shells render of the library's decisions: the formats list, ignored write options
//! worded as flags, and unreadable rows with their hint.

use std::path::PathBuf;

use crate::common::*;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(path)
}

#[test]
fn formats_lists_every_unit_with_its_caps() {
    let rows = json_of(&ok(&[&"formats", &"--json"]));
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let expected: Vec<&str> = tensorfile::Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names, expected);
    for (row, format) in rows.iter().zip(tensorfile::Format::ALL) {
        assert_eq!(row["write"], format.unit().can_write(), "{}", row["name"]);
        assert_eq!(row["update"], format.unit().can_update(), "{}", row["name"]);
        assert_eq!(row["edit_metadata"], format.unit().can_edit_metadata(), "{}", row["name"]);
        assert_eq!(row["caps"], format.caps().to_json(), "{}", row["name"]);
        assert_eq!(row["extensions"][0], format.extension(), "{}", row["name"]);
        assert!(!row["title"].as_str().unwrap().is_empty());
    }
    let editable: Vec<&str> =
        rows.iter().filter(|r| r["edit_metadata"] == true).map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(editable, ["zt2", "gguf", "safetensors"]);
    let table = ok(&[&"formats"]);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().next().unwrap().contains(" META "), "{table}");
    assert_eq!(table.lines().count(), rows.len() + 1, "{table}");
}

#[test]
fn ignored_options_are_worded_as_flags() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("safetensors/metadata.safetensors");
    let out = dir.path().join("out.safetensors");
    let o = tensorfile(&[&"convert", &src, &out, &"--compress", &"zstd", &"--checksum", &"sha256", &"--big-endian"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for flag in ["--compress", "--checksum", "--big-endian"] {
        assert!(stderr(&o).contains(&format!("warning: {flag} has no effect")), "{}", stderr(&o));
    }
    // Defaults are never warned about; nor is what the format stores.
    let o = tensorfile(&[&"convert", &src, &out]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let (src, zt) = (fixture("zt/rust/crc32c.zt"), dir.path().join("out.zt"));
    let o = tensorfile(&[&"convert", &src, &zt, &"--compress", &"zstd", &"--checksum", &"sha256"]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let o = tensorfile(&[&"convert", &src, &zt, &"--compress", &"zstd", &"--big-endian"]);
    assert!(stderr(&o).contains("--big-endian has no effect: compressed data"), "{}", stderr(&o));
}

#[test]
fn unreadable_rows_carry_their_hint() {
    let rows = json_of(&ok(&[&"ls", &"--json", &fixture("executorch/external.pte")]));
    let unreadable: Vec<_> = rows.as_array().unwrap().iter().filter(|r| r["kind"] == "unreadable").collect();
    assert!(!unreadable.is_empty());
    for row in unreadable {
        assert_eq!(row["hint"], "program-data", "{row}");
    }
    let rows = json_of(&ok(&[&"ls", &"--json", &fixture("pytorch/subclass.pt2")]));
    let bad = rows.as_array().unwrap().iter().find(|r| r["kind"] == "unreadable").unwrap();
    assert_eq!(bad["rule"], "forbidden-global");
    assert!(bad.get("hint").is_some());
}
