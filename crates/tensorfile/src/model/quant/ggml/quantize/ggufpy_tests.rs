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

#[test]
fn rows_where_gguf_py_parts_from_ggml_are_quantized_as_ggml_does() {
    let record = record();
    let dir = fixtures().join("ggufpy-quant");
    let found = floats(&read(&dir, &record["found"]["file"], &record["found"]["sha256"]));
    let mut searched = 0;
    for t in record["types"].as_array().unwrap() {
        let ty = GgmlType::from_name(t["type"].as_str().unwrap()).unwrap();
        let s = &t["search"];
        assert!(
            s.is_object(),
            "{}: no search recorded (run scripts/fixtures with scripts/llama-tools built)",
            t["type"]
        );
        searched += at(s, "rows");
        let (kept, n, row_bytes, first) =
            (at(s, "kept"), at(s, "n_per_row"), at(s, "row_bytes"), at(s, "inputs_offset"));
        let pairs = read(&dir, &s["file"], &s["sha256"]);
        assert_eq!(pairs.len(), kept * 2 * row_bytes, "{}: found rows", t["type"]);
        for k in 0..kept {
            let src = &found[first + k * n..first + (k + 1) * n];
            let got = quantized(ty, src, n, row_bytes);
            let (gguf_py, ggml) = pairs[2 * k * row_bytes..(2 * k + 2) * row_bytes].split_at(row_bytes);
            assert_ne!(gguf_py, ggml, "{} found row {k}: recorded as parting", t["type"]);
            assert_eq!(got, ggml, "{} found row {k}: ours is not ggml's", t["type"]);
        }
    }
    assert!(searched >= 9 * 4096, "{searched} rows searched");
}
