//! gguf-py's numpy quantizers (`tests/fixtures/ggufpy-quant/`, made by
//! `scripts/fixturegen/ggufpy_quant.py` with gguf 0.19): for the types gguf-py quantizes, every
//! row quantized here gives gguf-py's bytes, except the rows the record says gguf-py parts
//! from ggml in, where it gives ggml's (docs/gguf.md, "Quantizing"); and the rows a search found
//! where they part give ggml's.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::quantize_rows;
use crate::model::quant::GgmlType;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn read(dir: &Path, name: &Value, digest: &Value) -> Vec<u8> {
    let name = name.as_str().expect("a file name");
    let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e} (run scripts/fixtures)"));
    assert_eq!(hex::encode(Sha256::digest(&bytes)), digest.as_str().unwrap(), "{name}: digest");
    bytes
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn record() -> Value {
    let text = std::fs::read(fixtures().join("ggufpy-quant/ggufpy.json")).expect("ggufpy.json: run scripts/fixtures");
    serde_json::from_slice(&text).expect("malformed ggufpy.json")
}

fn at(v: &Value, key: &str) -> usize {
    v[key].as_u64().unwrap_or_else(|| panic!("`{key}` in {v}")) as usize
}

fn quantized(t: GgmlType, src: &[f32], n_per_row: usize, row_bytes: usize) -> Vec<u8> {
    let mut got = vec![0xA5; src.len() / n_per_row * row_bytes];
    quantize_rows(t, src, n_per_row, None, &mut got).unwrap_or_else(|e| panic!("{t:?}: {}", e.message()));
    got
}

#[test]
fn gguf_py_types_quantize_as_gguf_py_does_except_where_it_parts_from_ggml() {
    let record = record();
    let dir = fixtures().join("ggufpy-quant");
    let ggml = fixtures().join("ggml-quant");
    let inputs = floats(&read(&ggml, &record["inputs"]["file"], &record["inputs"]["sha256"]));
    let ggml_record: Value = serde_json::from_slice(&std::fs::read(ggml.join("quant.expected.json")).unwrap()).unwrap();
    let cases = ggml_record["inputs"]["cases"].as_array().unwrap();
    let (mut same, mut parted, mut failures) = (0, Vec::new(), Vec::new());
    let types = record["types"].as_array().unwrap();
    assert_eq!(types.len(), 9, "gguf-py 0.19 quantizes nine types");
    for t in types {
        let name = t["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap_or_else(|| panic!("{name}: unknown type"));
        assert_eq!(ty.id() as usize, at(t, "id"), "{name}: type number");
        let blob = read(&dir, &t["file"], &t["sha256"]);
        for r in t["records"].as_array().unwrap() {
            let case = cases.iter().find(|c| c["name"] == r["case"]).unwrap();
            let (rows, n, offset, row_bytes) =
                (at(case, "rows"), at(case, "n_per_row"), at(case, "offset"), at(r, "row_bytes"));
            let got = quantized(ty, &inputs[offset..offset + rows * n], n, row_bytes);
            let want = &blob[at(r, "offset")..at(r, "offset") + at(r, "bytes")];
            let unlike: Vec<usize> =
                r["rows_unlike_ggml"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
            for row in 0..rows {
                let span = row * row_bytes..(row + 1) * row_bytes;
                let equal = got[span.clone()] == want[span];
                let label = format!("{name} / {} / row {row}", r["case"].as_str().unwrap());
                match (equal, unlike.contains(&row)) {
                    (true, false) => same += 1,
                    // Where gguf-py parts from ggml, ours is ggml's (every_type_quantizes_as_ggml_does).
                    (false, true) => parted.push(label),
                    (true, true) => failures.push(format!("{label}: gives gguf-py's bytes, recorded as unlike ggml's")),
                    (false, false) => failures.push(format!("{label}: differs from gguf-py's bytes")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(same >= 250, "only {same} rows compared");
    // The one kind of difference of these rows: a block of signed zeros' minimum (docs/gguf.md).
    assert_eq!(parted, ["Q4_1 / signed_zeros / row 0", "Q5_1 / signed_zeros / row 0"]);
}

/// Every row gguf-py is recorded parting from ggml in gives ggml's bytes here: the rows of the
/// cases (`rows_unlike_ggml`, ggml's bytes from `ggml-quant/`) and the rows the search kept
/// (`found-<TYPE>.bin`: gguf-py's row, then ggml's). The search of 9 × 4096 random rows found
/// none (every `kept` is 0), so the rows checked are exactly the two of the cases; a record that
/// vanishes, or a search that finds rows, changes that list and fails here.
#[test]
fn rows_where_gguf_py_parts_from_ggml_are_quantized_as_ggml_does() {
    let record = record();
    let dir = fixtures().join("ggufpy-quant");
    let ggml = fixtures().join("ggml-quant");
    let inputs = floats(&read(&ggml, &record["inputs"]["file"], &record["inputs"]["sha256"]));
    let found = floats(&read(&dir, &record["found"]["file"], &record["found"]["sha256"]));
    let ggml_record: Value = serde_json::from_slice(&std::fs::read(ggml.join("quant.expected.json")).unwrap()).unwrap();
    let cases = ggml_record["inputs"]["cases"].as_array().unwrap();
    let (mut checked, mut searched, mut kept_values) = (Vec::new(), 0, 0);
    let mut check = |ty: GgmlType, label: String, src: &[f32], gguf_py: &[u8], ggml_row: &[u8]| {
        assert_ne!(gguf_py, ggml_row, "{label}: recorded as parting, gguf-py's bytes are ggml's");
        assert_eq!(quantized(ty, src, src.len(), ggml_row.len()), ggml_row, "{label}: ours is not ggml's");
        checked.push(label);
    };
    for t in record["types"].as_array().unwrap() {
        let name = t["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap();
        let blob = read(&dir, &t["file"], &t["sha256"]);
        let ggml_type = ggml_record["types"].as_array().unwrap().iter().find(|g| g["type"] == name).unwrap();
        let ggml_blob = read(&ggml, &ggml_type["file"], &ggml_type["sha256"]);
        for r in t["records"].as_array().unwrap() {
            let case = cases.iter().find(|c| c["name"] == r["case"]).unwrap();
            let theirs = ggml_type["records"].as_array().unwrap().iter();
            let theirs = theirs.clone().find(|g| g["case"] == r["case"] && g["importance"].is_null()).unwrap();
            let (n, row_bytes) = (at(case, "n_per_row"), at(r, "row_bytes"));
            for row in r["rows_unlike_ggml"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize) {
                let src = &inputs[at(case, "offset") + row * n..at(case, "offset") + (row + 1) * n];
                let ours_at = at(r, "offset") + row * row_bytes;
                let ggml_at = at(theirs, "offset") + row * row_bytes;
                let label = format!("{name} / {} / row {row}", r["case"].as_str().unwrap());
                check(ty, label, src, &blob[ours_at..ours_at + row_bytes], &ggml_blob[ggml_at..ggml_at + row_bytes]);
            }
        }
        let s = &t["search"];
        assert!(s.is_object(), "{name}: no search recorded (run scripts/fixtures with scripts/llama-tools built)");
        searched += at(s, "rows");
        let (kept, n, row_bytes, first) =
            (at(s, "kept"), at(s, "n_per_row"), at(s, "row_bytes"), at(s, "inputs_offset"));
        assert_eq!(kept, at(s, "unlike").min(16), "{name}: up to 16 of the rows that parted are kept");
        assert_eq!(first, kept_values, "{name}: its found rows follow the previous type's");
        kept_values += kept * n;
        let pairs = read(&dir, &s["file"], &s["sha256"]);
        assert_eq!(pairs.len(), kept * 2 * row_bytes, "{name}: found rows");
        for k in 0..kept {
            let (gguf_py, ggml_row) = pairs[2 * k * row_bytes..(2 * k + 2) * row_bytes].split_at(row_bytes);
            let src = &found[first + k * n..first + (k + 1) * n];
            check(ty, format!("{name} / found / row {k}"), src, gguf_py, ggml_row);
        }
    }
    assert_eq!(found.len(), kept_values, "found.f32 holds the kept rows, nothing else");
    assert_eq!(searched, 9 * 4096, "rows searched");
    assert_eq!(checked, ["Q4_1 / signed_zeros / row 0", "Q5_1 / signed_zeros / row 0"], "the rows recorded parting");
}
