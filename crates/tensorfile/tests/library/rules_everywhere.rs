//! Every unreadable tensor and every refusal names the rule it comes from: over every file
//! under `tests/fixtures/` (hostile ones among them), no `ls --json` row of an unreadable
//! tensor has `"rule": null`, and a file that does not open is refused with a rule.

use crate::common;

use std::path::{Path, PathBuf};

use tensorfile::TensorFile;
use tensorfile::inspect::entry_rows;

/// Every file under `dir`, records (`.expected.json`) and notes (`.md`) left out, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for item in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = item.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if !name.ends_with(".expected.json") && !name.ends_with(".md") {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn no_unreadable_row_and_no_refusal_of_a_fixture_lacks_a_rule() {
    let files = files_under(&common::fixtures_dir());
    assert!(files.len() > 100, "only {} fixtures found", files.len());
    let (mut opened, mut unreadable, mut refused) = (0, 0, 0);
    let mut missing = Vec::new();
    for path in &files {
        match TensorFile::open(path) {
            Ok(file) => {
                opened += 1;
                for row in entry_rows(&file).iter().filter(|r| r["kind"] == "unreadable") {
                    unreadable += 1;
                    if row["rule"].is_null() {
                        missing.push(format!("{}: {row}", path.display()));
                    }
                }
            }
            Err(e) => {
                refused += 1;
                if e.rule().is_none() {
                    missing.push(format!("{}: refused without a rule: {e}", path.display()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{} without a rule:\n{}", missing.len(), missing.join("\n"));
    assert!(
        opened > 100 && unreadable > 0 && refused > 0,
        "{opened} opened, {unreadable} unreadable, {refused} refused"
    );
}
