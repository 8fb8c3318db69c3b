//! `show` against numpy: every record of tests/fixtures/show/records.json and
//! packed.records.json (numpy's `str(array)` of a held tensor, sliced, made by
//! scripts/fixturegen/show_records.py) printed byte for byte the same.

use tensorfile::TensorFile;
use tensorfile::show::{Extent, show};

use crate::common;

#[test]
fn show_prints_as_numpy() {
    check_records("show/records.json", 500);
}

/// Packed 4- and 2-bit integers (an ONNX file made by onnx) as numpy prints their values in
/// int8 / uint8.
#[test]
fn packed_ints_print_as_numpy_prints_int8() {
    check_records("show/packed.records.json", 50);
}

fn check_records(path: &str, at_least: usize) {
    let dir = common::fixtures_dir();
    let text = std::fs::read(dir.join(path)).expect("records: run scripts/fixtures");
    let records: serde_json::Value = serde_json::from_slice(&text).expect("records JSON");
    let records = common::array(&records, "records", "show records");
    assert!(records.len() > at_least, "{} records", records.len());
    let mut failures = Vec::new();
    let mut last: Option<(String, TensorFile)> = None;
    for r in records {
        let file = common::text(r, "file", "show record");
        let name = common::text(r, "name", "show record");
        let slice = r["slice"].as_str();
        let expected = common::text(r, "text", "show record");
        if last.as_ref().is_none_or(|(f, _)| f != file) {
            last = Some((file.to_string(), TensorFile::open(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))));
        }
        let opened = &last.as_ref().expect("opened").1;
        for extent in [Extent::Printed, Extent::All] {
            let shown = show(opened, name, slice, extent).unwrap_or_else(|e| panic!("{file} {name} {slice:?}: {e}"));
            let got = shown.to_text();
            if got != expected {
                let (e, g) = (expected.lines().take(4).collect::<Vec<_>>(), got.lines().take(4).collect::<Vec<_>>());
                failures.push(format!("{file} {name} {slice:?} ({extent:?}):\nnumpy: {e:?}\nours:  {g:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        2 * records.len(),
        failures[..failures.len().min(20)].join("\n\n")
    );
}
