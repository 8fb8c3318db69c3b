//! Every record of `tests/fixtures/ggml-quant/` (rows quantized by ggml's own
//! `ggml_quantize_chunk`, made by `scripts/fixturegen/ggml_quant.py`): each type quantized here
//! gives ggml's bytes, with and without importance, on one thread and on several.
//! Q2_0, Q1_0 and Q8_K dequantized bit for bit as ggml's own `dequantize_row_*` of ggml's blocks
//! (and of hand-made ones, `more_dequantized`).

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{can_quantize, quantize_rows, row_bytes};
use crate::model::quant::GgmlType;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ggml-quant")
}

/// A file of the fixture folder, checked against its recorded digest.
fn read(file: &Value, digest: &Value) -> Vec<u8> {
    let name = file.as_str().expect("a file name");
    let bytes = std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e} (run scripts/fixtures)"));
    assert_eq!(hex::encode(Sha256::digest(&bytes)), digest.as_str().unwrap(), "{name}: digest");
    bytes
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// One recorded output: its input rows, importance, and ggml's bytes.
struct Output {
    t: GgmlType,
    label: String,
    n_per_row: usize,
    row_bytes: usize,
    src: Vec<f32>,
    importance: Option<Vec<f32>>,
    /// ggml's bytes; `None` where ggml stopped the process (a failed assertion).
    expected: Option<Vec<u8>>,
}

fn record() -> Value {
    let text = std::fs::read(dir().join("quant.expected.json")).expect("quant.expected.json: run scripts/fixtures");
    serde_json::from_slice(&text).expect("malformed quant.expected.json")
}

fn outputs() -> Vec<Output> {
    let record = record();
    let inputs = floats(&read(&record["inputs"]["file"], &record["inputs"]["sha256"]));
    let weights = floats(&read(&record["importance"]["file"], &record["importance"]["sha256"]));
    let at = |v: &Value, key: &str| v[key].as_u64().unwrap_or_else(|| panic!("`{key}` in {v}")) as usize;
    let mut out = Vec::new();
    for t in record["types"].as_array().expect("`types`") {
        let name = t["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap_or_else(|| panic!("{name}: a type this library does not know"));
        assert_eq!(ty.id(), at(t, "id") as u32, "{name}: type number");
        let blob = read(&t["file"], &t["sha256"]);
        for r in t["records"].as_array().unwrap() {
            let case_name = r["case"].as_str().unwrap();
            let case = record["inputs"]["cases"].as_array().unwrap().iter().find(|c| c["name"] == case_name).unwrap();
            let (rows, n_per_row, offset) = (at(case, "rows"), at(case, "n_per_row"), at(case, "offset"));
            let importance = r["importance"].as_str().map(|kind| {
                let vectors = record["importance"]["vectors"].as_array().unwrap();
                let v = vectors.iter().find(|v| v["case"] == case_name && v["kind"] == kind).unwrap();
                weights[at(v, "offset")..at(v, "offset") + n_per_row].to_vec()
            });
            let expected = r.get("bytes").map(|_| blob[at(r, "offset")..at(r, "offset") + at(r, "bytes")].to_vec());
            out.push(Output {
                t: ty,
                label: format!("{name} / {case_name} / importance {}", r["importance"].as_str().unwrap_or("none")),
                n_per_row,
                row_bytes: at(r, "row_bytes"),
                src: inputs[offset..offset + rows * n_per_row].to_vec(),
                importance,
                expected,
            });
        }
    }
    assert_eq!(out.len(), 779, "records in ggml-quant/quant.expected.json (run scripts/fixtures)");
    out
}

/// Where `got` first differs from `want`, as a line naming the row, block and byte.
fn first_difference(o: &Output, got: &[u8], want: &[u8]) -> Option<String> {
    let i = (0..want.len()).find(|&i| got[i] != want[i])?;
    let block = o.t.block_bytes() as usize;
    let (row, in_row) = (i / o.row_bytes, i % o.row_bytes);
    let count = (0..want.len()).filter(|&i| got[i] != want[i]).count();
    Some(format!(
        "{}: byte {i} (row {row}, block {}, byte {} of the block) is {:#04x}, ggml wrote {:#04x}; {count} of {} bytes differ",
        o.label,
        in_row / block,
        in_row % block,
        got[i],
        want[i],
        want.len()
    ))
}

#[test]
fn every_type_quantizes_as_ggml_does() {
    let mut failures = Vec::new();
    let (mut compared, mut skipped) = (0, Vec::new());
    for o in outputs() {
        assert_eq!(row_bytes(o.t, o.n_per_row), Some(o.row_bytes), "{}: row_bytes", o.label);
        if !can_quantize(o.t) {
            if !skipped.contains(&o.t) {
                skipped.push(o.t);
            }
            continue;
        }
        let mut got = vec![0xA5; o.src.len() / o.n_per_row * o.row_bytes];
        let result = quantize_rows(o.t, &o.src, o.n_per_row, o.importance.as_deref(), &mut got);
        let Some(want) = &o.expected else {
            // ggml stops here; whatever we give, we must not panic (and did not).
            continue;
        };
        if let Err(e) = result {
            failures.push(format!("{}: {}", o.label, e.message()));
            continue;
        }
        compared += 1;
        failures.extend(first_difference(&o, &got, want));
    }
    assert!(failures.is_empty(), "{} outputs differ from ggml's:\n{}", failures.len(), failures.join("\n"));
    // Only the grid types (quantized by kernels of their own, not here yet) may be skipped.
    let grid = [GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S];
    let grid = [&grid[..], &[GgmlType::IQ1_S, GgmlType::IQ1_M]].concat();
    assert!(skipped.iter().all(|t| grid.contains(t)), "not quantized: {skipped:?}");
    assert!(compared >= 600, "only {compared} outputs compared");
}

#[test]
fn several_threads_give_ggmls_bytes() {
    // Each type's first output with and without importance, its rows repeated past the size
    // quantized in parallel: every copy must be ggml's bytes.
    let mut seen = Vec::new();
    for o in outputs() {
        let key = (o.t, o.importance.is_some());
        if !can_quantize(o.t) || seen.contains(&key) {
            continue;
        }
        let Some(want) = o.expected.clone() else { continue };
        seen.push(key);
        let copies = 4 * super::PARALLEL_ABOVE / o.src.len() + 3;
        let src = o.src.repeat(copies);
        let mut got = vec![0; want.len() * copies];
        quantize_rows(o.t, &src, o.n_per_row, o.importance.as_deref(), &mut got).unwrap();
        let o = Output { label: format!("{} x{copies}", o.label), ..o };
        if let Some(difference) = first_difference(&o, &got, &want.repeat(copies)) {
            panic!("{difference}");
        }
    }
    assert!(seen.len() >= 40, "{} type and importance pairs", seen.len());
}

#[test]
fn q2_0_dequantizes_as_ggml_does() {
    let record = record();
    let dequantized = &record["dequantized"];
    assert_eq!(dequantized["type"], "Q2_0");
    let t = record["types"].as_array().unwrap().iter().find(|t| t["type"] == "Q2_0").unwrap();
    let blocks = read(&t["file"], &t["sha256"]);
    let want = read(&dequantized["file"], &dequantized["sha256"]);
    let mut got = vec![0; want.len()];
    super::super::dequantize(GgmlType::Q2_0, &blocks, &mut got).unwrap();
    let (got, want) = (floats(&got), floats(&want));
    if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!("Q2_0 element {i}: {} where ggml gives {}", got[i], want[i]);
    }
}

/// The entries of `more_dequantized` for `t`: each its blocks and ggml's floats of them.
fn more_dequantized(t: GgmlType) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let record = record();
    let entries = record["more_dequantized"].as_array().expect("`more_dequantized` (run scripts/fixtures)");
    let found: Vec<_> = entries
        .iter()
        .filter(|e| e["type"] == t.name())
        .map(|e| {
            let name = e["blocks"].as_str().unwrap().to_string();
            (name, read(&e["blocks"], &e["blocks_sha256"]), read(&e["file"], &e["sha256"]))
        })
        .collect();
    assert!(!found.is_empty(), "{}: nothing in more_dequantized", t.name());
    found
}

/// `t`'s blocks dequantized here, on one thread and on several, bit for bit as ggml's floats.
fn dequantizes_as_ggml_does(t: GgmlType, blocks: &[u8], want: &[u8], label: &str) {
    let (bb, be) = (t.block_bytes() as usize, t.block_elements() as usize);
    assert_eq!(blocks.len() % bb, 0, "{label}: whole blocks");
    assert_eq!(blocks.len() / bb * be * 4, want.len(), "{label}: output size");
    let want = floats(want);
    for parallel in [false, true] {
        let mut got = vec![0xA5; want.len() * 4];
        super::super::dequantize_on(t, blocks, &mut got, parallel).unwrap();
        let got = floats(&got);
        if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            panic!(
                "{label}: element {i} (block {}) is {:#010x} ({}), ggml gives {:#010x} ({})",
                i / be,
                got[i].to_bits(),
                got[i],
                want[i].to_bits(),
                want[i]
            );
        }
    }
}

/// The kinds of float among `values`: a record that leaves one out tests less than it seems.
fn kinds(values: &[u8]) -> [bool; 6] {
    let v = floats(values);
    [
        v.iter().any(|x| x.is_nan() && x.is_sign_positive()),
        v.iter().any(|x| x.is_nan() && x.is_sign_negative()),
        v.iter().any(|x| x.is_infinite()),
        v.iter().any(|x| x.to_bits() == 0x8000_0000),
        v.iter().any(|x| x.is_subnormal()),
        v.iter().any(|x| x.is_normal() && *x < 0.0),
    ]
}

#[test]
fn q1_0_dequantizes_as_ggml_does() {
    let entries = more_dequantized(GgmlType::Q1_0);
    assert_eq!(entries.len(), 2, "Q1_0.bin and the hand-made blocks");
    for (name, blocks, want) in &entries {
        dequantizes_as_ggml_does(GgmlType::Q1_0, blocks, want, &format!("Q1_0 / {name}"));
    }
    // ggml_quantize_chunk's outputs are the type's recorded bytes.
    let record = record();
    let t = record["types"].as_array().unwrap().iter().find(|t| t["type"] == "Q1_0").unwrap();
    assert_eq!(entries[0].1, read(&t["file"], &t["sha256"]));
    // The hand-made scales give NaNs of both signs, infinities, -0 (half-precision subnormals
    // widen to normal floats).
    assert_eq!(kinds(&entries[1].2), [true, true, true, true, false, true], "Q1_0's hand-made blocks");
}

#[test]
fn q8_k_dequantizes_as_ggml_does() {
    let entries = more_dequantized(GgmlType::Q8_K);
    assert_eq!(entries.len(), 1);
    let (name, blocks, want) = &entries[0];
    dequantizes_as_ggml_does(GgmlType::Q8_K, blocks, want, &format!("Q8_K / {name}"));
    // Codes at both ends, and outputs of every kind.
    let codes: Vec<i8> = blocks.chunks_exact(292).flat_map(|b| b[4..260].iter().map(|&q| q as i8)).collect();
    assert!(codes.contains(&-128) && codes.contains(&127));
    assert_eq!(kinds(want), [true; 6], "Q8_K's blocks");
    // The sums are not read: changing them changes nothing.
    let mut changed = blocks.clone();
    for b in changed.chunks_exact_mut(292) {
        b[260..].fill(0x5A);
    }
    dequantizes_as_ggml_does(GgmlType::Q8_K, &changed, want, "Q8_K with other sums");
}

#[test]
fn q1_0_and_q8_k_refuse_what_is_not_whole_blocks() {
    use crate::error::Rule;
    for t in [GgmlType::Q1_0, GgmlType::Q8_K] {
        let (bb, be) = (t.block_bytes() as usize, t.block_elements() as usize);
        assert!(super::super::can_dequantize(t), "{}", t.name());
        let mut none: [u8; 0] = [];
        super::super::dequantize(t, &[], &mut none).unwrap();
        // A byte short, a byte over, and output that does not match whole blocks.
        for (blocks, out) in
            [(bb - 1, be * 4), (bb + 1, be * 4), (1, 0), (bb, be * 4 - 4), (bb, 0), (0, 4), (2 * bb, be * 4)]
        {
            let mut out = vec![0; out];
            let err = super::super::dequantize(t, &vec![0xFF; blocks], &mut out).unwrap_err();
            assert_eq!(err.rule(), Some(Rule::BadQuantization), "{}: {blocks} bytes: {}", t.name(), err.message());
        }
    }
}
