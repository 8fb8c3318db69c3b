//! Our bytes against ggml's: every quantization that `scripts/fixturegen/ggml_quant_iq.py`
//! recorded from `ggml_quantize_chunk` (under `tests/fixtures/ggml-quant-iq/`) is made again
//! here and compared byte for byte; the rows ggml aborts on must be refused.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::*;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ggml-quant-iq")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Where `ours` first differs from `ggml`'s, as a sentence, or None when they are equal.
fn first_difference(ours: &[u8], ggml: &[u8]) -> Option<String> {
    if ours.len() != ggml.len() {
        return Some(format!("{} bytes, ggml {}", ours.len(), ggml.len()));
    }
    let at = (0..ours.len()).find(|&i| ours[i] != ggml[i])?;
    let count = (0..ours.len()).filter(|&i| ours[i] != ggml[i]).count();
    Some(format!(
        "first differing byte {at}: ours {:#04x}, ggml {:#04x} ({count} of {} differ)",
        ours[at],
        ggml[at],
        ours.len()
    ))
}

/// A recorded case: its rows and importance weights.
struct Case {
    rows: usize,
    n_per_row: usize,
    values: Vec<f32>,
    imatrix: Vec<f32>,
}

fn cases(record: &Value) -> Vec<(String, Case)> {
    let (inputs, imatrices) = (read("inputs.f32"), read("imatrix.f32"));
    let mut out = Vec::new();
    for c in record["cases"].as_array().expect("`cases`") {
        let field = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{c}: {k}")) as usize;
        let (rows, n_per_row) = (field("rows"), field("n_per_row"));
        let values = &inputs[field("input_offset")..field("input_offset") + 4 * rows * n_per_row];
        let imatrix = &imatrices[field("imatrix_offset")..field("imatrix_offset") + 4 * n_per_row];
        let name = c["name"].as_str().unwrap().to_string();
        assert_eq!(sha256(values), c["input_sha256"].as_str().unwrap(), "{name}: inputs");
        assert_eq!(sha256(imatrix), c["imatrix_sha256"].as_str().unwrap(), "{name}: importance weights");
        out.push((name, Case { rows, n_per_row, values: floats(values), imatrix: floats(imatrix) }));
    }
    out
}

#[test]
fn every_recorded_quantization_is_ggmls() {
    let record: Value = serde_json::from_slice(&read("records.json")).expect("records.json");
    let cases = cases(&record);
    let mut blobs = std::collections::HashMap::new();
    let (mut failures, mut compared, mut refused) = (Vec::new(), 0, 0);
    for r in record["results"].as_array().expect("`results`") {
        let name = r["type"].as_str().unwrap();
        let t = GgmlType::from_name(name).unwrap();
        let blob: &Vec<u8> = blobs.entry(name).or_insert_with(|| read(&format!("{name}.bin")));
        let case_name = r["case"].as_str().unwrap();
        let case = &cases.iter().find(|(n, _)| n == case_name).unwrap().1;
        let with_imatrix = r["imatrix"].as_bool().unwrap();
        let what = format!("{name} / {case_name} / {}", if with_imatrix { "imatrix" } else { "no imatrix" });
        let (offset, len) = (r["offset"].as_u64().unwrap() as usize, r["bytes"].as_u64().unwrap() as usize);
        let ggml = &blob[offset..offset + len];
        assert_eq!(sha256(ggml), r["sha256"].as_str().unwrap(), "{what}: {name}.bin");
        let aborted: Vec<usize> =
            r["aborted_rows"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let importance = with_imatrix.then_some(&case.imatrix[..]);
        let row_bytes = case.n_per_row / QK_K * t.block_bytes() as usize;
        let mut ggml_rows = ggml.chunks(row_bytes);
        for (i, row) in case.values.chunks(case.n_per_row).enumerate() {
            let mut ours = vec![0u8; row_bytes];
            let got = quantize(t, row, case.n_per_row, importance, &mut ours);
            if aborted.contains(&i) {
                refused += 1;
                match got {
                    Err(e) if e.rule() == Some(Rule::BadValue) => {}
                    Err(e) => failures.push(format!("{what}: row {i}: ggml aborts, we refuse with another rule: {e}")),
                    Ok(()) => failures.push(format!("{what}: row {i}: ggml aborts, we quantize it")),
                }
                continue;
            }
            compared += 1;
            let want = ggml_rows.next().unwrap_or_default();
            match got {
                Err(e) => failures.push(format!("{what}: row {i}: we refuse what ggml quantizes: {e}")),
                Ok(()) => {
                    if let Some(diff) = first_difference(&ours, want) {
                        failures.push(format!("{what}: row {i}: {diff}"));
                    }
                }
            }
        }
        if aborted.is_empty() {
            // The whole case at once: the same bytes.
            let mut ours = vec![0u8; case.rows * row_bytes];
            match quantize(t, &case.values, case.n_per_row, importance, &mut ours) {
                Ok(()) if ours == ggml => {}
                Ok(()) => {
                    failures.push(format!("{what}: all rows at once: {}", first_difference(&ours, ggml).unwrap()))
                }
                Err(e) => failures.push(format!("{what}: all rows at once: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {compared} rows differ from ggml:\n{}", failures.len(), failures.join("\n"));
    assert!(compared > 300 && refused > 20, "{compared} rows compared, {refused} refused: regenerate the fixtures");
}

#[test]
fn rows_on_several_threads_are_the_rows_alone() {
    // More values than PARALLEL_ABOVE: the rows go to several threads.
    let n_per_row = 512;
    let rows = PARALLEL_ABOVE / n_per_row + 3;
    let values: Vec<f32> = (0..rows * n_per_row).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
    let imatrix: Vec<f32> = (0..n_per_row).map(|i| 0.1 + (i % 13) as f32).collect();
    for t in [GgmlType::IQ3_XXS, GgmlType::IQ1_M] {
        let row_bytes = n_per_row / QK_K * t.block_bytes() as usize;
        let mut all = vec![0u8; rows * row_bytes];
        quantize(t, &values, n_per_row, Some(&imatrix), &mut all).unwrap();
        for (i, (row, want)) in values.chunks(n_per_row).zip(all.chunks(row_bytes)).enumerate().step_by(37) {
            let mut one = vec![0u8; row_bytes];
            quantize(t, row, n_per_row, Some(&imatrix), &mut one).unwrap();
            assert!(one == want, "{}: row {i} alone differs", t.name());
        }
    }
    // Rows ggml aborts on (a NaN in IQ3_XXS): the first of them is named, whichever thread
    // meets one first.
    let mut poisoned = values.clone();
    poisoned[40 * n_per_row + 5] = f32::NAN;
    poisoned[5 * n_per_row + 300] = f32::NAN;
    let mut out = vec![0u8; rows * n_per_row / QK_K * 98];
    let err = quantize(GgmlType::IQ3_XXS, &poisoned, n_per_row, None, &mut out).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadValue));
    assert!(err.message().contains("row 5, block 1"), "{err}");
}

#[test]
fn shapes_and_missing_weights_are_refused() {
    let values = vec![0.5f32; 512];
    let w = vec![1.0f32; 512];
    let mut out = vec![0u8; 2 * 74];
    let rule = |r: Result<()>| r.unwrap_err().rule();
    assert_eq!(rule(quantize(GgmlType::IQ2_XS, &values, 512, None, &mut out[..148])), Some(Rule::BadQuantization));
    let err = quantize(GgmlType::IQ1_S, &values, 512, None, &mut [0u8; 100]).unwrap_err();
    assert!(err.message().contains("importance matrix"), "{err}");
    assert_eq!(rule(quantize(GgmlType::IQ2_XS, &values, 500, Some(&w), &mut out)), Some(Rule::BadQuantization));
    assert_eq!(rule(quantize(GgmlType::IQ2_XS, &values, 0, Some(&w), &mut out)), Some(Rule::BadQuantization));
    assert_eq!(rule(quantize(GgmlType::IQ2_XS, &values, 256, Some(&w), &mut out)), Some(Rule::BadQuantization));
    assert_eq!(rule(quantize(GgmlType::IQ2_XS, &values, 512, Some(&w), &mut out[..147])), Some(Rule::BadQuantization));
    assert_eq!(
        rule(quantize(GgmlType::IQ2_XS, &values[..300], 256, Some(&w[..256]), &mut out)),
        Some(Rule::BadQuantization)
    );
    assert_eq!(rule(quantize(GgmlType::Q4_K, &values, 512, None, &mut out)), Some(Rule::Unsupported));
    assert_eq!(
        rule(quantize(GgmlType::IQ2_XS, &values, usize::MAX - 255, Some(&w), &mut out)),
        Some(Rule::BadQuantization)
    );
    // No rows: nothing to write, and nothing wrong.
    quantize(GgmlType::IQ2_XS, &[], 512, Some(&w), &mut []).unwrap();
    quantize(GgmlType::IQ2_XS, &values[..256], 256, Some(&w[..256]), &mut out[..74]).unwrap();
}

#[test]
fn hostile_values_never_panic() {
    let specials = [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, 1e-45, -0.0, 0.0, 1e30];
    for &t in &[
        GgmlType::IQ2_XXS,
        GgmlType::IQ2_XS,
        GgmlType::IQ2_S,
        GgmlType::IQ3_XXS,
        GgmlType::IQ3_S,
        GgmlType::IQ1_S,
        GgmlType::IQ1_M,
    ] {
        let mut out = vec![0u8; t.block_bytes() as usize];
        for (k, &s) in specials.iter().enumerate() {
            let values: Vec<f32> =
                (0..QK_K).map(|i| if i % (k + 2) == 0 { s } else { (i as f32 - 128.0) / 50.0 }).collect();
            for w in [specials, [1.0; 10]] {
                let imatrix: Vec<f32> = (0..QK_K).map(|i| w[i % 10]).collect();
                let _ = quantize(t, &values, QK_K, Some(&imatrix), &mut out);
            }
            let _ = quantize(t, &vec![s; QK_K], QK_K, None, &mut out);
        }
    }
}

#[test]
fn nearest_int_is_ggmls() {
    assert_eq!(nearest_int(0.5), 0);
    assert_eq!(nearest_int(1.5), 2);
    assert_eq!(nearest_int(-0.5), 0);
    assert_eq!(nearest_int(-1.5), -2);
    assert_eq!(nearest_int(4194303.0), 4194303);
    // Out of its range: the mantissa bits of whatever the sum is, as in C.
    assert_eq!(nearest_int(f32::NAN), 0);
    assert_eq!(nearest_int(f32::INFINITY), -0x0040_0000);
}

#[test]
fn half_conversion_is_ggmls() {
    for bits in (0..u32::MAX).step_by(65_521) {
        let f = f32::from_bits(bits);
        let ours = fp16_bits(f);
        if f.is_nan() {
            assert_eq!(ours, 0x7e00 | ((bits >> 16) as u16 & 0x8000), "{bits:#x}");
        } else {
            // Round to nearest even, as the half crate does it.
            assert_eq!(ours, half::f16::from_f32(f).to_bits(), "{f:e}");
        }
    }
}

#[test]
fn glibc_merge_sort_keeps_equal_values_in_order() {
    // Values with ties and a NaN: the order glibc 2.36's qsort gives them with ggml's
    // comparator (checked through ctypes).
    let xb = [1.0, 0.0, 1.0, f32::NAN, 0.0, -1.0];
    let order: Vec<u8> = iq1::sorted::<6>(&xb).iter().map(|p| p.1).collect();
    assert_eq!(order, [1, 0, 2, 3, 5, 4]);
}
